"""JSON bodies in the dialect Java RocketMQ writes and reads (fastjson 1.x / fastjson2).

Java: ``remoting/protocol/RemotingSerializable`` and the bean classes under
``remoting/protocol/{route,body}/``. Spec §1.8 and Appendix A; the golden
bodies in ``tests/golden/bodies/`` were captured from rocketmq-remoting 5.5.0.

The dialect, as the official jars write it:

* bean properties sorted by name, null properties omitted, no whitespace;
* a map with ``Long``/``Integer`` keys (``BrokerData.brokerAddrs``) is written
  with *unquoted* number keys, ``{0:"10.0.0.1:10911"}``, which is not JSON;
* with ``standard=True`` (Java ``BrowserCompatible`` + ``MapSortField``, used by
  the NameServer for route data asked by clients >= V4_9_4) map keys are
  quoted and sorted, and longs beyond +-(2^53-1) become strings;
* a map whose keys are beans (``Map<MessageQueue, Long>``) writes the key bean
  itself as the key: ``{{"brokerName":"b","queueId":0,"topic":"T"}:5}``.

Reading: ``orjson`` first; when a body is not JSON (unquoted or object keys),
a small lenient parser takes over. Numbers-as-strings and the like are coerced
to the field type, as fastjson does; unknown properties are ignored.
"""
from __future__ import annotations

import dataclasses
import decimal
import enum
import math
import struct
import types
import typing
import zlib
from dataclasses import dataclass, field
from typing import Any, Union

import orjson

__all__ = [
    "BodyDecodeError",
    "FastJsonBody",
    "fastjson_dumps",
    "lenient_loads",
    "DataVersion",
    "TopicConfig",
    "TopicConfigSerializeWrapper",
    "TopicConfigAndMappingSerializeWrapper",
    "RegisterBrokerBody",
    "QueueData",
    "BrokerData",
    "TopicRouteData",
    "ClusterInfo",
    "TopicList",
    "KVTable",
    "BrokerMemberGroup",
    "GetBrokerMemberGroupResponseBody",
    "MQ_VERSION_V3_0_11",
    "MQ_VERSION_V4_9_4",
    "MQ_VERSION_V5_0_0",
]

#: ordinals of Java ``MQVersion.Version`` that change body formats
MQ_VERSION_V3_0_11 = 37  # RegisterBrokerBody instead of a bare TopicConfigSerializeWrapper
MQ_VERSION_V4_9_4 = 401  # route data with quoted (standard JSON) brokerAddrs keys
MQ_VERSION_V5_0_0 = 413  # compressed RegisterBrokerBody carries topic queue mapping infos

#: fastjson BrowserCompatible writes longs outside this range as strings
_JS_SAFE = (1 << 53) - 1


class BodyDecodeError(ValueError):
    """A body that neither JSON nor the fastjson dialect can read, or of the wrong shape."""


# --------------------------------------------------------------------------- writer


def java_double(f: float) -> str:
    """Java ``Double.toString``: ``1.0``, ``0.5``, ``1.0E10``, ``1.0E-4``."""
    if f != f:
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    a = abs(f)
    if a == 0 or 1e-3 <= a < 1e7:
        return repr(f)  # fixed notation in this range, always with a '.'
    t = decimal.Decimal(repr(a)).normalize().as_tuple()
    digits = "".join(map(str, t.digits))
    exp10 = len(digits) - 1 + t.exponent
    return f"{'-' if f < 0 else ''}{digits[0]}.{digits[1:] or '0'}E{exp10}"


def is_bean(value: Any) -> bool:
    """A dataclass instance (serialised as a Java bean)."""
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _prop_name(f: dataclasses.Field) -> str:
    name = f.metadata.get("json")
    if name:
        return name
    head, *rest = f.name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def bean_props(value: Any) -> list[tuple[str, Any]]:
    """A bean's non-null properties as (Java name, value), sorted by name: fastjson's order, the one rule
    for remoting bodies and config files."""
    props = []
    for f in dataclasses.fields(value):
        if f.metadata.get("transient"):
            continue
        v = getattr(value, f.name)
        if v is None:
            continue
        props.append((_prop_name(f), v))
    props.sort(key=lambda kv: kv[0])
    return props


