"""Revive: popped messages whose invisible time passed without an ack are put into the group's pop
retry topic ``%RETRY%<group>_<topic>`` (reconsumeTimes + 1), where the next pops find them.

Java: ``broker/processor/PopReviveService`` (one per revive queue; consumeReviveMessage,
mergeAndRevive, reviveRetry, rePutCK). Each pass reads the revive queue after the offset of the
revive group ``CID_RMQ_SYS_REVIVE_GROUP``, marks the checkpoints' acked bits, and revives the
checkpoints whose revive time is more than 2 s (ackTimeInterval + 1 s) before the newest delivery
time seen, then commits the offset of the last checkpoint handled, so a Java broker on the same
store continues where pyrmq stopped and the other way round. Java moves that end time to "now"
after 3 s without records and with the timer caught up; pyrmq does that whenever the timer has
nothing due left undelivered, since its timer delivers at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from pyrmq.broker.pop.inflight import PopInflightMessageCounter
from pyrmq.broker.pop.revive_log import ACK_TIME_INTERVAL_MS, REVIVE_GROUP, SECOND_MS, ReviveLog
from pyrmq.broker.put import await_put
from pyrmq.common.constants import PERM_READ, PERM_WRITE, RETRY_GROUP_TOPIC_PREFIX, MessageConst
from pyrmq.common.java_lang import hashmap_order
from pyrmq.protocol.bodies.common import TopicConfig
from pyrmq.protocol.headers.pop import build_pop_retry_topic, parse_normal_topic
from pyrmq.store import message as m
from pyrmq.store.pop import ACK_TAG, BATCH_ACK_TAG, CK_TAG, AckMsg, BatchAckMsg, PopCheckPoint
from pyrmq.store.results import GetMessageStatus, PutMessageStatus

log = logging.getLogger("pyrmq.broker.pop")

#: Java ckRewriteIntervalsInSeconds: how much later a checkpoint that failed to revive is retried
CK_REWRITE_INTERVALS_S = (10, 20, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)
#: PopAckConstants.retryQueueNum
RETRY_QUEUE_NUM = 1
READ_BATCH = 32


class PopReviveService:
    def __init__(
        self,
        *,
        config,
        message_store,
        topic_config_manager,
        subscription_group_manager,
        consumer_offset_manager,
        revive_log: ReviveLog,
        inflight: PopInflightMessageCounter,
        timer_caught_up: Callable[[], bool],
        now: Callable[[], int],
    ) -> None:
        self.config = config
        self.message_store = message_store
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.revive_log = revive_log
        self.inflight = inflight
        self.topic = revive_log.topic
        self.timer_caught_up = timer_caught_up
        self.now = now
        #: Java reviveOffset per queue: the last checkpoint handled
        self.revive_offsets: dict[int, int] = {}
        #: Java shouldRunPopRevive: a master (brokerId 0) revives; a slave only when it acts as master
        self.should_run = True
        #: Java currentReviveMessageTimestamp per revive queue: the revive time of the first
        #: checkpoint the last pass read, or the pass's time when it read none
        self.current_revive_ms: dict[int, int] = {}
        #: (group, topic, revive queue, "CK" or "ACK") per revive record read; (group, topic,
        #: put status name) per message put back to the retry topic (Java PopMetricsManager)
        self.on_get: Callable[[str, str, int, str], None] | None = None
        self.on_retry: Callable[[str, str, str], None] | None = None
        self._task: asyncio.Task | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="pop-revive")

    async def shutdown(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass

    async def _run(self) -> None:
        slow = 1
        while True:
            await asyncio.sleep(int(self.config["reviveInterval"]) / 1000)
            if not self.should_run or not self.config["timerWheelEnable"]:
                continue
            revived = 0
            try:
                for qid in range(int(self.config["reviveQueueNum"])):
                    revived += await self.revive_queue(qid)
            except Exception:
                log.exception("revive pass failed")
            if revived == 0:  # Java: idle passes slow down to reviveMaxSlow x reviveInterval
                await asyncio.sleep(slow * int(self.config["reviveInterval"]) / 1000)
                slow = min(slow + 1, int(self.config["reviveMaxSlow"]))
            else:
                slow = 1

    # ------------------------------------------------------------------ one pass

    def _read(self, qid: int, offset: int) -> tuple[list[m.StoredMessage], list[int]]:
        result = self.message_store.get_message(REVIVE_GROUP, self.topic, qid, offset, READ_BATCH, None)
        try:
            if result.status is not GetMessageStatus.FOUND:
                if (
                    result.status
                    not in (
                        GetMessageStatus.NO_MESSAGE_IN_QUEUE,
                        GetMessageStatus.OFFSET_OVERFLOW_ONE,
                        GetMessageStatus.NO_MATCHED_LOGIC_QUEUE,
                    )
                    and result.next_begin_offset > offset
                ):
                    # offset illegal (Java getReviveMessage): skip to where the queue continues
                    self.consumer_offset_manager.commit_offset(
                        "127.0.0.1", REVIVE_GROUP, self.topic, qid, result.next_begin_offset - 1
                    )
                return [], []
            msgs = [m.decode_message(b) for b in result.message_buffer_list]
            return msgs, list(result.message_queue_offset)
        finally:
            result.release()

    async def revive_queue(self, qid: int) -> int:
        """One pass over revive queue ``qid``; returns how many checkpoints were handled."""
        com = self.consumer_offset_manager
        old_offset = max(self.revive_offsets.get(qid, -1), com.query_offset(REVIVE_GROUP, self.topic, qid))
        offset = old_offset + 1
        points: dict[str, PopCheckPoint] = {}
        end_time = 0
        default_broker = self.config["brokerName"]
        while True:
            msgs, queue_offsets = self._read(qid, offset)
            if not msgs:
                break
            for msg, qo in zip(msgs, queue_offsets, strict=True):
                self._merge(msg, qo, points, default_broker, qid)
                try:
                    end_time = max(end_time, int(msg.properties.get(MessageConst.TIMER_DELIVER_MS, "0")))
                except ValueError:
                    pass
            offset += len(msgs)
        if self.timer_caught_up():
            end_time = max(end_time, self.now())
        handled = 0
        new_offset = old_offset
        in_order = sorted(points.values(), key=lambda p: p.revive_offset)
        self.current_revive_ms[qid] = in_order[0].revive_time if in_order else self.now()
        for ck in in_order:
            if not self.should_run:
                break
            if end_time - ck.revive_time <= ACK_TIME_INTERVAL_MS + SECOND_MS:
                break
            normal = parse_normal_topic(ck.topic or "", ck.cid or "")
            if (
                self.topic_config_manager.select_topic_config(normal) is not None
                and self.subscription_group_manager.find_subscription_group_config(ck.cid or "") is not None
            ):
                await self.revive_msg_from_ck(ck, qid)
            new_offset = ck.revive_offset
            handled += 1
        if new_offset > old_offset:
            com.commit_offset("127.0.0.1", REVIVE_GROUP, self.topic, qid, new_offset)
        self.revive_offsets[qid] = new_offset
        return handled

    def revive_behind(self, qid: int) -> tuple[int, int]:
        """(records of revive queue ``qid`` not handled yet, ms the oldest pending checkpoint is
        past its revive time): Java PopReviveService#getReviveBehindMessages / Millis."""
        current = self.current_revive_ms.get(qid, -1)
        if current <= 0:
            return 0, 0
        handled = self.revive_offsets.get(qid, -1)
        behind = self.message_store.get_max_offset_in_queue(self.topic, qid) - handled - 1
        return max(0, behind), max(0, self.now() - current) if behind > 0 else 0

    def _merge(
        self, msg: m.StoredMessage, queue_offset: int, points: dict[str, PopCheckPoint], default_broker: str, qid: int
    ) -> None:
        on_get = self.on_get
        tags = msg.tags
        body = msg.body or b""
        try:
            if tags == CK_TAG:
                ck = PopCheckPoint.decode(body)
                if ck.topic is None or ck.cid is None:
                    return
                ck.revive_offset = queue_offset
                points[ck.merge_key()] = ck
                if on_get is not None:
                    on_get(ck.cid, ck.topic, qid, "CK")
            elif tags == ACK_TAG:
                ack = AckMsg.decode(body)
                if on_get is not None:
                    on_get(ack.consumer_group or "", ack.topic or "", qid, "ACK")
                point = points.get(ack.merge_key(default_broker))
                if point is not None:
                    i = point.index_of_ack(ack.ack_offset)
                    if i > -1:
                        point.bit_map |= 1 << i
            elif tags == BATCH_ACK_TAG:
                back = BatchAckMsg.decode(body)
                if on_get is not None:
                    on_get(back.consumer_group or "", back.topic or "", qid, "ACK")
                point = points.get(back.merge_key(default_broker))
                if point is not None:
                    for o in back.ack_offset_list:
                        i = point.index_of_ack(o)
                        if i > -1:
                            point.bit_map |= 1 << i
        except Exception:
            log.exception("unreadable revive record at queue offset %d", queue_offset)

    async def revive_msg_from_ck(self, ck: PopCheckPoint, qid: int) -> None:
        """Every unacked message of the checkpoint into the retry topic; a message that cannot be
        put gets a checkpoint of its own, retried later (Java rePutCK)."""
        for j in range(ck.num):
            if ck.bit_map >> j & 1:
                continue
            offset = ck.ack_offset_by_index(j)
            msg = self._biz_message(ck, offset)
            if msg is None:
                log.warning("revive: no message %s/%d/%d, skipped", ck.topic, ck.queue_id, offset)
                continue
            if not await self.revive_retry(ck, msg):
                await self.re_put_ck(ck, offset, qid)

    def _biz_message(self, ck: PopCheckPoint, offset: int) -> m.StoredMessage | None:
        store = self.message_store
        cq = store.get_consume_queue(ck.topic or "", ck.queue_id)
        entry = cq.get(offset) if cq is not None else None
        if entry is None:
            return None
        phy, size, _ = entry
        return store.look_message_by_offset(phy, size)

    async def revive_retry(self, ck: PopCheckPoint, msg: m.StoredMessage) -> bool:
        topic = ck.topic or ""
        group = ck.cid or ""
        if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            topic = build_pop_retry_topic(topic, group, bool(self.config["enableRetryTopicV2"]))
        props = dict(msg.properties)
        if msg.reconsume_times == 0 or MessageConst.FIRST_POP_TIME not in props:
            props[MessageConst.FIRST_POP_TIME] = str(ck.pop_time)
        props[MessageConst.ORIGIN_GROUP] = group
        self.add_retry_topic_if_not_exist(topic, group)
        host = (self.config.broker_ip, int(self.config["listenPort"]))
        inner = m.MessageExtBrokerInner(
            topic=topic,
            body=msg.body or b"",
            queue_id=0,
            flag=msg.flag,
            properties=hashmap_order(props),
            sys_flag=msg.sys_flag,
            born_timestamp=msg.born_timestamp,
            born_host=host,
            store_host=host,
            reconsume_times=msg.reconsume_times if ck.suspend else msg.reconsume_times + 1,
        )
        result = await await_put(self.message_store.put_message_async(inner))
        if self.on_retry is not None:
            self.on_retry(group, ck.topic or "", result.put_message_status.name)
        if result.put_message_status is not PutMessageStatus.PUT_OK:
            log.warning("revive put to %s failed: %s", topic, result.put_message_status.name)
            return False
        self.inflight.decrement(ck.topic or "", group, ck.queue_id, 1, ck.pop_time)
        return True

    def add_retry_topic_if_not_exist(self, retry_topic: str, group: str) -> None:
        """Java: one queue, read+write; the group starts it at offset 0."""
        tcm = self.topic_config_manager
        if tcm.select_topic_config(retry_topic) is not None:
            return
        tcm.update_topic_config(
            TopicConfig(
                topic_name=retry_topic,
                read_queue_nums=RETRY_QUEUE_NUM,
                write_queue_nums=RETRY_QUEUE_NUM,
                perm=PERM_READ | PERM_WRITE,
            )
        )
        for i in range(RETRY_QUEUE_NUM):
            if self.consumer_offset_manager.query_offset(group, retry_topic, i) < 0:
                self.consumer_offset_manager.commit_offset("initPopRetryOffset", group, retry_topic, i, 0)

    async def re_put_ck(self, old: PopCheckPoint, offset: int, qid: int) -> None:
        times = old.parse_re_put_times()
        if times >= len(CK_REWRITE_INTERVALS_S) and self.config["skipWhenCKRePutReachMaxTimes"]:
            log.warning(
                "revive: checkpoint of %s/%d/%d re-put %d times, dropped", old.topic, old.queue_id, offset, times
            )
            return
        ck = PopCheckPoint(
            start_offset=offset,
            pop_time=old.pop_time,
            invisible_time=old.invisible_time,
            num=1,
            queue_id=old.queue_id,
            topic=old.topic,
            cid=old.cid,
            broker_name=old.broker_name,
            queue_offset_diff=[0],
            re_put_times=str(times + 1),
        )
        if old.revive_time <= self.now():
            ck.invisible_time += CK_REWRITE_INTERVALS_S[min(times, len(CK_REWRITE_INTERVALS_S) - 1)] * 1000
        await self.revive_log.put_ck(ck, qid)
