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

Files are opened read-only and mapped, so neither command needs memory in
proportion to the store, and both can run next to a live broker (a live store
may show a partly written tail).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import json
import mmap
import os
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pyrmq.store import config as cfg
from pyrmq.store.checkpoint import CHECKPOINT_FILE_SIZE, CHECKPOINT_LAYOUT
from pyrmq.store.consume_queue import CQ_STORE_UNIT_SIZE, decode_entry
from pyrmq.store.index import (
    HASH_SLOT_LAYOUT,
    HASH_SLOT_SIZE,
    INDEX_ENTRY_LAYOUT,
    INDEX_HEADER_LAYOUT,
    INDEX_HEADER_SIZE,
    INDEX_SIZE,
    build_key,
    build_tag_key,
    index_key_hash,
)
from pyrmq.store.message import (
    BLANK_MAGIC_CODE,
    MessageConst,
    MessageDecodeError,
    MessageSysFlag,
    StoredMessage,
    decode_message,
    is_queued,
    peek_total_size_and_magic,
    tags_string_to_tags_code,
)
from pyrmq.store.store_config import MessageStoreConfig

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"  # TopicValidator.RMQ_SYS_SCHEDULE_TOPIC
PRE_BLANK_SIZE = 0x7FFFFFFF  # ConsumeQueue#fillPreBlank filler entry size
_FILE_NAME = re.compile(r"^\d{20}$")
_INDEX_NAME = re.compile(r"^\d{17}$")
#: Java defaults: 5,000,000 slots and 4 entries per slot
_DEFAULT_SLOTS, _DEFAULT_ENTRIES = 5_000_000, 20_000_000

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


class NotAStoreError(Exception):
    """The directory is missing or holds none of commitlog/, consumequeue/, config/."""


# --------------------------------------------------------------------------- files


@dataclass(slots=True)
class LogFile:
    """One fixed-size file of a log directory, mapped read-only."""

    path: str
    start: int
    size: int
    mm: mmap.mmap | None

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    def close(self) -> None:
        if self.mm is not None:
            self.mm.close()
            self.mm = None


def _map(path: str, size: int) -> mmap.mmap | None:
    if size == 0:
        return None
    with open(path, "rb") as f:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


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


def list_log_dir(directory: str, report: Report | None, expected_size: int | None = None) -> list[LogFile]:
    """Files of a log directory sorted by name (like MappedFileQueue#doLoad), checking names and lengths.

    Java refuses to start on a name that is not a long and on a length other than
    the configured one; 5.x skips sub-directories.
    """
    files: list[LogFile] = []
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return files
    for name in names:
        p = os.path.join(directory, name)
        if os.path.isdir(p):
            if report:
                report.warn(p, None, "sub-directory in a log directory (5.x skips it, 4.9.x fails to load)")
            continue
        if not _FILE_NAME.match(name):
            if report:
                report.problem(
                    p, None, "stray file: not a 20-digit offset name; the Java broker refuses to load this directory"
                )
            continue
        files.append(LogFile(p, int(name), os.path.getsize(p), None))
    if not files:
        return files
    size = expected_size or files[0].size
    for i, f in enumerate(files):
        if f.size != size:
            if report:
                last_empty = f.size == 0 and i == len(files) - 1
                (report.warn if last_empty else report.problem)(
                    f.path,
                    None,
                    f"length {f.size} != {size} (mapped file size); Java refuses to load it"
                    if not last_empty
                    else "empty last file (5.x deletes it at start)",
                )
            continue
        if f.start % size and report:
            report.problem(f.path, None, f"name {f.start} is not a multiple of the file size {size}")
        if i and f.start != files[i - 1].start + size and report:
            report.problem(
                f.path, None, f"gap: previous file starts at {files[i - 1].start}, expected {files[i - 1].start + size}"
            )
        f.mm = _map(f.path, f.size)
    return [f for f in files if f.mm is not None]


# --------------------------------------------------------------------------- commit log


