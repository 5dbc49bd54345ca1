"""The CommitLog record: one definition for the broker, the tools and Spark.

Java: store.MessageExtEncoder / CommitLog#calMsgLength (write side),
common.message.MessageDecoder (read side). Spec store-format §2.1. Big-endian.

    #   field                        width           note
    1   TOTALSIZE                    int   4         whole record, incl. this field
    2   MAGICCODE                    int   4         V1 0xDAA320A7, V2 0xDAA320AB, blank 0xCBD43194
    3   BODYCRC                      int   4         zlib.crc32(body as stored) & 0x7FFFFFFF
    4   QUEUEID                      int   4
    5   FLAG                         int   4         producer's Message.flag
    6   QUEUEOFFSET                  long  8         consume-queue entry number (0 for PREPARED/ROLLBACK)
    7   PHYSICALOFFSET               long  8         absolute commit-log offset of this record
    8   SYSFLAG                      int   4         MessageSysFlag bits
    9   BORNTIMESTAMP                long  8         producer time, ms
    10  BORNHOST                     8 | 20          ip(4|16) + port int; 20 if SYSFLAG & 0x10
    11  STORETIMESTAMP               long  8         broker time, ms
    12  STOREHOSTADDRESS             8 | 20          ip(4|16) + port int; 20 if SYSFLAG & 0x20
    13  RECONSUMETIMES               int   4
    14  PREPARED TRANSACTION OFFSET  long  8
    15  BODYLENGTH + BODY            int 4 + n
    16  TOPICLENGTH + TOPIC          byte 1 (V1) | short 2 (V2) + n   UTF-8
    17  PROPERTIESLENGTH + PROPS     short 2 + n     "k\\x01v\\x02" repeated, UTF-8

The same layout is used on the wire by pull and view-message responses (spec
remoting §9.3), so stored bytes are sent as they are.

This module stays import-light (stdlib + construct): pyrmq.spark imports it.
"""

from __future__ import annotations

import mmap
import socket
import struct
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TypeAlias

import construct as cs

from pyrmq._speedups import pick
from pyrmq.common.clock import now_ms as system_now_ms
from pyrmq.common.constants import MessageConst
from pyrmq.common.java_lang import java_string_hash

# --- magic codes (MessageDecoder, CommitLog.BLANK_MAGIC_CODE; spec §2.2) -------------------------
MESSAGE_MAGIC_CODE = -626843481  # 0xDAA320A7, V1: 1-byte topic length
MESSAGE_MAGIC_CODE_V2 = -626843477  # 0xDAA320AB, V2 (5.1.0+): 2-byte topic length
BLANK_MAGIC_CODE = -875286124  # 0xCBD43194, end-of-file filler
END_FILE_MIN_BLANK_LENGTH = 8  # CommitLog.END_FILE_MIN_BLANK_LENGTH: TOTALSIZE + MAGICCODE
MIN_RECORD_SIZE = 91  # a V1 record with empty body, topic and properties (IPv4 hosts)

#: what records are read from: bytes, a view, or a mapped file
ReadableBuffer: TypeAlias = bytes | bytearray | memoryview | mmap.mmap
#: what records are written into: a bytearray or a mapped file
WritableBuffer: TypeAlias = bytearray | memoryview | mmap.mmap

NAME_VALUE_SEPARATOR = "\x01"  # MessageDecoder.NAME_VALUE_SEPARATOR
PROPERTY_SEPARATOR = "\x02"  # MessageDecoder.PROPERTY_SEPARATOR


class MessageSysFlag:
    """Bits of SYSFLAG. Java: common.sysflag.MessageSysFlag (spec §2.3)."""

    COMPRESSED_FLAG = 0x1
    MULTI_TAGS_FLAG = 0x2
    TRANSACTION_NOT_TYPE = 0x0
    TRANSACTION_PREPARED_TYPE = 0x4
    TRANSACTION_COMMIT_TYPE = 0x8
    TRANSACTION_ROLLBACK_TYPE = 0xC
    BORNHOST_V6_FLAG = 0x10
    STOREHOSTADDRESS_V6_FLAG = 0x20
    NEED_UNWRAP_FLAG = 0x40
    INNER_BATCH_FLAG = 0x80
    COMPRESSION_TYPE_MASK = 0x700  # 0x100 LZ4, 0x200 ZSTD, 0x300 ZLIB, 0 = ZLIB (pre-4.9.4)
    COMPRESSION_LZ4 = 0x100
    COMPRESSION_ZSTD = 0x200
    COMPRESSION_ZLIB = 0x300

    @staticmethod
    def get_transaction_value(sys_flag: int) -> int:
        return sys_flag & 0xC

    @staticmethod
    def reset_transaction_value(sys_flag: int, tran_type: int) -> int:
        return (sys_flag & ~0xC) | tran_type


