"""Bytes replicated per second, for haStatus. Java store.ha.FlowMonitor (its rate-limit half aside)."""

from __future__ import annotations

import time
from collections.abc import Callable


class FlowMonitor:
    """Counts bytes in the current whole second and reports the last complete one.

    Lazy instead of Java's once-a-second thread: the bucket rolls when bytes arrive or the
    rate is read; a second with no traffic (or more than one since) reads as 0.
    """

    __slots__ = ("_bytes", "_clock", "_last", "_second")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._second = int(clock())
        self._bytes = 0
        self._last = 0

    def _roll(self) -> None:
        now = int(self._clock())
        if now != self._second:
            self._last = self._bytes if now == self._second + 1 else 0
            self._second = now
            self._bytes = 0

    def add(self, n: int) -> None:
        self._roll()
        self._bytes += n

    def transferred_byte_in_second(self) -> int:
        self._roll()
        return self._last
