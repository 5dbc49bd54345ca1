"""A hard per-test limit behind pytest-timeout's.

pytest-timeout (signal method) raises in the main thread; a test blocked in C code that never
returns to the interpreter (a gRPC call, a join on a native thread) or a teardown that hangs after
that timeout fired is beyond it, and then a whole xdist worker, and the CI run, waits forever. This
watchdog runs on its own thread: past the limit it prints the test's id and every thread's stack,
kills the servers the test started (support.procs) and ends the worker, so xdist reports the test
as crashed and goes on with a new worker. faulthandler's own C-level timer follows a minute later
in case the interpreter itself is stuck.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
import time

import pytest

GRACE_S = 180.0  # beyond pytest-timeout's limit: its own timeout and the teardown after it


def hard_limit(item: pytest.Item) -> float | None:
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        base = float(marker.args[0])
    else:
        try:
            base = float(item.config.getini("timeout") or 0)
        except ValueError:
            base = 0.0
    return base + GRACE_S if base > 0 else None


def _expire(config: pytest.Config, nodeid: str, limit: float) -> None:
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        try:
            capture.suspend_global_capture(in_=False)  # fd 2 back to the run's own stderr
        except Exception:
            pass
    err = sys.__stderr__
    if err is None:
        os._exit(3)
    err.write(f"\n[watchdog] {nodeid} still running after {limit:.0f} s: stacks follow; ending this worker\n")
    err.flush()
    faulthandler.dump_traceback(file=err, all_threads=True)
    err.flush()
    from support import procs

    procs.kill_all()
    time.sleep(0.5)
    os._exit(3)


class Watchdog:
    """Armed around one test's setup, call and teardown."""

    def __init__(self, config: pytest.Config, nodeid: str, limit: float):
        self._timer = threading.Timer(limit, _expire, args=(config, nodeid, limit))
        self._timer.daemon = True
        self._limit = limit

    def __enter__(self) -> Watchdog:
        self._timer.start()
        if sys.__stderr__ is not None:
            faulthandler.dump_traceback_later(self._limit + 60, exit=True, file=sys.__stderr__)
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        faulthandler.cancel_dump_traceback_later()