#: transaction types whose records take a queue offset and get a consume-queue entry (spec §2.4)
_QUEUED_TRANSACTION_TYPES = frozenset((MessageSysFlag.TRANSACTION_NOT_TYPE, MessageSysFlag.TRANSACTION_COMMIT_TYPE))


def is_queued(sys_flag: int) -> bool:
    """A NOT_TYPE or COMMIT record: it takes a queue offset and is dispatched to its consume queue;
    PREPARED and ROLLBACK records are not (Java CommitLog.DefaultAppendMessageCallback#doAppend,
    CommitLogDispatcherBuildConsumeQueue)."""
    return sys_flag & 0xC in _QUEUED_TRANSACTION_TYPES


class MessageVersion(IntEnum):
    """Java: common.message.MessageVersion. Value = magic code; V2 widens TOPICLENGTH to 2 bytes."""

    MESSAGE_VERSION_V1 = MESSAGE_MAGIC_CODE
    MESSAGE_VERSION_V2 = MESSAGE_MAGIC_CODE_V2


# --- precompiled structs for hot paths --------------------------------------------------------------
_PREFIX = struct.Struct(
    ">"
    "i"  # 1 TOTALSIZE
    "i"  # 2 MAGICCODE
    "i"  # 3 BODYCRC
    "i"  # 4 QUEUEID
    "i"  # 5 FLAG
    "q"  # 6 QUEUEOFFSET
    "q"  # 7 PHYSICALOFFSET
    "i"  # 8 SYSFLAG
    "q"  # 9 BORNTIMESTAMP
)
_AFTER_HOSTS = struct.Struct(
    ">"
    "i"  # 13 RECONSUMETIMES
    "q"  # 14 PREPARED TRANSACTION OFFSET
    "i"  # 15 BODYLENGTH
)
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_SHORT = struct.Struct(">h")
_BYTE = struct.Struct(">b")
_HEAD8 = struct.Struct(">ii")  # TOTALSIZE + MAGICCODE

TOTALSIZE_OFFSET = 0
MAGICCODE_OFFSET = 4
BODYCRC_OFFSET = 8
QUEUEID_OFFSET = 12
FLAG_OFFSET = 16
QUEUEOFFSET_OFFSET = struct.calcsize(">iiiii")  # 20
PHYSICALOFFSET_OFFSET = struct.calcsize(">iiiiiq")  # 28
SYSFLAG_OFFSET = struct.calcsize(">iiiiiqq")  # 36
BORNTIMESTAMP_OFFSET = struct.calcsize(">iiiiiqqi")  # 40
BORNHOST_OFFSET = _PREFIX.size  # 48

# --- declarative form (tools, tests, spark readers that prefer it) -------------------------------
_HOST_V4 = cs.Struct("address" / cs.Bytes(4), "port" / cs.Int32sb)
_HOST_V6 = cs.Struct("address" / cs.Bytes(16), "port" / cs.Int32sb)

COMMITLOG_RECORD = cs.Struct(
    "total_size" / cs.Int32sb,
    "magic_code" / cs.Int32sb,
    "body_crc" / cs.Int32sb,
    "queue_id" / cs.Int32sb,
    "flag" / cs.Int32sb,
    "queue_offset" / cs.Int64sb,
    "physical_offset" / cs.Int64sb,
    "sys_flag" / cs.Int32sb,
    "born_timestamp" / cs.Int64sb,
    "born_host" / cs.IfThenElse(cs.this.sys_flag & MessageSysFlag.BORNHOST_V6_FLAG, _HOST_V6, _HOST_V4),
    "store_timestamp" / cs.Int64sb,
    "store_host" / cs.IfThenElse(cs.this.sys_flag & MessageSysFlag.STOREHOSTADDRESS_V6_FLAG, _HOST_V6, _HOST_V4),
    "reconsume_times" / cs.Int32sb,
    "prepared_transaction_offset" / cs.Int64sb,
    "body" / cs.Prefixed(cs.Int32sb, cs.GreedyBytes),
    "topic"
    / cs.IfThenElse(
        cs.this.magic_code == MESSAGE_MAGIC_CODE_V2,
        cs.PascalString(cs.Int16sb, "utf8"),
        cs.PascalString(cs.Int8ub, "utf8"),
    ),
    "properties" / cs.PascalString(cs.Int16sb, "utf8"),
)
"""Whole record, declaratively. Properties stay the raw string (HashMap order is meaningless)."""

BLANK_RECORD = cs.Struct("total_size" / cs.Int32sb, "magic_code" / cs.Const(BLANK_MAGIC_CODE, cs.Int32sb))

