"""Timer messages (5.x): arbitrary delivery times via TIMER_DELIVER_MS / TIMER_DELAY_SEC / TIMER_DELAY_MS.

Java: ``store/timer/TimerMessageStore`` (+ ``TimerWheel``, ``TimerLog``,
``TimerCheckpoint``) and ``HookUtils#transformTimerMessage``. On put, a timer
message is rewritten exactly like Java does (``_MC.TIMER_OUT_MS`` = delivery time
rounded down to ``timerPrecisionMs``, ``REAL_TOPIC``/``REAL_QID``, topic
``rmq_sys_wheel_timer`` queue 0), so the commit log and the timer topic's
consume queue are byte-for-byte what the Java broker writes.

Design difference (docs/broker.md): Java indexes the timer topic's consume
queue into a time wheel (``timerwheel``) and a log (``timerlog``) so that
millions of pending timers need no memory. pyrmq keeps the pending entries of
that consume queue in an in-memory heap rebuilt at start from the queue itself,
which is the durable record. Progress is the "low water" queue offset below
which every timer message was delivered, written to Java's own
``<root>/config/timercheck`` layout (lastTimerQueueOffset and
masterTimerQueueOffset): a Java broker started on the store resumes from that
offset. After a crash, timers above the low water that were already delivered
are delivered again (at least once, like Java's own recovery).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from pyrmq.broker.put import await_put
from pyrmq.common.constants import TIMER_TOPIC, MessageConst
from pyrmq.remoting.loop import call_on_loop
from pyrmq.store import message as m
from pyrmq.store.checkpoint import TimerCheckpoint
from pyrmq.store.results import PutMessageResult, PutMessageStatus

if TYPE_CHECKING:
    from pyrmq.broker.config import BrokerConfig
    from pyrmq.common.clock import Clock
    from pyrmq.store.message_store import MessageStore

log = logging.getLogger("pyrmq.broker.timer")

_MC = MessageConst

#: Java timerFlushIntervalMs
FLUSH_INTERVAL_S = 1.0
IDLE_RECHECK_S = 1.0
#: put statuses Java's TimerMessageStore#doPut retries
_RETRY_STATUSES = frozenset(
    {
        PutMessageStatus.SERVICE_NOT_AVAILABLE,
        PutMessageStatus.PUT_TO_REMOTE_BROKER_FAIL,  # Java retries it too (timerSkipUnknownError=false)
        PutMessageStatus.FLUSH_DISK_TIMEOUT,
        PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
        PutMessageStatus.OS_PAGE_CACHE_BUSY,
        PutMessageStatus.CREATE_MAPPED_FILE_FAILED,
        PutMessageStatus.SLAVE_NOT_AVAILABLE,
        PutMessageStatus.UNKNOWN_ERROR,
    }
)


def timer_delete_key(real_topic: str, uniq_key: str | None) -> str:
    """TimerMessageStore#buildDeleteKey: what a recall's delete marker names."""
    return f"{real_topic}+{uniq_key}"


def check_if_timer_message(msg: m.MessageExtBrokerInner, delay_level: int) -> bool:
    """Java HookUtils#checkIfTimerMessage (a DELAY level wins: the timer properties are dropped)."""
    props = msg.properties
    if delay_level > 0:
        for k in (_MC.TIMER_DELIVER_MS, _MC.TIMER_DELAY_SEC, _MC.TIMER_DELAY_MS):
            props.pop(k, None)
        msg.properties_string = None
        return False
    if msg.topic == TIMER_TOPIC or _MC.TIMER_OUT_MS in props:
        return False
    return _MC.TIMER_DELIVER_MS in props or _MC.TIMER_DELAY_MS in props or _MC.TIMER_DELAY_SEC in props


