"""Renewing the invisible time of messages a push consumer is still processing.

A 5.x push consumer asks with ``auto_renew``: the endpoint keeps each message's receipt handle
until the client acks it, and every ``RENEW_SCHEDULE_PERIOD_MS`` renews the handles that turn
visible within ``RENEW_AHEAD_MS`` (CHANGE_MESSAGE_INVISIBLETIME, 1, 3, 5, 10, 30, then 60
minutes). A renewal changes the handle, so an ack or a change of invisible time from the client
is sent with the latest one. After ``RENEW_MAX_MS`` the message is handed back for retry with the
group's retry-policy delay; a client that went away has its messages made visible again after
``INVISIBLE_WHEN_CLEAR_MS``. Java: ``proxy/service/receipt/DefaultReceiptHandleManager``,
``ReceiptHandleGroup``, ``RenewStrategyPolicy`` and ProxyConfig's defaults.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from pyrmq.grpc.receipt import ReceiptHandle

log = logging.getLogger("pyrmq.grpc")

#: ProxyConfig defaults
RENEW_SCHEDULE_PERIOD_MS = 5_000
RENEW_AHEAD_MS = 10_000
RENEW_MAX_MS = 3 * 3600 * 1000
MAX_RENEW_RETRY_TIMES = 3
INVISIBLE_WHEN_CLEAR_MS = 1_000
#: RenewStrategyPolicy: the invisible time of the n-th renewal
RENEW_STEPS_MS = (60_000, 180_000, 300_000, 600_000, 1_800_000, 3_600_000)


def renew_delay(renew_times: int) -> int:
    return RENEW_STEPS_MS[min(max(renew_times, 0), len(RENEW_STEPS_MS) - 1)]


@dataclass(slots=True)
class TrackedHandle:
    """Java MessageReceiptHandle: a message handed to a push consumer and not acked yet."""

    group: str
    topic: str
    message_id: str
    handle: str  # the latest receipt handle (renewals change it)
    reconsume_times: int
    consume_ms: int  # when it was received
    renew_times: int = 0
    renew_retry_times: int = 0


def handle_key(handle: str) -> tuple[str, int, int]:
    """ReceiptHandleGroup.HandleKey: one message's handles share broker, queue and offset."""
    h = ReceiptHandle.decode(handle)
    return h.broker_name, h.queue_id, h.offset


#: (tracked message, new invisible time ms) -> the new handle, None when the broker refused; raises
#: when the request failed and may be retried
ChangeInvisible = Callable[[TrackedHandle, int], Awaitable[str | None]]
#: (tracked message, delay ms) -> hands it back for retry after delay (the group's retry policy)
RetryLater = Callable[[TrackedHandle], Awaitable[None]]


class ReceiptHandleManager:
    def __init__(
        self,
        change_invisible: ChangeInvisible,
        is_online: Callable[[str, str], bool],
        retry_delay: Callable[[TrackedHandle], int],
        now: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.change_invisible = change_invisible
        self.is_online = is_online  # (client id, group): still a consumer of the group
        self.retry_delay = retry_delay
        self.now = now
        #: (client id, group) -> {(message id, handle key) -> tracked}
        self.groups: dict[tuple[str, str], dict[tuple[str, tuple[str, int, int]], TrackedHandle]] = {}
        self._task: asyncio.Task[None] | None = None

    def add(self, client_id: str, tracked: TrackedHandle) -> None:
        entries = self.groups.setdefault((client_id, tracked.group), {})
        entries[(tracked.message_id, handle_key(tracked.handle))] = tracked

    def remove(self, client_id: str, group: str, message_id: str, handle: str) -> TrackedHandle | None:
        """The client acks, nacks or changes the invisible time itself: stop renewing, and the
        latest handle is the one to use."""
        entries = self.groups.get((client_id, group))
        if entries is None:
            return None
        try:
            found = entries.pop((message_id, handle_key(handle)), None)
        except Exception:  # an unreadable handle was never tracked
            return None
        if not entries:
            del self.groups[(client_id, group)]
        return found

    # ------------------------------------------------------------------ the schedule

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="grpc-renew")

    async def shutdown(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        for key in list(self.groups):
            await self.clear_group(key)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(RENEW_SCHEDULE_PERIOD_MS / 1000)
            try:
                await self.scan()
            except Exception:
                log.exception("unexpected error in the renew scan")

    async def scan(self) -> None:
        """One round: clear the groups of clients that left, renew what turns visible soon."""
        for key in list(self.groups):
            if not self.is_online(*key):
                await self.clear_group(key)
                continue
            entries = self.groups.get(key, {})
            for entry_key, tracked in list(entries.items()):
                if ReceiptHandle.decode(tracked.handle).next_visible_time - self.now() > RENEW_AHEAD_MS:
                    continue
                if not await self._renew(tracked):
                    entries.pop(entry_key, None)
            if not entries:
                self.groups.pop(key, None)

    async def _renew(self, tracked: TrackedHandle) -> bool:
        """Java startRenewMessage; False when the message is no longer renewed."""
        if tracked.renew_retry_times >= MAX_RENEW_RETRY_TIMES:
            log.warning("handle of %s exceeded %d renew retries", tracked.message_id, MAX_RENEW_RETRY_TIMES)
            return False
        if self.now() - tracked.consume_ms >= RENEW_MAX_MS:  # STOP_RENEW: back for a retry
            try:
                await self.change_invisible(tracked, self.retry_delay(tracked))
            except Exception as e:
                log.error("nack of %s after the longest renewal failed: %s", tracked.message_id, e)
            return False
        try:
            new = await self.change_invisible(tracked, renew_delay(tracked.renew_times))
        except Exception as e:
            log.error("renew of %s failed: %s", tracked.message_id, e)
            tracked.renew_retry_times += 1
            return True
        if new is None:
            return False
        tracked.handle = new
        tracked.renew_retry_times = 0
        tracked.renew_times += 1
        return True

    async def clear_group(self, key: tuple[str, str]) -> None:
        """The client left: its messages become visible soon (CLEAR_GROUP)."""
        for tracked in self.groups.pop(key, {}).values():
            try:
                await self.change_invisible(tracked, INVISIBLE_WHEN_CLEAR_MS)
            except Exception as e:
                log.error("clear of %s failed: %s", tracked.message_id, e)


__all__ = ["ReceiptHandleManager", "TrackedHandle", "renew_delay"]
