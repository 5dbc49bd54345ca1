"""Topic attributes: the ``+key=value,-key`` modification syntax and how it alters a topic's map.

Java: ``common/attribute/{AttributeParser,AttributeUtil,Attribute,EnumAttribute,
LongRangeAttribute,BooleanAttribute,TopicMessageType}`` and ``common/TopicAttributes``, as the
5.5.0 jar has them (PRIORITY, LITE and lite.topic.expiration are newer than the source mirror). A request
carries modifications (``+message.type=FIFO``, ``-reserve.time``); the stored map has plain keys
(``message.type``). The error texts are Java's: the broker answers them as remarks.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from pyrmq.common.java_lang import hashmap_order


class AttributeModificationError(ValueError):
    """A modification Java refuses (its RuntimeException), with Java's message."""


class TopicMessageType(enum.StrEnum):
    UNSPECIFIED = "UNSPECIFIED"
    NORMAL = "NORMAL"
    FIFO = "FIFO"
    DELAY = "DELAY"
    TRANSACTION = "TRANSACTION"
    PRIORITY = "PRIORITY"
    LITE = "LITE"
    MIXED = "MIXED"


@dataclass(frozen=True, slots=True)
class Attribute:
    """One known attribute: its name, whether a later update may change it, and its values."""

    name: str
    changeable: bool
    universe: tuple[str, ...] | None = None  # EnumAttribute, in Java's declaration order
    long_range: tuple[int, int] | None = None  # LongRangeAttribute
    boolean: bool = False  # BooleanAttribute

    def verify(self, value: str) -> None:
        if self.universe is not None and value not in self.universe:
            raise AttributeModificationError(f"value is not in set: [{', '.join(_guava_hash_set(self.universe))}]")
        if self.long_range is not None:
            lo, hi = self.long_range
            try:
                n = int(value)
            except ValueError:
                raise AttributeModificationError(f'For input string: "{value}"') from None
            if n < lo or n > hi:
                raise AttributeModificationError(f"value is not in range({lo}, {hi})")
        if self.boolean and value.lower() not in ("true", "false"):
            raise AttributeModificationError("boolean attribute format is wrong.")


def _guava_hash_set(values: tuple[str, ...]) -> list[str]:
    """How Java prints Guava's ``Sets.newHashSet(values...)``: a HashMap of capacity
    ``Maps.capacity(n)`` iterated in bucket order."""
    n = len(values)
    capacity = n + 1 if n < 3 else int(n / 0.75 + 1.0)
    return list(hashmap_order(dict.fromkeys(values), capacity))


#: Java TopicAttributes.ALL
TOPIC_ATTRIBUTES: dict[str, Attribute] = {
    a.name: a
    for a in (
        Attribute("queue.type", False, ("BatchCQ", "SimpleCQ")),
        Attribute("cleanup.policy", False, ("DELETE", "COMPACTION")),
        Attribute("message.type", True, tuple(t.value for t in TopicMessageType)),
        Attribute("reserve.time", True, long_range=(-1, (1 << 63) - 1)),
        Attribute("lite.topic.expiration", True, long_range=(-1, 30)),
    )
}
MESSAGE_TYPE = "message.type"


def parse_to_map(text: str | None) -> dict[str, str]:
    """Java AttributeParser#parseToMap: ``+a=b,-c`` -> {"+a": "b", "-c": ""}, keys kept signed."""
    out: dict[str, str] = {}
    if not text:
        return out
    for kv in text.split(","):
        if "=" in kv:
            key, value = kv.split("=")[:2]
            if "+" not in key:
                raise AttributeModificationError(f"add/alter attribute format is wrong: {key}")
        else:
            key, value = kv, ""
            if "-" not in key:
                raise AttributeModificationError(f"delete attribute format is wrong: {key}")
        if key in out:
            raise AttributeModificationError(f"key duplication: {key}")
        out[key] = value
    return out


def parse_to_string(attributes: Mapping[str, str]) -> str:
    """Java AttributeParser#parseToString: the inverse (a key with an empty value stands alone)."""
    return ",".join(k if not v else f"{k}={v}" for k, v in attributes.items())


def alter_current_attributes(
    create: bool, known: Mapping[str, Attribute], current: Mapping[str, str], new: Mapping[str, str]
) -> dict[str, str]:
    """The stored map after ``new`` modifications. Java AttributeUtil#alterCurrentAttributes:
    a new topic takes only ``+`` keys; an update adds, changes (changeable attributes only) or
    deletes (existing keys only); every key must be known and every value valid."""
    init: dict[str, str] = {}
    add: dict[str, str] = {}
    update: dict[str, str] = {}
    delete: dict[str, str] = {}
    seen: set[str] = set()
    for key, value in new.items():
        real = key[1:]
        if not real or "+" in real or "-" in real:
            raise AttributeModificationError("kv string format wrong.")
        if real in seen:
            raise AttributeModificationError(f"alter duplication key. key: {real}")
        seen.add(real)
        if create:
            if not key.startswith("+"):
                raise AttributeModificationError(f"only add attribute is supported while creating topic. key: {real}")
            init[real] = value
        elif key.startswith("+"):
            (update if real in current else add)[real] = value
        elif key.startswith("-"):
            if real not in current:
                raise AttributeModificationError(f"attempt to delete a nonexistent key: {real}")
            delete[real] = value
        else:
            raise AttributeModificationError(f"wrong format key: {real}")
    checks = ((init, True, False), (add, False, False), (update, False, False), (delete, False, True))
    for group, is_init, is_delete in checks:
        for key, value in group.items():
            attribute = known.get(key)
            if attribute is None:
                raise AttributeModificationError(f"unsupported key: {key}")
            if not is_init and not attribute.changeable:
                raise AttributeModificationError(f"attempt to update an unchangeable attribute. key: {key}")
            if not is_delete:
                attribute.verify(value)
    final = dict(current)
    final.update(init)
    final.update(add)
    final.update(update)
    for key in delete:
        final.pop(key, None)
    return final
