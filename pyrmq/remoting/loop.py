"""Event loop choice: uvloop when installed (the `[fast]` extra), else asyncio's default."""

from __future__ import annotations

import asyncio
import logging

log = logging.getLogger("pyrmq.remoting")


def install_uvloop_if_available() -> bool:
    """Make new event loops uvloop ones if uvloop is importable; True if it was."""
    try:
        import uvloop  # type: ignore[import-not-found]
    except ImportError:
        return False
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    log.debug("using uvloop %s", getattr(uvloop, "__version__", "?"))
    return True
