"""Row shape of every source, and the columnar builder for commit-log records.

Spark-free (pyarrow only), so the scan is testable without a JVM. Column names are camelCase like
Java's MessageExt getters (topic, queueId, commitLogOffset, ...). Which columns are built follows
the schema Spark hands the reader: a schema without `body` never copies a body, one without any
property column never parses properties (see docs/spark.md, "Column pruning").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyrmq.common.constants import MessageConst
from pyrmq.store import message as m

#: name -> Spark DDL type; the `rocketmq` source's full schema, in this order
MESSAGE_COLUMNS: dict[str, str] = {
    "topic": "string",
    "queueId": "int",
    "queueOffset": "bigint",
    "commitLogOffset": "bigint",
    "storeSize": "int",
    "offsetMsgId": "string",
    "msgId": "string",
    "keys": "array<string>",
    "tags": "string",
    "properties": "map<string,string>",
    "body": "binary",
    "bodySize": "int",
    "flag": "int",
    "sysFlag": "int",
    "bodyCRC": "int",
    "reconsumeTimes": "int",
    "preparedTransactionOffset": "bigint",
    "bornHost": "string",
    "storeHost": "string",
    "bornTimestamp": "timestamp",
    "storeTimestamp": "timestamp",
    "version": "int",
    "file": "string",
}
#: columns that need the properties string parsed
PROPERTY_COLUMNS = frozenset({"msgId", "keys", "tags", "properties"})

CONSUME_QUEUE_COLUMNS: dict[str, str] = {
    "topic": "string",
    "queueId": "int",
    "queueOffset": "bigint",
    "commitLogOffset": "bigint",
    "size": "int",
    "tagsCode": "bigint",
    "file": "string",
}

INDEX_COLUMNS: dict[str, str] = {
    "keyHash": "int",
    "phyOffset": "bigint",
    "timeDiff": "int",
    "storeTimestamp": "timestamp",
    "prevIndex": "int",
    "slot": "int",
    "entry": "int",
    "fileBeginTimestamp": "timestamp",
    "fileEndTimestamp": "timestamp",
    "file": "string",
}

OFFSET_COLUMNS: dict[str, str] = {
    "group": "string",
    "topic": "string",
    "queueId": "int",
    "offset": "bigint",
    "file": "string",
}


def ddl(columns: dict[str, str], names: list[str] | None = None) -> str:
    names = list(columns) if names is None else names
    unknown = [n for n in names if n not in columns]
    if unknown:
        raise ValueError(f"unknown column(s) {unknown}; known: {list(columns)}")
    return ", ".join(f"`{n}` {columns[n]}" for n in names)


def host_text(host: m.Host) -> str:
    """ip:port, IPv6 in brackets (Java prints InetSocketAddress as /ip:port)."""
    ip, port = host
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def split_keys(keys: str | None) -> list[str]:
    """KEYS is space-separated (MessageConst.KEY_SEPARATOR); empty tokens are not keys."""
    return [k for k in keys.split(" ") if k] if keys else []


def _decode_props(buf: m.ReadableBuffer, pos: int, msg: m.StoredMessage) -> dict[str, str]:
    """Properties of a header-decoded record: they are the record's last bytes."""
    topic_len_size = 2 if msg.magic_code == m.MESSAGE_MAGIC_CODE_V2 else 1
    props_pos = (
        pos + m.body_position(msg.sys_flag) + msg.body_length + topic_len_size + len(msg.topic.encode("utf-8")) + 2
    )
    end = pos + msg.store_size
    if props_pos >= end:
        return {}
    return m.string_to_message_properties(bytes(buf[props_pos:end]).decode("utf-8"))


