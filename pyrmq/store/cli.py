"""``pyrmq store inspect|verify DIR``: look into a store directory (Java's or pyrmq's) without changing it.

``inspect`` is cheap: file listings, the tail of the commit log, every queue's
min/max offset and first/last store time, the checkpoint and the config files.
``verify`` reads everything: the CRC and length of every record and the chain of
records (each PHYSICALOFFSET is where the record sits), every consume-queue entry
(points at a record of its topic/queue with the right size, queue offset and
tags code), every index entry (points at a record that has the hashed key), and
the names and lengths of the files in the log directories (spec §1.1, §10).
Every problem is reported with its file and byte offset; the exit status is 1
when something is wrong, 2 for a directory that is not a store.

Reading is pyrmq.store.reader's (the Spark sources read through it too): files
are opened read-only and mapped, so neither command needs memory in proportion
to the store, and both can run next to a live broker (a live store may show a
partly written tail).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import itertools
import json
import os
import sys
import time
from dataclasses import dataclass, field
from typing import IO, Any

from pyrmq.common.constants import RMQ_SYS_SCHEDULE_TOPIC, MessageConst
from pyrmq.dledger.entry import BODY_OFFSET
from pyrmq.dledger.store_files import DLedgerStoreReader, StoreFormatError, find_member_dir
from pyrmq.store import config as cfg
from pyrmq.store import reader
from pyrmq.store.consume_queue import CQ_STORE_UNIT_SIZE, PRE_BLANK_SIZE
from pyrmq.store.index import INDEX_HEADER_SIZE, build_key, build_tag_key, index_key_hash
from pyrmq.store.message import (
    BLANK_MAGIC_CODE,
    MessageDecodeError,
    MessageSysFlag,
    StoredMessage,
    is_queued,
    peek_total_size_and_magic,
    tags_string_to_tags_code,
)
from pyrmq.store.reader import CommitLogReader, MappedLog
from pyrmq.store.space import data_ranges
from pyrmq.store.store_config import MessageStoreConfig

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


class NotAStoreError(Exception):
    """The directory is missing or holds none of commitlog/, consumequeue/, config/."""


@dataclass(slots=True)
class Problem:
    path: str
    offset: int | None
    message: str

    def __str__(self) -> str:
        where = self.path if self.offset is None else f"{self.path} @ {self.offset}"
        return f"{where}: {self.message}"


class Report:
    """Problems (corruption: exit 1) and warnings (expected after a crash or on a live store)."""

    def __init__(self, root: str, limit: int) -> None:
        self.root = root
        self.limit = limit
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []
        self.problem_count = 0

    def rel(self, path: str) -> str:
        return os.path.relpath(path, self.root)

    def problem(self, path: str, offset: int | None, message: str) -> None:
        self.problem_count += 1
        if len(self.problems) < self.limit:
            self.problems.append(Problem(self.rel(path), offset, message))

    def warn(self, path: str, offset: int | None, message: str) -> None:
        if len(self.warnings) < self.limit:
            self.warnings.append(Problem(self.rel(path), offset, message))

    def add(self, findings: list[reader.Finding]) -> None:
        for f in findings:
            (self.problem if f.problem else self.warn)(f.path, f.offset, f.message)


def _ms(ts: int | None) -> str | None:
    if not ts:
        return None
    return _dt.datetime.fromtimestamp(ts / 1000).isoformat(sep=" ", timespec="milliseconds")


def cq_summary(log: MappedLog, cl: CommitLogReader) -> dict[str, Any]:
    """min/max offset and first/last store time of one queue, the way the Java broker computes them."""
    if not log.files:
        return {"min_offset": 0, "max_offset": 0, "messages": 0}
    max_offset = log.files[0].start // CQ_STORE_UNIT_SIZE
    min_offset = None
    first_phy = last_phy = None
    for _f, _pos, qoff, phy, size, _tags in reader.iter_queue_entries(log):
        max_offset = qoff + 1
        last_phy = phy
        if min_offset is None and size != PRE_BLANK_SIZE and phy >= cl.min_offset:
            min_offset, first_phy = qoff, phy
    if min_offset is None:
        min_offset = max_offset
    out: dict[str, Any] = {"min_offset": min_offset, "max_offset": max_offset, "messages": max_offset - min_offset}
    for key, at in (("first_store_time", first_phy), ("last_store_time", last_phy)):
        if at is not None and min_offset < max_offset:
            try:
                out[key] = _ms(cl.record_at(at).store_timestamp)
            except MessageDecodeError:
                out[key] = None
    return out


# --------------------------------------------------------------------------- progress


class Progress:
    """A one-line bar on stderr, redrawn at most 10 times a second."""

    def __init__(self, total: int, enabled: bool, stream: IO[str] | None = None) -> None:
        self.total = max(total, 1)
        self.done = 0
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self._last = 0.0

    def advance(self, n: int, label: str) -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.1 and self.done < self.total:
            return
        self._last = now
        frac = min(self.done / self.total, 1.0)
        bar = "#" * int(frac * 30)
        self.stream.write(f"\r[{bar:<30}] {frac:4.0%} {label[:50]:<50}")
        self.stream.flush()

    def finish(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * 90 + "\r")
            self.stream.flush()


# --------------------------------------------------------------------------- inspect


def _check_store_dir(root: str) -> None:
    if not os.path.exists(root):
        raise NotAStoreError(f"{root}: no such directory")
    if not os.path.isdir(root):
        raise NotAStoreError(f"{root}: not a directory")
    if not any(os.path.isdir(os.path.join(root, d)) for d in ("commitlog", "consumequeue", "config")):
        raise NotAStoreError(
            f"{root}: does not look like a RocketMQ store (no commitlog/, consumequeue/ or config/ directory)"
        )


def _layout(root: str, commitlog_dir: str | None) -> MessageStoreConfig:
    """The store's paths (Java StorePathConfigHelper), the commit log possibly elsewhere."""
    return MessageStoreConfig(store_path_root_dir=root, store_path_commit_log=commitlog_dir)


