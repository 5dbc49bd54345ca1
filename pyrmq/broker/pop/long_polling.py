"""POP long polling: a pop (or NOTIFICATION) that found nothing waits until a message arrives in
the topic (or its pop retry topic) or its poll time ends, then runs again.

Java: ``broker/longpolling/PopLongPollingService`` (keys ``topic@group@queueId``, a pop of every
queue under queueId -1; ``maxPopPollingSize`` in all, ``popPollingSize`` per key; a woken
request is processed again from the start, so it may wait again until ``bornTime + pollTime``,
after which the processor answers POLLING_TIMEOUT). Here each held request has its own deadline
timer instead of Java's 20 ms scan.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pyrmq.broker.pop.revive_log import lock_key
from pyrmq.protocol.command import FLAG_RESPONSE, RemotingCommand
from pyrmq.protocol.headers.pop import build_pop_retry_topic
from pyrmq.remoting.loop import call_on_loop

log = logging.getLogger("pyrmq.broker.pop")


class PollingResult(enum.Enum):
    POLLING_SUC = 0
    POLLING_FULL = 1
    POLLING_TIMEOUT = 2
    NOT_POLLING = 3


@dataclass(slots=True, eq=False)
class PopRequest:
    ctx: Any
    cmd: RemotingCommand
    key: str
    expired_ms: int
    timer: asyncio.TimerHandle | None = field(default=None)
    done: bool = False


Rerun = Callable[[Any, RemotingCommand], Awaitable[RemotingCommand | None]]


class PopLongPollingService:
    """``rerun(ctx, cmd)`` processes a woken request again (the processor's handler, through the
    channel's error rule); its answer, if any, is sent here."""

    def __init__(self, *, config, now: Callable[[], int], rerun: Rerun) -> None:
        self.config = config
        self.now = now
        self.rerun = rerun
        self.polling_map: dict[str, list[PopRequest]] = {}
        #: topic -> groups that poll it; pop retry topic -> (topic, group) it wakes
        self.topic_cid_map: dict[str, set[str]] = {}
        self.retry_topics: dict[str, tuple[str, str]] = {}
        self.total = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task] = set()
        self.stopped = False

    def polling(
        self, ctx: Any, cmd: RemotingCommand, topic: str, group: str, queue_id: int, born_time: int, poll_time: int
    ) -> PollingResult:
        """Java PopLongPollingService#polling: hold the request, or say why not."""
        if poll_time <= 0 or self.stopped:
            return PollingResult.NOT_POLLING
        self.topic_cid_map.setdefault(topic, set()).add(group)
        for v2 in (False, True):
            self.retry_topics[build_pop_retry_topic(topic, group, v2)] = (topic, group)
        expired = born_time + poll_time
        if self.total >= int(self.config["maxPopPollingSize"]):
            return PollingResult.POLLING_FULL
        now = self.now()
        if expired <= now:
            return PollingResult.POLLING_TIMEOUT
        key = lock_key(topic, group, queue_id)
        queue = self.polling_map.setdefault(key, [])
        if len(queue) > int(self.config["popPollingSize"]):
            return PollingResult.POLLING_FULL
        loop = self._loop = asyncio.get_running_loop()
        request = PopRequest(ctx, cmd, key, expired)
        request.timer = loop.call_later((expired - now) / 1000, self.wake_up, request)
        queue.append(request)
        self.total += 1
        return PollingResult.POLLING_SUC

    def wake_up(self, request: PopRequest) -> bool:
        """Take the request out and process it again (Java PopLongPollingService#wakeUp)."""
        if request.done:
            return False
        request.done = True
        if request.timer is not None:
            request.timer.cancel()
        queue = self.polling_map.get(request.key)
        if queue is not None and request in queue:
            queue.remove(request)
            self.total -= 1
            if not queue:
                del self.polling_map[request.key]
        if request.ctx.channel.closed:
            return False
        task = asyncio.get_running_loop().create_task(self._answer(request))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _answer(self, request: PopRequest) -> None:
        cmd = request.cmd
        response = await self.rerun(request.ctx, cmd)
        if response is None:
            return
        response.opaque = cmd.opaque
        response.flag |= FLAG_RESPONSE
        response.serialize_type = cmd.serialize_type
        request.ctx.channel.send(response)

    def _wake_first(self, key: str) -> bool:
        queue = self.polling_map.get(key)
        while queue:
            if self.wake_up(queue[0]):
                return True
            queue = self.polling_map.get(key)
        return False

    def notify_message_arriving(self, topic: str, queue_id: int, group: str | None = None) -> bool:
        """Wake one waiting pop per group of ``topic``: a pop of every queue first, else a pop of
        ``queue_id`` (Java notifyMessageArriving). A pop retry topic wakes its topic's pops."""
        if topic in self.retry_topics:
            topic, group = self.retry_topics[topic]
            queue_id = -1
            woke = False
            for qid_key in [k for k in self.polling_map if k.startswith(f"{topic}@{group}@")]:
                woke = self._wake_first(qid_key) or woke
            return woke
        groups = [group] if group is not None else list(self.topic_cid_map.get(topic, ()))
        woke = False
        for g in groups:
            if self._wake_first(lock_key(topic, g, -1)) or self._wake_first(lock_key(topic, g, queue_id)):
                woke = True
        return woke

    def notify_threadsafe(self, topic: str, queue_id: int) -> None:
        """From the store's dispatch, on whatever thread it runs."""
        if self.polling_map and (topic in self.topic_cid_map or topic in self.retry_topics):
            call_on_loop(self._loop, self.notify_message_arriving, topic, queue_id)

    def polling_num(self, topic: str, group: str, queue_id: int) -> int:
        return len(self.polling_map.get(lock_key(topic, group, queue_id), ()))

    def drop_channel(self, channel: Any) -> None:
        for key, queue in list(self.polling_map.items()):
            for r in [r for r in queue if r.ctx.channel is channel]:
                r.done = True
                if r.timer is not None:
                    r.timer.cancel()
                queue.remove(r)
                self.total -= 1
            if not queue:
                del self.polling_map[key]

    def shutdown(self) -> None:
        self.stopped = True
        for queue in self.polling_map.values():
            for r in queue:
                r.done = True
                if r.timer is not None:
                    r.timer.cancel()
        self.polling_map.clear()
        self.total = 0
