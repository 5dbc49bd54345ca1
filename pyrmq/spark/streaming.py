"""`rocketmq` as a streaming source: `spark.readStream.format("rocketmq").load(store)` tails a
live store directory (pyrmq's or the Java broker's) with pyspark's Python streaming API.

Offsets are consume-queue logical offsets, one per (topic, queue): `{"TopicA": {"0": 12, "1":
7}}` is "queue 0 of TopicA up to (not including) entry 12", the same numbers a consumer commits.
A micro-batch (start, end] is therefore fixed by its two offsets alone: the records it holds are
those the consume-queue entries [start, end) point at, which do not change once written. Spark
writes `end` to its checkpoint before the batch runs and replays an unfinished batch with the
same offsets, so with an idempotent sink (file sinks such as Parquet) every record lands once,
across restarts of the query and of the broker.

`latestOffset` reads each queue's last complete entry, never a half-written one: an entry is
taken only once its commit-log record is there and passes its checks (magic, PHYSICALOFFSET,
TOTALSIZE equal to the entry's size, BODYCRC); the broker writes the record before it dispatches
the entry, so a failing check means the writer is mid-append and the entry waits for the next
trigger. Records are then read by the batch source's own commit-log decoding (same schema, same
options, sources.CommitLogReader): each partition is a byte range of the commit log that holds
the batch's records, decoded with the topic filter of its queues and reduced to exactly the
commit-log offsets the entries name. Java counterparts: ConsumeQueue (entries), the pull path's
getMessage (entry -> record).

A DLedger broker's store (enableDLegerCommitLog) is followed the same way: its records sit in
the member's DLedger data files at the offsets its consume queues hold (entry pos + BODY_OFFSET,
commitlog_scan.record_files), and a member dispatches a record to its consume queues only once the
group has committed it (Java: DLedgerCommitLog#getMaxOffset is the committed position, the limit
of ReputMessageService#isCommitLogAvailable). So the stream sees records as the group commits
them, on any member, and never a leader's uncommitted tail, which a new leader may truncate.

LMQ queues (`%LMQ%...`) are not followed: their records are in their own topic's queues.
"""

from __future__ import annotations

import copy
import itertools
import json
import mmap
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import LongType, StructField, StructType

from pyrmq.spark import commitlog_scan as scan
from pyrmq.spark import other_scans as other
from pyrmq.spark.options import opt, opt_or
from pyrmq.store import reader
from pyrmq.store.consume_queue import CQ_STORE_UNIT_SIZE, PRE_BLANK_SIZE
from pyrmq.store.lmq import LMQ_PREFIX
from pyrmq.store.reader import LogFile

#: one consume-queue entry as numpy reads it (consume_queue.CQ_ENTRY_LAYOUT)
ENTRY_DTYPE = np.dtype([("phy", ">i8"), ("size", ">i4"), ("tags", ">i8")])
assert ENTRY_DTYPE.itemsize == CQ_STORE_UNIT_SIZE
#: records of one partition further apart than this start a new commit-log range (no walk over
#: the other topics' records between them)
GAP_BYTES = 1024 * 1024
#: options of the batch source that name records directly, meaningless for a stream
BATCH_ONLY_OPTIONS = ("offsets", "startOffset", "endOffset")

QueueKey = tuple[str, int]
#: offsets as Spark checkpoints them: topic -> {queue id (str): next queue offset}
Offsets = dict[str, dict[str, int]]


def to_offsets(positions: Mapping[QueueKey, int]) -> Offsets:
    """The JSON shape, keys sorted (Spark compares offsets by their JSON text)."""
    out: Offsets = {}
    for (topic, qid), v in sorted(positions.items()):
        out.setdefault(topic, {})[str(qid)] = int(v)
    return out


def from_offsets(offsets: Mapping[str, Mapping[str, int]] | None) -> dict[QueueKey, int]:
    return {(t, int(q)): int(v) for t, qs in (offsets or {}).items() for q, v in qs.items()}