# Client batch element (MessageDecoder#encodeMessage, spec §2.7): what SEND_BATCH_MESSAGE carries.
BATCH_ELEMENT = cs.Struct(
    "total_size" / cs.Int32sb,
    "magic_code" / cs.Int32sb,
    "body_crc" / cs.Int32sb,
    "flag" / cs.Int32sb,
    "body" / cs.Prefixed(cs.Int32sb, cs.GreedyBytes),
    "properties" / cs.Prefixed(cs.Int16sb, cs.GreedyBytes),
)


class MessageDecodeError(ValueError):
    """A record that cannot be decoded (bad magic, truncated, lengths disagree)."""


# --- small helpers ----------------------------------------------------------------------------------
def crc32(data: ReadableBuffer) -> int:
    """Java UtilAll.crc32: java.util.zip.CRC32 with the sign bit cleared."""
    return zlib.crc32(data) & 0x7FFFFFFF


def tags_string_to_tags_code(tags: str | None) -> int:
    """Java MessageExtBrokerInner#tagsString2tagsCode: hash of the whole TAGS value, 0 if empty."""
    if not tags:
        return 0
    return java_string_hash(tags)


def message_properties_to_string(properties: dict[str, str] | None) -> str:
    """Java MessageDecoder#messageProperties2String: 'k\\x01v\\x02' per pair, None values skipped."""
    if not properties:
        return ""
    return "".join(f"{k}\x01{v}\x02" for k, v in properties.items() if v is not None)


message_properties_to_string = pick(message_properties_to_string)  # the compiled twin when built


def string_to_message_properties(properties: str) -> dict[str, str]:
    """Java MessageDecoder#string2messageProperties: pairs with an empty name or value are dropped."""
    result: dict[str, str] = {}
    if not properties:
        return result
    for item in properties.split("\x02"):
        sep = item.find("\x01")
        if 0 < sep < len(item) - 1:
            result[item[:sep]] = item[sep + 1 :]
    return result


string_to_message_properties = pick(string_to_message_properties)  # the compiled twin when built


Host = tuple[str, int]
"""(ip text, port): Java InetSocketAddress as the store writes it."""


def host_to_bytes(host: Host) -> bytes:
    """IP (4 or 16 bytes) + port int. Java MessageExt#socketAddress2ByteBuffer."""
    ip, port = host
    if ":" in ip:
        return socket.inet_pton(socket.AF_INET6, ip) + _INT.pack(port)
    return socket.inet_aton(ip) + _INT.pack(port)


def bytes_to_host(data: bytes | memoryview) -> Host:
    ip = bytes(data[:-4])
    port = _INT.unpack_from(data, len(data) - 4)[0]
    if len(ip) == 16:
        return socket.inet_ntop(socket.AF_INET6, ip), port
    return socket.inet_ntoa(ip), port


def cal_msg_length(version: int, sys_flag: int, body_length: int, topic_length: int, properties_length: int) -> int:
    """Java MessageExtEncoder#calMsgLength: fixed part 88 bytes for IPv4/IPv4 (spec §2.1)."""
    born = 20 if sys_flag & MessageSysFlag.BORNHOST_V6_FLAG else 8
    store = 20 if sys_flag & MessageSysFlag.STOREHOSTADDRESS_V6_FLAG else 8
    topic_len_size = 2 if version == MESSAGE_MAGIC_CODE_V2 else 1
    return (
        4
        + 4
        + 4
        + 4
        + 4
        + 8
        + 8
        + 4
        + 8
        + born
        + 8
        + store
        + 4
        + 8
        + 4
        + body_length
        + topic_len_size
        + topic_length
        + 2
        + properties_length
    )


def body_position(sys_flag: int) -> int:
    """Position of BODY inside a record: after the hosts, store time, RECONSUMETIMES,
    PREPAREDTRANSACTIONOFFSET and BODYLENGTH."""
    born = 20 if sys_flag & MessageSysFlag.BORNHOST_V6_FLAG else 8
    store = 20 if sys_flag & MessageSysFlag.STOREHOSTADDRESS_V6_FLAG else 8
    return BORNHOST_OFFSET + born + 8 + store + _AFTER_HOSTS.size


def store_timestamp_position(sys_flag: int) -> int:
    """Position of STORETIMESTAMP inside a record (MessageDecoder#messageStoreTimestampPosition...)."""
    return BORNHOST_OFFSET + (20 if sys_flag & MessageSysFlag.BORNHOST_V6_FLAG else 8)


def choose_version(topic: str, auto_message_version_on_topic_len: bool = True) -> MessageVersion:
    """CommitLog#asyncPutMessage (5.1+): V2 only when the topic has more than 127 UTF-16 units."""
    if auto_message_version_on_topic_len and len(topic.encode("utf-16-le")) // 2 > 127:
        return MessageVersion.MESSAGE_VERSION_V2
    return MessageVersion.MESSAGE_VERSION_V1


