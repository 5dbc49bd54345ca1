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
import enum
import types
import typing
from collections.abc import Mapping
from typing import Any, Self, TypeAlias, TypeVar, Union

import orjson

from pyrmq.common.java_lang import double_to_string

#: fastjson BrowserCompatible writes longs outside this range as strings
_JS_SAFE = (1 << 53) - 1

#: What the lenient reader returns: JSON values whose object keys may also be the dialect's bare
#: numbers, true/false/null, or key objects (kept as their sorted items, to be hashable).
LenientKey: TypeAlias = "str | int | float | bool | tuple[tuple[LenientKey, LenientValue], ...] | None"
LenientValue: TypeAlias = "str | int | float | bool | list[LenientValue] | dict[LenientKey, LenientValue] | None"

#: A JSON object pyrmq carries through without reading it (static-topic mappings and the like);
#: its values are whatever the peer put there.
JsonObject: TypeAlias = dict[str, Any]

_Bean = TypeVar("_Bean")


class BodyDecodeError(ValueError):
    """A body that neither JSON nor the fastjson dialect can read, or of the wrong shape."""


# --------------------------------------------------------------------------- writer


def is_bean(value: Any) -> bool:
    """A dataclass instance (serialised as a Java bean)."""
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _prop_name(f: dataclasses.Field[Any]) -> str:
    name: str | None = f.metadata.get("json")
    if name:
        return name
    head, *rest = f.name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


#: per bean class: its (Java name, attribute) pairs sorted by Java name, transient ones left out
_BEAN_LAYOUTS: dict[type, tuple[tuple[str, str], ...]] = {}


def _bean_layout(cls: type) -> tuple[tuple[str, str], ...]:
    layout = _BEAN_LAYOUTS.get(cls)
    if layout is None:
        pairs = [(_prop_name(f), f.name) for f in dataclasses.fields(cls) if not f.metadata.get("transient")]
        pairs.sort(key=lambda p: p[0])
        layout = _BEAN_LAYOUTS[cls] = tuple(pairs)
    return layout


def bean_props(value: Any) -> list[tuple[str, Any]]:
    """A bean's non-null properties as (Java name, value), sorted by name: fastjson's order, the one rule
    for remoting bodies and config files. The names and their order are worked out once per class
    (a registration of 10,000 topics spent most of its 280 ms here)."""
    return [(name, v) for name, attr in _bean_layout(type(value)) if (v := getattr(value, attr)) is not None]


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
        out.append(double_to_string(value))
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


def _write_map(value: Mapping[Any, Any], out: list[str], standard: bool) -> None:
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

    __slots__ = ("i", "s")

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

    def parse(self) -> LenientValue:
        self.ws()
        v = self.value()
        self.ws()
        if self.i != len(self.s):
            raise self.fail("trailing data")
        return v

    def value(self) -> LenientValue:
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

    def obj(self) -> dict[LenientKey, LenientValue]:
        self.i += 1
        out: dict[LenientKey, LenientValue] = {}
        self.ws()
        if self.s.startswith("}", self.i):
            self.i += 1
            return out
        while True:
            self.ws()
            c = self.s[self.i : self.i + 1]
            key: LenientKey
            if c in ('"', "'"):
                key = self.string()
            elif c == "{":
                key = tuple(sorted(self.obj().items(), key=_item_key))
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

    def arr(self) -> list[LenientValue]:
        self.i += 1
        out: list[LenientValue] = []
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

    def bare(self, key: bool = False) -> str | int | float | bool | None:
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


def _item_key(kv: tuple[LenientKey, LenientValue]) -> Any:
    """Items of a key object sort by their key, compared as Python compares them (the keys of one
    object are names, so of one type)."""
    return kv[0]


def lenient_loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse a body written by fastjson; raises BodyDecodeError.

    The result is a LenientValue; typed Any like ``json.loads``, since each caller reads the
    shape its body has (and checks it where a peer may send another).
    """
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


class _ReadableProp(typing.NamedTuple):
    field: str  # the dataclass field
    names: tuple[str, ...]  # the Java property names it is read from, the first one written
    hint: Any  # its annotation, resolved


_READABLE: dict[type, tuple[_ReadableProp, ...]] = {}


def _readable_props(cls: type) -> tuple[_ReadableProp, ...]:
    """The init fields of a bean class with their names and annotations, worked out once per class."""
    props = _READABLE.get(cls)
    if props is None:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"{cls.__name__} is not a dataclass, so not a bean")
        hints = typing.get_type_hints(cls)
        props = tuple(
            _ReadableProp(f.name, (_prop_name(f), *f.metadata.get("aliases", ())), hints[f.name])
            for f in dataclasses.fields(cls)
            if f.init
        )
        _READABLE[cls] = props
    return props


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
        items = [_coerce(item, x, where) for x in raw]
        return set(items) if origin is set else frozenset(items) if origin is frozenset else items
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


def _bean_from_obj(cls: type[_Bean], obj: Mapping[Any, Any]) -> _Bean:
    kwargs: dict[str, Any] = {}
    for prop in _readable_props(cls):
        for name in prop.names:
            if name in obj:
                raw = obj[name]
                if raw is not None:
                    kwargs[prop.field] = _coerce(prop.hint, raw, f"{cls.__name__}.{name}")
                break
    return cls(**kwargs)


class FastJsonBody:
    """Mixin for body dataclasses: ``encode()``/``decode()`` like Java ``RemotingSerializable``."""

    __slots__ = ()

    def encode(self, *, standard: bool = False) -> bytes:
        return fastjson_dumps(self, standard=standard)

    to_json = encode

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview | str) -> Self:
        obj = lenient_loads(data)
        if not isinstance(obj, dict):
            raise BodyDecodeError(f"{cls.__name__}: body is not a JSON object")
        return _bean_from_obj(cls, obj)

    from_json = decode

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> Self:
        """Build from an already parsed JSON object."""
        return _bean_from_obj(cls, obj)
