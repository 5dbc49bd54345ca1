"""Long polling: pulls that found nothing wait here until a message arrives or they time out.

Java: ``broker/longpolling/{PullRequestHoldService,PullRequest,
NotifyMessageArrivingListener}``. A held request is keyed by ``topic@queueId``;
``notify_message_arriving`` (called from the store's dispatch of every new
record, on the event loop) wakes the requests whose offset is now below the
queue's max offset and whose filter matches the tags code. Each request also
has a deadline timer: no busy polling. Waking means re-running the pull
without permission to suspend again and sending whatever it finds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyrmq.remoting.loop import call_on_loop

log = logging.getLogger("pyrmq.broker.longpolling")


@dataclass(slots=True, eq=False)
class PullRequest:
    ctx: Any
    cmd: Any
    topic: str
    queue_id: int
    pull_from_this_offset: int
    suspend_timestamp: int
    timeout_millis: int
    tags_codes: set[int] | None  # None: every message matches
    timer: asyncio.TimerHandle | None = field(default=None)
    done: bool = False

    def matches(self, tags_code: int) -> bool:
        return self.tags_codes is None or tags_code in self.tags_codes


class PullRequestHoldService:
    """``wakeup(request)`` is the pull processor's re-run; ``max_offset(topic, qid)`` reads the store."""

    def __init__(self, wakeup: Callable[[PullRequest], None], max_offset: Callable[[str, int], int]) -> None:
        self._wakeup = wakeup
        self._max_offset = max_offset
        self.pull_request_table: dict[tuple[str, int], list[PullRequest]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def suspend_pull_request(self, request: PullRequest) -> None:
        loop = asyncio.get_running_loop()
        self._loop = loop
        self.pull_request_table.setdefault((request.topic, request.queue_id), []).append(request)
        request.timer = loop.call_later(max(request.timeout_millis, 0) / 1000, self._expire, request)

    def _fire(self, request: PullRequest) -> None:
        if request.done:
            return
        request.done = True
        if request.timer is not None:
            request.timer.cancel()
        key = (request.topic, request.queue_id)
        reqs = self.pull_request_table.get(key)
        if reqs is not None:
            with contextlib.suppress(ValueError):
                reqs.remove(request)
            if not reqs:
                del self.pull_request_table[key]
        try:
            self._wakeup(request)
        except Exception:
            log.exception("execute request when wakeup failed")

    def _expire(self, request: PullRequest) -> None:
        self._fire(request)

    def notify_message_arriving(self, topic: str, queue_id: int, max_offset: int, tags_code: int | None = None) -> None:
        """A record was dispatched to (topic, queue_id); ``max_offset`` is the queue's next offset."""
        reqs = self.pull_request_table.get((topic, queue_id))
        if not reqs:
            return
        for r in list(reqs):
            newest = max_offset
            if newest <= r.pull_from_this_offset:
                newest = self._max_offset(topic, queue_id)
            if newest > r.pull_from_this_offset and (tags_code is None or r.matches(tags_code)):
                self._fire(r)

    def notify_threadsafe(self, topic: str, queue_id: int, max_offset: int, tags_code: int | None = None) -> None:
        """Same as notify_message_arriving, from any thread (store dispatch outside the loop)."""
        if self.pull_request_table:
            call_on_loop(self._loop, self.notify_message_arriving, topic, queue_id, max_offset, tags_code)

    def notify_master_online(self) -> None:
        """Answer every held pull now (Java PullRequestHoldService#notifyMasterOnline): a slave
        whose master is back sends its consumers there."""
        for reqs in list(self.pull_request_table.values()):
            for r in list(reqs):
                self._fire(r)

    def drop_channel(self, channel: Any) -> None:
        """Forget the requests of a closed connection (nobody is left to answer)."""
        for key, reqs in list(self.pull_request_table.items()):
            for r in list(reqs):
                if r.ctx.channel is channel:
                    r.done = True
                    if r.timer is not None:
                        r.timer.cancel()
                    reqs.remove(r)
            if not reqs:
                del self.pull_request_table[key]

    def shutdown(self) -> None:
        for reqs in self.pull_request_table.values():
            for r in reqs:
                r.done = True
                if r.timer is not None:
                    r.timer.cancel()
        self.pull_request_table.clear()

    @property
    def held_count(self) -> int:
        return sum(len(v) for v in self.pull_request_table.values())
