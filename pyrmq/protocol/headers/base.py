"""Typed custom headers <-> extFields, following Java's reflection rules.

Java: RemotingCommand#decodeCommandCustomHeader / #makeCustomHeaderToNet
(spec §1.7). A header is a `@dataclass(slots=True)` subclass of
`RemotingHeader`; each field's wire key is its `field(metadata={"key": ...})`
or its name in camelCase (`producer_group` -> `producerGroup`). Field types:
`str`, `int`, `bool`, `float`, an `Enum` (by name), each optionally `| None`.

Reading: unknown keys are ignored; a missing or unparseable value leaves the
field's default, as in Java; a field without a default (required) raises
`MissingHeaderField` ("the custom field <x> is null", INVALID_PARAMETER).
Booleans: only case-insensitive "true" is true. Writing: None is skipped,
bool as "true"/"false", float as Java Double.toString, Enum by name.

The per-class field table is built once, on first use, and cached on the class.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Self

from pyrmq._speedups import pick
from pyrmq.common.java_lang import double_to_string
from pyrmq.protocol.errors import InvalidParameter, MissingHeaderField

_KIND_STR, _KIND_INT, _KIND_BOOL, _KIND_FLOAT, _KIND_ENUM = range(5)
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def camel_case(name: str) -> str:
    """snake_case -> camelCase (`max_msg_nums` -> `maxMsgNums`); names without `_` stay."""
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _parse_java_int(v: str) -> int:
    if v.isdigit() and v.isascii():  # the common case without the regex (isdigit alone takes "²")
        return int(v)
    if not _JAVA_INT.fullmatch(v):
        raise ValueError(v)
    return int(v)


_parse_java_int = pick(_parse_java_int)  # the compiled twin (pyrmq/_speedups) when built


def _unwrap_optional(tp: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"unsupported header field type {tp!r}")
        return args[0], True
    return tp, False


def _parse_java_bool(v: str) -> bool:
    return v.lower() == "true"


_parse_java_bool = pick(_parse_java_bool)  # the compiled twin (pyrmq/_speedups) when built


class _Field(typing.NamedTuple):
    attr: str
    key: str
    kind: int
    required: bool
    enum_cls: type[enum.Enum] | None
    #: str -> value, raising ValueError/KeyError for a bad one; None for str fields (kept as is)
    parse: Callable[[str], Any] | None


class RemotingHeader:
    """Base class for typed custom headers (Java CommandCustomHeader)."""

    __slots__ = ()
    _header_fields: ClassVar[tuple[_Field, ...]]

    @classmethod
    def _fields_table(cls) -> tuple[_Field, ...]:
        table = cls.__dict__.get("_header_fields")
        if table is None:
            table = _build_table(cls)
            cls._header_fields = table
        return table

    @classmethod
    def from_ext_fields(cls, ext: Mapping[str, str] | None) -> Self:
        """Decode from a command's ext_fields (None behaves as empty)."""
        if ext is None:
            ext = {}
        table = cls.__dict__.get("_header_fields") or cls._fields_table()
        return cls(**_header_kwargs(table, ext))

    @classmethod
    def from_command(cls, cmd: Any) -> Self:
        """Decode from `cmd.ext_fields`."""
        return cls.from_ext_fields(cmd.ext_fields)

    def to_ext_fields(self) -> dict[str, str]:
        """Encode as ext_fields; None fields are left out (Java makeCustomHeaderToNet)."""
        return _header_ext_fields(self._fields_table(), self)


def _header_kwargs(table: tuple[_Field, ...], ext: Mapping[str, str]) -> dict[str, Any]:
    """The constructor arguments of a header with field table ``table`` read from ``ext``."""
    kwargs: dict[str, Any] = {}
    for attr, wire_key, _kind, required, _enum, parse in table:
        v = ext.get(wire_key)
        if v is None:
            if required:
                raise MissingHeaderField(wire_key)
            continue
        if parse is None:
            kwargs[attr] = v
            continue
        try:
            kwargs[attr] = parse(v)
        except (ValueError, KeyError):
            # Java logs the parse failure and keeps the field's default.
            if required:
                raise InvalidParameter(f"the custom field <{wire_key}> has an invalid value {v!r}") from None
    return kwargs


_header_kwargs = pick(_header_kwargs)  # the compiled twin (pyrmq/_speedups) when built


def _header_ext_fields(table: tuple[_Field, ...], header: Any) -> dict[str, str]:
    """The ext_fields of ``header`` (a RemotingHeader with field table ``table``)."""
    out: dict[str, str] = {}
    for f in table:
        v = getattr(header, f.attr)
        if v is None:
            continue
        kind = f.kind
        if kind == _KIND_STR:
            out[f.key] = v
        elif kind == _KIND_BOOL:
            out[f.key] = "true" if v else "false"
        elif kind == _KIND_INT:
            out[f.key] = str(int(v))
        elif kind == _KIND_FLOAT:
            out[f.key] = double_to_string(float(v))
        else:
            out[f.key] = v.name
    return out


_header_ext_fields = pick(_header_ext_fields)  # the compiled twin (pyrmq/_speedups) when built


def _build_table(cls: type) -> tuple[_Field, ...]:
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} must be a dataclass")
    hints = typing.get_type_hints(cls)
    table = []
    for fld in dataclasses.fields(cls):
        tp, _optional = _unwrap_optional(hints[fld.name])
        enum_cls = None
        if tp is bool:
            kind = _KIND_BOOL
        elif isinstance(tp, type) and issubclass(tp, enum.Enum):
            kind, enum_cls = _KIND_ENUM, tp
        elif tp is int:
            kind = _KIND_INT
        elif tp is float:
            kind = _KIND_FLOAT
        elif tp is str:
            kind = _KIND_STR
        else:
            raise TypeError(f"{cls.__name__}.{fld.name}: unsupported header field type {tp!r}")
        required = fld.default is dataclasses.MISSING and fld.default_factory is dataclasses.MISSING
        key = fld.metadata.get("key") or camel_case(fld.name)
        parse: Callable[[str], Any] | None = None
        if kind == _KIND_INT:
            parse = _parse_java_int
        elif kind == _KIND_BOOL:
            parse = _parse_java_bool
        elif kind == _KIND_FLOAT:
            parse = float
        elif enum_cls is not None:
            parse = enum_cls.__getitem__
        table.append(_Field(fld.name, key, kind, required, enum_cls, parse))
    return tuple(table)


def key(wire_key: str, **kwargs: Any) -> Any:
    """`dataclasses.field` with an explicit wire key: `producer_group: str = key("a")`."""
    metadata = dict(kwargs.pop("metadata", None) or {})
    metadata["key"] = wire_key
    return dataclasses.field(metadata=metadata, **kwargs)
