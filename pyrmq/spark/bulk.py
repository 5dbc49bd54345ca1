"""Bulk (vectorised) decoding of commit-log splits into Arrow record batches.

The reference path (commitlog_scan.iter_split + columns.MessageColumns) builds one StoredMessage
per record and one Python object per cell: about 100k records/s per core. Here Python touches a
record once, to hop its TOTALSIZE (the record chain cannot be found any other way: a record says
where the next one starts). Everything else works on whole batches of record starts:

- fixed-width fields are gathered from a numpy view of the mmap (`starts + field offset`, big-endian
  views), positions that depend on the host widths and the body length are numpy arithmetic;
- every check the reference makes (magic, TOTALSIZE, body/topic/properties lengths against
  TOTALSIZE, topic UTF-8, BODYCRC) is a boolean mask, so a batch stops at its first bad record and
  that record goes through the reference's corrupt handling (the same reason, fail/skip alike);
- strings (topic, properties, hosts, offsetMsgId) are built as Arrow offsets + one data buffer,
  properties are split with Arrow compute kernels, bodies are one join of buffer slices (zlib/lz4/
  zstd bodies decompressed in that join);
- inner-batch records (5.x BatchCQ, one row per element) are rare and go through the reference,
  as do batches whose properties are not UTF-8 or repeat a key.

The layout comes from pyrmq.store.message (field offsets, body_position, store_timestamp_position).
"""

from __future__ import annotations

import itertools
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyrmq._speedups import pick
from pyrmq.common.constants import MessageConst
from pyrmq.spark import commitlog_scan as scan
from pyrmq.spark.columns import PROPERTY_COLUMNS, MessageColumns, RecordFilter, host_text
from pyrmq.store import message as m
from pyrmq.store import reader

_V1 = m.MESSAGE_MAGIC_CODE
_V2 = m.MESSAGE_MAGIC_CODE_V2
_TOTAL = struct.Struct(">i")  # TOTALSIZE at m.TOTALSIZE_OFFSET
#: the record prefix up to BORNHOST, one gather per batch (field offsets asserted below)
_PREFIX = np.dtype(
    [
        ("total", ">i4"),
        ("magic", ">i4"),
        ("body_crc", ">i4"),
        ("queue_id", ">i4"),
        ("flag", ">i4"),
        ("queue_offset", ">i8"),
        ("phy", ">i8"),
        ("sys_flag", ">i4"),
        ("born_ts", ">i8"),
    ]
)
assert _PREFIX.itemsize == m.BORNHOST_OFFSET
_PREFIX_FIELDS: Any = _PREFIX.fields
assert [
    _PREFIX_FIELDS[n][1]
    for n in ("total", "magic", "body_crc", "queue_id", "flag", "queue_offset", "phy", "sys_flag", "born_ts")
] == [
    m.TOTALSIZE_OFFSET,
    m.MAGICCODE_OFFSET,
    m.BODYCRC_OFFSET,
    m.QUEUEID_OFFSET,
    m.FLAG_OFFSET,
    m.QUEUEOFFSET_OFFSET,
    m.PHYSICALOFFSET_OFFSET,
    m.SYSFLAG_OFFSET,
    m.BORNTIMESTAMP_OFFSET,
]
#: RECONSUMETIMES, PREPAREDTRANSACTIONOFFSET, BODYLENGTH: the 16 bytes before BODY
_AFTER_HOSTS = np.dtype([("reconsume", ">i4"), ("prepared", ">i8"), ("body_len", ">i4")])
_F = m.MessageSysFlag
_HOST_FLAGS = _F.BORNHOST_V6_FLAG | _F.STOREHOSTADDRESS_V6_FLAG
#: by born-host width: where STORETIMESTAMP starts (the store's own formula)
_STORE_TS_POS = {f: m.store_timestamp_position(f) for f in (0, _F.BORNHOST_V6_FLAG)}
assert _STORE_TS_POS[0] + 8 + 8 + 16 == m.body_position(0)  # STORETIMESTAMP, STOREHOST, 16 bytes, BODY
try:  # the same CRC-32 as zlib's, about twice as fast (optional)
    from isal.isal_zlib import crc32 as _crc32
