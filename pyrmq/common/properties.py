"""Java ``.properties`` text and the typed key tables every config is filled from.

Java: ``java.util.Properties#load`` (the text format), ``MixAll#properties2String``
and ``MixAll#properties2Object`` (how a file or an UPDATE_*_CONFIG body sets a
config object). One reader, one writer and one policy for the NameServer,
the broker and the store:

* a key no table knows is kept by the caller and reported, never fatal;
* a value that does not parse as its key's type is logged and skipped, so the
  key keeps its value (Java swallows the exception per key);
* a key present is always set, even to its default value.
"""

from __future__ import annotations

import enum
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "KeyTable",
    "PropertiesError",
    "format_value",
    "load_properties",
    "parse_value",
    "properties_text",
]

log = logging.getLogger("pyrmq.config")


class PropertiesError(ValueError):
    """Text that ``Properties#load`` refuses (a malformed ``\\uxxxx`` escape)."""


def load_properties(text: str) -> dict[str, str]:
    """Read ``java.util.Properties`` text: ``key=value``/``key:value``/``key value``,
    ``#``/``!`` comments, backslash line continuation and escapes. Raises
    ``PropertiesError`` where Java throws IllegalArgumentException."""
    out: dict[str, str] = {}
    lines = re.split(r"\r\n|\r|\n", text)  # only these end a line in Properties#load
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        while _ends_with_odd_backslashes(line) and i <= len(lines):
            line = line[:-1] + (lines[i].lstrip(" \t\f") if i < len(lines) else "")
            i += 1
        key, value = _split_key_value(line)
        out[_unescape(key)] = _unescape(value)
    return out


def _ends_with_odd_backslashes(s: str) -> bool:
    n = len(s) - len(s.rstrip("\\"))
    return n % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    j = 0
    while j < len(line):
        c = line[j]
        if c == "\\":
            j += 2
            continue
        if c in "=: \t\f":
            break
        j += 1
    key = line[:j]
    rest = line[j:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out = []
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\" or i + 1 >= len(s):
            out.append(c)
            i += 1
            continue
        n = s[i + 1]
        if n == "u":
            hx = s[i + 2 : i + 6]
            if len(hx) != 4 or not all(ch in "0123456789abcdefABCDEF" for ch in hx):
                raise PropertiesError("Malformed \\uxxxx encoding.")
            out.append(chr(int(hx, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(n, n))
        i += 2
    return "".join(out)


def _escape(s: str) -> str:
    out = []
    for ch in s:
        if ch == "\\":
            out.append("\\\\")
        elif ord(ch) > 0x7E or ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def properties_text(props: Mapping[str, str], *, sort: bool = True, escape: bool = False) -> str:
    """``MixAll#properties2String``: ``key=value`` lines, sorted by key like ``isSort=true``.

    Java writes keys and values raw; ``escape=True`` writes them so that
    ``Properties#load`` reads back exactly what was given (backslashes and
    non-ASCII survive), which is what a request body should carry."""
    keys: Iterable[str] = sorted(props) if sort else props
    if escape:
        return "".join(f"{_escape(k)}={_escape(props[k])}\n" for k in keys)
    return "".join(f"{k}={props[k]}\n" for k in keys)


def format_value(value: Any) -> str:
    """Java ``String.valueOf`` of a config field (enums by name)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return str(value.name)
    return str(value)


def parse_value(tp: type, raw: str) -> Any:
    """One value as ``MixAll#properties2Object`` reads it for a field of type ``tp``.

    Booleans are true iff ``true`` (any case), numbers parse strictly, enums by
    name, strings are trimmed. Raises ``ValueError`` when the text does not
    parse."""
    text = raw.strip()
    if tp is bool:
        return text.lower() == "true"
    if tp is int:
        return int(text)
    if tp is float:
        return float(text)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        for name in (text, text.upper()):
            if name in tp.__members__:
                return tp[name]
        raise ValueError(f"not one of {', '.join(m.name for m in tp)}")
    return text


@dataclass(frozen=True)
class KeyTable:
    """The keys of one config object under their Java names, each with its value type.

    Built from the object's defaults, so the table and the defaults cannot drift.
    ``aliases`` maps extra names accepted in files to their Java key.
    """

    types: Mapping[str, type]
    aliases: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, defaults: Mapping[str, Any], aliases: Mapping[str, str] | None = None) -> KeyTable:
        return cls({k: type(v) for k, v in defaults.items()}, dict(aliases or {}))

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.aliases.get(key, key) in self.types

    def __iter__(self) -> Any:
        return iter(self.types)

    def canonical(self, key: str) -> str | None:
        """The Java key for ``key`` (an alias resolved), None when the table does not know it."""
        key = self.aliases.get(key, key)
        return key if key in self.types else None

    def apply(
        self,
        props: Mapping[str, str],
        assign: Callable[[str, Any], None],
        current: Callable[[str], Any],
    ) -> list[str]:
        """Set every known key present in ``props`` through ``assign``; returns the keys
        this table does not know. A value that does not parse is logged and skipped."""
        unknown = []
        for raw_key, raw in props.items():
            key = self.canonical(raw_key)
            if key is None:
                unknown.append(raw_key)
                continue
            tp = self.types[key]
            try:
                value = parse_value(tp, str(raw))
            except ValueError as e:
                log.warning(
                    "config: %s=%r is not a valid %s (%s); keeping %s",
                    raw_key,
                    raw,
                    tp.__name__,
                    e,
                    format_value(current(key)),
                )
                continue
            assign(key, value)
        return unknown
