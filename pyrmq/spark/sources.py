"""PySpark 4.1+ Python data sources over a store directory: `rocketmq` (commit-log records),
`rocketmq_consumequeue`, `rocketmq_index`, `rocketmq_offsets`. Use `pyrmq.spark.register(spark)`.

Planning (partitions, pushFilters) runs in a Python worker on the driver side, reading runs in
executors; both only open files under the given path, so on a cluster the store must be visible
at the same path to every executor (shared or local disk). See docs/spark.md.
"""

from __future__ import annotations

import datetime as _dt
import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceReader, Filter, InputPartition
from pyspark.sql.types import StructType

if TYPE_CHECKING:
    from pyspark.accumulators import Accumulator

from pyrmq.spark import commitlog_scan as scan
from pyrmq.spark import other_scans as other
from pyrmq.spark.columns import (
    CONSUME_QUEUE_COLUMNS,
    INDEX_COLUMNS,
    MESSAGE_COLUMNS,
    OFFSET_COLUMNS,
    MessageColumns,
    RecordFilter,
    ddl,
)
from pyrmq.spark.options import Options
from pyrmq.spark.options import opt as _opt
from pyrmq.spark.options import opt_or as _opt_or

try:  # pyspark >= 4.1
    from pyspark.sql.datasource import (
        EqualTo,
        GreaterThan,
        GreaterThanOrEqual,
        In,
        LessThan,
        LessThanOrEqual,
    )
except ImportError:  # pragma: no cover - pyspark 4.0: no pushdown, options only
    EqualTo = GreaterThan = GreaterThanOrEqual = In = LessThan = LessThanOrEqual = ()  # type: ignore

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
#: set (to any value) in the executors' environment: one stderr line per commit-log split read
PROGRESS_ENV = "PYRMQ_SPARK_PROGRESS"
#: the JVM class whose `readInfo` field says that Spark plans each scan of a Python source afresh
SCAN_BUILDER_CLASS = "org.apache.spark.sql.execution.datasources.v2.python.PythonScanBuilder"


def read_info_per_scan(spark: Any) -> bool:
    """Whether the running Spark keeps a Python data source's planned read per scan (then a
    pushed filter cannot leak into a later query on the same DataFrame). False when it cannot
    tell (Spark Connect: no JVM at hand)."""
    try:
        fields = spark._jvm.java.lang.Class.forName(SCAN_BUILDER_CLASS).getDeclaredFields()
        return any(f.getName() == "readInfo" for f in fields)
    except Exception:
        return False


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


# --- options -------------------------------------------------------------------------------------
def _path(options: Options) -> str:
    p = _opt(options, "path")
    if p is None:
        raise ValueError("give the store directory: spark.read.format(...).load('/path/to/store')")
    if not os.path.isdir(p):
        raise FileNotFoundError(f"store directory {p!r} does not exist")
    return p


def parse_time_ms(text: str) -> int:
    """Epoch milliseconds, or an ISO-8601 date/time (UTC unless it carries an offset)."""
    t = text.strip()
    if t.lstrip("-").isdigit():
        return int(t)
    d = _dt.datetime.fromisoformat(t.replace("Z", "+00:00"))
    if d.tzinfo is None:
        d = d.replace(tzinfo=_dt.UTC)
    return int((d - _EPOCH) / _dt.timedelta(milliseconds=1))


