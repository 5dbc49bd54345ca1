"""Iteration order of a ``java.util.HashMap``: the order Java writes a message's properties in.

Java: ``MessageDecoder#string2messageProperties`` fills ``new HashMap<>(128)`` and
``#messageProperties2String`` writes it back in iteration order, so every
properties string a 5.5.0 broker stores (SendMessageProcessor, delay/timer
hooks) is in bucket order, not the client's order. Within a bucket, entries
keep their insertion order (tree bins of 8+ colliding keys are not modelled).
"""
from __future__ import annotations

from functools import lru_cache
from typing import TypeVar

from .message import java_string_hash

V = TypeVar("V")

#: MessageDecoder.string2messageProperties: new HashMap<>(128)
PROPERTIES_MAP_CAPACITY = 128


@lru_cache(maxsize=4096)  # property keys repeat on every message: hash each once (send hot path)
def _spread(key: str) -> int:
    h = java_string_hash(key) & 0xFFFFFFFF
    return h ^ (h >> 16)  # HashMap#hash


def hashmap_order(d: dict[str, V], capacity: int = PROPERTIES_MAP_CAPACITY) -> dict[str, V]:
    """``d`` re-ordered as a ``new HashMap<>(capacity)`` filled with its items in order iterates."""
    cap = 1
    while cap < capacity:
        cap <<= 1
    while len(d) > cap * 3 // 4:  # resize at the 0.75 load factor
        cap <<= 1
    mask = cap - 1
    return dict(sorted(d.items(), key=lambda kv: _spread(kv[0]) & mask))  # sorted() is stable
