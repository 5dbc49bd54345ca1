"""The one clock: epoch milliseconds, as Java's ``System.currentTimeMillis``.

Every component that stamps or compares times takes a ``Clock`` (the broker and
NameServer controllers hand theirs to the store, managers, transaction checks,
timers and schedulers), so a test pins time with one fake instead of sleeping.
``now_ms`` is the real one and the default everywhere.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["Clock", "now_ms"]

#: a function returning epoch milliseconds
Clock = Callable[[], int]


def now_ms() -> int:
    return time.time_ns() // 1_000_000