# --- message ids --------------------------------------------------------------------------------------
def create_message_id(store_host: Host | bytes, commit_log_offset: int) -> str:
    """offsetMsgId: uppercase hex of store ip + port + 8-byte commit-log offset (32 or 56 chars).

    Java MessageDecoder#createMessageId.
    """
    raw = store_host if isinstance(store_host, (bytes, bytearray)) else host_to_bytes(store_host)
    return (bytes(raw) + _LONG.pack(commit_log_offset)).hex().upper()


@dataclass(frozen=True, slots=True)
class MessageId:
    """Decoded offsetMsgId. Java common.message.MessageId."""

    address: Host
    offset: int


def decode_message_id(msg_id: str) -> MessageId:
    """Java MessageDecoder#decodeMessageId; raises ValueError for a malformed id."""
    raw = bytes.fromhex(msg_id)
    if len(raw) == 16:
        return MessageId(bytes_to_host(raw[:8]), _LONG.unpack_from(raw, 8)[0])
    if len(raw) == 28:
        return MessageId(bytes_to_host(raw[:20]), _LONG.unpack_from(raw, 20)[0])
    raise ValueError(f"not an offsetMsgId: {msg_id!r}")


class UniqKey:
    """Client message id (UNIQ_KEY): ip(4|16) + pid short + classloader hash int + ms since the
    start of the month int + counter short, uppercase hex. Java MessageClientIDSetter."""

    @staticmethod
    def ip_from_id(uniq_id: str) -> str:
        raw = bytes.fromhex(uniq_id)
        if len(raw) == 28:
            return socket.inet_ntop(socket.AF_INET6, raw[:16])
        return socket.inet_ntoa(raw[:4])

    @staticmethod
    def pid_from_id(uniq_id: str) -> int:
        raw = bytes.fromhex(uniq_id)
        (pid,) = struct.unpack_from(">H", raw, len(raw) - 12)
        return int(pid)

    @staticmethod
    def near_time_from_id(uniq_id: str, now_ms: int | None = None) -> int:
        """Epoch ms the id was created, assuming it is less than a month old (local time zone)."""
        raw = bytes.fromhex(uniq_id)
        ip_len = 16 if len(raw) == 28 else 4
        (span,) = struct.unpack_from(">I", raw, ip_len + 6)
        now_ms = system_now_ms() if now_ms is None else now_ms
        month_start = _month_start_ms(now_ms, 0)
        if month_start + span >= now_ms:
            month_start = _month_start_ms(now_ms, -1)
        return int(month_start + span)


def _month_start_ms(now_ms: int, delta_months: int) -> int:
    t = time.localtime(now_ms / 1000)
    year, month = t.tm_year, t.tm_mon + delta_months
    if month < 1:
        year, month = year - 1, 12
    return int(time.mktime((year, month, 1, 0, 0, 0, 0, 0, -1)) * 1000)


class UniqIdGenerator:
    """Makes UNIQ_KEY ids the way a Java client does, for messages the broker creates itself."""

    def __init__(self, ip: bytes = b"\x7f\x00\x00\x01", pid: int | None = None, seed: int = 0) -> None:
        import os

        self._fix = ip + struct.pack(">Hi", (os.getpid() if pid is None else pid) & 0xFFFF, seed)
        self._counter = 0
        self._start = 0
        self._next_start = 0

    def create(self, now_ms: int | None = None) -> str:
        now_ms = system_now_ms() if now_ms is None else now_ms
        if now_ms >= self._next_start:
            self._start = _month_start_ms(now_ms, 0)
            t = time.localtime(now_ms / 1000)
            y, m = (t.tm_year + 1, 1) if t.tm_mon == 12 else (t.tm_year, t.tm_mon + 1)
            self._next_start = int(time.mktime((y, m, 1, 0, 0, 0, 0, 0, -1)) * 1000)
        diff = now_ms - self._start
        c = self._counter
        self._counter = (c + 1) & 0xFFFF
        return (self._fix + struct.pack(">IH", diff & 0xFFFFFFFF, c)).hex().upper()


# --- compressed bodies -------------------------------------------------------------------------------
def decompress_body(sys_flag: int, body: bytes) -> bytes:
    """Uncompressed body of a record: zlib always, lz4 (frame) / zstd when their libs are installed.

    Java common.compression.CompressorFactory. Raises ValueError for an unavailable codec.
    """
    if not sys_flag & MessageSysFlag.COMPRESSED_FLAG:
        return body
    kind = sys_flag & MessageSysFlag.COMPRESSION_TYPE_MASK
    if kind in (0, MessageSysFlag.COMPRESSION_ZLIB):
        return zlib.decompress(body)
    if kind == MessageSysFlag.COMPRESSION_LZ4:
        try:
            import lz4.frame
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ValueError("LZ4 compressed body but the 'lz4' package is not installed") from e
        lz4_out: bytes = lz4.frame.decompress(body)
        return lz4_out
    if kind == MessageSysFlag.COMPRESSION_ZSTD:
        try:
            import zstandard
        except ImportError as e:  # pragma: no cover
            raise ValueError("ZSTD compressed body but the 'zstandard' package is not installed") from e
        zstd_out: bytes = zstandard.ZstdDecompressor().decompressobj().decompress(body)
        return zstd_out
    raise ValueError(f"unknown compression type 0x{kind:x}")


