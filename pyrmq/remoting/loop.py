"""Event loop choice: uvloop when installed (the `[fast]` extra), else asyncio's default."""

from __future__ import annotations

import asyncio
import logging

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