def transform_timer_message(
    msg: m.MessageExtBrokerInner, now_ms: int, precision_ms: int, max_delay_sec: int
) -> PutMessageStatus | None:
    """Java HookUtils#transformTimerMessage: divert to rmq_sys_wheel_timer, or an error status."""
    props = msg.properties
    try:
        if _MC.TIMER_DELAY_SEC in props:
            deliver_ms = now_ms + int(props[_MC.TIMER_DELAY_SEC]) * 1000
        elif _MC.TIMER_DELAY_MS in props:
            deliver_ms = now_ms + int(props[_MC.TIMER_DELAY_MS])
        else:
            deliver_ms = int(props[_MC.TIMER_DELIVER_MS])
    except (ValueError, KeyError):
        return PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL
    if deliver_ms > now_ms:
        if deliver_ms - now_ms > max_delay_sec * 1000:
            return PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL
        if deliver_ms % precision_ms == 0:
            deliver_ms -= precision_ms
        else:
            deliver_ms = deliver_ms // precision_ms * precision_ms
        props[_MC.TIMER_OUT_MS] = str(deliver_ms)
        props[_MC.REAL_TOPIC] = msg.topic
        props[_MC.REAL_QUEUE_ID] = str(msg.queue_id)
        msg.properties_string = None
        msg.topic = TIMER_TOPIC
        msg.queue_id = 0
    elif _MC.TIMER_DEL_UNIQKEY in props:
        return PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL
    return None


def convert_message(msg: m.StoredMessage, enqueue_ms: int, now_ms: int) -> m.MessageExtBrokerInner:
    """Java TimerMessageStore#convert + #convertMessage (no roll): back to the real topic/queue.

    As in Java the stored properties string is made before REAL_TOPIC / REAL_QID are removed
    from the map: the delivered record keeps them (and _MC.TIMER_OUT_MS)."""
    props = dict(msg.properties)
    props[_MC.TIMER_ENQUEUE_MS] = str(enqueue_ms)
    props[_MC.TIMER_DEQUEUE_MS] = str(now_ms)
    stored = m.message_properties_to_string(props)
    topic = props.pop(_MC.REAL_TOPIC, "")
    queue_id = int(props.pop(_MC.REAL_QUEUE_ID, "0"))
    props[_MC.WAIT_STORE_MSG_OK] = "false"
    return m.MessageExtBrokerInner.from_stored(msg, props, topic=topic, queue_id=queue_id, properties_string=stored)