# --- write side -------------------------------------------------------------------------------------
@dataclass(slots=True)
class MessageExtBrokerInner:
    """A message as the broker hands it to the store. Java: common.message.MessageExtBrokerInner.

    `properties` is the dict the record will carry; `properties_string` overrides it when set
    (the broker can pass the producer's string through untouched).
    """

    topic: str
    body: bytes = b""
    queue_id: int = 0
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    properties_string: str | None = None
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: Host = ("127.0.0.1", 0)
    store_host: Host = ("127.0.0.1", 10911)
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    version: MessageVersion | None = None  # None: chosen from the topic length
    # filled by the store
    store_timestamp: int = 0
    queue_offset: int = 0

    @property
    def tags(self) -> str | None:
        if self.properties_string is not None:
            return string_to_message_properties(self.properties_string).get(MessageConst.TAGS)
        return self.properties.get(MessageConst.TAGS)

    def get_properties(self) -> dict[str, str]:
        if self.properties_string is not None:
            return string_to_message_properties(self.properties_string)
        return self.properties

    @classmethod
    def from_stored(
        cls,
        stored: StoredMessage,
        properties: dict[str, str] | None = None,
        *,
        topic: str | None = None,
        queue_id: int | None = None,
        properties_string: str | None = None,
    ) -> MessageExtBrokerInner:
        """A record read back, ready to be put again: body as stored (compressed or not), the
        same flags, hosts and times. ``properties`` is what the put hooks read;
        ``properties_string`` what is written (default: ``properties`` serialised), since Java
        often serialises the map before removing entries from it (timer, delay, transactions)."""
        props = dict(stored.properties if properties is None else properties)
        return cls(
            topic=stored.topic if topic is None else topic,
            body=stored.body or b"",
            queue_id=stored.queue_id if queue_id is None else queue_id,
            flag=stored.flag,
            properties=props,
            properties_string=message_properties_to_string(props) if properties_string is None else properties_string,
            sys_flag=stored.sys_flag,
            born_timestamp=stored.born_timestamp,
            born_host=stored.born_host,
            store_host=stored.store_host,
            reconsume_times=stored.reconsume_times,
        )


def _host_flags(sys_flag: int, born_host: bytes, store_host: bytes) -> int:
    sys_flag &= ~(MessageSysFlag.BORNHOST_V6_FLAG | MessageSysFlag.STOREHOSTADDRESS_V6_FLAG)
    if len(born_host) == 20:
        sys_flag |= MessageSysFlag.BORNHOST_V6_FLAG
    if len(store_host) == 20:
        sys_flag |= MessageSysFlag.STOREHOSTADDRESS_V6_FLAG
    return sys_flag


def record_header_struct(born_host_length: int, store_host_length: int) -> struct.Struct:
    """Fields 1..15 (up to BODYLENGTH) of a record whose hosts take 8 or 20 bytes, as one struct;
    host fields are raw ip+port bytes. Precompiled for the four host combinations."""
    return _RECORD_HEADERS[born_host_length, store_host_length]


_RECORD_HEADERS = {
    (b, st): struct.Struct(
        ">"
        "iiiii"  # 1-5 TOTALSIZE MAGICCODE BODYCRC QUEUEID FLAG
        "qq"  # 6-7 QUEUEOFFSET PHYSICALOFFSET
        "i"  # 8 SYSFLAG
        "q"  # 9 BORNTIMESTAMP
        f"{b}s"  # 10 BORNHOST
        "q"  # 11 STORETIMESTAMP
        f"{st}s"  # 12 STOREHOSTADDRESS
        "i"  # 13 RECONSUMETIMES
        "q"  # 14 PREPARED TRANSACTION OFFSET
        "i"  # 15 BODYLENGTH
    )
    for b in (8, 20)
    for st in (8, 20)
}


def topic_field(topic: bytes, version: int) -> bytes:
    """TOPICLENGTH + TOPIC (field 16): 1-byte length for V1, 2-byte for V2. Raises
    MessageDecodeError when the topic does not fit the version's length field."""
    n = len(topic)
    if version == MESSAGE_MAGIC_CODE_V2:
        if n > 32767:
            raise MessageDecodeError(f"topic too long for V2: {n} bytes")
        return _SHORT.pack(n) + topic
    if n > 127:
        raise MessageDecodeError(f"topic too long for V1: {n} bytes")
    return _BYTE.pack(n) + topic