@dataclass(slots=True)
class CommitLogView:
    """Read-only view of ``commitlog/`` with record lookup by physical offset."""

    files: list[LogFile]
    file_size: int

    @property
    def min_offset(self) -> int:
        return self.files[0].start if self.files else 0

    def file_at(self, offset: int) -> LogFile | None:
        if not self.files or self.file_size <= 0:
            return None
        i = (offset - self.files[0].start) // self.file_size
        if 0 <= i < len(self.files) and self.files[i].start <= offset < self.files[i].start + self.file_size:
            return self.files[i]
        for f in self.files:  # gaps: fall back to a search
            if f.start <= offset < f.start + self.file_size:
                return f
        return None

    def record_at(self, offset: int, *, read_body: bool = False) -> StoredMessage:
        """The record starting at ``offset``; raises MessageDecodeError if there is none."""
        f = self.file_at(offset)
        if f is None:
            raise MessageDecodeError(f"no commit log file holds offset {offset}")
        msg = decode_message(f.mm, offset - f.start, read_body=read_body)
        if msg.commit_log_offset != offset:
            raise MessageDecodeError(f"record there says PHYSICALOFFSET {msg.commit_log_offset}")
        return msg

    def close(self) -> None:
        for f in self.files:
            f.close()


def scan_file(
    f: LogFile, *, check_crc: bool, read_body: bool = False
) -> Iterator[tuple[int, StoredMessage | Exception | None]]:
    """(position, record) for each record of a commit log file; a blank record ends the file.

    Yields (pos, exception) for a record that cannot be decoded and stops, as
    Java recovery does; (pos, None) marks where the data ends (zeros) when that
    is not at a blank record.
    """
    buf, pos, end = f.mm, 0, f.size
    while end - pos > 4:
        total, magic = peek_total_size_and_magic(buf, pos) if end - pos >= 8 else (0, 0)
        if magic == BLANK_MAGIC_CODE:
            return
        if total == 0 and magic == 0:
            yield pos, None
            return
        try:
            msg = decode_message(buf, pos, read_body=read_body, check_crc=check_crc)
        except MessageDecodeError as e:
            if not (check_crc and _is_crc_error(buf, pos)):
                yield pos, e
                return
            yield pos, e  # only the body is bad: the length is consistent, so the scan goes on
            pos += total
            continue
        yield pos, msg
        pos += total


def _is_crc_error(buf, pos: int) -> bool:
    try:
        decode_message(buf, pos, read_body=False, check_crc=False, decode_properties=False)
    except MessageDecodeError:
        return False
    return True


def _ms(ts: int | None) -> str | None:
    if not ts:
        return None
    return _dt.datetime.fromtimestamp(ts / 1000).isoformat(sep=" ", timespec="milliseconds")


# --------------------------------------------------------------------------- consume queues


def queue_dirs(root: str) -> Iterator[tuple[str, int | None, str]]:
    """(topic, queueId or None for a non-integer name, path) under consumequeue/."""
    base = os.path.join(root, "consumequeue")
    try:
        topics = sorted(os.listdir(base))
    except FileNotFoundError:
        return
    for topic in topics:
        tdir = os.path.join(base, topic)
        if not os.path.isdir(tdir):
            yield topic, None, tdir
            continue
        for q in sorted(os.listdir(tdir), key=lambda s: (not s.isdigit(), int(s) if s.isdigit() else 0, s)):
            yield topic, (int(q) if q.lstrip("-").isdigit() else None), os.path.join(tdir, q)


def iter_cq_entries(files: list[LogFile]) -> Iterator[tuple[LogFile, int, int, int, int, int]]:
    """(file, pos, queue offset, commit log offset, size, tags code) until the first empty entry."""
    for i, f in enumerate(files):
        pos = 0
        while pos + CQ_STORE_UNIT_SIZE <= f.size:
            phy, size, tags = decode_entry(f.mm, pos)
            if phy < 0 or size <= 0:
                return
            yield f, pos, (f.start + pos) // CQ_STORE_UNIT_SIZE, phy, size, tags
            pos += CQ_STORE_UNIT_SIZE
        if i + 1 < len(files) and files[i + 1].start != f.start + f.size:
            return


