"""Short garbage-collector pauses on a server with a large long-lived heap.

CPython's full (generation-2) collection walks every tracked object. A broker with 10,000 topics
holds about 200,000 objects that live as long as the process (topic configs, queues, mapped
files, their dicts), and each full collection walked all of them to free nothing: pauses of
28-186 ms, the broker's p99 at that size (docs/benchmarks.md, "Topics and connections").

So after each full collection the survivors are moved to the permanent generation
(``gc.freeze``), which later collections skip: a full collection then walks only what was
created since the last one. Objects in the permanent generation are still freed when their
reference count drops to zero; only reference cycles among them wait, until the rescan: every
``rescan_s`` seconds everything is thawed, collected once and frozen again.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from typing import Any

log = logging.getLogger("pyrmq.gc")

#: seconds between full collections over the frozen heap (cycles that died among frozen objects)
RESCAN_S = 600.0


class GcPolicy:
    """Freeze after full collections; thaw and collect every ``rescan_s``. One per process."""

    def __init__(self, rescan_s: float = RESCAN_S) -> None:
        self.rescan_s = rescan_s
        self.freezes = 0
        self.rescans = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._freeze_pending = False

    def start(self) -> None:
        """Call on the event loop once the server has loaded its state."""
        self._loop = asyncio.get_running_loop()
        self.rescan()
        gc.callbacks.append(self._on_gc)

    def stop(self) -> None:
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._loop = None
        gc.unfreeze()

    def rescan(self) -> None:
        """Thaw, collect everything once, freeze what survived."""
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        self.rescans += 1
        log.debug("full collection over the whole heap; %d objects frozen", gc.get_freeze_count())
        if self._loop is not None and not self._loop.is_closed():
            self._handle = self._loop.call_later(self.rescan_s, self.rescan)

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        # runs inside the collector, on whichever thread allocated: only schedule the freeze
        if phase != "stop" or info["generation"] != 2 or self._freeze_pending:
            return
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        self._freeze_pending = True
        try:
            loop.call_soon_threadsafe(self._freeze)
        except RuntimeError:  # the loop closed meanwhile
            self._freeze_pending = False

    def _freeze(self) -> None:
        self._freeze_pending = False
        gc.freeze()
        self.freezes += 1


__all__ = ["RESCAN_S", "GcPolicy"]