def _write(value: Any, out: list[str], standard: bool) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, enum.Enum):
        out.append(orjson.dumps(value.name).decode())
    elif isinstance(value, int):
        if standard and not -_JS_SAFE <= value <= _JS_SAFE:
            out.append(f'"{value}"')
        else:
            out.append(str(int(value)))
    elif isinstance(value, float):
        out.append(java_double(value))
    elif isinstance(value, str):
        out.append(orjson.dumps(value).decode())
    elif isinstance(value, dict):
        _write_map(value, out, standard)
    elif isinstance(value, (list, tuple, set, frozenset)):
        out.append("[")
        first = True
        for item in value:
            if not first:
                out.append(",")
            first = False
            _write(item, out, standard)
        out.append("]")
    elif is_bean(value):
        out.append("{")
        first = True
        for name, v in bean_props(value):
            if not first:
                out.append(",")
            first = False
            out.append('"')
            out.append(name)
            out.append('":')
            _write(v, out, standard)
        out.append("}")
    else:
        raise TypeError(f"cannot write {type(value).__name__} as a fastjson body")


def _write_map(value: dict, out: list[str], standard: bool) -> None:
    items = list(value.items())
    if standard:
        # MapSortField: keys compared in their own type (Long keys numerically)
        try:
            items.sort(key=lambda kv: kv[0])
        except TypeError:
            items.sort(key=lambda kv: str(kv[0]))
    elif items and all(type(k) is int for k, _ in items):
        # a Java HashMap<Long, V> iterates small non-negative keys (broker ids) in ascending order
        items.sort(key=lambda kv: kv[0])
    out.append("{")
    first = True
    for k, v in items:
        if not first:
            out.append(",")
        first = False
        if isinstance(k, str):
            out.append(orjson.dumps(k).decode())
        elif isinstance(k, enum.Enum):
            out.append(orjson.dumps(k.name).decode())
        elif isinstance(k, bool):
            out.append(f'"{str(k).lower()}"' if standard else str(k).lower())
        elif isinstance(k, int):
            out.append(f'"{k}"' if standard else str(k))
        elif is_bean(k):
            # fastjson writes the key object itself (not JSON); spec §1.8 item 3
            _write(k, out, standard)
        else:
            out.append(orjson.dumps(str(k)).decode())
        out.append(":")
        _write(v, out, standard)
    out.append("}")


def fastjson_dumps(value: Any, *, standard: bool = False) -> bytes:
    """Serialise like ``JSON.toJSONBytes`` (``standard``: BrowserCompatible + MapSortField)."""
    out: list[str] = []
    _write(value, out, standard)
    return "".join(out).encode("utf-8")


# --------------------------------------------------------------------------- reader