def _to_us(value: Any) -> int | None:
    """A pushed timestamp literal as epoch microseconds (Spark's own resolution)."""
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.UTC)
        return int((value - _EPOCH) // _dt.timedelta(microseconds=1))
    return None


def _pushdown(options: Options, default: bool = False) -> bool:
    return _opt_or(options, "pushdown", "true" if default else "false").lower() == "true"


def _columns(options: Options, known: dict[str, str]) -> list[str]:
    cols = _opt(options, "columns")
    return list(known) if cols is None else [c.strip() for c in cols.split(",") if c.strip()]


def _check_schema(schema: StructType, known: dict[str, str]) -> list[str]:
    names = schema.fieldNames()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown column(s) {unknown}; known: {list(known)}")
    return names


def _arrow_schema(schema: StructType) -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


class _Partition(InputPartition):
    def __init__(self, value: Any) -> None:
        super().__init__(value)


# --- rocketmq: commit-log records ----------------------------------------------------------------
class CommitLogReader(DataSourceReader):
    """Byte-range partitions over the commit log (commitlog_scan), Arrow batches out."""

    def __init__(self, options: Options, schema: StructType, corrupt_acc: Any = None) -> None:
        self.path = _path(options)
        self.names = _check_schema(schema, MESSAGE_COLUMNS)
        self.schema = schema
        self.split_size = int(_opt_or(options, "splitSize", str(256 * 1024 * 1024)))
        self.corrupt = _opt_or(options, "corrupt", "fail")
        if self.corrupt not in ("fail", "skip"):
            raise ValueError(f"option corrupt must be fail or skip, not {self.corrupt!r}")
        self.check_crc = _opt_or(options, "checkCRC", "true").lower() == "true"
        self.include_uncommitted = _opt_or(options, "includeUncommitted", "false").lower() == "true"
        self.batch_rows = int(_opt_or(options, "batchRows", "65536"))
        self.batch_bytes = int(_opt_or(options, "batchBytes", "0")) or None  # None: by the columns
        if self.batch_bytes is not None and self.batch_bytes < 0:
            raise ValueError(f"option batchBytes must be positive, not {self.batch_bytes}")
        self.decoder = _opt_or(options, "decoder", "bulk")
        if self.decoder not in ("bulk", "reference"):
            raise ValueError(f"option decoder must be bulk or reference, not {self.decoder!r}")
        self.corrupt_acc = corrupt_acc
        f = RecordFilter()
        if (t := _opt(options, "topic")) is not None:
            f.intersect_topics({x for x in t.split(",") if x})
        if (tg := _opt(options, "tags")) is not None:
            f.intersect_tags({x for x in tg.split(",") if x})
        if (q := _opt(options, "queueId")) is not None:
            f.intersect_queue_ids({int(x) for x in q.split(",") if x})
        if (s := _opt(options, "startTime")) is not None:
            f.bound_store(lo=parse_time_ms(s) * 1000)
        if (e := _opt(options, "endTime")) is not None:  # exclusive
            f.bound_store(hi=parse_time_ms(e) * 1000 - 1)
        if (so := _opt(options, "startOffset")) is not None:
            f.bound_offset(lo=int(so))
        if (eo := _opt(options, "endOffset")) is not None:  # exclusive
            f.bound_offset(hi=int(eo) - 1)
        self.filter = f
        o = _opt(options, "offsets")
        self.offsets = None if o is None else [int(x) for x in o.split(",") if x.strip()]

    def _push_filters(self, filters: Iterable[Filter]) -> Iterator[Filter]:
        """Topic (=, IN), queueId (=, IN), storeTimestamp and commitLogOffset comparisons are
        applied per record, before any column is built; the rest is left to Spark."""
        for flt in filters:
            if not self._push(flt):
                yield flt

    def _push(self, flt: Filter) -> bool:
        attribute: tuple[str, ...] = getattr(flt, "attribute", ())
        col = attribute[0] if len(attribute) == 1 else None
        f = self.filter
        if col == "topic":
            if isinstance(flt, EqualTo) and isinstance(flt.value, str):
                f.intersect_topics({flt.value})
                return True
            if isinstance(flt, In) and all(isinstance(v, str) for v in flt.value):
                f.intersect_topics(set(flt.value))
                return True
        elif col == "tags":
            if isinstance(flt, EqualTo) and isinstance(flt.value, str):
                f.intersect_tags({flt.value})
                return True
            if isinstance(flt, In) and all(isinstance(v, str) for v in flt.value):
                f.intersect_tags(set(flt.value))
                return True
        elif col == "queueId":
            if isinstance(flt, EqualTo) and isinstance(flt.value, int):
                f.intersect_queue_ids({flt.value})
                return True
            if isinstance(flt, In) and all(isinstance(v, int) for v in flt.value):
                f.intersect_queue_ids(set(flt.value))
                return True
        elif col in ("storeTimestamp", "commitLogOffset"):
            if col == "storeTimestamp":
                v = _to_us(getattr(flt, "value", None))
                bound = f.bound_store
            else:
                v = getattr(flt, "value", None)
                v = v if isinstance(v, int) and not isinstance(v, bool) else None
                bound = f.bound_offset
            if not isinstance(v, int):
                return False
            if isinstance(flt, EqualTo):
                bound(lo=v, hi=v)
            elif isinstance(flt, GreaterThan):
                bound(lo=v + 1)
            elif isinstance(flt, GreaterThanOrEqual):
                bound(lo=v)
            elif isinstance(flt, LessThan):
                bound(hi=v - 1)
            elif isinstance(flt, LessThanOrEqual):
                bound(hi=v)
            else:
                return False
            return True
        return False

    def partitions(self) -> list[InputPartition]:
        if self.offsets is not None:
            return [_Partition(s) for s in scan.plan_offset_splits(self.path, self.offsets, self.include_uncommitted)]
        opts = scan.PlanOptions(
            split_size=self.split_size,
            min_offset=self.filter.min_offset,
            max_offset=None if self.filter.max_offset is None else self.filter.max_offset + 1,
            include_uncommitted=self.include_uncommitted,
        )
        return [_Partition(s) for s in scan.plan_splits(self.path, opts)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        split: scan.Split = partition.value
        if split is None:  # Spark's stand-in when there is no partition
            return
        arrow_schema = _arrow_schema(self.schema)
        stats = scan.ScanStats()
        started = time.monotonic()
        try:
            if self.decoder == "bulk" and not split.dledger:  # a DLedger store: the reference path
                from pyrmq.spark.bulk import BulkScan

                bulk = BulkScan(self.names, arrow_schema, self.filter, self.check_crc, self.corrupt, self.batch_rows)
                bulk.batch_bytes = self.batch_bytes
                for batch in bulk.read(split, stats):
                    if batch.num_rows:
                        yield batch
            else:
                yield from self._read_reference(split, arrow_schema, stats)
        finally:
            if stats.corrupt and self.corrupt_acc is not None:
                self.corrupt_acc.add(list(stats.corrupt))
            if os.environ.get(PROGRESS_ENV):
                print(
                    f"pyrmq.spark: {os.path.basename(split.path)} [{split.start}, {split.stop}): "
                    f"{stats.records} records, {len(stats.corrupt)} corrupt, {time.monotonic() - started:.1f}s",
                    file=sys.stderr,
                    flush=True,
                )

    def _read_reference(self, split: scan.Split, arrow_schema: Any, stats: scan.ScanStats) -> Iterator[Any]:
        """One StoredMessage per record (decoder=reference): the definition the bulk decoder is
        tested against."""
        names = self.names if self.filter.tags is None or "tags" in self.names else [*self.names, "tags"]
        if names is not self.names:
            import pyarrow as pa

            arrow_schema = arrow_schema.append(pa.field("tags", pa.string()))
        cols = MessageColumns(names)
        accepts = self.filter.accepts
        add = cols.add
        name = os.path.basename(split.path)
        for buf, pos, msg in scan.iter_split(split, check_crc=self.check_crc, corrupt=self.corrupt, stats=stats):
            if accepts(msg):
                add(buf, pos, msg, name)
                if cols.rows >= self.batch_rows:
                    yield self.filter.keep_tags(cols.take_batch(arrow_schema), self.names)
        if cols.rows:
            yield self.filter.keep_tags(cols.take_batch(arrow_schema), self.names)


class CommitLogPushdownReader(CommitLogReader):
    """CommitLogReader that also takes filters from Spark (pushdown, see RocketMQDataSource).

    Spark up to 4.3 keeps the planned read (reader + partitions) on the data source provider of
    the DataFrame's relation (PythonDataSourceV2.readInfo) and replaces it only when a query
    offers a filter Python can take: a later query on the *same* DataFrame without one reuses
    the earlier query's reader, filters included. Later Spark keeps it per scan
    (PythonScanBuilder.readInfo); register() detects which one runs (docs/spark.md)."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        return self._push_filters(filters)


class RocketMQDataSource(DataSource):
    """`rocketmq`: one row per commit-log record. Options: see docs/spark.md."""

    #: set on the subclass register() makes: (file, file position, commit-log offset, reason) per skipped record
    corrupt_accumulator: Accumulator[list[tuple[str, int, int, str]]] | None = None
    #: pushdown when the option is not given: register() sets it where Spark plans each scan afresh
    pushdown_default: bool = False

    @classmethod
    def name(cls) -> str:
        return "rocketmq"

    def schema(self) -> str:
        return ddl(MESSAGE_COLUMNS, _columns(self.options, MESSAGE_COLUMNS))

    def reader(self, schema: StructType) -> DataSourceReader:
        cls = CommitLogPushdownReader if _pushdown(self.options, self.pushdown_default) else CommitLogReader
        return cls(self.options, schema, type(self).corrupt_accumulator)

    def streamReader(self, schema: StructType) -> Any:
        """`spark.readStream.format("rocketmq")`: tails the store by consume-queue offsets
        (pyrmq.spark.streaming)."""
        from pyrmq.spark.streaming import RocketMQStreamReader

        acc = type(self).corrupt_accumulator
        return RocketMQStreamReader(
            self.options, schema, lambda full: CommitLogReader(self.options, full, acc), _Partition
        )


# --- rocketmq_consumequeue -----------------------------------------------------------------------
class ConsumeQueueReader(DataSourceReader):
    def __init__(self, options: Options, schema: StructType) -> None:
        self.path = _path(options)
        self.names = _check_schema(schema, CONSUME_QUEUE_COLUMNS)
        self.schema = schema
        t = _opt(options, "topic")
        self.topics = None if t is None else {x for x in t.split(",") if x}

    def _push_filters(self, filters: Iterable[Filter]) -> Iterator[Filter]:
        for flt in filters:
            if isinstance(flt, EqualTo) and flt.attribute == ("topic",) and isinstance(flt.value, str):
                self.topics = {flt.value} if self.topics is None else self.topics & {flt.value}
            elif isinstance(flt, In) and flt.attribute == ("topic",) and all(isinstance(v, str) for v in flt.value):
                self.topics = set(flt.value) if self.topics is None else self.topics & set(flt.value)
            else:
                yield flt

    def partitions(self) -> list[InputPartition]:
        return [
            _Partition(q) for q in other.list_consume_queues(self.path) if self.topics is None or q.topic in self.topics
        ]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        import pyarrow as pa

        q: other.QueueDir = partition.value
        if q is None:
            return
        arrow_schema = _arrow_schema(self.schema)
        rows: dict[str, list[Any]] = {
            "topic": [],
            "queueId": [],
            "queueOffset": [],
            "commitLogOffset": [],
            "size": [],
            "tagsCode": [],
            "file": [],
        }
        for qo, off, size, tags, fpath in other.iter_consume_queue(q):
            rows["queueOffset"].append(qo)
            rows["commitLogOffset"].append(off)
            rows["size"].append(size)
            rows["tagsCode"].append(tags)
            rows["file"].append(os.path.basename(fpath))
        n = len(rows["queueOffset"])
        if not n:
            return
        rows["topic"] = [q.topic] * n
        rows["queueId"] = [q.queue_id] * n
        yield pa.RecordBatch.from_arrays(
            [pa.array(rows[c], type=arrow_schema.field(c).type) for c in self.names], schema=arrow_schema
        )


class ConsumeQueuePushdownReader(ConsumeQueueReader):
    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        return self._push_filters(filters)


class ConsumeQueueDataSource(DataSource):
    """`rocketmq_consumequeue`: one row per consume-queue entry (one partition per queue)."""

    pushdown_default: bool = False

    @classmethod
    def name(cls) -> str:
        return "rocketmq_consumequeue"

    def schema(self) -> str:
        return ddl(CONSUME_QUEUE_COLUMNS, _columns(self.options, CONSUME_QUEUE_COLUMNS))

    def reader(self, schema: StructType) -> DataSourceReader:
        cls = ConsumeQueuePushdownReader if _pushdown(self.options, self.pushdown_default) else ConsumeQueueReader
        return cls(self.options, schema)


# --- rocketmq_index ------------------------------------------------------------------------------
class IndexReader(DataSourceReader):
    def __init__(self, options: Options, schema: StructType) -> None:
        self.path = _path(options)
        self.names = _check_schema(schema, INDEX_COLUMNS)
        self.schema = schema
        s, n = _opt(options, "maxHashSlotNum"), _opt(options, "maxIndexNum")
        self.slots = None if s is None else int(s)
        self.entries = None if n is None else int(n)

    def partitions(self) -> list[InputPartition]:
        return [_Partition(p) for p in other.list_index_files(self.path)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        import pyarrow as pa

        path: str = partition.value
        if path is None:
            return
        arrow_schema = _arrow_schema(self.schema)
        order = [
            "keyHash",
            "phyOffset",
            "timeDiff",
            "storeTimestamp",
            "prevIndex",
            "slot",
            "entry",
            "fileBeginTimestamp",
            "fileEndTimestamp",
        ]
        cols: dict[str, list[Any]] = {c: [] for c in order}
        for row in other.iter_index_file(path, self.slots, self.entries):
            for c, v in zip(order, row, strict=False):
                cols[c].append(v)
        n = len(cols["entry"])
        if not n:
            return
        for c in ("storeTimestamp", "fileBeginTimestamp", "fileEndTimestamp"):
            cols[c] = [v * 1000 for v in cols[c]]
        cols["file"] = [os.path.basename(path)] * n
        yield pa.RecordBatch.from_arrays(
            [pa.array(cols[c], type=arrow_schema.field(c).type) for c in self.names], schema=arrow_schema
        )


class IndexDataSource(DataSource):
    """`rocketmq_index`: one row per index entry. keyHash = pyrmq.spark.index_key_hash(topic, key)."""

    @classmethod
    def name(cls) -> str:
        return "rocketmq_index"

    def schema(self) -> str:
        return ddl(INDEX_COLUMNS, _columns(self.options, INDEX_COLUMNS))

    def reader(self, schema: StructType) -> DataSourceReader:
        return IndexReader(self.options, schema)


# --- rocketmq_offsets ----------------------------------------------------------------------------
class OffsetsReader(DataSourceReader):
    def __init__(self, options: Options, schema: StructType) -> None:
        self.path = _path(options)
        self.names = _check_schema(schema, OFFSET_COLUMNS)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        rows, used = other.read_consumer_offsets(self.path)
        name = None if used is None else os.path.basename(used)
        for group, topic, qid, off in rows:
            full = {"group": group, "topic": topic, "queueId": qid, "offset": off, "file": name}
            yield tuple(full[c] for c in self.names)


class OffsetsDataSource(DataSource):
    """`rocketmq_offsets`: committed offsets from config/consumerOffset.json (group, topic, queueId)."""

    @classmethod
    def name(cls) -> str:
        return "rocketmq_offsets"

    def schema(self) -> str:
        return ddl(OFFSET_COLUMNS, _columns(self.options, OFFSET_COLUMNS))

    def reader(self, schema: StructType) -> DataSourceReader:
        return OffsetsReader(self.options, schema)