def cq_summary(files: list[LogFile], cl: CommitLogView) -> dict[str, Any]:
    """min/max offset and first/last store time of one queue, the way the Java broker computes them."""
    if not files:
        return {"min_offset": 0, "max_offset": 0, "messages": 0}
    max_offset = files[0].start // CQ_STORE_UNIT_SIZE
    min_offset = None
    first_phy = last_phy = None
    for _f, _pos, qoff, phy, size, _tags in iter_cq_entries(files):
        max_offset = qoff + 1
        last_phy = phy
        if min_offset is None and size != PRE_BLANK_SIZE and phy >= cl.min_offset:
            min_offset, first_phy = qoff, phy
    if min_offset is None:
        min_offset = max_offset
    out: dict[str, Any] = {"min_offset": min_offset, "max_offset": max_offset, "messages": max_offset - min_offset}
    for key, phy in (("first_store_time", first_phy), ("last_store_time", last_phy)):
        if phy is not None and min_offset < max_offset:
            try:
                out[key] = _ms(cl.record_at(phy).store_timestamp)
            except MessageDecodeError:
                out[key] = None
    return out


# --------------------------------------------------------------------------- index geometry


def index_geometry(size: int, slots: int | None, entries: int | None) -> tuple[int, int] | None:
    """(maxHashSlotNum, maxIndexNum) of an index file of ``size`` bytes: from the flags, Java's
    defaults, or the default 1:4 ratio; None when it cannot be told."""
    if slots and entries:
        return (slots, entries) if INDEX_HEADER_SIZE + slots * HASH_SLOT_SIZE + entries * INDEX_SIZE == size else None
    if slots:
        rest = size - INDEX_HEADER_SIZE - slots * HASH_SLOT_SIZE
        return (slots, rest // INDEX_SIZE) if rest >= 0 and rest % INDEX_SIZE == 0 else None
    if entries:
        rest = size - INDEX_HEADER_SIZE - entries * INDEX_SIZE
        return (rest // HASH_SLOT_SIZE, entries) if rest >= 0 and rest % HASH_SLOT_SIZE == 0 else None
    if size == INDEX_HEADER_SIZE + _DEFAULT_SLOTS * HASH_SLOT_SIZE + _DEFAULT_ENTRIES * INDEX_SIZE:
        return _DEFAULT_SLOTS, _DEFAULT_ENTRIES
    per = HASH_SLOT_SIZE + 4 * INDEX_SIZE
    if size > INDEX_HEADER_SIZE and (size - INDEX_HEADER_SIZE) % per == 0:
        s = (size - INDEX_HEADER_SIZE) // per
        return s, 4 * s
    return None


def index_files(root: str, report: Report | None) -> list[str]:
    d = os.path.join(root, "index")
    try:
        names = sorted(os.listdir(d))
    except FileNotFoundError:
        return []
    out = []
    for n in names:
        p = os.path.join(d, n)
        if not _INDEX_NAME.match(n) or not os.path.isfile(p):
            if report:
                report.warn(p, None, "not an index file name (17-digit local time)")
            continue
        out.append(p)
    return out


# --------------------------------------------------------------------------- progress


class Progress:
    """A one-line bar on stderr, redrawn at most 10 times a second."""

    def __init__(self, total: int, enabled: bool, stream=None) -> None:
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


def _commit_log_dir(root: str, override: str | None) -> str:
    return override or os.path.join(root, "commitlog")


def _read_checkpoint(root: str) -> dict[str, Any] | None:
    p = os.path.join(root, "checkpoint")
    try:
        with open(p, "rb") as f:
            data = f.read(CHECKPOINT_FILE_SIZE)
    except FileNotFoundError:
        return None
    data = data.ljust(CHECKPOINT_LAYOUT.size, b"\0")
    names = ("physicMsgTimestamp", "logicsMsgTimestamp", "indexMsgTimestamp", "masterFlushedOffset", "confirmPhyOffset")
    return dict(zip(names, CHECKPOINT_LAYOUT.unpack_from(data, 0), strict=False))


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
            got = cfg.read_config_text(p, lambda t, c=cls: cfg.decode_config(c, t)) if _readonly_ok(p) else None
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


def _readonly_ok(path: str) -> bool:
    """read_config_text renames a corrupt file; inspect must not, so pre-check readability."""
    for p in (path, path + ".bak"):
        try:
            with open(p, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            continue
        if not data.strip():
            continue
        try:
            cfg.loads(data)
            return True
        except ValueError:
            if p == path:
                continue
            raise cfg.ConfigFileError(f"{p}: unreadable") from None
    return True


def inspect_store(root: str, *, commitlog_dir: str | None = None) -> dict[str, Any]:
    """A summary of the store (what ``pyrmq store inspect --json`` prints)."""
    _check_store_dir(root)
    cl_files = list_log_dir(_commit_log_dir(root, commitlog_dir), None)
    cl = CommitLogView(cl_files, cl_files[0].size if cl_files else 0)
    try:
        info: dict[str, Any] = {"store": os.path.abspath(root)}
        clog: dict[str, Any] = {"files": len(cl_files), "file_size": cl.file_size}
        if cl_files:
            clog["first_file"], clog["last_file"] = cl_files[0].name, cl_files[-1].name
            clog["min_offset"] = cl.min_offset
            first = next((m for _p, m in scan_file(cl_files[0], check_crc=False) if isinstance(m, StoredMessage)), None)
            clog["first_store_time"] = _ms(first.store_timestamp) if first else None
            # the max offset: end of the last record in the last file that has any
            max_offset, last = cl.min_offset, None
            for f in reversed(cl_files):
                end_pos, last_msg, blank = 0, None, False
                for pos, m in scan_file(f, check_crc=False):
                    if isinstance(m, StoredMessage):
                        end_pos, last_msg = pos + m.store_size, m
                if last_msg is not None or f is cl_files[0]:
                    _total, magic = peek_total_size_and_magic(f.mm, end_pos) if f.size - end_pos >= 8 else (0, 0)
                    blank = magic == BLANK_MAGIC_CODE
                    max_offset = f.start + (f.size if blank else end_pos)
                    last = last_msg
                    break
            clog["max_offset"] = max_offset
            clog["last_store_time"] = _ms(last.store_timestamp) if last else None
        info["commitlog"] = clog
        topics: dict[str, Any] = {}
        for topic, qid, path in queue_dirs(root):
            if qid is None:
                continue
            files = list_log_dir(path, None)
            try:
                topics.setdefault(topic, {})[str(qid)] = cq_summary(files, cl)
            finally:
                for f in files:
                    f.close()
        info["topics"] = topics
        idx = index_files(root, None)
        idx_info: dict[str, Any] = {"files": len(idx)}
        entries = 0
        for p in idx:
            with open(p, "rb") as fh:
                head = fh.read(INDEX_HEADER_SIZE)
            if len(head) == INDEX_HEADER_SIZE:
                _b_ts, _e_ts, _b, _e, _slots, count = INDEX_HEADER_LAYOUT.unpack(head)
                entries += max(count - 1, 0)
        idx_info["entries"] = entries
        info["index"] = idx_info
        info["checkpoint"] = _read_checkpoint(root)
        info["abort"] = os.path.exists(os.path.join(root, "abort"))
        info["lock"] = os.path.exists(os.path.join(root, "lock"))
        info["config"] = _config_summary(root)
        return info
    finally:
        cl.close()


def _print_inspect(info: dict[str, Any], out) -> None:
    w = out.write
    w(f"store: {info['store']}\n")
    c = info["commitlog"]
    if c["files"]:
        w(
            f"commit log: {c['files']} file(s) of {c['file_size']} bytes ({c['first_file']} .. {c['last_file']}), "
            f"offsets {c['min_offset']} .. {c['max_offset']}\n"
            f"  store time {c['first_store_time']} .. {c['last_store_time']}\n"
        )
    else:
        w("commit log: no files\n")
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
    if msg.topic == SCHEDULE_TOPIC and props.get(MessageConst.DELAY_TIME_LEVEL):
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
    cl_dir = _commit_log_dir(root, commitlog_dir)
    cl_files = list_log_dir(cl_dir, report)
    cl = CommitLogView(cl_files, cl_files[0].size if cl_files else 0)
    cq_paths = [(t, q, p) for t, q, p in queue_dirs(root)]
    idx_paths = index_files(root, report) if check_index else []
    total = sum(f.size for f in cl_files)
    for _t, _q, p in cq_paths:
        if os.path.isdir(p):
            total += sum(
                os.path.getsize(os.path.join(p, n)) for n in os.listdir(p) if os.path.isfile(os.path.join(p, n))
            )
    bar = Progress(total + sum(os.path.getsize(p) for p in idx_paths), progress)
    try:
        # 1. commit log: records, CRCs and the chain of offsets
        ended_at: int | None = None  # logical offset where valid data stopped (not at a blank)
        for f in cl_files:
            stats.commit_log_files += 1
            if ended_at is not None:
                total_, magic = peek_total_size_and_magic(f.mm, 0)
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
            for pos, m in scan_file(f, check_crc=True):
                if m is None:
                    ended_at = f.start + pos
                    break
                if isinstance(m, Exception):
                    report.problem(f.path, pos, f"bad record: {m}")
                    if "CRC" in str(m):
                        stats.records += 1
                        continue
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
        # 2. consume queues
        for topic, qid, path in cq_paths:
            if qid is None:
                report.warn(path, None, "not a queue directory (name is not an integer); Java skips it")
                continue
            stats.consume_queues += 1
            files = list_log_dir(path, report)
            try:
                _verify_cq(topic, qid, files, cl, report, stats, delay_table, bar)
            finally:
                for f in files:
                    f.close()
        # 3. index
        for p in idx_paths:
            stats.index_files += 1
            _verify_index(p, cl, report, stats, max_hash_slot_num, max_index_num)
            bar.advance(os.path.getsize(p), os.path.basename(p))
    finally:
        bar.finish()
        cl.close()
    return report, stats


def _verify_cq(
    topic: str,
    qid: int,
    files: list[LogFile],
    cl: CommitLogView,
    report: Report,
    stats: VerifyStats,
    delay_table: dict[int, int],
    bar: Progress,
) -> None:
    last_qoff = None
    for f, pos, qoff, phy, size, tags in iter_cq_entries(files):
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
            (report.warn if topic == SCHEDULE_TOPIC else report.problem)(
                f.path, pos, f"entry {qoff}: tags code {tags} != {want} computed from the record"
            )
    for f in files:
        bar.advance(f.size, f"{topic}/{qid}")
    cq_max = 0 if last_qoff is None else last_qoff + 1
    rec_max = stats.queue_max.get(f"{topic}/{qid}", 0)
    if rec_max > cq_max:
        where = files[-1].path if files else os.path.join(report.root, "consumequeue", topic, str(qid))
        report.warn(
            where,
            None,
            f"consume queue ends at offset {cq_max} but the commit log holds queue offsets up to {rec_max - 1} "
            "(not dispatched yet; the broker rebuilds this at start)",
        )


def _verify_index(
    path: str, cl: CommitLogView, report: Report, stats: VerifyStats, slots_flag: int | None, entries_flag: int | None
) -> None:
    size = os.path.getsize(path)
    geo = index_geometry(size, slots_flag, entries_flag)
    if geo is None:
        report.warn(
            path,
            None,
            f"cannot tell the slot/entry counts of a {size}-byte index file; "
            "pass --max-hash-slot-num / --max-index-num to check it",
        )
        return
    slots, max_entries = geo
    with open(path, "rb") as fh:
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        _b_ts, _e_ts, _b_phy, _e_phy, slot_count, count = INDEX_HEADER_LAYOUT.unpack_from(mm, 0)
        count = max(count, 1)
        if count > max_entries:
            report.problem(path, 32 + 4, f"indexCount {count} > maxIndexNum {max_entries}")
            return
        base = INDEX_HEADER_SIZE + slots * HASH_SLOT_SIZE
        used_slots = 0
        for s in range(slots):
            (head,) = HASH_SLOT_LAYOUT.unpack_from(mm, INDEX_HEADER_SIZE + s * HASH_SLOT_SIZE)
            if head:
                used_slots += 1
                if head < 0 or head >= count:
                    report.problem(
                        path,
                        INDEX_HEADER_SIZE + s * HASH_SLOT_SIZE,
                        f"slot {s} points at entry {head} (indexCount {count})",
                    )
        if used_slots != slot_count:
            report.warn(path, 32, f"hashSlotCount {slot_count} but {used_slots} slots are in use")
        for n in range(1, count):
            pos = base + n * INDEX_SIZE
            key_hash, phy, _time_diff, prev = INDEX_ENTRY_LAYOUT.unpack_from(mm, pos)
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
            keys = []
            uniq = msg.properties.get(MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
            if uniq:
                keys.append(uniq)
            keys.extend(k for k in (msg.properties.get(MessageConst.KEYS) or "").split(" ") if k)
            hashes = {index_key_hash(build_key(msg.topic, k)) for k in keys}
            tags = msg.properties.get(MessageConst.TAGS)
            if tags:  # 5.5.0 IndexService#buildIndex also indexes "topic#T#tags"
                hashes.add(index_key_hash(build_tag_key(msg.topic, tags)))
            if key_hash not in hashes:
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
