"""Event loop choice: uvloop when installed (the `[fast]` extra), else asyncio's default."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("pyrmq.remoting")


def install_uvloop_if_available() -> bool:
    """Make new event loops uvloop ones if uvloop is importable; True if it was."""
    try:
        import uvloop
    except ImportError:
        return False
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    log.debug("using uvloop %s", getattr(uvloop, "__version__", "?"))
    return True


LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s - %(message)s"


def setup_logging(level: str, default: int = logging.INFO) -> None:
    """One log format for every server command (namesrv, broker, dev)."""
    logging.basicConfig(level=getattr(logging, str(level).upper(), default), format=LOG_FORMAT)


def stop_on_signals(stop: asyncio.Event) -> None:
    """SIGTERM/SIGINT set ``stop``: servers then shut down cleanly (abort file, offsets, unregister)."""
    import signal

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # not the main thread, or no signals here
            pass


def call_on_loop(loop: asyncio.AbstractEventLoop | None, fn: Callable[..., Any], *args: Any) -> None:
    """``fn(*args)`` on ``loop``: at once from the loop's own thread, else scheduled thread-safely
    (the store dispatches and flushes on its own threads); nothing when the loop is gone."""
    if loop is None or loop.is_closed():
        return
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        fn(*args)
    else:
        loop.call_soon_threadsafe(fn, *args)