def _config_summary(root: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    d = cfg.config_dir(root)
    for name, cls in cfg.CONFIG_FILES.items():
        p = os.path.join(d, name)
        present = [s for s in ("", ".bak") if os.path.exists(p + s)]
        if not present:
            continue
        info: dict[str, Any] = {"files": [name + s for s in present]}
        try:
            got = reader.read_config(p, cls)
            obj = got[0] if got else None
            info["read_from"] = os.path.basename(got[1]) if got else None
            if isinstance(obj, cfg.TopicConfigSerializeWrapper):
                info["topics"] = len(obj.topic_config_table)
            elif isinstance(obj, cfg.ConsumerOffsetSerializeWrapper):
                info["offset_entries"] = len(obj.offset_table)
            elif isinstance(obj, cfg.DelayOffsetSerializeWrapper):
                info["levels"] = dict(sorted(obj.offset_table.items()))
            elif isinstance(obj, cfg.SubscriptionGroupSerializeWrapper):
                info["groups"] = len(obj.subscription_group_table)
        except cfg.ConfigFileError as e:
            info["error"] = str(e)
        out[name] = info
    others = sorted(
        n for n in (os.listdir(d) if os.path.isdir(d) else []) if n.split(".bak")[0] not in cfg.CONFIG_FILES
    )
    if others:
        out["other"] = others
    return out


def _commit_log_summary(cl: CommitLogReader) -> dict[str, Any]:
    clog: dict[str, Any] = {"files": len(cl.files), "file_size": cl.file_size}
    if not cl.files:
        return clog
    first_file, last_file = cl.files[0], cl.files[-1]
    clog["first_file"], clog["last_file"] = first_file.name, last_file.name
    clog["min_offset"] = cl.min_offset
    first = next(
        (
            msg
            for _p, msg in reader.iter_file_records(cl.buffer(first_file), cl.readable(first_file), check_crc=False)
            if isinstance(msg, StoredMessage)
        ),
        None,
    )
    clog["first_store_time"] = _ms(first.store_timestamp) if first else None
    # the max offset: end of the last record in the last file that has any
    max_offset, last = cl.min_offset, None
    for f in reversed(cl.files):
        buf = cl.buffer(f)
        end_pos, last_msg = 0, None
        for pos, msg in reader.iter_file_records(buf, cl.readable(f), check_crc=False):
            if isinstance(msg, StoredMessage):
                end_pos, last_msg = pos + msg.store_size, msg
        if last_msg is not None or f is first_file:
            _total, magic = peek_total_size_and_magic(buf, end_pos) if cl.readable(f) - end_pos >= 8 else (0, 0)
            max_offset = f.start + (f.size if magic == BLANK_MAGIC_CODE else end_pos)
            last = last_msg
            break
    clog["max_offset"] = max_offset
    clog["last_store_time"] = _ms(last.store_timestamp) if last else None
    return clog


#: how many of the last records ``inspect`` shows from a DLedger member's ledger
TAIL_RECORDS = 5


def _dledger_summary(ledger: DLedgerStoreReader, cl: CommitLogReader) -> dict[str, Any]:
    """The ledger in the commit log's place: its files, entries, committed index and term/vote, and
    the commit-log range it holds (record offsets are entry pos + BODY_OFFSET, as the broker's)."""
    out: dict[str, Any] = {
        "member_dir": ledger.path,
        "data_files": len(ledger.data_files),
        "data_file_size": ledger.data_file_size,
        "index_files": len(ledger.index_files),
        "entries": 0 if ledger.ledger_end_index < 0 else ledger.ledger_end_index - ledger.ledger_begin_index + 1,
        "begin_index": ledger.ledger_begin_index,
        "end_index": ledger.ledger_end_index,
        "end_term": ledger.ledger_end_term,
        "committed_index": ledger.committed_index,
        "checkpoint": dataclasses.asdict(ledger.checkpoint) if ledger.checkpoint else None,
        "term": ledger.term.curr_term,
        "vote_for": ledger.term.vote_for,
        "write_pos": ledger.write_pos,
    }
    first = next(ledger.entries(), None)
    # the tail: read from the last data files only (a file is 1 GiB by default)
    tail: list[Any] = []
    for i in range(len(ledger.data_files) - 1, -1, -1):
        end = ledger.data_files[i][0] + ledger.data_file_size
        in_file = list(itertools.takewhile(lambda e: e.pos < end, ledger.entries(i)))  # noqa: B023
        tail = in_file[-(TAIL_RECORDS - len(tail)) :] + tail
        if len(tail) >= TAIL_RECORDS:
            break
    out["first_record_offset"] = first.pos + BODY_OFFSET if first else None
    out["last_record_offset"] = tail[-1].pos + BODY_OFFSET if tail else None
    records = []
    for entry in tail:
        rec: dict[str, Any] = {"index": entry.index, "term": entry.term, "offset": entry.pos + BODY_OFFSET}
        try:
            msg = cl.record_at(entry.pos + BODY_OFFSET)
        except MessageDecodeError as e:
            rec["error"] = str(e)
        else:
            rec.update(
                topic=msg.topic,
                queue_id=msg.queue_id,
                queue_offset=msg.queue_offset,
                size=msg.store_size,
                store_time=_ms(msg.store_timestamp),
            )
        records.append(rec)
    out["tail"] = records
    return out


def _dledger_commit_log_summary(ledger: dict[str, Any], cl: CommitLogReader) -> dict[str, Any]:
    """The commit-log view of a ledger: offsets from the first record to the end of the last entry."""
    clog: dict[str, Any] = {"files": len(cl.files), "file_size": cl.file_size}
    if not cl.files:
        return clog
    clog["first_file"], clog["last_file"] = cl.files[0].name, cl.files[-1].name
    clog["min_offset"] = cl.min_offset
    clog["max_offset"] = ledger["write_pos"]
    for key, at in (
        ("first_store_time", ledger["first_record_offset"]),
        ("last_store_time", ledger["last_record_offset"]),
    ):
        try:
            clog[key] = _ms(cl.record_at(at).store_timestamp) if at is not None else None
        except MessageDecodeError:
            clog[key] = None
    return clog


def inspect_store(root: str, *, commitlog_dir: str | None = None) -> dict[str, Any]:
    """A summary of the store (what ``pyrmq store inspect --json`` prints). A DLedger broker's store
    is read through its member's ledger (as ``verify`` does): the summary gains a "dledger" part."""
    _check_store_dir(root)
    dledger = find_member_dir(root) if commitlog_dir is None else None
    layout = _layout(root, os.path.join(dledger, "data") if dledger else commitlog_dir)
    cl, _ = reader.open_commit_log(layout.commit_log_dir)
    with cl:
        info: dict[str, Any] = {"store": os.path.abspath(root)}
        if dledger:
            try:
                ledger = _dledger_summary(DLedgerStoreReader(dledger), cl)
            except StoreFormatError as e:
                ledger = {"member_dir": dledger, "error": str(e)}
                info["commitlog"] = {"files": len(cl.files), "file_size": cl.file_size, "unreadable": True}
            else:
                info["commitlog"] = _dledger_commit_log_summary(ledger, cl)
            info["dledger"] = ledger
        else:
            info["commitlog"] = _commit_log_summary(cl)
        topics: dict[str, Any] = {}
        for q in reader.list_queue_dirs(layout.consume_queue_dir)[0]:
            log, _ = reader.open_log(q.path)
            with log:
                topics.setdefault(q.topic, {})[str(q.queue_id)] = cq_summary(log, cl)
        info["topics"] = topics
    idx = reader.list_index_files(layout.index_dir)[0]
    entries = 0
    for p in idx:
        with open(p, "rb") as fh:
            header = reader.read_index_header(fh.read(INDEX_HEADER_SIZE))
        if header is not None:
            entries += header.entries
    info["index"] = {"files": len(idx), "entries": entries}
    info["checkpoint"] = reader.read_checkpoint(layout.checkpoint_path)
    info["abort"] = os.path.exists(layout.abort_path)
    info["lock"] = os.path.exists(layout.lock_path)
    info["config"] = _config_summary(root)
    return info


def _print_inspect(info: dict[str, Any], out: IO[str]) -> None:
    w = out.write
    w(f"store: {info['store']}\n")
    c = info["commitlog"]
    if c.get("unreadable"):
        w(f"commit log: {c['files']} DLedger data file(s), not readable (below)\n")
    elif c["files"]:
        w(
            f"commit log: {c['files']} file(s) of {c['file_size']} bytes ({c['first_file']} .. {c['last_file']}), "
            f"offsets {c['min_offset']} .. {c['max_offset']}\n"
            f"  store time {c['first_store_time']} .. {c['last_store_time']}\n"
        )
    else:
        w("commit log: no files\n")
    if "dledger" in info:
        _print_dledger(info["dledger"], w)
    w(f"topics: {len(info['topics'])}\n")
    for topic, queues in info["topics"].items():
        w(f"  {topic} ({len(queues)} queue(s))\n")
        for qid, q in queues.items():
            times = ""
            if q.get("first_store_time"):
                times = f", store time {q['first_store_time']} .. {q.get('last_store_time')}"
            w(f"    queue {qid}: offsets {q['min_offset']} .. {q['max_offset']} ({q['messages']} message(s)){times}\n")
    w(f"index: {info['index']['files']} file(s), {info['index']['entries']} entr(y/ies)\n")
    cp = info["checkpoint"]
    if cp:
        w("checkpoint: " + ", ".join(f"{k}={_ms(v) if k.endswith('Timestamp') else v}" for k, v in cp.items()) + "\n")
    else:
        w("checkpoint: none\n")
    w(f"abort file: {'present (last exit was not clean; recovery will rescan)' if info['abort'] else 'absent'}\n")
    w(f"lock file: {'present' if info['lock'] else 'absent'}\n")
    if info["config"]:
        w("config:\n")
        for name, ci in info["config"].items():
            if name == "other":
                w(f"  other: {', '.join(ci)}\n")
                continue
            details = ", ".join(f"{k}={v}" for k, v in ci.items() if k != "files")
            w(f"  {', '.join(ci['files'])}: {details}\n")
    else:
        w("config: none\n")


def _print_dledger(d: dict[str, Any], w: Any) -> None:
    w(f"dledger: {d['member_dir']}\n")
    if "error" in d:
        w(f"  cannot read the ledger: {d['error']}\n")
        return
    w(
        f"  {d['data_files']} data file(s) of {d['data_file_size']} bytes, {d['index_files']} index file(s); "
        f"{d['entries']} entr(y/ies), index {d['begin_index']} .. {d['end_index']} (last term {d['end_term']}), "
        f"committed index {d['committed_index']}\n"
        f"  term {d['term']}, voted for {d['vote_for'] or 'nobody'}; "
        f"records at commit-log offsets {d['first_record_offset']} .. {d['last_record_offset']}\n"
    )
    for r in d["tail"]:
        what = r.get("error") or (
            f"{r['topic']} queue {r['queue_id']} offset {r['queue_offset']}, {r['size']} bytes, stored {r['store_time']}"
        )
        w(f"    entry {r['index']} (term {r['term']}) at {r['offset']}: {what}\n")


# --------------------------------------------------------------------------- verify


@dataclass(slots=True)
class VerifyStats:
    commit_log_files: int = 0
    records: int = 0
    bytes: int = 0
    consume_queues: int = 0
    consume_queue_entries: int = 0
    index_files: int = 0
    index_entries: int = 0
    queue_max: dict[str, int] = field(default_factory=dict)


def _expected_tags_code(msg: StoredMessage, delay_table: dict[int, int]) -> int | None:
    props = msg.properties
    if msg.topic == RMQ_SYS_SCHEDULE_TOPIC and props.get(MessageConst.DELAY_TIME_LEVEL):
        # the tags slot holds the deliver time (spec §9.1); assumes the default messageDelayLevel
        try:
            level = int(props[MessageConst.DELAY_TIME_LEVEL])
        except ValueError:
            return None
        if level <= 0:
            return None
        level = min(level, max(delay_table) if delay_table else level)
        return msg.store_timestamp + delay_table.get(level, 1000)
    return tags_string_to_tags_code(props.get(MessageConst.TAGS))


def verify_store(
    root: str,
    *,
    commitlog_dir: str | None = None,
    check_index: bool = True,
    max_hash_slot_num: int | None = None,
    max_index_num: int | None = None,
    progress: bool = False,
    limit: int = 1000,
) -> tuple[Report, VerifyStats]:
    _check_store_dir(root)
    report = Report(root, limit)
    stats = VerifyStats()
    delay_table = MessageStoreConfig().delay_level_table()
    dledger = find_member_dir(root) if commitlog_dir is None else None
    # a DLedger broker's commit-log offsets are positions in its DLedger data files (entry + 48)
    layout = _layout(root, os.path.join(dledger, "data") if dledger else commitlog_dir)
    cl, found = reader.open_commit_log(layout.commit_log_dir)
    report.add(found)
    queues, found = reader.list_queue_dirs(layout.consume_queue_dir)
    report.add(found)
    idx_paths: list[str] = []
    if check_index:
        idx_paths, found = reader.list_index_files(layout.index_dir)
        report.add(found)
    total = sum(f.size for f in cl.files)
    for q in queues:
        total += sum(
            os.path.getsize(os.path.join(q.path, n))
            for n in os.listdir(q.path)
            if os.path.isfile(os.path.join(q.path, n))
        )
    bar = Progress(total + sum(os.path.getsize(p) for p in idx_paths), progress)
    try:
        if dledger:
            _verify_dledger_log(dledger, cl, report, stats, bar)
        else:
            _verify_commit_log(cl, report, stats, bar)
        for q in queues:
            stats.consume_queues += 1
            log, found = reader.open_log(q.path)
            report.add(found)
            with log:
                _verify_cq(q.topic, q.queue_id, log, cl, report, stats, delay_table, bar)
        for p in idx_paths:
            stats.index_files += 1
            _verify_index(p, cl, report, stats, max_hash_slot_num, max_index_num)
            bar.advance(os.path.getsize(p), os.path.basename(p))
    finally:
        bar.finish()
        cl.close()
    return report, stats


def _verify_commit_log(cl: CommitLogReader, report: Report, stats: VerifyStats, bar: Progress) -> None:
    """Records, CRCs and the chain of offsets; data after the end of the log."""
    ended_at: int | None = None  # logical offset where valid data stopped (not at a blank)
    for f in cl.files:
        stats.commit_log_files += 1
        buf = cl.buffer(f)
        if ended_at is not None:
            total_, magic = peek_total_size_and_magic(buf, 0) if cl.readable(f) >= 8 else (0, 0)
            if total_ or magic:
                report.problem(
                    f.path,
                    0,
                    f"data after the end of the commit log (valid data stopped at offset {ended_at}); "
                    "recovery would delete this file",
                )
            bar.advance(f.size, f.name)
            continue
        last_pos = 0
        for pos, m in reader.iter_file_records(buf, cl.readable(f), check_crc=True):
            if m is None:
                ended_at = f.start + pos
                break
            if isinstance(m, reader.BodyCRCError):
                report.problem(f.path, pos, f"bad record: {m}")
                stats.records += 1
                continue
            if isinstance(m, MessageDecodeError):
                report.problem(f.path, pos, f"bad record: {m}")
                ended_at = f.start + pos
                break
            stats.records += 1
            stats.bytes += m.store_size
            if m.commit_log_offset != f.start + pos:
                report.problem(
                    f.path,
                    pos,
                    f"record says PHYSICALOFFSET {m.commit_log_offset}, it sits at {f.start + pos}",
                )
            if is_queued(m.sys_flag):
                key = f"{m.topic}/{m.queue_id}"
                stats.queue_max[key] = max(stats.queue_max.get(key, 0), m.queue_offset + 1)
            if pos - last_pos > 1 << 20:
                bar.advance(pos - last_pos, f.name)
                last_pos = pos
        bar.advance(f.size - last_pos, f.name)


def _verify_dledger_log(path: str, cl: CommitLogReader, report: Report, stats: VerifyStats, bar: Progress) -> None:
    """A DLedger member's ledger in the commit log's place: its entries as DLedger's recovery reads
    them, each body one commit-log record (CRC checked) at the entry's pos + BODY_OFFSET."""
    try:
        ledger = DLedgerStoreReader(path)
    except StoreFormatError as e:
        report.problem(path, None, f"DLedger store: {e}")
        return
    stats.commit_log_files += len(ledger.data_files)
    for entry in ledger.entries():
        offset = entry.pos + BODY_OFFSET
        f = cl.file_at(offset)
        if f is None:
            report.problem(path, offset, f"entry {entry.index}: no data file holds offset {offset}")
            continue
        try:
            msg = reader.read_record(cl.buffer(f), offset - f.start, cl.readable(f), check_crc=True)
        except (reader.BodyCRCError, MessageDecodeError) as e:
            report.problem(f.path, offset - f.start, f"entry {entry.index}: bad record: {e}")
            continue
        stats.records += 1
        stats.bytes += msg.store_size
        if msg.commit_log_offset != offset:
            report.problem(
                f.path, offset - f.start, f"record says PHYSICALOFFSET {msg.commit_log_offset}, it sits at {offset}"
            )
        if is_queued(msg.sys_flag):
            key = f"{msg.topic}/{msg.queue_id}"
            stats.queue_max[key] = max(stats.queue_max.get(key, 0), msg.queue_offset + 1)
    bar.advance(sum(f.size for f in cl.files), os.path.basename(path))


def _verify_cq(
    topic: str,
    qid: int,
    log: MappedLog,
    cl: CommitLogReader,
    report: Report,
    stats: VerifyStats,
    delay_table: dict[int, int],
    bar: Progress,
) -> None:
    last_qoff = None
    for f, pos, qoff, phy, size, tags in reader.iter_queue_entries(log):
        stats.consume_queue_entries += 1
        last_qoff = qoff
        if size == PRE_BLANK_SIZE or phy < cl.min_offset:
            continue  # filler, or the record's file was deleted as expired
        try:
            msg = cl.record_at(phy)
        except MessageDecodeError as e:
            report.problem(f.path, pos, f"entry {qoff} points at commit log offset {phy}: {e}")
            continue
        bad = []
        if msg.topic != topic or msg.queue_id != qid:
            bad.append(f"record is {msg.topic}/{msg.queue_id}")
        if msg.store_size != size:
            bad.append(f"size {size} != record size {msg.store_size}")
        if msg.queue_offset != qoff and not msg.sys_flag & MessageSysFlag.INNER_BATCH_FLAG:
            bad.append(f"record has queue offset {msg.queue_offset}")
        if bad:
            report.problem(f.path, pos, f"entry {qoff} -> offset {phy}: " + "; ".join(bad))
            continue
        want = _expected_tags_code(msg, delay_table)
        if want is not None and want != tags:
            (report.warn if topic == RMQ_SYS_SCHEDULE_TOPIC else report.problem)(
                f.path, pos, f"entry {qoff}: tags code {tags} != {want} computed from the record"
            )
    for lf in log.files:
        bar.advance(lf.size, f"{topic}/{qid}")
    cq_max = 0 if last_qoff is None else last_qoff + 1
    rec_max = stats.queue_max.get(f"{topic}/{qid}", 0)
    if rec_max > cq_max:
        where = log.files[-1].path if log.files else os.path.join(report.root, "consumequeue", topic, str(qid))
        report.warn(
            where,
            None,
            f"consume queue ends at offset {cq_max} but the commit log holds queue offsets up to {rec_max - 1} "
            "(not dispatched yet; the broker rebuilds this at start)",
        )


def _record_key_hashes(msg: StoredMessage) -> set[int]:
    """Key hashes IndexService#buildIndex (5.5.0) puts for a record: topic#UNIQ_KEY, topic#key for
    each KEYS token, and topic#T#tags."""
    keys = []
    uniq = msg.properties.get(MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
    if uniq:
        keys.append(uniq)
    keys.extend(k for k in (msg.properties.get(MessageConst.KEYS) or "").split(" ") if k)
    hashes = {index_key_hash(build_key(msg.topic, k)) for k in keys}
    tags = msg.properties.get(MessageConst.TAGS)
    if tags:
        hashes.add(index_key_hash(build_tag_key(msg.topic, tags)))
    return hashes


def _verify_index(
    path: str, cl: CommitLogReader, report: Report, stats: VerifyStats, slots_flag: int | None, entries_flag: int | None
) -> None:
    size = os.path.getsize(path)
    geo = reader.index_geometry(size, slots_flag, entries_flag)
    if geo is None:
        report.warn(
            path,
            None,
            f"cannot tell the slot/entry counts of a {size}-byte index file; "
            "pass --max-hash-slot-num / --max-index-num to check it",
        )
        return
    mm = reader.map_readonly(path)
    if mm is None:
        return
    try:
        header = reader.read_index_header(mm)
        assert header is not None  # the geometry fits the size, so the header is there
        count = header.entries + 1
        if count > geo.index_num:
            report.problem(path, 32 + 4, f"indexCount {count} > maxIndexNum {geo.index_num}")
            return
        used_slots = 0
        with open(path, "rb") as fh:  # only the slot pages that hold data (holes: no slot in use)
            ranges = data_ranges(fh.fileno(), 0, size)
        for s, pos, head in reader.iter_index_slots(mm, geo, ranges):
            used_slots += 1
            if head < 0 or head >= count:
                report.problem(path, pos, f"slot {s} points at entry {head} (indexCount {count})")
        if used_slots != header.hash_slot_count:
            report.warn(path, 32, f"hashSlotCount {header.hash_slot_count} but {used_slots} slots are in use")
        for n, pos, key_hash, phy, _time_diff, prev in reader.iter_index_entries(mm, geo, header):
            stats.index_entries += 1
            if prev < 0 or prev >= n:
                report.problem(path, pos, f"entry {n}: prevIndex {prev} does not point to an older entry")
            if phy < cl.min_offset:
                continue
            try:
                msg = cl.record_at(phy)
            except MessageDecodeError as e:
                report.problem(path, pos, f"entry {n} points at commit log offset {phy}: {e}")
                continue
            if key_hash not in _record_key_hashes(msg):
                report.problem(path, pos, f"entry {n}: key hash {key_hash} matches no key of the record at {phy}")
    finally:
        mm.close()


# --------------------------------------------------------------------------- main


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pyrmq store", description="Inspect or verify a RocketMQ store directory (read-only)."
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("inspect", help="summary: commit log, topics and queues, index, checkpoint, config files")
    i.add_argument("dir", help="the store root (storePathRootDir)")
    i.add_argument("--commitlog", help="commit log directory if not <dir>/commitlog (storePathCommitLog)")
    i.add_argument("--json", action="store_true", help="print JSON instead of text")
    v = sub.add_parser("verify", help="check every record, consume-queue and index entry; exit 1 on corruption")
    v.add_argument("dir", help="the store root (storePathRootDir)")
    v.add_argument("--commitlog", help="commit log directory if not <dir>/commitlog (storePathCommitLog)")
    v.add_argument("--no-index", action="store_true", help="skip the index files")
    v.add_argument("--max-hash-slot-num", type=int, help="index geometry if not Java's default or 1:4 ratio")
    v.add_argument("--max-index-num", type=int, help="index geometry if not Java's default or 1:4 ratio")
    v.add_argument("--progress", action="store_true", help="progress bar on stderr even when it is not a terminal")
    v.add_argument("--max-problems", type=int, default=1000, help="stop listing after this many (default 1000)")
    v.add_argument("--json", action="store_true", help="print JSON instead of text")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    out = sys.stdout
    try:
        if args.cmd == "inspect":
            info = inspect_store(args.dir, commitlog_dir=args.commitlog)
            if args.json:
                out.write(json.dumps(info, indent=2, ensure_ascii=False) + "\n")
            else:
                _print_inspect(info, out)
            return EXIT_OK
        report, stats = verify_store(
            args.dir,
            commitlog_dir=args.commitlog,
            check_index=not args.no_index,
            max_hash_slot_num=args.max_hash_slot_num,
            max_index_num=args.max_index_num,
            progress=args.progress or sys.stderr.isatty(),
            limit=args.max_problems,
        )
    except NotAStoreError as e:
        sys.stderr.write(f"pyrmq store: {e}\n")
        return EXIT_USAGE
    except PermissionError as e:
        sys.stderr.write(f"pyrmq store: {e}\n")
        return EXIT_USAGE
    summary = dataclasses.asdict(stats)
    summary.pop("queue_max")
    if args.json:
        out.write(
            json.dumps(
                {
                    "ok": report.problem_count == 0,
                    "problem_count": report.problem_count,
                    "problems": [dataclasses.asdict(p) for p in report.problems],
                    "warnings": [dataclasses.asdict(p) for p in report.warnings],
                    "stats": summary,
                },
                indent=2,
                ensure_ascii=False,
            )
            + "\n"
        )
    else:
        for p in report.problems:
            out.write(f"PROBLEM {p}\n")
        if report.problem_count > len(report.problems):
            out.write(f"... and {report.problem_count - len(report.problems)} more problem(s)\n")
        for w in report.warnings:
            out.write(f"warning {w}\n")
        out.write(
            f"{'OK' if report.problem_count == 0 else 'CORRUPT'}: {stats.records} record(s) in "
            f"{stats.commit_log_files} commit log file(s), {stats.consume_queue_entries} entr(y/ies) in "
            f"{stats.consume_queues} consume queue(s), {stats.index_entries} index entr(y/ies) in "
            f"{stats.index_files} index file(s); {report.problem_count} problem(s), {len(report.warnings)} warning(s)\n"
        )
    return EXIT_OK if report.problem_count == 0 else EXIT_PROBLEMS


if __name__ == "__main__":
    sys.exit(main())