def write_record(
    buf: WritableBuffer,
    pos: int,
    header: struct.Struct,
    total: int,
    version: int,
    body_crc: int,
    queue_id: int,
    flag: int,
    queue_offset: int,
    physical_offset: int,
    sys_flag: int,
    born_timestamp: int,
    born_host: bytes,
    store_timestamp: int,
    store_host: bytes,
    reconsume_times: int,
    prepared_transaction_offset: int,
    body: bytes | memoryview,
    topic_part: bytes,
    properties: bytes | memoryview,
    head: bool = True,
) -> None:
    """Write one whole record of `total` bytes at buf[pos:] (a bytearray or the mapped file itself:
    no intermediate copy). Positional on purpose: this is the put path's hot call.

    TOTALSIZE and MAGICCODE are written last: a process killed in the middle leaves a record
    whose head is still zero (files are zero beyond the data), which recovery reads as the end of
    the data, instead of a head that vouches for properties never written (BODYCRC covers only
    the body). head=False leaves them zero for the caller to write (a batch writes its first
    record's head last, so a torn batch is invisible as a whole)."""
    body_len = len(body)
    header.pack_into(
        buf,
        pos,
        0,
        0,
        body_crc,
        queue_id,
        flag,
        queue_offset,
        physical_offset,
        sys_flag,
        born_timestamp,
        born_host,
        store_timestamp,
        store_host,
        reconsume_times,
        prepared_transaction_offset,
        body_len,
    )
    p = pos + header.size
    buf[p : p + body_len] = body
    p += body_len
    n = len(topic_part)
    buf[p : p + n] = topic_part
    p += n
    n = len(properties)
    _SHORT.pack_into(buf, p, n)
    p += 2
    buf[p : p + n] = properties
    if head:
        _HEAD8.pack_into(buf, pos, total, version)


write_record = pick(write_record)  # the compiled twin (pyrmq/_speedups) when built


def write_record_head(buf: WritableBuffer, pos: int, total: int, version: int) -> None:
    """TOTALSIZE + MAGICCODE of a record written with write_record(..., head=False)."""
    _HEAD8.pack_into(buf, pos, total, version)


def encode_record(
    *,
    topic: bytes,
    queue_id: int,
    flag: int,
    queue_offset: int,
    physical_offset: int,
    sys_flag: int,
    born_timestamp: int,
    born_host: bytes,
    store_timestamp: int,
    store_host: bytes,
    reconsume_times: int,
    prepared_transaction_offset: int,
    body: bytes | memoryview,
    properties: bytes | memoryview,
    version: int = MESSAGE_MAGIC_CODE,
    body_crc: int | None = None,
) -> bytearray:
    """Encode one full record (fast path). Host bytes must already be ip+port (8 or 20 bytes);
    the V6 SYSFLAG bits are set from their lengths. Raises MessageDecodeError on oversize fields."""
    sys_flag = _host_flags(sys_flag, born_host, store_host)
    topic_part = topic_field(bytes(topic), version)
    props_len = len(properties)
    if props_len > 32767:
        raise MessageDecodeError(f"properties too long: {props_len} bytes")
    header = _RECORD_HEADERS.get((len(born_host), len(store_host)))
    if header is None:
        raise MessageDecodeError("a host must be 8 (IPv4) or 20 (IPv6) bytes")
    total = header.size + len(body) + len(topic_part) + 2 + props_len
    if body_crc is None:
        body_crc = crc32(body)
    out = bytearray(total)
    write_record(
        out,
        0,
        header,
        total,
        version,
        body_crc,
        queue_id,
        flag,
        queue_offset,
        physical_offset,
        sys_flag,
        born_timestamp,
        bytes(born_host),
        store_timestamp,
        bytes(store_host),
        reconsume_times,
        prepared_transaction_offset,
        body,
        topic_part,
        properties,
    )
    return out


def encode_message(msg: MessageExtBrokerInner, queue_offset: int = 0, physical_offset: int = 0) -> bytearray:
    """Encode a MessageExtBrokerInner; offsets and store time are patched later by the commit log."""
    props = msg.properties_string
    if props is None:
        props = message_properties_to_string(msg.properties)
    version = msg.version if msg.version is not None else choose_version(msg.topic)
    return encode_record(
        topic=msg.topic.encode("utf-8"),
        queue_id=msg.queue_id,
        flag=msg.flag,
        queue_offset=queue_offset,
        physical_offset=physical_offset,
        sys_flag=msg.sys_flag,
        born_timestamp=msg.born_timestamp,
        born_host=host_to_bytes(msg.born_host),
        store_timestamp=msg.store_timestamp,
        store_host=host_to_bytes(msg.store_host),
        reconsume_times=msg.reconsume_times,
        prepared_transaction_offset=msg.prepared_transaction_offset,
        body=msg.body,
        properties=props.encode("utf-8"),
        version=int(version),
    )


