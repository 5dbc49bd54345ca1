"""Delay levels: SCHEDULE_TOPIC_XXXX queue level-1 -> the real topic when due.

Java: ``broker/schedule/ScheduleMessageService`` (one timer task per level,
``messageTimeUp``, ``delayOffset.json``) and ``HookUtils#transformDelayLevelMessage``
(the diversion on put). A message put with ``DELAY=n`` (n > 0) is stored in
``SCHEDULE_TOPIC_XXXX`` queue ``n-1`` with ``REAL_TOPIC``/``REAL_QID``; the
store writes the delivery time (store time + delay of the level) into the
consume queue's tags-code field. One asyncio task per level walks its queue from
the offset in ``delayOffset.json``: it sleeps until the head entry is due (or
until a new entry is dispatched to an empty level), then re-puts the message to
its real topic and moves the offset on only after the put succeeded. Offsets
are persisted every ``flushDelayOffsetInterval`` and at shutdown, like Java: a
crash re-delivers at most what was delivered since the last persist, never loses.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from pyrmq.broker.put import await_put
from pyrmq.common.constants import RMQ_SYS_SCHEDULE_TOPIC, RMQ_SYS_TRANS_HALF_TOPIC, MessageConst
from pyrmq.remoting.loop import call_on_loop
from pyrmq.store import message as m
from pyrmq.store.config import (
    DataVersion,
    DelayOffsetSerializeWrapper,
    config_path,
    decode_config,
    load_config,
    persist_config,
    persist_config_text,
)
from pyrmq.store.results import PutMessageResult, PutMessageStatus

if TYPE_CHECKING:
    from pyrmq.broker.config import BrokerConfig
    from pyrmq.common.clock import Clock
    from pyrmq.store.message_store import MessageStore

log = logging.getLogger("pyrmq.broker.schedule")

#: Java FIRST_DELAY_TIME / DELAY_FOR_A_WHILE / DELAY_FOR_A_PERIOD (ms)
FIRST_DELAY_MS = 1000
DELAY_FOR_A_WHILE_MS = 100
DELAY_FOR_A_PERIOD_MS = 10000
#: an idle level re-checks its queue at least this often even without a wake-up
IDLE_RECHECK_S = 1.0

_MC = MessageConst


def queue_id_to_delay_level(queue_id: int) -> int:
    return queue_id + 1


def delay_level_to_queue_id(level: int) -> int:
    return level - 1


def delay_time_level(props: dict[str, str]) -> int:
    """Java Message#getDelayTimeLevel: the DELAY property as an int, 0 when absent or not a number."""
    t = props.get(_MC.DELAY_TIME_LEVEL)
    if not t:
        return 0
    try:
        return int(t)
    except ValueError:
        return 0


def message_time_up(msg: m.StoredMessage) -> m.MessageExtBrokerInner:
    """Java ScheduleMessageService#messageTimeUp: the stored schedule record back to its real topic.

    Java writes the properties string *before* clearing DELAY, TIMER_DELIVER_MS and
    TIMER_DELAY_SEC and setting WAIT=false, so the delivered record still carries DELAY (and
    REAL_TOPIC / REAL_QID); only the in-memory map, which the put hook reads, lacks them.
    """
    props = dict(msg.properties)
    stored = m.message_properties_to_string(props)
    for k in (_MC.DELAY_TIME_LEVEL, _MC.TIMER_DELIVER_MS, _MC.TIMER_DELAY_SEC):
        props.pop(k, None)
    props[_MC.WAIT_STORE_MSG_OK] = "false"
    return m.MessageExtBrokerInner.from_stored(
        msg,
        props,
        topic=props.get(_MC.REAL_TOPIC, ""),
        queue_id=int(props.get(_MC.REAL_QUEUE_ID, "0")),
        properties_string=stored,
    )