class TimerMessageStore:
    """Delivers rmq_sys_wheel_timer queue 0 entries at their _MC.TIMER_OUT_MS."""

    def __init__(self, *, config: BrokerConfig, message_store: MessageStore, now: Clock) -> None:
        self.config = config
        self.message_store = message_store
        self.now = now
        #: where due messages go; the broker puts its escape bridge here (Java EscapeBridge#putMessage)
        self.put_message: Callable[[m.MessageExtBrokerInner], Awaitable[PutMessageResult]] = self._put_local
        #: told the REAL_TOPIC of each timer read into the heap / about to be delivered (metrics)
        self.on_enqueued: Callable[[str | None], None] | None = None
        self.on_dequeued: Callable[[str | None], None] | None = None
        #: told (REAL_TOPIC, delivery time - born time in s) of each timer read (Java's timer set latency)
        self.on_set_latency: Callable[[str | None, int], None] | None = None
        #: timers waiting in the heap by REAL_TOPIC (Java TimerMetrics#timingCount)
        self.timing: dict[str, int] = {}
        root = config.store.store_path_root_dir
        self.checkpoint = TimerCheckpoint(os.path.join(root, "config", "timercheck"))
        self._java_timer_log = os.path.join(root, "timerlog")
        self.precision_ms = max(int(config["timerPrecisionMs"]), 1)
        #: first queue offset not known to be delivered; everything below it was delivered
        self.low_water = 0
        #: next queue offset to read into the heap
        self.read_offset = 0
        self._delivered: set[int] = set()
        #: (_MC.TIMER_OUT_MS, queue offset, phy offset, size, REAL_TOPIC)
        self._heap: list[tuple[int, int, int, int, str]] = []
        #: slot (TIMER_OUT_MS) -> the delete keys of its recall markers (Java's per-slot delete list)
        self._deleted: dict[int, set[str]] = {}
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None
        self._flush_task: asyncio.Task | None = None
        self._dirty = False
        self.started = False

    async def _put_local(self, msg: m.MessageExtBrokerInner) -> PutMessageResult:
        return await await_put(self.message_store.put_message_async(msg))

    # ------------------------------------------------------------------ lifecycle

    def load(self) -> None:
        """Low water from timercheck, clamped to the timer queue; Java's own timer log makes it untrusted."""
        cq = self.message_store.get_consume_queue(TIMER_TOPIC, 0)
        lo = cq.get_min_offset_in_queue() if cq else 0
        hi = cq.get_max_offset_in_queue() if cq else 0
        start = self.checkpoint.last_timer_queue_offset if self.checkpoint.existed else lo
        if self._java_timer_log_has_files():
            # Java's lastTimerQueueOffset counts what went into its timer log, not what was delivered
            log.warning("a Java timerlog exists: timer messages are re-read from queue offset %d", lo)
            start = lo
        self.low_water = self.read_offset = min(max(start, lo), hi)

    def take_master_offset(self) -> None:
        """A slave about to deliver starts where its master's checkpoint (copied by
        SlaveSynchronize) says the master got to, never before its own low water (Java
        syncLastReadTimeMs before an acting slave's dequeue runs). Call while stopped."""
        cq = self.message_store.get_consume_queue(TIMER_TOPIC, 0)
        lo = cq.get_min_offset_in_queue() if cq else 0
        hi = cq.get_max_offset_in_queue() if cq else 0
        self.low_water = self.read_offset = min(max(self.checkpoint.master_timer_queue_offset, lo, self.low_water), hi)
        self._heap.clear()
        self.timing.clear()
        self._delivered.clear()
        self._deleted.clear()

    def _java_timer_log_has_files(self) -> bool:
        try:
            return any(
                os.path.getsize(os.path.join(self._java_timer_log, f)) > 0 for f in os.listdir(self._java_timer_log)
            )
        except OSError:
            return False

    def start(self) -> None:
        if self.started:
            return
        self.started = True
        loop = self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._task = loop.create_task(self._run(), name="timer-dequeue")
        self._flush_task = loop.create_task(self._flush_loop(), name="timer-checkpoint")

    async def shutdown(self) -> None:
        if not self.started:
            return
        self.started = False
        for t in (self._task, self._flush_task):
            if t is not None:
                t.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t
        self._task = self._flush_task = None
        self.flush_checkpoint(force=True)

    def on_dispatched(self) -> None:
        if self._wake is not None:
            call_on_loop(self._loop, self._wake.set)

    def flush_checkpoint(self, force: bool = False) -> None:
        if not (self._dirty or force):
            return
        cp = self.checkpoint
        now = self.now()
        cp.last_read_time_ms = now // self.precision_ms * self.precision_ms
        cp.last_timer_queue_offset = cp.master_timer_queue_offset = self.low_water
        cp.timestamp = now
        cp.counter += 1
        try:
            cp.flush()
            self._dirty = False
        except OSError:
            log.exception("timer checkpoint flush failed")

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_INTERVAL_S)
            self.flush_checkpoint()

    # ------------------------------------------------------------------ work

    def pending(self) -> int:
        return len(self._heap)

    def caught_up(self) -> bool:
        """Nothing due is left undelivered: every timer-queue entry was read and none in the heap
        is due (Java getEnqueueBehind/getDequeueBehind both 0); the POP revive service waits for it."""
        cq = self.message_store.get_consume_queue(TIMER_TOPIC, 0)
        if cq is not None and self.read_offset < cq.get_max_offset_in_queue():
            return False
        return not self._heap or self._heap[0][0] > self.now()

    def pending_due_times(self) -> list[int]:
        """The delivery time (epoch ms) of every timer read and not delivered yet (metrics)."""
        return [out_ms for out_ms, *_ in self._heap]

    def enqueue(self) -> int:
        """Read new timer-queue entries into the heap (Java TimerEnqueueGetService). Returns how many."""
        store = self.message_store
        cq = store.get_consume_queue(TIMER_TOPIC, 0)
        if cq is None:
            return 0
        n = 0
        now = self.now()
        while True:
            entry = cq.get(self.read_offset)
            if entry is None:
                return n
            phy, size, _ = entry
            qoff = self.read_offset
            self.read_offset += 1
            msg = store.look_message_by_offset(phy, size)
            if msg is None:
                self._mark_delivered(qoff)
                continue
            try:
                out_ms = int(msg.properties.get(_MC.TIMER_OUT_MS, now))
            except ValueError:
                out_ms = now
            topic = msg.properties.get(_MC.REAL_TOPIC)
            if self.on_enqueued is not None:
                self.on_enqueued(topic)
            if self.on_set_latency is not None:
                ahead = out_ms - msg.born_timestamp  # Java long division: toward zero
                self.on_set_latency(topic, ahead // 1000 if ahead >= 0 else -(-ahead // 1000))
            n += 1
            delete_key = msg.properties.get(_MC.TIMER_DEL_UNIQKEY)
            if delete_key is not None:
                # a recall (RECALL_MESSAGE): the message it names is dropped when its slot is due; the
                # marker is never delivered. Its offset is above the message's, so the low water never
                # passes it before the message is done: after a restart both are read again.
                self._deleted.setdefault(out_ms, set()).add(delete_key)
                self._mark_delivered(qoff)
                continue
            heapq.heappush(self._heap, (out_ms, qoff, phy, size, topic or ""))
            if topic:
                self.timing[topic] = self.timing.get(topic, 0) + 1

    def _pop(self) -> None:
        topic = heapq.heappop(self._heap)[4]
        n = self.timing.get(topic, 0) - 1
        if n > 0:
            self.timing[topic] = n
        else:
            self.timing.pop(topic, None)

    def _mark_delivered(self, qoff: int) -> None:
        self._delivered.add(qoff)
        while self.low_water in self._delivered:
            self._delivered.discard(self.low_water)
            self.low_water += 1
            self._dirty = True

    async def dequeue(self) -> float:
        """Deliver every due entry; returns how long to wait before the next one is due (s)."""
        store = self.message_store
        while self._heap and self.started:
            out_ms, qoff, phy, size, _ = self._heap[0]
            now = self.now()
            if out_ms > now:
                self._forget_deletes_before(out_ms)
                return min((out_ms - now) / 1000, IDLE_RECHECK_S * 10)
            msg = store.look_message_by_offset(phy, size)
            if msg is None or self._recalled(out_ms, msg):
                self._pop()
                self._mark_delivered(qoff)
                continue
            inner = convert_message(msg, msg.store_timestamp, now)
            if not inner.topic:
                log.error("timer message without REAL_TOPIC at queue offset %d, dropped", qoff)
                self._pop()
                self._mark_delivered(qoff)
                continue
            if self.on_dequeued is not None:  # Java counts each delivery attempt
                self.on_dequeued(msg.properties.get(_MC.REAL_TOPIC))
            result = await self.put_message(inner)
            status = result.put_message_status
            if status is not PutMessageStatus.PUT_OK and status in _RETRY_STATUSES:
                log.warning("timer put failed (%s), retrying queue offset %d", status.name, qoff)
                return 0.05
            if status is not PutMessageStatus.PUT_OK:
                log.warning("timer message at queue offset %d dropped: %s", qoff, status.name)
            self._pop()
            self._mark_delivered(qoff)
        self._forget_deletes_before(self.now() + 1)
        return IDLE_RECHECK_S

    def _recalled(self, out_ms: int, msg: m.StoredMessage) -> bool:
        """A recall marker of this slot names the message (Java: the slot's delete list)."""
        keys = self._deleted.get(out_ms)
        if not keys:
            return False
        props = msg.properties
        uniq = props.get(_MC.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        key = timer_delete_key(props.get(_MC.REAL_TOPIC, ""), uniq)
        if uniq is None or key not in keys:
            return False
        keys.discard(key)
        log.info("timer message %s recalled, not delivered", key)
        return True

    def _forget_deletes_before(self, out_ms: int) -> None:
        """Recall markers of slots already passed have nothing left to drop."""
        for slot in [s for s in self._deleted if s < out_ms]:
            del self._deleted[slot]

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            try:
                self.enqueue()
                wait_s = await self.dequeue()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("timer dequeue failed")
                wait_s = 1.0
            if wait_s > 0:
                try:
                    async with asyncio.timeout(wait_s):
                        await self._wake.wait()
                except TimeoutError:
                    pass
            self._wake.clear()