def encode_blank(max_blank: int) -> bytes:
    """The 8 bytes written at a file's end: TOTALSIZE = bytes left in the file, BLANK magic (§2.6)."""
    return _HEAD8.pack(max_blank, BLANK_MAGIC_CODE)


# --- client batch body (SEND_BATCH_MESSAGE, spec §2.7) ---------------------------------------------
@dataclass(slots=True)
class BatchElement:
    """One element of a client batch body. Java MessageDecoder#encodeMessage/decodeMessages."""

    body: bytes
    properties: str = ""
    flag: int = 0


def encode_batch_body(elements: list[BatchElement]) -> bytes:
    """What a Java client sends as a batch body (MAGIC and BODYCRC written as 0)."""
    parts = []
    for e in elements:
        props = e.properties.encode("utf-8")
        total = 4 + 4 + 4 + 4 + 4 + len(e.body) + 2 + len(props)
        parts.append(struct.pack(">iiiii", total, 0, 0, e.flag, len(e.body)) + e.body + _SHORT.pack(len(props)) + props)
    return b"".join(parts)


def decode_batch_body(body: bytes | memoryview) -> list[BatchElement]:
    """Split a client batch body; raises MessageDecodeError when an element is truncated."""
    view = memoryview(body)
    out: list[BatchElement] = []
    pos, end = 0, len(view)
    while pos < end:
        if end - pos < 22:
            raise MessageDecodeError(f"truncated batch element at {pos}")
        flag, body_len = struct.unpack_from(">ii", view, pos + 12)
        bpos = pos + 20
        if body_len < 0 or bpos + body_len + 2 > end:
            raise MessageDecodeError(f"bad batch element body length {body_len} at {pos}")
        b = bytes(view[bpos : bpos + body_len])
        ppos = bpos + body_len
        (plen,) = _SHORT.unpack_from(view, ppos)
        if plen < 0 or ppos + 2 + plen > end:
            raise MessageDecodeError(f"bad batch element properties length {plen} at {pos}")
        props = bytes(view[ppos + 2 : ppos + 2 + plen]).decode("utf-8")
        out.append(BatchElement(b, props, flag))
        pos = ppos + 2 + plen
    return out


# --- read side --------------------------------------------------------------------------------------
@dataclass(slots=True)
class StoredMessage:
    """A decoded record with every field. Java: common.message.MessageExt.

    `body` is None when decoded with read_body=False (header-only decodes for Spark and dispatch).
    """

    store_size: int
    magic_code: int
    body_crc: int
    queue_id: int
    flag: int
    queue_offset: int
    commit_log_offset: int
    sys_flag: int
    born_timestamp: int
    born_host: Host
    store_timestamp: int
    store_host: Host
    reconsume_times: int
    prepared_transaction_offset: int
    body: bytes | None
    topic: str
    properties: dict[str, str]
    body_length: int = 0
    store_host_bytes: bytes = b""

    @property
    def msg_id(self) -> str:
        """offsetMsgId of this record."""
        return create_message_id(self.store_host_bytes, self.commit_log_offset)

    @property
    def tags(self) -> str | None:
        return self.properties.get(MessageConst.TAGS)

    @property
    def keys(self) -> str | None:
        return self.properties.get(MessageConst.KEYS)

    @property
    def uniq_key(self) -> str | None:
        return self.properties.get(MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)

    @property
    def version(self) -> MessageVersion:
        return MessageVersion(self.magic_code)

    def uncompressed_body(self) -> bytes | None:
        return None if self.body is None else decompress_body(self.sys_flag, self.body)