except ImportError:  # pragma: no cover - depends on the environment
    _crc32 = zlib.crc32
_HEX = np.frombuffer(b"".join(f"{i:02X}".encode() for i in range(256)), dtype=np.uint8).reshape(256, 2)
_TS = pa.timestamp("us", tz="UTC")


def chase(buf: Any, pos: int, stop: int, limit: int, max_records: int) -> tuple[list[int], int]:
    """Record starts from `pos` by TOTALSIZE hops while TOTALSIZE is at least a record's minimum
    and the record ends by `limit`, starting below `stop`. Nothing else is checked here: the
    batch's masks find the first start that is no record (a bad magic, the blank record), and
    the starts after it are dropped. Returns the starts and where the hopping stopped."""
    starts: list[int] = []
    append = starts.append
    unpack = _TOTAL.unpack_from
    lo = m.MIN_RECORD_SIZE
    stop = min(stop, limit - 8 + 1)
    while pos < stop:
        (total,) = unpack(buf, pos)
        if total < lo or pos + total > limit:
            break
        append(pos)
        pos += total
        if len(starts) >= max_records:
            break
    return starts, pos


def walk_records(buf: Any, pos: int, stop: int, limit: int, check_crc: bool, out: np.ndarray) -> tuple[int, int]:
    """The starts of the valid records from `pos` on, written to `out` (int64; its length is the
    most taken), hopping TOTALSIZE while a record starts below `stop` with 8 bytes before `limit`.
    Valid is what reader.read_record accepts (magic, lengths adding up to TOTALSIZE inside
    `limit`, topic UTF-8, BODYCRC when `check_crc`). Returns (count, where the walk stopped): at
    `stop` or `limit`, after len(out) records, or on the first start that is no valid record (a
    blank record, zeros, a corrupt record), which the caller handles as the reference does.

    This is the reference (numpy masks over a hop of TOTALSIZEs); pyrmq._speedups has the
    compiled twin, one pass over the bytes without the GIL."""
    starts, end = chase(buf, pos, stop, limit, len(out))
    if not starts:
        return 0, end
    u8 = np.frombuffer(buf, dtype=np.uint8)
    with memoryview(buf) as mv:
        f = decode_fields(u8, np.array(starts, dtype=np.int64), limit)
        check_topics_and_crc(u8, mv, f, check_crc)
    wrong = np.flatnonzero(~f.valid)
    k = len(starts) if len(wrong) == 0 else int(wrong[0])
    out[:k] = starts[:k]
    return k, end if k == len(starts) else starts[k]


walk_records = pick(walk_records)  # the compiled twin (pyrmq/_speedups) when built


def _gather(u8: np.ndarray, pos: np.ndarray, width: int, dtype: Any) -> np.ndarray:
    """`width` bytes at each position as `dtype` (big-endian integers or a record of them);
    positions out of range are clipped (the masks reject those records)."""
    idx = pos[:, None] + np.arange(width)
    out = u8.take(idx, mode="clip").view(dtype).ravel()
    return out if isinstance(dtype, np.dtype) else out.astype(dtype[1:])


def copy_ranges(buf: Any, pos: np.ndarray, length: np.ndarray, out: np.ndarray) -> None:
    """The byte ranges [pos, pos+length) of `buf` one after another into `out` (uint8, exactly
    their total length; int64 pos and length). The reference: one numpy gather for short ranges
    (topics, properties), a join of slices for long ones (bodies)."""
    if len(pos) and (int(pos.min()) < 0 or int((pos + length).max()) > len(buf)):
        raise IndexError("a byte range outside the buffer")
    if len(out) == 0:
        return
    if len(out) > 64 * len(pos):
        with memoryview(buf) as mv:
            out[:] = np.frombuffer(
                b"".join([mv[a : a + n] for a, n in zip(pos.tolist(), length.tolist(), strict=True)]), dtype=np.uint8
            )
        return
    starts = np.zeros(len(pos), dtype=np.int64)
    np.cumsum(length[:-1], out=starts[1:])
    idx = np.repeat(pos - starts, length) + np.arange(len(out), dtype=np.int64)
    out[:] = np.frombuffer(buf, dtype=np.uint8)[idx]


