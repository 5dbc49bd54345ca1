"""Request queues with Java's flow control, sans-IO: who runs next, who is answered busy.

Java BrokerController gives each family of request codes a fixed thread pool over a bounded
LinkedBlockingQueue (sendThreadPoolQueueCapacity and friends); NettyRemotingAbstract answers
SYSTEM_BUSY "[OVERLOAD]..." when the queue is full, and BrokerFastFailure (every 10 ms) answers
SYSTEM_BUSY "[TIMEOUT_CLEAN_QUEUE]..." to each request that waited longer than its family's
waitTimeMillsIn*Queue, and "[PCBUSY_CLEAN_QUEUE]..." to every queued send while the store's
page cache is busy. pyrmq has one event loop instead of threads: a queue starts a batch of its
requests per turn of the loop (a Java thread runs a processor until it returns, an asyncio
handler until its first wait), so under overload requests wait here, visibly and with their
arrival time, instead of in the loop's ready list, and the excess gets a cheap busy answer. The
batch starts at the Java thread count and adapts so that a turn spends about TURN_TARGET_S
running handlers: the rest of the turn reads sockets, which Java does on other threads.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

#: how long one turn of the loop should spend starting one queue's batch of handlers
TURN_TARGET_S = 0.100

#: NettyRemotingAbstract#processRequestCommand on RejectedExecutionException (the queue is full)
OVERLOAD_REMARK = "[OVERLOAD]system busy, start flow control for a while"


def timeout_clean_remark(behind_ms: int, size: int) -> str:
    """BrokerFastFailure#cleanExpiredRequestInQueue's remark."""
    return (
        f"[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: {behind_ms}ms, "
        f"size of queue: {size}"
    )


def pcbusy_clean_remark(behind_ms: int, size: int) -> str:
    """BrokerFastFailure#cleanExpiredRequest's remark while the page cache is busy."""
    return (
        f"[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: {behind_ms}ms, "
        f"size of queue: {size}"
    )


@dataclass(slots=True)
class Queued(Generic[T]):
    """One waiting request (Java RequestTask): what the transport needs to run it, and when it came."""

    item: T
    created_ms: int


@dataclass(slots=True)
class Rejected(Generic[T]):
    """A request taken out of its queue to be answered SYSTEM_BUSY with `remark`."""

    item: T
    remark: str


class RequestQueue(Generic[T]):
    """One Java executor: a bounded FIFO (`capacity`) and `workers` that take from it.

    `max_wait_ms()` is read at each cleaning (Java reads the config each time: an update applies
    at once); None means the queue is never cleaned (Java cleans seven of its queues only).
    """

    __slots__ = ("_queue", "batch", "capacity", "max_wait_ms", "name", "running", "workers")

    def __init__(
        self,
        name: str,
        capacity: int,
        workers: int,
        max_wait_ms: Callable[[], int] | None = None,
    ) -> None:
        self.name = name
        self.capacity = max(1, capacity)
        self.workers = max(1, workers)
        self.max_wait_ms = max_wait_ms
        self.running = 0
        self.batch = self.workers  # how many start per turn (adapt)
        self._queue: deque[Queued[T]] = deque()

    def __len__(self) -> int:
        return len(self._queue)

    def __repr__(self) -> str:
        return f"<RequestQueue {self.name} {len(self._queue)}/{self.capacity} running {self.running}/{self.workers}>"

    def offer(self, item: T, now_ms: int) -> bool:
        """Queue `item`; False when the queue is full (the caller answers OVERLOAD_REMARK)."""
        if len(self._queue) >= self.capacity:
            return False
        self._queue.append(Queued(item, now_ms))
        return True

    def take(self) -> T | None:
        """The next request to start when a worker is free, else None; `finished` frees it."""
        if self.running >= self.batch or not self._queue:
            return None
        self.running += 1
        return self._queue.popleft().item

    def finished(self) -> None:
        self.running = max(0, self.running - 1)

    def adapt(self, elapsed_s: float, target_s: float = TURN_TARGET_S) -> None:
        """A full batch took `elapsed_s` to start: grow the batch when that was well under the
        target, shrink it (never below the thread count) when well over."""
        if elapsed_s < target_s / 2:
            self.batch = min(self.batch * 2, self.capacity)
        elif elapsed_s > target_s * 2:
            self.batch = max(self.workers, self.batch // 2)

    def clean_expired(self, now_ms: int) -> list[Rejected[T]]:
        """BrokerFastFailure#cleanExpiredRequestInQueue: from the head, every request that waited
        at least max_wait_ms, each answered with the queue's size after its removal."""
        if self.max_wait_ms is None or not self._queue:
            return []
        limit = self.max_wait_ms()
        out: list[Rejected[T]] = []
        queue = self._queue
        while queue:
            behind = now_ms - queue[0].created_ms
            if behind < limit:
                break
            q = queue.popleft()
            out.append(Rejected(q.item, timeout_clean_remark(behind, len(queue))))
        return out

    def clean_all(self, now_ms: int) -> list[Rejected[T]]:
        """The page-cache-busy sweep: every queued request, oldest first."""
        out: list[Rejected[T]] = []
        queue = self._queue
        while queue:
            q = queue.popleft()
            out.append(Rejected(q.item, pcbusy_clean_remark(now_ms - q.created_ms, len(queue))))
        return out


@dataclass(frozen=True, slots=True)
class Family:
    """A Java executor's config keys and the request codes registered with it."""

    name: str
    capacity_key: str
    workers_key: str
    wait_key: str | None
    codes: tuple[int, ...]


class FlowControl(Generic[T]):
    """Request code -> RequestQueue, plus a default queue for every other code (Java's
    registerDefaultProcessor executor); `page_cache_busy` is the store's isOSPageCacheBusy and
    `enabled` brokerFastFailureEnable, both read at each sweep."""

    def __init__(
        self,
        queues: Iterable[tuple[RequestQueue[T], Iterable[int]]],
        default: RequestQueue[T] | None = None,
        *,
        page_cache_busy_queue: RequestQueue[T] | None = None,
        page_cache_busy: Callable[[], bool] = lambda: False,
        enabled: Callable[[], bool] = lambda: True,
    ) -> None:
        self.by_code: dict[int, RequestQueue[T]] = {}
        self.queues: list[RequestQueue[T]] = []
        for queue, codes in queues:
            self.queues.append(queue)
            for code in codes:
                self.by_code[int(code)] = queue
        self.default = default
        if default is not None:
            self.queues.append(default)
        self.page_cache_busy_queue = page_cache_busy_queue
        self.page_cache_busy = page_cache_busy
        self.enabled = enabled

    def queue_for(self, code: int) -> RequestQueue[T] | None:
        return self.by_code.get(code, self.default)

    def sweep(self, now_ms: int) -> list[Rejected[T]]:
        """BrokerFastFailure#cleanExpiredRequest: what to answer busy now."""
        if not self.enabled():
            return []
        out: list[Rejected[T]] = []
        if self.page_cache_busy_queue is not None and len(self.page_cache_busy_queue) and self.page_cache_busy():
            out.extend(self.page_cache_busy_queue.clean_all(now_ms))
        for queue in self.queues:
            out.extend(queue.clean_expired(now_ms))
        return out

    @property
    def queued(self) -> int:
        return sum(len(q) for q in self.queues)


__all__ = [
    "OVERLOAD_REMARK",
    "Family",
    "FlowControl",
    "Queued",
    "Rejected",
    "RequestQueue",
    "pcbusy_clean_remark",
    "timeout_clean_remark",
]