# --- consume queues ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class QueueSpan:
    """Queue offsets of one consume queue: `min` the first entry whose record is still in the
    commit log, `end` one past the last complete entry."""

    topic: str
    queue_id: int
    min: int
    end: int


def _entries(log: reader.MappedLog, f: LogFile) -> np.ndarray:
    """The entries of `f` up to its first hole, a view of the map: keep it local (the map
    cannot be closed while a view lives)."""
    n = log.readable(f) // CQ_STORE_UNIT_SIZE
    return np.frombuffer(log.buffer(f), dtype=ENTRY_DTYPE, count=n)


def _first(n: int, pred: Any) -> int:
    """The first i in [0, n) with pred(i), for a predicate false then true; n if none."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _leading_valid(e: np.ndarray) -> int:
    """How many entries from the start are written (offset >= 0 and size > 0, as ConsumeQueue
    #recover reads them): the dispatcher appends, so written entries are a prefix and a zero
    entry ends the data. A binary search: a queue file has 300,000 entries."""
    return _first(len(e), lambda i: e[i]["phy"] < 0 or e[i]["size"] <= 0)


def _file_end(log: reader.MappedLog, f: LogFile) -> int:
    return _leading_valid(_entries(log, f))


def _entry(log: reader.MappedLog, f: LogFile, i: int) -> tuple[int, int]:
    e = _entries(log, f)
    return int(e[i]["phy"]), int(e[i]["size"])


def _file_min(log: reader.MappedLog, f: LogFile, n: int, min_phy: int) -> int:
    """The first of the `n` written entries of `f` that is no pre-blank filler and whose record
    is at or above `min_phy` (fillers come first, offsets grow)."""
    e = _entries(log, f)
    return _first(n, lambda i: e[i]["size"] != PRE_BLANK_SIZE and e[i]["phy"] >= min_phy)


def _slice(log: reader.MappedLog, f: LogFile, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, sizes) of the written entries among lo..hi-1 of `f`, copied."""
    part = _entries(log, f)[lo:hi]
    n = _leading_valid(part)
    return part["phy"][:n].astype(np.int64), part["size"][:n].astype(np.int64)


class CommitLogProbe:
    """Checks that a record is completely there (commit-log files mapped on first use)."""

    def __init__(self, path: str) -> None:
        self.files, _dledger = scan.record_files(path)
        self.min_offset = self.files[0].start if self.files else 0
        self._maps: dict[str, mmap.mmap | None] = {}

    def file_at(self, offset: int) -> LogFile | None:
        for f in self.files:
            if f.start <= offset < f.start + f.size:
                return f
        return None

    def complete(self, offset: int, size: int) -> bool:
        """A valid record of `size` bytes starts at commit-log offset `offset`."""
        f = self.file_at(offset)
        if f is None:
            return False
        if f.path not in self._maps:
            self._maps[f.path] = reader.map_readonly(f.path)
        mm = self._maps[f.path]
        pos = offset - f.start
        if mm is None or pos + size > len(mm) or not scan._is_boundary(mm, f.start, pos, len(mm)):
            return False
        msg, _why = scan.check_record(mm, pos, pos + size)
        return msg is not None and msg.store_size == size

    def close(self) -> None:
        for mm in self._maps.values():
            if mm is not None:
                mm.close()
        self._maps.clear()


def followed(topic: str, queue_id: int, topics: frozenset[str] | None, queue_ids: frozenset[int] | None) -> bool:
    if topic.startswith(LMQ_PREFIX):
        return False
    return (topics is None or topic in topics) and (queue_ids is None or queue_id in queue_ids)


def queue_spans(
    path: str, topics: frozenset[str] | None = None, queue_ids: frozenset[int] | None = None
) -> dict[QueueKey, QueueSpan]:
    """(min, end) of every followed consume queue of the store at `path`."""
    probe = CommitLogProbe(path)
    out: dict[QueueKey, QueueSpan] = {}
    try:
        for q in other.list_consume_queues(path):
            if not followed(q.topic, q.queue_id, topics, queue_ids):
                continue
            log, _ = reader.open_log(q.path)
            with log:
                span = _span(log, q, probe)
            if span is not None:
                out[(q.topic, q.queue_id)] = span
    finally:
        probe.close()
    return out


def _span(log: reader.MappedLog, q: other.QueueDir, probe: CommitLogProbe) -> QueueSpan | None:
    files = log.files
    if not files:
        return None
    unit = CQ_STORE_UNIT_SIZE
    # the end: the last file with a written first entry (a fresh next file is all zeros)
    last: tuple[LogFile, int] | None = None
    for f in reversed(files):
        n = _file_end(log, f)
        if n:
            last = (f, n)
            break
    if last is None:
        return QueueSpan(q.topic, q.queue_id, files[0].start // unit, files[0].start // unit)
    f, n = last
    # back off from entries whose record is not (yet) complete: the writer is mid-append
    while n and not probe.complete(*_entry(log, f, n - 1)):
        n -= 1
    end = f.start // unit + n
    # the min: the first real entry whose record the commit log still holds (correctMinOffset)
    lo = end
    for g in files:
        k = n if g is f else _file_end(log, g)
        i = _file_min(log, g, k, probe.min_offset)
        if i < k:
            lo = min(end, g.start // unit + i)
            break
        if g is f or k < g.size // unit:
            break
    return QueueSpan(q.topic, q.queue_id, lo, end)


def read_entries(path: str, topic: str, queue_id: int, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
    """(commit-log offsets, sizes) of the entries [start, end) of one consume queue. Raises
    ValueError when entries of the range are gone or not written (a checkpoint from another
    store, or the broker deleted expired files)."""
    qdir = reader.sub_dir(path, "consumequeue")
    log, _ = reader.open_log(os.path.join(qdir, topic, str(queue_id)))
    unit = CQ_STORE_UNIT_SIZE
    phys, sizes, got = [], [], start
    with log:
        for f in log.files:
            first = f.start // unit
            if got >= end or first >= end or first + f.size // unit <= got:
                continue
            if got < first:
                break  # a gap below the range: reported as missing
            p, z = _slice(log, f, got - first, end - first)
            phys.append(p)
            sizes.append(z)
            got += len(p)
            if got < min(end, first + f.size // unit):
                break
    if got != end:
        raise ValueError(
            f"consume queue {topic}/{queue_id} of {path} has no entries [{got}, {end}) any more "
            f"(asked for [{start}, {end})): expired, or the checkpoint belongs to another store"
        )
    if not phys:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(phys), np.concatenate(sizes)


# --- planning a micro-batch ----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Piece:
    """Records of one commit-log range: the split to decode, the offsets to keep, the topics."""

    split: scan.Split
    offsets: np.ndarray
    topics: frozenset[str]


def plan_pieces(
    path: str, wanted: Mapping[QueueKey, tuple[int, int]], split_size: int, gap: int = GAP_BYTES
) -> list[Piece]:
    """Commit-log ranges holding the records of the queue ranges `wanted` ((topic, qid) ->
    [start, end)), in commit-log order: a new range at a file boundary, a gap larger than
    `gap`, or `split_size` bytes."""
    phys, ends, topic_of = [], [], []
    topics = sorted({t for t, _ in wanted})
    tindex = {t: i for i, t in enumerate(topics)}
    for (topic, qid), (s, e) in sorted(wanted.items()):
        if e <= s:
            continue
        p, z = read_entries(path, topic, qid, s, e)
        phys.append(p)
        ends.append(p + z)
        topic_of.append(np.full(len(p), tindex[topic], np.int32))
    if not phys:
        return []
    phy = np.concatenate(phys)
    end = np.concatenate(ends)
    tix = np.concatenate(topic_of)
    order = np.argsort(phy, kind="stable")
    phy, end, tix = phy[order], end[order], tix[order]
    files, dledger = scan.record_files(path)
    starts = np.array([f.start for f in files], np.int64)
    fidx = np.searchsorted(starts, phy, side="right") - 1
    if len(files) == 0 or (fidx < 0).any() or (phy >= starts[fidx] + np.array([f.size for f in files])[fidx]).any():
        raise ValueError(f"the commit log of {path} no longer holds records the consume queues point at")
    brk = np.ones(len(phy), bool)
    brk[1:] = (fidx[1:] != fidx[:-1]) | (phy[1:] - end[:-1] > gap)
    seg = np.cumsum(brk) - 1
    seg_start = phy[brk][seg]
    sub = (phy - seg_start) // max(split_size, 1)
    brk[1:] |= sub[1:] != sub[:-1]
    bounds = [*np.flatnonzero(brk).tolist(), len(phy)]
    pieces = []
    for a, b in itertools.pairwise(bounds):
        f = files[int(fidx[a])]
        split = scan.record_split(f, dledger, int(phy[a]), int(phy[b - 1]), int(end[a:b].max()))
        pieces.append(Piece(split, phy[a:b].copy(), frozenset(topics[i] for i in np.unique(tix[a:b]))))
    return pieces


def group_pieces(pieces: list[Piece], split_size: int) -> list[list[Piece]]:
    """Consecutive pieces into tasks of about `split_size` commit-log bytes each."""
    out: list[list[Piece]] = []
    size = 0
    for p in pieces:
        span = p.split.stop - p.split.start
        if not out or size + span > split_size:
            out.append([])
            size = 0
        out[-1].append(p)
        size += span
    return out


def allot(avail: Mapping[QueueKey, int], limit: int) -> dict[QueueKey, int]:
    """Share at most `limit` records among queues with `avail` new ones each: every queue gets
    an equal share, what a queue cannot use goes to the others (no queue starves)."""
    left = {k: v for k, v in avail.items() if v > 0}
    got = dict.fromkeys(avail, 0)
    budget = max(limit, 0)
    while left and budget:
        share = max(budget // len(left), 1)
        for k in sorted(left):
            take = min(share, left[k], budget)
            got[k] += take
            left[k] -= take
            budget -= take
            if not left[k]:
                del left[k]
            if not budget:
                break
    return got


def parse_starting(text: str) -> str | dict[QueueKey, int]:
    """startingOffsets: earliest, latest, or JSON {"topic": {"queueId": offset}}."""
    t = text.strip()
    if t.lower() in ("earliest", "latest"):
        return t.lower()
    try:
        return from_offsets(json.loads(t))
    except (ValueError, TypeError, AttributeError) as e:
        raise ValueError(
            f'option startingOffsets must be earliest, latest or JSON like {{"TopicA": {{"0": 12}}}}, not {text!r}'
        ) from e


def keep_offsets(batch: Any, offsets: np.ndarray, names: list[str]) -> Any:
    """The rows of `batch` whose commitLogOffset is one of `offsets`, reduced to `names`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    keep = pc.is_in(batch.column("commitLogOffset"), value_set=pa.array(offsets, pa.int64()))
    batch = batch.filter(keep)
    return batch if batch.schema.names == names else batch.select(names)


def batches(inner: Any, partition: type, piece: Piece, names: list[str]) -> Iterator[Any]:
    """Decode one piece with the batch source's reader `inner` (a sources.CommitLogReader whose
    schema has commitLogOffset) and its partition type, limited to the piece's topics and offsets."""
    r = copy.copy(inner)
    r.filter = replace(inner.filter)
    r.filter.intersect_topics(set(piece.topics))
    for b in r.read(partition(piece.split)):
        out = keep_offsets(b, piece.offsets, names)
        if out.num_rows:
            yield out


# --- the Spark stream reader ---------------------------------------------------------------------
class _Task(InputPartition):
    """The pieces one task decodes."""

    def __init__(self, pieces: list[Piece]) -> None:
        super().__init__(pieces)


class RocketMQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets: consume-queue offsets per (topic, queue); see the module docstring."""

    def __init__(
        self, options: Mapping[str, str], schema: StructType, make_inner: Callable[[StructType], Any], partition: type
    ) -> None:
        """``make_inner(schema)``: the batch source's commit-log reader for a schema, and
        ``partition`` its partition type (sources.py hands both in: it imports this module)."""
        for name in BATCH_ONLY_OPTIONS:
            if opt(options, name) is not None:
                raise ValueError(f"option {name} is for batch reads; a stream follows the consume queues")
        self.names: list[str] = schema.fieldNames()
        full = schema
        if "commitLogOffset" not in self.names:
            full = StructType([*schema.fields, StructField("commitLogOffset", LongType())])
        self.inner = make_inner(full)
        self.partition = partition
        self.path = self.inner.path
        self.starting = parse_starting(opt_or(options, "startingOffsets", "earliest"))
        rows = opt(options, "maxRecordsPerTrigger")
        self.max_rows = None if rows is None else int(rows)
        if self.max_rows is not None and self.max_rows <= 0:
            raise ValueError(f"option maxRecordsPerTrigger must be positive, not {rows!r}")
        self.target: dict[QueueKey, int] | None = None  # Trigger.AvailableNow's end

    def _spans(self) -> dict[QueueKey, QueueSpan]:
        f = self.inner.filter
        return queue_spans(self.path, f.topics, f.queue_ids)

    def initialOffset(self) -> dict:
        spans = self._spans()
        if self.starting == "latest":
            return to_offsets({k: s.end for k, s in spans.items()})
        if self.starting == "earliest":
            return to_offsets({k: s.min for k, s in spans.items()})
        assert isinstance(self.starting, dict)
        given = self.starting
        return to_offsets({k: s.min for k, s in spans.items()} | given)

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadAllAvailable() if self.max_rows is None else ReadMaxRows(self.max_rows)

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = {k: s.end for k, s in self._spans().items()}

    def latestOffset(self, start: dict | None = None, limit: ReadLimit | None = None) -> dict:
        spans = self._spans()
        begin = from_offsets(start)
        starts: dict[QueueKey, int] = {}
        ends: dict[QueueKey, int] = {}
        for k in sorted(set(begin) | set(spans)):
            s = starts[k] = begin.get(k, spans[k].min if k in spans else 0)
            e = spans[k].end if k in spans else s
            if self.target is not None:
                e = min(e, self.target.get(k, s))
            ends[k] = max(e, s)  # never backwards (a broker that truncated a dirty tail)
        if isinstance(limit, ReadMaxRows):
            got = allot({k: ends[k] - starts[k] for k in ends}, limit.max_rows)
            ends = {k: starts[k] + got[k] for k in ends}
        return to_offsets(ends)

    def reportLatestOffset(self) -> dict | None:
        return to_offsets({k: s.end for k, s in self._spans().items()})

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        begin, stop = from_offsets(start), from_offsets(end)
        spans = self._spans() if any(k not in begin for k in stop) else {}
        wanted = {}
        for k, e in stop.items():
            s = begin[k] if k in begin else (spans[k].min if k in spans else e)
            if e > s:
                wanted[k] = (s, e)
        pieces = plan_pieces(self.path, wanted, self.inner.split_size)
        return [_Task(g) for g in group_pieces(pieces, self.inner.split_size)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        pieces: list[Piece] = partition.value
        for piece in pieces or ():
            yield from batches(self.inner, self.partition, piece, self.names)

    def commit(self, end: dict) -> None:
        """Nothing to release: the store is only read."""


#: what a query's error says when Spark's wait for this source's Python process ran out: pyspark
#: 4.x starts it with PythonWorkerFactory#createSimpleWorker, which waits a fixed 10 s for it to
#: connect back (Selector.select(10000), no setting governs it); a saturated machine can miss that
SOURCE_START_TIMEOUT = "Python worker failed to connect back"


def died_at_source_start(query: Any) -> bool:
    """Whether a StreamingQuery stopped because its source process did not connect back in time.
    The source had not planned a batch yet, so starting the query again from its checkpoint is
    safe: the restart resumes from the last committed offsets like any other."""
    if query.isActive:
        return False
    err = query.exception()
    return err is not None and SOURCE_START_TIMEOUT in str(err)