copy_ranges = pick(copy_ranges)  # the compiled twin (pyrmq/_speedups) when built


def _buffer(size: int) -> np.ndarray:
    """A writable uint8 array from Arrow's memory pool, for data that ends up in an Arrow array.
    Not numpy's allocator: a batch of bodies is tens of MiB, and glibc's malloc maps a buffer
    that large afresh each time (the kernel faults in and zeroes every page of it), where
    Arrow's pool reuses the previous batch's memory: allocating and filling 64 MiB took 17.7 ms
    with numpy's allocator, 7.2 ms from Arrow's pool (mimalloc) on the benchmark machine."""
    return np.frombuffer(pa.allocate_buffer(size), dtype=np.uint8)


def _var(u8: np.ndarray, pos: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Offsets (int64, n+1) and one data buffer of the byte ranges [pos, pos+length)."""
    length = np.ascontiguousarray(length, dtype=np.int64)
    offsets = np.zeros(len(pos) + 1, dtype=np.int64)
    np.cumsum(length, out=offsets[1:])
    data = _buffer(int(offsets[-1]))
    copy_ranges(u8, np.ascontiguousarray(pos, dtype=np.int64), length, data)
    return offsets, data


def _strings(offsets: np.ndarray, data: np.ndarray, typ: pa.DataType = pa.string()) -> pa.Array:
    """A string (or binary) array of offsets + data; the large type past 2 GiB of data."""
    n = len(offsets) - 1
    if len(data) >= 2**31:
        typ = pa.large_string() if typ == pa.string() else pa.large_binary()
        return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(offsets.astype(np.int64)), pa.py_buffer(data)])
    return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)])


@dataclass(slots=True)
class Fields:
    """Header fields of a batch of record starts, one numpy array each, and the validity mask."""

    start: np.ndarray
    total: np.ndarray
    magic: np.ndarray
    body_crc: np.ndarray
    queue_id: np.ndarray
    flag: np.ndarray
    queue_offset: np.ndarray
    phy: np.ndarray
    sys_flag: np.ndarray
    born_ts: np.ndarray
    born_pos: np.ndarray  # BORNHOST
    born_len: np.ndarray  # 8 or 20 (ip + port)
    store_ts: np.ndarray
    store_pos: np.ndarray  # STOREHOSTADDRESS
    store_len: np.ndarray
    reconsume: np.ndarray
    prepared: np.ndarray
    body_pos: np.ndarray
    body_len: np.ndarray
    topic_pos: np.ndarray
    topic_len: np.ndarray
    props_pos: np.ndarray
    props_len: np.ndarray
    valid: np.ndarray

    def take(self, idx: np.ndarray) -> Fields:
        return Fields(*(getattr(self, f)[idx] for f in self.__slots__))


#: the rows record_fields writes, one int64 per record each
FIELD_ROWS = (
    "total",
    "magic",
    "body_crc",
    "queue_id",
    "flag",
    "queue_offset",
    "phy",
    "sys_flag",
    "born_ts",
    "store_ts",
    "reconsume",
    "prepared",
    "born_len",
    "store_pos",
    "store_len",
    "body_pos",
    "body_len",
    "topic_pos",
    "topic_len",
    "props_pos",
    "props_len",
)


def record_fields(buf: Any, s: np.ndarray, limit: int, out: np.ndarray) -> None:
    """The fields of the records starting at `s` (int64) into `out` (int64, one row per name in
    FIELD_ROWS, one column per record). The reference: big-endian gathers from a numpy view;
    where a record is malformed the values are whatever its bytes say (decode_fields' masks
    reject it)."""
    u8 = np.frombuffer(buf, dtype=np.uint8)
    head = _gather(u8, s, _PREFIX.itemsize, _PREFIX)
    magic = head["magic"].astype(np.int64)
    sys_flag = head["sys_flag"].astype(np.int64)
    born_len = np.where((sys_flag & _F.BORNHOST_V6_FLAG) != 0, 20, 8)
    store_len = np.where((sys_flag & _F.STOREHOSTADDRESS_V6_FLAG) != 0, 20, 8)
    store_ts_pos = s + m.BORNHOST_OFFSET + born_len
    body_pos = store_ts_pos + 8 + store_len + _AFTER_HOSTS.itemsize
    after = _gather(u8, body_pos - _AFTER_HOSTS.itemsize, _AFTER_HOSTS.itemsize, _AFTER_HOSTS)
    body_len = after["body_len"].astype(np.int64)
    body_end = body_pos + body_len
    v2 = magic == _V2
    lens = _gather(u8, body_end, 2, ">i2").astype(np.int64)  # V2: 2-byte topic length
    topic_len = np.where(v2, lens, lens >> 8)  # V1: the first byte, signed
    topic_pos = body_end + np.where(v2, 2, 1)
    props_len_pos = topic_pos + topic_len
    row = dict(
        total=head["total"],
        magic=magic,
        body_crc=head["body_crc"],
        queue_id=head["queue_id"],
        flag=head["flag"],
        queue_offset=head["queue_offset"],
        phy=head["phy"],
        sys_flag=sys_flag,
        born_ts=head["born_ts"],
        store_ts=_gather(u8, store_ts_pos, 8, ">i8"),
        reconsume=after["reconsume"],
        prepared=after["prepared"],
        born_len=born_len,
        store_pos=store_ts_pos + 8,
        store_len=store_len,
        body_pos=body_pos,
        body_len=body_len,
        topic_pos=topic_pos,
        topic_len=topic_len,
        props_pos=props_len_pos + 2,
        props_len=_gather(u8, props_len_pos, 2, ">i2"),
    )
    for i, name in enumerate(FIELD_ROWS):
        out[i] = row[name]


record_fields = pick(record_fields)  # the compiled twin (pyrmq/_speedups) when built


def decode_fields(u8: np.ndarray, s: np.ndarray, limit: int) -> Fields:
    """Fields of the records starting at `s`, with `valid` = the reference's structural checks
    (reader.read_record without BODYCRC; see check_topics_and_crc)."""
    out = np.empty((len(FIELD_ROWS), len(s)), dtype=np.int64)
    record_fields(u8, s, limit, out)
    r = dict(zip(FIELD_ROWS, out, strict=True))
    total, magic, body_len, topic_len, props_len = r["total"], r["magic"], r["body_len"], r["topic_len"], r["props_len"]
    end = s + total
    body_end = r["body_pos"] + body_len
    valid = (
        ((magic == _V1) | (magic == _V2))
        & (total >= m.MIN_RECORD_SIZE)
        & (end <= limit)
        & (body_len >= 0)
        & (body_end <= end)
        & (topic_len >= 0)
        & (props_len >= 0)
        & (r["props_pos"] + props_len == end)
    )
    return Fields(start=s, born_pos=s + m.BORNHOST_OFFSET, valid=valid, **r)


def check_topics_and_crc(u8: np.ndarray, mv: memoryview, f: Fields, check_crc: bool) -> None:
    """Narrow `f.valid` by the checks that need the bytes: topic UTF-8 and BODYCRC (one zlib call
    per record over the mapped body, no copy)."""
    ok = np.flatnonzero(f.valid)
    if len(ok) == 0:
        return
    offsets, data = _var(u8, f.topic_pos[ok], f.topic_len[ok])
    try:
        _strings(offsets, data).validate(full=True)
    except pa.ArrowInvalid:
        for i in ok:
            try:
                bytes(mv[f.topic_pos[i] : f.topic_pos[i] + f.topic_len[i]]).decode("utf-8")
            except UnicodeDecodeError:
                f.valid[i] = False
        ok = np.flatnonzero(f.valid)
    if check_crc and len(ok):
        crc = _crc32
        bp = f.body_pos[ok].tolist()
        be = (f.body_pos[ok] + f.body_len[ok]).tolist()
        got = np.fromiter((crc(mv[a:b]) for a, b in zip(bp, be, strict=True)), dtype=np.int64, count=len(bp))
        f.valid[ok] &= (got & 0x7FFFFFFF) == f.body_crc[ok]


# --- filters -------------------------------------------------------------------------------------
def filter_mask(u8: np.ndarray, f: Fields, flt: RecordFilter) -> np.ndarray | None:
    """Records `flt` accepts (RecordFilter.accepts on whole arrays); None when it accepts all."""
    mask = None

    def both(x: np.ndarray) -> np.ndarray:
        return x if mask is None else mask & x

    if flt.queue_ids is not None:
        mask = both(np.isin(f.queue_id, np.fromiter(flt.queue_ids, dtype=np.int64)))
    if flt.min_offset is not None:
        mask = both(f.phy >= flt.min_offset)
    if flt.max_offset is not None:
        mask = both(f.phy <= flt.max_offset)
    if flt.min_store_us is not None:
        mask = both(f.store_ts * 1000 >= flt.min_store_us)
    if flt.max_store_us is not None:
        mask = both(f.store_ts * 1000 <= flt.max_store_us)
    if flt.topics is not None:
        topics = _strings(*_var(u8, f.topic_pos, f.topic_len))
        mask = both(pc.is_in(topics, value_set=pa.array(sorted(flt.topics), pa.string())).to_numpy(False))
    return mask


# --- columns -------------------------------------------------------------------------------------
class NeedsReference(Exception):
    """A batch the reference decoder must build (records no Java broker writes)."""


class Properties:
    """The properties strings of a batch split into (row, key, value) with Arrow kernels, the way
    message.string_to_message_properties reads one: pairs with an empty name or value dropped."""

    def __init__(self, u8: np.ndarray, f: Fields) -> None:
        self.n = len(f.start)
        text = _strings(*_var(u8, f.props_pos, f.props_len))
        text.validate(full=True)  # invalid UTF-8: ArrowInvalid, the batch goes to the reference
        items = pc.split_pattern(text, "\x02")
        parents = pc.list_parent_indices(items).to_numpy()
        kv = pc.split_pattern(pc.list_flatten(items), "\x01", max_splits=1)
        kv_offsets = kv.offsets.to_numpy()[:-1]
        pair = pc.list_value_length(kv).to_numpy() == 2
        flat = pc.list_flatten(kv)
        keys = flat.take(pa.array(kv_offsets[pair]))
        values = flat.take(pa.array(kv_offsets[pair] + 1))
        keep = (pc.utf8_length(keys).to_numpy() > 0) & (pc.utf8_length(values).to_numpy() > 0)
        self.keys = keys.filter(pa.array(keep))
        self.values = values.filter(pa.array(keep))
        self.parents = parents[pair][keep]
        if len(self.keys):
            pairs = pa.table({"row": self.parents, "key": self.keys})
            if pairs.group_by(["row", "key"]).aggregate([]).num_rows != len(pairs):
                raise NeedsReference("a repeated property key")  # a dict keeps the last value

    def get(self, key: str) -> pa.Array:
        """The value of `key` per row, null where absent (the last one when repeated)."""
        hit = pc.equal(self.keys, key).to_numpy(False)
        idx = np.full(self.n, -1, dtype=np.int64)
        idx[self.parents[hit]] = np.flatnonzero(hit)
        return self.values.take(pa.array(idx, mask=idx < 0))

    def as_map(self) -> pa.Array:
        counts = np.bincount(self.parents, minlength=self.n)
        offsets = np.zeros(self.n + 1, dtype=np.int32)
        np.cumsum(counts, out=offsets[1:])
        return pa.MapArray.from_arrays(pa.array(offsets), self.keys, self.values)


def split_keys(keys: pa.Array) -> pa.Array:
    """KEYS values split on spaces, empty tokens dropped, [] for no KEYS (columns.split_keys)."""
    n = len(keys)
    lists = pc.split_pattern(pc.fill_null(keys, ""), " ")
    parents = pc.list_parent_indices(lists).to_numpy()
    tokens = pc.list_flatten(lists)
    keep = pc.utf8_length(tokens).to_numpy() > 0
    counts = np.bincount(parents[keep], minlength=n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), tokens.filter(pa.array(keep)))


def hosts(u8: np.ndarray, mv: memoryview, pos: np.ndarray, length: np.ndarray) -> pa.Array:
    """ "ip:port" per row (columns.host_text); IPv6 rows are rare and formatted one by one."""
    v4 = pc.binary_join_element_wise(
        *(pc.cast(pa.array(u8[np.clip(pos + i, 0, len(u8) - 1)]), pa.string()) for i in range(4)), "."
    )
    port_at = pos + length - 4
    port = pc.cast(pa.array(_gather(u8, port_at, 4, ">i4")), pa.string())
    out = pc.binary_join_element_wise(v4, port, ":")
    v6 = np.flatnonzero(length == 20)
    if len(v6) == 0:
        return out
    cells = out.to_pylist()
    for i in v6.tolist():
        a = int(pos[i])
        cells[i] = host_text(m.bytes_to_host(bytes(mv[a : a + 20])))
    return pa.array(cells, pa.string())


def offset_msg_ids(u8: np.ndarray, mv: memoryview, f: Fields) -> pa.Array:
    """offsetMsgId: hex of store host + PHYSICALOFFSET, as stored (m.create_message_id)."""
    n = len(f.start)
    v6 = np.flatnonzero(f.store_len == 20)
    raw = np.concatenate(
        [u8[np.clip(f.store_pos, 0, len(u8) - 8)[:, None] + np.arange(8)], u8[(f.start + 28)[:, None] + np.arange(8)]],
        axis=1,
    )
    data = _HEX[raw].reshape(n, 32)
    out = _strings(np.arange(n + 1, dtype=np.int32) * 32, data.ravel())
    if len(v6) == 0:
        return out
    cells = out.to_pylist()
    for i in v6.tolist():
        a = int(f.store_pos[i])
        cells[i] = m.create_message_id(bytes(mv[a : a + 20]), int(f.phy[i]))
    return pa.array(cells, pa.string())


def bodies(u8: np.ndarray, mv: memoryview, f: Fields) -> pa.Array:
    """Bodies as one binary array: one copy of the mapped ranges, or a join of slices with the
    compressed ones decompressed."""
    if not (f.sys_flag & _F.COMPRESSED_FLAG).any():
        return _strings(*_var(u8, f.body_pos, f.body_len), pa.binary())
    bp = f.body_pos.tolist()
    be = (f.body_pos + f.body_len).tolist()
    sf = f.sys_flag.tolist()
    compressed = _F.COMPRESSED_FLAG
    parts = [
        mv[a:b] if not s & compressed else m.decompress_body(s, bytes(mv[a:b]))
        for a, b, s in zip(bp, be, sf, strict=True)
    ]
    lengths = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = b"".join(parts)
    if offsets[-1] < 2**31:
        return pa.Array.from_buffers(
            pa.binary(), len(parts), [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)]
        )
    return pa.Array.from_buffers(pa.large_binary(), len(parts), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _ts(ms: np.ndarray) -> pa.Array:
    return pa.Array.from_buffers(_TS, len(ms), [None, pa.py_buffer(np.ascontiguousarray(ms * 1000))])


def build_columns(
    u8: np.ndarray, mv: memoryview, f: Fields, names: list[str], file: str, arrow_schema: pa.Schema
) -> pa.RecordBatch:
    """The requested columns of the (valid, accepted, not inner-batch) records in `f`."""
    n = len(f.start)
    props = Properties(u8, f) if PROPERTY_COLUMNS & set(names) else None
    arrays = []
    for name in names:
        typ = arrow_schema.field(name).type
        if name == "topic":
            a = _strings(*_var(u8, f.topic_pos, f.topic_len))
        elif name in _INTS:
            a = pa.array(getattr(f, _INTS[name]).astype(typ.to_pandas_dtype()))
        elif name == "queueOffset":
            a = pa.array(f.queue_offset)
        elif name == "commitLogOffset":
            a = pa.array(f.phy)
        elif name == "bornTimestamp":
            a = _ts(f.born_ts)
        elif name == "storeTimestamp":
            a = _ts(f.store_ts)
        elif name == "version":
            a = pa.array(np.where(f.magic == _V2, 2, 1).astype(np.int32))
        elif name == "file":
            enc = file.encode()
            a = _strings(np.arange(n + 1, dtype=np.int32) * len(enc), np.frombuffer(enc * n, dtype=np.uint8))
        elif name == "body":
            a = bodies(u8, mv, f)
        elif name == "bornHost":
            a = hosts(u8, mv, f.born_pos, f.born_len)
        elif name == "storeHost":
            a = hosts(u8, mv, f.store_pos, f.store_len)
        elif name == "offsetMsgId":
            a = offset_msg_ids(u8, mv, f)
        elif props is not None and name == "msgId":
            a = props.get(MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        elif props is not None and name == "tags":
            a = props.get(MessageConst.TAGS)
        elif props is not None and name == "keys":
            a = split_keys(props.get(MessageConst.KEYS))
        elif props is not None and name == "properties":
            a = props.as_map()
        else:  # pragma: no cover - columns.MESSAGE_COLUMNS and this function disagree
            raise ValueError(f"no bulk builder for column {name!r}")
        arrays.append(a if a.type == typ else a.cast(typ))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)


#: int32 columns straight from a Fields array
_INTS = {
    "queueId": "queue_id",
    "storeSize": "total",
    "bodySize": "body_len",
    "flag": "flag",
    "sysFlag": "sys_flag",
    "bodyCRC": "body_crc",
    "reconsumeTimes": "reconsume",
    "preparedTransactionOffset": "prepared",
}


# --- the split scan ------------------------------------------------------------------------------
#: commit-log bytes per batch without the body column: large batches cost the JVM less per row
HEADER_BATCH_BYTES = 64 * 1024 * 1024
#: with the body column, whose data is most of a batch: the JVM reads each batch into a buffer it
#: allocates afresh, and past glibc's 32 MiB mmap threshold the kernel maps, faults in and zeroes
#: every page of it each time (0.26 page faults per 1 KiB row at 64 MiB, 0.016 at 8 MiB; the JVM's
#: CPU per body row fell from 4.9 to 2.9 us and the worker's from 2.1 to 0.9, docs/benchmarks.md)
BODY_BATCH_BYTES = 8 * 1024 * 1024


def batch_bytes_for(names: list[str]) -> int:
    """The default commit-log bytes per batch for these columns."""
    return BODY_BATCH_BYTES if "body" in names else HEADER_BATCH_BYTES


@dataclass(slots=True)
class BulkScan:
    """What a bulk scan of splits produces: the schema's columns, filtered by `filter` (its tags
    row by row). Same rows, same order as the reference decoder."""

    names: list[str]
    arrow_schema: Any
    filter: RecordFilter
    check_crc: bool = True
    corrupt: str = "fail"
    batch_rows: int = 65536
    #: commit-log bytes per batch at most (a record bigger than this is a batch of its own); None:
    #: batch_bytes_for(names)
    batch_bytes: int | None = None

    def read(self, split: scan.Split, stats: scan.ScanStats | None = None) -> Iterator[pa.RecordBatch]:
        scan.check_corrupt_mode(self.corrupt)
        mm = reader.map_readonly(split.path)
        if mm is None:
            return
        u8 = np.frombuffer(mm, dtype=np.uint8)
        mv = memoryview(mm)
        try:
            yield from self._read(mm, u8, mv, split, stats)
        finally:
            mv.release()
            del u8
            try:
                mm.close()
            except BufferError:  # an Arrow array handed out still points into the map
                pass

    def _read(
        self, mm: Any, u8: np.ndarray, mv: memoryview, split: scan.Split, stats: scan.ScanStats | None
    ) -> Iterator[pa.RecordBatch]:
        limit = min(split.data_end, len(mm))
        first = scan.first_record(mm, split, limit)
        if first is None:
            return
        pos = first
        out = np.empty(self.batch_rows, dtype=np.int64)
        batch_bytes = self.batch_bytes or batch_bytes_for(self.names)
        while pos < split.stop and pos + 8 <= limit:
            stop = min(split.stop, pos + batch_bytes)
            n, pos = walk_records(mm, pos, stop, limit, self.check_crc, out)
            if n:
                if stats is not None:
                    stats.records += n
                yield from self._emit(u8, mv, decode_fields(u8, out[:n].copy(), limit), split, mm)
            if pos >= stop or pos + 8 > limit or n == self.batch_rows:
                continue
            if m.peek_total_size_and_magic(mm, pos)[1] == m.BLANK_MAGIC_CODE:
                return  # the end of a full file
            msg, why = scan.check_record(mm, pos, limit, self.check_crc)
            if msg is not None:  # pragma: no cover - the walk and the reference disagree
                raise AssertionError(f"bulk decoder rejected a valid record at {split.path}:{pos}")
            nxt = scan.after_bad_record(mm, split, pos, limit, why, self.corrupt, stats)
            if nxt is None:
                return
            pos = nxt

    def _emit(self, u8: np.ndarray, mv: memoryview, f: Fields, split: scan.Split, mm: Any) -> Iterator[pa.RecordBatch]:
        mask = filter_mask(u8, f, self.filter)
        if mask is not None:
            f = f.take(np.flatnonzero(mask))
        if len(f.start) == 0:
            return
        file = split.path.rsplit("/", 1)[-1]
        inner = np.flatnonzero(f.sys_flag & _F.INNER_BATCH_FLAG)
        cuts = [-1, *inner.tolist(), len(f.start)]
        for a, b in itertools.pairwise(cuts):
            if b - a > 1:
                whole = a == -1 and b == len(f.start)
                yield from self._rows(u8, mv, f if whole else f.take(np.arange(a + 1, b)), file, mm)
            if b < len(f.start):
                yield from self._reference_rows(mm, int(f.start[b]), file)

    def _with_tags(self) -> tuple[list[str], pa.Schema]:
        """Names and schema to build: the requested ones, plus `tags` when a tag filter needs it."""
        if self.filter.tags is None or "tags" in self.names:
            return self.names, self.arrow_schema
        return [*self.names, "tags"], self.arrow_schema.append(pa.field("tags", pa.string()))

    def _rows(self, u8: np.ndarray, mv: memoryview, f: Fields, file: str, mm: Any) -> Iterator[pa.RecordBatch]:
        names, schema = self._with_tags()
        try:
            batch = build_columns(u8, mv, f, names, file, schema)
        except (pa.ArrowInvalid, NeedsReference):  # properties not UTF-8 or with a repeated key
            for s in f.start.tolist():
                yield from self._reference_rows(mm, s, file)
            return
        yield self.filter.keep_tags(batch, self.names)

    def _reference_rows(self, mm: Any, pos: int, file: str) -> Iterator[pa.RecordBatch]:
        names, schema = self._with_tags()
        cols = MessageColumns(names)
        msg = reader.read_record(mm, pos, check_crc=False, decode_properties=False)
        cols.add(mm, pos, msg, file)
        yield self.filter.keep_tags(cols.take_batch(schema), self.names)