@dataclass(slots=True)
class RecordFilter:
    """Predicates applied per record before any column is built (pushed-down filters and options).
    Time bounds are epoch microseconds (Spark timestamps), offsets commit-log offsets."""

    topics: frozenset[str] | None = None
    queue_ids: frozenset[int] | None = None
    min_store_us: int | None = None  # inclusive
    max_store_us: int | None = None  # inclusive
    min_offset: int | None = None  # inclusive
    max_offset: int | None = None  # inclusive
    tags: frozenset[str] | None = None  # a row-level filter (inner-batch elements have their own tags)

    def intersect_topics(self, topics: set[str]) -> None:
        self.topics = frozenset(topics) if self.topics is None else self.topics & frozenset(topics)

    def intersect_queue_ids(self, ids: set[int]) -> None:
        self.queue_ids = frozenset(ids) if self.queue_ids is None else self.queue_ids & frozenset(ids)

    def intersect_tags(self, tags: set[str]) -> None:
        self.tags = frozenset(tags) if self.tags is None else self.tags & frozenset(tags)

    def bound_store(self, lo: int | None = None, hi: int | None = None) -> None:
        if lo is not None:
            self.min_store_us = lo if self.min_store_us is None else max(self.min_store_us, lo)
        if hi is not None:
            self.max_store_us = hi if self.max_store_us is None else min(self.max_store_us, hi)

    def bound_offset(self, lo: int | None = None, hi: int | None = None) -> None:
        if lo is not None:
            self.min_offset = lo if self.min_offset is None else max(self.min_offset, lo)
        if hi is not None:
            self.max_offset = hi if self.max_offset is None else min(self.max_offset, hi)

    def keep_tags(self, batch: Any, names: list[str]) -> Any:
        """`batch` (built with a `tags` column) without the rows whose tag is not wanted, reduced
        to `names`."""
        if self.tags is not None:
            import pyarrow as pa
            import pyarrow.compute as pc

            keep = pc.is_in(batch.column("tags"), value_set=pa.array(sorted(self.tags), pa.string()))
            batch = batch.filter(pc.fill_null(keep, False))
        return batch if batch.schema.names == names else batch.select(names)

    def accepts(self, msg: m.StoredMessage) -> bool:
        if self.topics is not None and msg.topic not in self.topics:
            return False
        if self.queue_ids is not None and msg.queue_id not in self.queue_ids:
            return False
        if self.min_offset is not None and msg.commit_log_offset < self.min_offset:
            return False
        if self.max_offset is not None and msg.commit_log_offset > self.max_offset:
            return False
        us = msg.store_timestamp * 1000
        if self.min_store_us is not None and us < self.min_store_us:
            return False
        return not (self.max_store_us is not None and us > self.max_store_us)