class ScheduleMessageService:
    """Per-level delivery of delayed messages, offsets in ``<root>/config/delayOffset.json``."""

    def __init__(self, *, config: BrokerConfig, message_store: MessageStore, now: Clock) -> None:
        self.config = config
        self.message_store = message_store
        self.now = now
        #: where due messages go; the broker puts its escape bridge here (Java EscapeBridge#putMessage)
        self.put_message: Callable[[m.MessageExtBrokerInner], Awaitable[PutMessageResult]] = self._put_local
        #: told of every delivered message (the broker's metrics: Java PutResultProcess#onSuccess)
        self.on_delivered: Callable[[str, PutMessageResult], None] | None = None
        self.delay_level_table: dict[int, int] = config.store.delay_level_table()
        self.max_delay_level = max(self.delay_level_table) if self.delay_level_table else 0
        self.offset_table: dict[int, int] = {}
        self.data_version = DataVersion()
        self._persisted: dict[int, int] = {}
        self._root = config.store.store_path_root_dir
        self._tasks: dict[int, asyncio.Task] = {}
        self._wake: dict[int, asyncio.Event] = {}
        self._persist_task: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.started = False

    # ------------------------------------------------------------------ config file

    def load(self) -> None:
        """Java #load: delayOffset.json, then offsets clamped into each queue's [min, max]."""
        wrapper = load_config(self._root, DelayOffsetSerializeWrapper)
        if wrapper is not None:
            self.offset_table.update({int(k): int(v) for k, v in wrapper.offset_table.items()})
            if wrapper.data_version is not None:
                self.data_version = wrapper.data_version
            self._persisted = dict(self.offset_table)
        self.correct_delay_offset()

    def load_when_sync_delay_offset(self, text: str) -> None:
        """A slave takes its master's delayOffset.json as it came: written, then read over the
        table without clamping. Java ScheduleMessageService#loadWhenSyncDelayOffset."""
        wrapper = decode_config(DelayOffsetSerializeWrapper, text)
        persist_config_text(config_path(self._root, DelayOffsetSerializeWrapper), text)
        self.offset_table.update({int(k): int(v) for k, v in wrapper.offset_table.items()})
        if wrapper.data_version is not None:
            self.data_version = wrapper.data_version
        self._persisted = dict(self.offset_table)

    def correct_delay_offset(self) -> None:
        store = self.message_store
        for level in self.delay_level_table:
            cur = self.offset_table.get(level)
            cq = store.get_consume_queue(RMQ_SYS_SCHEDULE_TOPIC, delay_level_to_queue_id(level))
            if cur is None or cq is None:
                continue
            lo, hi = cq.get_min_offset_in_queue(), cq.get_max_offset_in_queue()
            fixed = min(max(cur, lo), hi)
            if fixed != cur:
                log.error("correct delay offset [ delayLevel %d ] from %d to %d", level, cur, fixed)
                self.offset_table[level] = fixed

    def build_serialize_wrapper(self) -> DelayOffsetSerializeWrapper:
        """delayOffset.json's content; also the GET_ALL_DELAY_OFFSET body (Java ScheduleMessageService#encode)."""
        return DelayOffsetSerializeWrapper(
            offset_table=dict(sorted(self.offset_table.items())), data_version=self.data_version
        )

    def persist(self) -> None:
        if self.offset_table != self._persisted:
            self.data_version.next_version(self.now())
            self._persisted = dict(self.offset_table)
        persist_config(self._root, self.build_serialize_wrapper())

    async def _put_local(self, msg: m.MessageExtBrokerInner) -> PutMessageResult:
        return await await_put(self.message_store.put_message_async(msg))

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        if self.started:
            return
        self.started = True
        self._loop = asyncio.get_running_loop()
        for level in self.delay_level_table:
            self._wake[level] = asyncio.Event()
            self._tasks[level] = self._loop.create_task(self._deliver_loop(level), name=f"schedule-level-{level}")
        interval = max(int(self.config["flushDelayOffsetInterval"]), 100) / 1000
        self._persist_task = self._loop.create_task(self._persist_loop(interval), name="schedule-persist")

    async def shutdown(self) -> None:
        if not self.started:
            return
        self.started = False
        tasks = list(self._tasks.values()) + ([self._persist_task] if self._persist_task else [])
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._tasks.clear()
        self._persist_task = None
        try:
            self.persist()
        except OSError:
            log.exception("persist delayOffset.json failed")

    async def _persist_loop(self, interval: float) -> None:
        await asyncio.sleep(min(interval, 10.0))
        while True:
            try:
                self.persist()
            except Exception:
                log.exception("persist delayOffset.json failed")
            await asyncio.sleep(interval)

    def on_dispatched(self, queue_id: int) -> None:
        """A new entry in SCHEDULE_TOPIC_XXXX queue `queue_id` (called on the loop's thread)."""
        ev = self._wake.get(queue_id_to_delay_level(queue_id))
        if ev is not None:
            call_on_loop(self._loop, ev.set)

    # ------------------------------------------------------------------ delivery

    def compute_deliver_timestamp(self, level: int, store_timestamp: int) -> int:
        delay = self.delay_level_table.get(level)
        return store_timestamp + delay if delay is not None else store_timestamp + 1000

    async def _sleep_or_wake(self, level: int, seconds: float) -> None:
        ev = self._wake[level]
        try:
            async with asyncio.timeout(seconds):
                await ev.wait()
        except TimeoutError:
            pass
        ev.clear()

    async def _deliver_loop(self, level: int) -> None:
        await asyncio.sleep(FIRST_DELAY_MS / 1000)
        while True:
            try:
                wait_s = await self.execute_on_time_up(level)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("ScheduleMessageService, executeOnTimeUp exception (level %d)", level)
                wait_s = DELAY_FOR_A_PERIOD_MS / 1000
            await self._sleep_or_wake(level, wait_s)

    async def execute_on_time_up(self, level: int) -> float:
        """Deliver every due entry of `level` from its offset; returns how long to wait (s).

        Java DeliverDelayedMessageTimerTask#executeOnTimeUp, with the 100 ms re-poll
        replaced by a sleep until the head entry is due."""
        store = self.message_store
        queue_id = delay_level_to_queue_id(level)
        cq = store.get_consume_queue(RMQ_SYS_SCHEDULE_TOPIC, queue_id)
        offset = self.offset_table.get(level, 0)
        if cq is None:
            return IDLE_RECHECK_S
        lo = cq.get_min_offset_in_queue()
        if offset < lo:
            log.error("schedule CQ offset invalid. offset=%d, cqMinOffset=%d, queueId=%d", offset, lo, queue_id)
            offset = lo
            self.offset_table[level] = offset
        delay_ms = self.delay_level_table[level]
        while self.started:
            entry = cq.get(offset)
            if entry is None:
                return IDLE_RECHECK_S
            phy, size, tags_code = entry
            now = self.now()
            deliver = tags_code
            if deliver > now + delay_ms:  # Java correctDeliverTimestamp: a clock step back
                deliver = now
            if deliver - now > 0:
                self.offset_table[level] = offset
                return min((deliver - now) / 1000, IDLE_RECHECK_S * 10)
            msg = store.look_message_by_offset(phy, size)
            if msg is not None:
                inner = message_time_up(msg)
                if inner.topic == RMQ_SYS_TRANS_HALF_TOPIC:
                    log.error("[BUG] the real topic of schedule msg is %s, discard the msg", inner.topic)
                else:
                    result = await self.put_message(inner)
                    if result.put_message_status is not PutMessageStatus.PUT_OK:
                        log.warning(
                            "ScheduleMessageService put message failed: %s (level %d, offset %d)",
                            result.put_message_status.name,
                            level,
                            offset,
                        )
                        self.offset_table[level] = offset
                        return DELAY_FOR_A_WHILE_MS / 1000
                    if self.on_delivered is not None:
                        self.on_delivered(inner.topic, result)
            offset += 1
            self.offset_table[level] = offset
        return IDLE_RECHECK_S

    # ------------------------------------------------------------------ put hook

    def transform_delay_level_message(self, msg: m.MessageExtBrokerInner) -> None:
        """Java HookUtils#transformDelayLevelMessage: clamp the level, keep the real topic/queue,
        divert to SCHEDULE_TOPIC_XXXX queue level-1."""
        props = msg.properties
        level = delay_time_level(props)
        if level > self.max_delay_level:
            level = self.max_delay_level
            props[_MC.DELAY_TIME_LEVEL] = str(level)
        props[_MC.REAL_TOPIC] = msg.topic
        props[_MC.REAL_QUEUE_ID] = str(msg.queue_id)
        msg.properties_string = None
        msg.topic = RMQ_SYS_SCHEDULE_TOPIC
        msg.queue_id = delay_level_to_queue_id(level)