class _LenientParser:
    """JSON plus the fastjson extensions: unquoted/number keys, object keys, single quotes.

    Object keys that are objects come back as ``tuple(sorted(items))`` so they are hashable.
    Raises BodyDecodeError on anything else.
    """

    __slots__ = ("s", "i")

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0

    def fail(self, what: str) -> BodyDecodeError:
        return BodyDecodeError(f"{what} at offset {self.i}")

    def ws(self) -> None:
        s, i = self.s, self.i
        while i < len(s) and s[i] in " \t\r\n":
            i += 1
        self.i = i

    def parse(self) -> Any:
        self.ws()
        v = self.value()
        self.ws()
        if self.i != len(self.s):
            raise self.fail("trailing data")
        return v

    def value(self) -> Any:
        self.ws()
        if self.i >= len(self.s):
            raise self.fail("unexpected end")
        c = self.s[self.i]
        if c == "{":
            return self.obj()
        if c == "[":
            return self.arr()
        if c in "\"'":
            return self.string()
        return self.bare()

    def obj(self) -> dict:
        self.i += 1
        out: dict = {}
        self.ws()
        if self.s.startswith("}", self.i):
            self.i += 1
            return out
        while True:
            self.ws()
            c = self.s[self.i : self.i + 1]
            if c in ("\"", "'"):
                key: Any = self.string()
            elif c == "{":
                key = tuple(sorted(self.obj().items(), key=lambda kv: kv[0]))
            else:
                key = self.bare(key=True)
            self.ws()
            if not self.s.startswith(":", self.i):
                raise self.fail("expected ':'")
            self.i += 1
            out[key] = self.value()
            self.ws()
            c = self.s[self.i : self.i + 1]
            self.i += 1
            if c == ",":
                continue
            if c == "}":
                return out
            raise self.fail("expected ',' or '}'")

    def arr(self) -> list:
        self.i += 1
        out: list = []
        self.ws()
        if self.s.startswith("]", self.i):
            self.i += 1
            return out
        while True:
            out.append(self.value())
            self.ws()
            c = self.s[self.i : self.i + 1]
            self.i += 1
            if c == ",":
                continue
            if c == "]":
                return out
            raise self.fail("expected ',' or ']'")

    def string(self) -> str:
        quote = self.s[self.i]
        j = self.i + 1
        s = self.s
        parts: list[str] = []
        while True:
            k = j
            while k < len(s) and s[k] != quote and s[k] != "\\":
                k += 1
            if k >= len(s):
                raise self.fail("unterminated string")
            parts.append(s[j:k])
            if s[k] == quote:
                self.i = k + 1
                return "".join(parts)
            esc = s[k + 1 : k + 2]
            if esc == "u":
                try:
                    parts.append(chr(int(s[k + 2 : k + 6], 16)))
                except ValueError:
                    raise self.fail("bad \\u escape") from None
                j = k + 6
            else:
                parts.append({"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}.get(esc, esc))
                j = k + 2

    def bare(self, key: bool = False) -> Any:
        s = self.s
        j = self.i
        stop = ":,}] \t\r\n" if key else ",}] \t\r\n"
        while j < len(s) and s[j] not in stop:
            j += 1
        tok = s[self.i : j]
        if not tok:
            raise self.fail("expected a value")
        self.i = j
        if tok == "true":
            return True
        if tok == "false":
            return False
        if tok == "null":
            return None
        try:
            return int(tok)
        except ValueError:
            pass
        try:
            return float(tok)
        except ValueError:
            pass
        if key:
            return tok
        raise self.fail(f"bad token {tok[:20]!r}")


def lenient_loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse a body written by fastjson; raises BodyDecodeError."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    if not isinstance(data, str):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as e:
            raise BodyDecodeError(f"body is not UTF-8: {e}") from None
    return _LenientParser(data).parse()


# --------------------------------------------------------------------------- typed beans

_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    h = _HINTS.get(cls)
    if h is None:
        h = typing.get_type_hints(cls)
        _HINTS[cls] = h
    return h


def _coerce(tp: Any, raw: Any, where: str) -> Any:
    """Convert a parsed JSON value to annotation ``tp`` the way fastjson does."""
    if raw is None:
        return None
    origin = typing.get_origin(tp)
    if origin is Union or origin is types.UnionType:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _coerce(args[0], raw, where) if len(args) == 1 else raw
    if tp is Any:
        return raw
    try:
        if tp is bool:
            if isinstance(raw, str):
                return raw.lower() == "true"
            return bool(raw)
        if tp is int:
            if isinstance(raw, bool):
                return int(raw)
            if isinstance(raw, float):
                return int(raw)
            return int(raw)
        if tp is float:
            return float(raw)
        if tp is str:
            if isinstance(raw, (dict, list)):
                raise BodyDecodeError(f"{where}: expected a string")
            if isinstance(raw, bool):
                return "true" if raw else "false"
            return str(raw)
    except (TypeError, ValueError):
        raise BodyDecodeError(f"{where}: cannot read {raw!r} as {tp.__name__}") from None
    if origin in (list, set, frozenset, tuple):
        if not isinstance(raw, list):
            raise BodyDecodeError(f"{where}: expected an array")
        (item,) = typing.get_args(tp)[:1] or (Any,)
        return [_coerce(item, x, where) for x in raw]
    if origin is dict:
        if not isinstance(raw, dict):
            raise BodyDecodeError(f"{where}: expected an object")
        kt, vt = typing.get_args(tp) or (Any, Any)
        return {_coerce(kt, k, where): _coerce(vt, v, f"{where}.{k}") for k, v in raw.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(raw, dict):
            raise BodyDecodeError(f"{where}: expected an object for {tp.__name__}")
        return _bean_from_obj(tp, raw)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp[raw] if isinstance(raw, str) else tp(raw)
        except (KeyError, ValueError):
            raise BodyDecodeError(f"{where}: unknown {tp.__name__} {raw!r}") from None
    return raw


def _bean_from_obj(cls: type, obj: dict) -> Any:
    hints = _hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        names = (_prop_name(f), *f.metadata.get("aliases", ()))
        for name in names:
            if name in obj:
                raw = obj[name]
                if raw is not None:
                    kwargs[f.name] = _coerce(hints[f.name], raw, f"{cls.__name__}.{name}")
                break
    return cls(**kwargs)


class FastJsonBody:
    """Mixin for body dataclasses: ``encode()``/``decode()`` like Java ``RemotingSerializable``."""

    __slots__ = ()

    def encode(self, *, standard: bool = False) -> bytes:
        return fastjson_dumps(self, standard=standard)

    to_json = encode

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview | str):
        obj = lenient_loads(data)
        if not isinstance(obj, dict):
            raise BodyDecodeError(f"{cls.__name__}: body is not a JSON object")
        return _bean_from_obj(cls, obj)

    from_json = decode

    @classmethod
    def from_obj(cls, obj: dict):
        """Build from an already parsed JSON object."""
        return _bean_from_obj(cls, obj)


def _json(name: str, **extra: Any) -> dict:
    return {"json": name, **extra}


# --------------------------------------------------------------------------- DataVersion, TopicConfig


@dataclass(slots=True)
class DataVersion(FastJsonBody):
    """Version stamp of a broker's topic table. Java: remoting/protocol/DataVersion.

    Equality and ``compare`` follow Java (stateVersion, then counter, then timestamp).
    """

    counter: int = 0
    state_version: int = 0
    timestamp: int = 0

    def compare(self, other: "DataVersion") -> int:
        a = (self.state_version, self.counter, self.timestamp)
        b = (other.state_version, other.counter, other.timestamp)
        return (a > b) - (a < b)

    def next_version(self, now_ms: int, state_version: int | None = None) -> None:
        if state_version is not None:
            self.state_version = state_version
        self.timestamp = now_ms
        self.counter += 1


@dataclass(slots=True)
class TopicConfig(FastJsonBody):
    """One topic as a broker registers it. Java: common/TopicConfig.

    ``encode_text``/``decode_text`` are the space separated form used inside a
    compressed RegisterBrokerBody (``TopicConfig#encode``/``#decode``).
    """

    topic_name: str | None = None
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = 6
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False
    attributes: dict[str, str] = field(default_factory=dict)

    def encode_text(self) -> str:
        attrs = fastjson_dumps(self.attributes).decode() if self.attributes is not None else ""
        return (
            f"{self.topic_name} {self.read_queue_nums} {self.write_queue_nums} "
            f"{self.perm} {self.topic_filter_type} {attrs}"
        )

    @classmethod
    def decode_text(cls, text: str) -> "TopicConfig":
        parts = text.split(" ")
        while parts and parts[-1] == "":  # Java String#split drops trailing empties
            parts.pop()
        if len(parts) < 5:
            raise BodyDecodeError(f"TopicConfig text has {len(parts)} fields: {text[:80]!r}")
        try:
            tc = cls(
                topic_name=parts[0],
                read_queue_nums=int(parts[1]),
                write_queue_nums=int(parts[2]),
                perm=int(parts[3]),
                topic_filter_type=parts[4],
            )
        except ValueError:
            raise BodyDecodeError(f"bad TopicConfig text: {text[:80]!r}") from None
        if len(parts) >= 6:
            # Java ignores an attributes JSON it cannot parse (e.g. one holding a space)
            try:
                attrs = lenient_loads(parts[5])
                if isinstance(attrs, dict):
                    tc.attributes = {str(k): str(v) for k, v in attrs.items()}
            except BodyDecodeError:
                pass
        return tc


@dataclass(slots=True)
class TopicConfigSerializeWrapper(FastJsonBody):
    """A broker's topic table with its version. Java: body/TopicConfigSerializeWrapper.

    Also the whole REGISTER_BROKER body of brokers older than V3_0_11.
    """

    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)


@dataclass(slots=True)
class TopicConfigAndMappingSerializeWrapper(TopicConfigSerializeWrapper):
    """5.x wrapper with static-topic mappings. Java: body/TopicConfigAndMappingSerializeWrapper.

    Mapping infos/details are kept as parsed JSON objects: pyrmq does not
    implement static topics, it only carries them through to route data.
    """

    topic_queue_mapping_info_map: dict[str, dict] = field(default_factory=dict)
    topic_queue_mapping_detail_map: dict[str, dict] = field(default_factory=dict)
    mapping_data_version: DataVersion = field(default_factory=DataVersion)


_INT = struct.Struct(">i")


def _looks_like_zlib(data: bytes | bytearray | memoryview) -> bool:
    """RFC 1950 header: CM = 8 (deflate), CINFO <= 7, FCHECK makes the pair a multiple of 31."""
    if len(data) < 2:
        return False
    cmf, flg = data[0], data[1]
    return cmf & 0x0F == 8 and cmf >> 4 <= 7 and (cmf << 8 | flg) % 31 == 0


@dataclass(slots=True)
class RegisterBrokerBody(FastJsonBody):
    """REGISTER_BROKER body of brokers >= V3_0_11. Java: body/RegisterBrokerBody.

    The compressed form (header ``compressed=true``) is a zlib stream of:
    int32 len + DataVersion JSON; int32 topic count; per topic int32 len +
    ``TopicConfig#encode`` text; int32 len + filterServerList JSON; and, for
    request version >= V5_0_0, int32 count + (int32 len + TopicQueueMappingInfo
    JSON) each. All ints big-endian.
    """

    topic_config_serialize_wrapper: TopicConfigAndMappingSerializeWrapper = field(
        default_factory=TopicConfigAndMappingSerializeWrapper
    )
    filter_server_list: list[str] = field(default_factory=list)

    def encode_compressed(self, version: int = MQ_VERSION_V5_0_0) -> bytes:
        w = self.topic_config_serialize_wrapper
        parts: list[bytes] = []

        def chunk(b: bytes) -> None:
            parts.append(_INT.pack(len(b)))
            parts.append(b)

        chunk(w.data_version.encode())
        parts.append(_INT.pack(len(w.topic_config_table)))
        for tc in w.topic_config_table.values():
            chunk(tc.encode_text().encode("utf-8"))
        chunk(fastjson_dumps(self.filter_server_list))
        if version >= MQ_VERSION_V5_0_0:
            infos = w.topic_queue_mapping_info_map or {}
            parts.append(_INT.pack(len(infos)))
            for info in infos.values():
                chunk(fastjson_dumps(info))
        return zlib.compress(b"".join(parts), 9)

    @classmethod
    def decode_compressed(cls, data: bytes, version: int) -> "RegisterBrokerBody":
        """Raises BodyDecodeError for a damaged or truncated stream."""
        try:
            raw = zlib.decompress(bytes(data))
        except zlib.error as e:
            raise BodyDecodeError(f"compressed RegisterBrokerBody: {e}") from None
        pos = 0

        def take(n: int) -> bytes:
            nonlocal pos
            if n < 0 or pos + n > len(raw):
                raise BodyDecodeError("compressed RegisterBrokerBody: End of compressed data has reached")
            b = raw[pos : pos + n]
            pos += n
            return b

        def read_int() -> int:
            return _INT.unpack(take(4))[0]

        body = cls()
        w = body.topic_config_serialize_wrapper
        w.data_version = DataVersion.decode(take(read_int()))
        for _ in range(read_int()):
            tc = TopicConfig.decode_text(take(read_int()).decode("utf-8"))
            w.topic_config_table[tc.topic_name] = tc
        try:
            servers = lenient_loads(take(read_int()))
            body.filter_server_list = [str(s) for s in servers] if isinstance(servers, list) else []
        except BodyDecodeError:
            body.filter_server_list = []  # Java logs and goes on with an empty list
        if version >= MQ_VERSION_V5_0_0:
            for _ in range(read_int()):
                info = lenient_loads(take(read_int()))
                if isinstance(info, dict):
                    w.topic_queue_mapping_info_map[str(info.get("topic"))] = info
        return body

    @classmethod
    def decode_request(cls, data: bytes | None, compressed: bool, version: int) -> "RegisterBrokerBody":
        """Body of a REGISTER_BROKER request (``DefaultRequestProcessor#registerBroker``)."""
        if not data:
            body = cls()
            body.topic_config_serialize_wrapper.data_version = DataVersion(0, 0, 0)
            return body
        if compressed or _looks_like_zlib(data):
            # 5.x brokers with compressedRegister=true send a compressed body but always
            # set the header's compressed=false (BrokerOuterAPI#registerBrokerAll), which
            # the Java NameServer then fails to parse; a JSON body never starts like zlib.
            return cls.decode_compressed(data, version)
        return cls.decode(data)


# --------------------------------------------------------------------------- route data


@dataclass(slots=True)
class QueueData(FastJsonBody):
    """Queues of one topic on one broker name. Java: route/QueueData.

    Reads the pre-4.9.0 spelling ``topicSynFlag`` too (spec §3.3).
    """

    broker_name: str | None = None
    read_queue_nums: int = 0
    write_queue_nums: int = 0
    perm: int = 0
    topic_sys_flag: int = field(default=0, metadata={"aliases": ("topicSynFlag",)})


@dataclass(slots=True)
class BrokerData(FastJsonBody):
    """Addresses of one broker name (id 0 = master). Java: route/BrokerData."""

    cluster: str | None = None
    broker_name: str | None = None
    broker_addrs: dict[int, str] = field(default_factory=dict)
    zone_name: str | None = None
    enable_acting_master: bool = False

    def copy(self) -> "BrokerData":
        return BrokerData(
            self.cluster, self.broker_name, dict(self.broker_addrs), self.zone_name, self.enable_acting_master
        )


@dataclass(slots=True)
class TopicRouteData(FastJsonBody):
    """GET_ROUTEINFO_BY_TOPIC answer. Java: route/TopicRouteData.

    ``encode(standard=True)`` for clients >= V4_9_4 or ``acceptStandardJsonOnly``.
    """

    order_topic_conf: str | None = None
    queue_datas: list[QueueData] | None = None
    broker_datas: list[BrokerData] | None = None
    filter_server_table: dict[str, list[str]] | None = None
    topic_queue_mapping_by_broker: dict[str, dict] | None = None


@dataclass(slots=True)
class ClusterInfo(FastJsonBody):
    """GET_BROKER_CLUSTER_INFO answer. Java: body/ClusterInfo."""

    broker_addr_table: dict[str, BrokerData] | None = None
    cluster_addr_table: dict[str, list[str]] | None = None


@dataclass(slots=True)
class TopicList(FastJsonBody):
    """Topic list answers. Java: body/TopicList (brokerAddr only for system topics)."""

    topic_list: list[str] = field(default_factory=list)
    broker_addr: str | None = None


@dataclass(slots=True)
class KVTable(FastJsonBody):
    """Key/value map of one KV config namespace. Java: body/KVTable."""

    table: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class BrokerMemberGroup(FastJsonBody):
    """All addresses of one broker name. Java: body/BrokerMemberGroup."""

    cluster: str | None = None
    broker_name: str | None = None
    broker_addrs: dict[int, str] = field(default_factory=dict)


@dataclass(slots=True)
class GetBrokerMemberGroupResponseBody(FastJsonBody):
    """GET_BROKER_MEMBER_GROUP answer. Java: body/GetBrokerMemberGroupResponseBody."""

    broker_member_group: BrokerMemberGroup | None = None
