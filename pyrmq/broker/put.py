"""Awaiting the store's put from the event loop.

The store appends under its own lock and, under SYNC_FLUSH, completes the
put's ``concurrent.futures.Future`` from the flush thread; every broker-side
writer (processors, the delay, timer and transaction services) awaits it
here without blocking the loop.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Future

from pyrmq.store.results import PutMessageResult

__all__ = ["await_put"]


async def await_put(fut: Future[PutMessageResult]) -> PutMessageResult:
    """The put's result; returns at once when the store already completed it (ASYNC_FLUSH)."""
    if fut.done():
        return fut.result()
    return await asyncio.wrap_future(fut)
