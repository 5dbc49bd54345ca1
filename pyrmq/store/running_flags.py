"""The store's state bits that decide whether puts are accepted. Java: ``store/RunningFlags``.

Each condition has its own bit, so clearing one (disk space is back) never
re-enables a store another condition (a write error) made unwritable.
"""

from __future__ import annotations

import enum
import threading


class RunningFlag(enum.IntFlag):
    """Java RunningFlags bit constants."""

    NOT_READABLE = 1
    NOT_WRITEABLE = 1 << 1
    WRITE_LOGICS_QUEUE_ERROR = 1 << 2
    WRITE_INDEX_FILE_ERROR = 1 << 3
    DISK_FULL = 1 << 4
    FENCED = 1 << 5
    LOGIC_DISK_FULL = 1 << 6


#: any of these refuses puts (Java RunningFlags#isWriteable); a plain int: checked on every put
_NOT_WRITEABLE_BITS = int(
    RunningFlag.NOT_WRITEABLE
    | RunningFlag.WRITE_LOGICS_QUEUE_ERROR
    | RunningFlag.DISK_FULL
    | RunningFlag.WRITE_INDEX_FILE_ERROR
    | RunningFlag.FENCED
    | RunningFlag.LOGIC_DISK_FULL
)


class RunningFlags:
    """Thread-safe bit set; the ``get_and_make_*`` methods return whether the state changed
    (Java: "was it OK before")."""

    def __init__(self) -> None:
        self._bits = 0  # RunningFlag bits as a plain int (IntFlag arithmetic costs ~0.5 us per put)
        self._lock = threading.Lock()

    @property
    def flag_bits(self) -> int:
        return self._bits

    def is_writeable(self) -> bool:
        return not self._bits & _NOT_WRITEABLE_BITS

    def is_set(self, flag: RunningFlag) -> bool:
        return bool(self._bits & flag)

    def _set(self, flag: RunningFlag, on: bool) -> bool:
        with self._lock:
            before = bool(self._bits & flag)
            self._bits = int(self._bits | flag) if on else int(self._bits & ~flag)
            return before != on

    def get_and_make_disk_full(self) -> bool:
        return self._set(RunningFlag.DISK_FULL, True)

    def get_and_make_disk_ok(self) -> bool:
        return self._set(RunningFlag.DISK_FULL, False)

    def get_and_make_logic_disk_full(self) -> bool:
        return self._set(RunningFlag.LOGIC_DISK_FULL, True)

    def get_and_make_logic_disk_ok(self) -> bool:
        return self._set(RunningFlag.LOGIC_DISK_FULL, False)

    def get_and_make(self, flag: RunningFlag, on: bool) -> bool:
        """Set or clear one bit; whether it changed (WRITE_LOGICS_QUEUE_ERROR, WRITE_INDEX_FILE_ERROR
        while dispatch is stalled)."""
        return self._set(flag, on)

    def make_not_writeable(self, on: bool = True) -> bool:
        """NOT_WRITEABLE_BIT (Java getAndMakeNotWriteable / getAndMakeWriteable)."""
        return self._set(RunningFlag.NOT_WRITEABLE, on)
