"""The shape shared by the NameServer's and the broker's settings.

Both keep typed values keyed by Java names (``values``) next to what the
config file and later UPDATE_*_CONFIG requests said (``file_properties``,
unknown keys included, because Java shows the whole file back in
GET_*_CONFIG). A subclass gives its ``KEYS`` table and ``defaults()``; one
that feeds a second object from the same file (the broker's store settings)
extends ``apply`` and ``is_known``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Self

from pyrmq.common.properties import KeyTable, format_value, load_properties

__all__ = ["KeyedSettings"]


class KeyedSettings:
    """Typed settings under Java names, filled with ``MixAll#properties2Object``'s policy."""

    KEYS: ClassVar[KeyTable]

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self.values: dict[str, Any] = self.defaults()
        if values:
            for k, v in values.items():
                self[k] = v
        self.file_properties: dict[str, str] = {}

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if key not in self.KEYS.types:
            raise KeyError(key)
        self.values[key] = value

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> Self:
        cfg = cls()
        cfg.apply(props)
        cfg.file_properties = dict(props)
        return cfg

    @classmethod
    def from_file(cls, path: str) -> Self:
        """Raises ``OSError`` and ``PropertiesError`` (bad escapes) for the caller to report."""
        with open(path, encoding="utf-8") as f:
            return cls.from_properties(load_properties(f.read()))

    def apply(self, props: Mapping[str, str]) -> list[str]:
        """Set every known key present in ``props``; returns the keys nobody knows."""
        return self.KEYS.apply(props, self.values.__setitem__, self.values.__getitem__)

    def is_known(self, key: str) -> bool:
        return key in self.KEYS

    def unknown_keys(self) -> list[str]:
        return sorted(k for k in self.file_properties if not self.is_known(k))

    def all_properties(self) -> dict[str, str]:
        """``Configuration#getAllConfigsInternal``: file properties overlaid with current values."""
        out = dict(self.file_properties)
        for k, v in self.values.items():
            if v is not None:
                out[k] = format_value(v)
        return out
