"""The asyncio side of flow control: queue received requests, start them, answer the excess busy.

One FlowDispatcher is shared by every server that shares Java's executors (the broker's main
and VIP ports). It also holds the cap on bytes of requests in flight: a request is counted from
the moment its frame is decoded until its handler returned (or it was answered busy), and a
request that would pass the cap is answered SYSTEM_BUSY "[OVERLOAD]..." at once, so its body is
freed at once. The sans-IO rules are in flow.py.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable

from pyrmq.common import memory
from pyrmq.protocol.codes import ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.remoting.channel import Channel
from pyrmq.remoting.flow import OVERLOAD_REMARK, FlowControl, RequestQueue

log = logging.getLogger("pyrmq.remoting.flow")

#: BrokerFastFailure runs cleanExpiredRequest every 10 ms, starting 1 s after the broker
SWEEP_INTERVAL_S = 0.010
#: after a burst that held this many bytes in flight, malloc is asked to trim once it is over
TRIM_AFTER_BYTES = 16 * 1024 * 1024

Item = tuple[Channel, RemotingCommand, int]  # (channel, request, frame bytes)


def request_size(cmd: RemotingCommand) -> int:
    """What a request holds in memory, near enough: its body and a fixed share for the header and objects."""
    body = cmd.body
    return (len(body) if body is not None else 0) + 1024


class FlowDispatcher:
    """Feeds requests through a FlowControl's queues; `max_bytes_in_flight` (0 = no cap)."""

    def __init__(
        self,
        flow: FlowControl[Item],
        *,
        max_bytes_in_flight: Callable[[], int] = lambda: 0,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.flow = flow
        self.max_bytes_in_flight = max_bytes_in_flight
        self.clock_ms = clock_ms
        self.bytes_in_flight = 0
        self.busy_answers = 0  # every SYSTEM_BUSY this dispatcher gave (overload, cleaned queues)
        self._sweeper: asyncio.Task | None = None
        self._freeing: set[RequestQueue[Item]] = set()
        self.peak_bytes = 0  # the most bytes in flight since the last trim
        self.trims = 0

    # -- Channel.dispatch ------------------------------------------------------

    def __call__(self, channel: Channel, cmd: RemotingCommand, received_at_ms: int) -> bool:
        queue = self.flow.queue_for(cmd.code)
        if queue is None:
            return False
        size = request_size(cmd)
        cap = self.max_bytes_in_flight()
        if (cap > 0 and self.bytes_in_flight + size > cap and self.bytes_in_flight > 0) or not queue.offer(
            (channel, cmd, size), received_at_ms
        ):
            self._busy(channel, cmd, OVERLOAD_REMARK)
            return True
        self.bytes_in_flight += size
        if self.bytes_in_flight > self.peak_bytes:
            self.peak_bytes = self.bytes_in_flight
        self._pump(queue)
        return True

    # -- running -----------------------------------------------------------------

    def _pump(self, queue: RequestQueue[Item]) -> None:
        loop = asyncio.get_running_loop()
        started = queue.running
        while (item := queue.take()) is not None:
            channel, cmd, size = item
            if channel.closed:
                self.bytes_in_flight -= size
                continue
            channel.start_request(cmd, self.clock_ms(), functools.partial(self._done, size))
        # the workers are free once the handlers ran up to their first wait (their first steps
        # are scheduled before this callback): Java threads that handed their work on
        if queue.running > started and queue not in self._freeing:
            self._freeing.add(queue)
            loop.call_soon(self._free, queue, time.perf_counter())

    def _free(self, queue: RequestQueue[Item], since: float) -> None:
        self._freeing.discard(queue)
        if queue.running >= queue.batch:  # a full batch: was the turn's share right?
            queue.adapt(time.perf_counter() - since)
        queue.running = 0
        self._pump(queue)

    def _done(self, size: int) -> None:
        self.bytes_in_flight -= size

    def _busy(self, channel: Channel, cmd: RemotingCommand, remark: str) -> None:
        self.busy_answers += 1
        channel.answer(cmd, ResponseCode.SYSTEM_BUSY, remark)

    # -- BrokerFastFailure -------------------------------------------------------

    def sweep(self) -> int:
        """Answer busy every request the flow control cleans now; how many were."""
        rejected = self.flow.sweep(self.clock_ms())
        for r in rejected:
            channel, cmd, size = r.item
            self.bytes_in_flight -= size
            self._busy(channel, cmd, r.remark)
        return len(rejected)

    def trim_after_burst(self) -> bool:
        """Once a large burst is over (nothing in flight), give the freed memory back."""
        if self.bytes_in_flight > 0 or self.peak_bytes < TRIM_AFTER_BYTES:
            return False
        self.peak_bytes = 0
        self.trims += 1
        memory.trim()
        return True

    def start(self, delay_s: float = 1.0) -> None:
        if self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep_loop(delay_s), name="fast-failure")

    async def _sweep_loop(self, delay_s: float) -> None:
        await asyncio.sleep(delay_s)
        while True:
            try:
                self.sweep()
                self.trim_after_burst()
            except Exception:
                log.exception("fast failure sweep failed")
            await asyncio.sleep(SWEEP_INTERVAL_S)

    def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None


__all__ = ["FlowDispatcher", "request_size"]