class MessageColumns:
    """Records kept as parallel lists (record header, properties, body, ...), turned into the
    requested columns one list comprehension each when a batch is cut into Arrow.

    Inner-batch records (5.x BatchCQ: SYSFLAG INNER_BATCH, body = client batch) give one row per
    element: the element's body, flag and properties, queueOffset = the record's + i."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.want = set(names)
        self.need_props = bool(self.want & PROPERTY_COLUMNS)
        self.need_body = "body" in self.want
        self._reset()

    def _reset(self) -> None:
        self.msgs: list[m.StoredMessage] = []
        self.props: list[dict[str, str] | None] = []
        self.bodies: list[bytes | None] = []
        self.sizes: list[int] = []
        self.flags: list[int] = []
        self.qos: list[int] = []
        self.files: list[str] = []
        self.rows = 0

    def add(self, buf: m.ReadableBuffer, pos: int, msg: m.StoredMessage, file: str) -> None:
        inner = msg.sys_flag & m.MessageSysFlag.INNER_BATCH_FLAG
        if inner:
            bp = pos + m.body_position(msg.sys_flag)
            raw = m.decompress_body(msg.sys_flag, bytes(buf[bp : bp + msg.body_length]))
            for i, el in enumerate(m.decode_batch_body(raw)):
                self._append(
                    msg,
                    m.string_to_message_properties(el.properties),
                    el.body,
                    len(el.body),
                    el.flag,
                    msg.queue_offset + i,
                    file,
                )
            return
        body = None
        if self.need_body:
            bp = pos + m.body_position(msg.sys_flag)
            body = m.decompress_body(msg.sys_flag, bytes(buf[bp : bp + msg.body_length]))
        props = _decode_props(buf, pos, msg) if self.need_props else None
        self._append(msg, props, body, msg.body_length, msg.flag, msg.queue_offset, file)

    def _append(
        self,
        msg: m.StoredMessage,
        props: dict[str, str] | None,
        body: bytes | None,
        body_size: int,
        flag: int,
        queue_offset: int,
        file: str,
    ) -> None:
        self.rows += 1
        self.msgs.append(msg)
        self.props.append(props)
        self.bodies.append(body)
        self.sizes.append(body_size)
        self.flags.append(flag)
        self.qos.append(queue_offset)
        self.files.append(file)

    def take_batch(self, arrow_schema: Any) -> Any:
        """An Arrow RecordBatch of the rows so far (types from `arrow_schema`); resets the lists."""
        import pyarrow as pa

        arrays = []
        for name in self.names:
            typ = arrow_schema.field(name).type
            values = _COLUMN[name](self)
            if pa.types.is_map(typ):
                values = [None if v is None else list(v.items()) for v in values]
            arrays.append(pa.array(values, type=typ))
        self._reset()
        return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)


def _prop(key: str) -> Callable[[MessageColumns], list[str | None]]:
    return lambda c: [p.get(key) if p else None for p in c.props]


_V2 = m.MESSAGE_MAGIC_CODE_V2
_COLUMN: dict[str, Callable[[MessageColumns], list[Any]]] = {
    "topic": lambda c: [x.topic for x in c.msgs],
    "queueId": lambda c: [x.queue_id for x in c.msgs],
    "queueOffset": lambda c: c.qos,
    "commitLogOffset": lambda c: [x.commit_log_offset for x in c.msgs],
    "storeSize": lambda c: [x.store_size for x in c.msgs],
    "offsetMsgId": lambda c: [m.create_message_id(x.store_host_bytes, x.commit_log_offset) for x in c.msgs],
    "msgId": _prop(MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
    "keys": lambda c: [split_keys(p.get(MessageConst.KEYS) if p else None) for p in c.props],
    "tags": _prop(MessageConst.TAGS),
    "properties": lambda c: [p or {} for p in c.props],
    "body": lambda c: c.bodies,
    "bodySize": lambda c: c.sizes,
    "flag": lambda c: c.flags,
    "sysFlag": lambda c: [x.sys_flag for x in c.msgs],
    "bodyCRC": lambda c: [x.body_crc for x in c.msgs],
    "reconsumeTimes": lambda c: [x.reconsume_times for x in c.msgs],
    "preparedTransactionOffset": lambda c: [x.prepared_transaction_offset for x in c.msgs],
    "bornHost": lambda c: [host_text(x.born_host) for x in c.msgs],
    "storeHost": lambda c: [host_text(x.store_host) for x in c.msgs],
    "bornTimestamp": lambda c: [x.born_timestamp * 1000 for x in c.msgs],
    "storeTimestamp": lambda c: [x.store_timestamp * 1000 for x in c.msgs],
    "version": lambda c: [2 if x.magic_code == _V2 else 1 for x in c.msgs],
    "file": lambda c: c.files,
}
assert set(_COLUMN) == set(MESSAGE_COLUMNS)

_ARROW_TYPES = {
    "string": "string",
    "int": "int32",
    "bigint": "int64",
    "binary": "binary",
}


def arrow_schema(names: list[str], columns: dict[str, str] = MESSAGE_COLUMNS) -> Any:
    """The Arrow schema Spark hands a reader for these columns (pyspark's to_arrow_schema with a
    UTC session), for scans without Spark."""
    import pyarrow as pa

    def typ(ddl_type: str) -> Any:
        if ddl_type == "timestamp":
            return pa.timestamp("us", tz="UTC")
        if ddl_type == "array<string>":
            return pa.list_(pa.field("element", pa.string()))
        if ddl_type == "map<string,string>":
            return pa.map_(pa.string(), pa.string())
        return pa.type_for_alias(_ARROW_TYPES[ddl_type])

    return pa.schema([pa.field(n, typ(columns[n])) for n in names])