def decode_message(
    buf: ReadableBuffer,
    offset: int = 0,
    *,
    read_body: bool = True,
    check_crc: bool = False,
    decode_properties: bool = True,
) -> StoredMessage:
    """Decode the record at `offset`. Raises MessageDecodeError for a blank record, a bad magic,
    a truncated record, a CRC mismatch (when asked) or a TOTALSIZE that disagrees with the fields;
    anything else escaping is a bug."""
    try:
        (total, magic, body_crc, queue_id, flag, queue_offset, phy, sys_flag, born_ts) = _PREFIX.unpack_from(
            buf, offset
        )
    except struct.error as e:
        raise MessageDecodeError(f"truncated record header at {offset}") from e
    if magic != MESSAGE_MAGIC_CODE and magic != MESSAGE_MAGIC_CODE_V2:
        if magic == BLANK_MAGIC_CODE:
            raise MessageDecodeError(f"blank (end of file) record at {offset}")
        raise MessageDecodeError(f"illegal magic code 0x{magic & 0xFFFFFFFF:08x} at {offset}")
    if total < MIN_RECORD_SIZE or offset + total > len(buf):
        raise MessageDecodeError(f"bad total size {total} at {offset}")
    try:
        pos = offset + BORNHOST_OFFSET
        born_len = 20 if sys_flag & MessageSysFlag.BORNHOST_V6_FLAG else 8
        born_host = bytes_to_host(bytes(buf[pos : pos + born_len]))
        pos += born_len
        (store_ts,) = _LONG.unpack_from(buf, pos)
        pos += 8
        store_len = 20 if sys_flag & MessageSysFlag.STOREHOSTADDRESS_V6_FLAG else 8
        store_host_bytes = bytes(buf[pos : pos + store_len])
        pos += store_len
        reconsume, prepared, body_len = _AFTER_HOSTS.unpack_from(buf, pos)
        pos += _AFTER_HOSTS.size
        if body_len < 0 or pos + body_len > offset + total:
            raise MessageDecodeError(f"bad body length {body_len} at {offset}")
        body = None
        if read_body or check_crc:
            body = bytes(buf[pos : pos + body_len])
            if check_crc and crc32(body) != body_crc:
                raise MessageDecodeError(f"body CRC mismatch at {offset}")
            if not read_body:
                body = None
        pos += body_len
        if magic == MESSAGE_MAGIC_CODE_V2:
            (topic_len,) = _SHORT.unpack_from(buf, pos)
            pos += 2
        else:
            (topic_len,) = _BYTE.unpack_from(buf, pos)
            pos += 1
        if topic_len < 0:
            raise MessageDecodeError(f"negative topic length at {offset}")
        topic = bytes(buf[pos : pos + topic_len]).decode("utf-8")
        pos += topic_len
        (props_len,) = _SHORT.unpack_from(buf, pos)
        pos += 2
        props: dict[str, str] = {}
        if props_len > 0 and decode_properties:
            props = string_to_message_properties(bytes(buf[pos : pos + props_len]).decode("utf-8"))
    except (struct.error, UnicodeDecodeError) as e:
        raise MessageDecodeError(f"malformed record at {offset}: {e}") from e
    expected = cal_msg_length(magic, sys_flag, body_len, topic_len, max(props_len, 0))
    if props_len < 0 or expected != total:
        raise MessageDecodeError(f"total size {total} != computed {expected} at {offset}")
    return StoredMessage(
        store_size=total,
        magic_code=magic,
        body_crc=body_crc,
        queue_id=queue_id,
        flag=flag,
        queue_offset=queue_offset,
        commit_log_offset=phy,
        sys_flag=sys_flag,
        born_timestamp=born_ts,
        born_host=born_host,
        store_timestamp=store_ts,
        store_host=bytes_to_host(store_host_bytes),
        reconsume_times=reconsume,
        prepared_transaction_offset=prepared,
        body=body,
        topic=topic,
        properties=props,
        body_length=body_len,
        store_host_bytes=store_host_bytes,
    )


def decode_messages(buf: ReadableBuffer, *, read_body: bool = True, check_crc: bool = False) -> Iterator[StoredMessage]:
    """Decode consecutive records (a pull response body, a slice of a commit-log file).

    Stops at the end, a blank record or zero data; raises MessageDecodeError for a broken record.
    """
    pos, end = 0, len(buf)
    while end - pos > 8:
        total, magic = _HEAD8.unpack_from(buf, pos)
        if total <= 0 or magic == BLANK_MAGIC_CODE:
            return
        msg = decode_message(buf, pos, read_body=read_body, check_crc=check_crc)
        yield msg
        pos += total


def peek_total_size_and_magic(buf: ReadableBuffer, offset: int = 0) -> tuple[int, int]:
    total, magic = _HEAD8.unpack_from(buf, offset)
    return int(total), int(magic)


def peek_physical_offset(buf: ReadableBuffer, offset: int = 0) -> int:
    """PHYSICALOFFSET of the record at `offset` (the record's own commit-log offset)."""
    (physical_offset,) = _LONG.unpack_from(buf, offset + PHYSICALOFFSET_OFFSET)
    return int(physical_offset)


def peek_store_timestamp(buf: ReadableBuffer, offset: int = 0) -> int:
    """STORETIMESTAMP of the record at `offset` (its position follows the born-host width)."""
    (sys_flag,) = _INT.unpack_from(buf, offset + SYSFLAG_OFFSET)
    (store_timestamp,) = _LONG.unpack_from(buf, offset + store_timestamp_position(sys_flag))
    return int(store_timestamp)
