"""POP_MESSAGE (200050): hand out up to 32 messages, invisible to the group for ``invisibleTime``,
with a checkpoint in the revive topic; orderly pops lock the queue instead (FIFO).

Java: ``broker/processor/PopMessageProcessor`` (enablePopBufferMerge=false, the 5.5.0 default:
the checkpoint is stored at once and the group's offset moves past the popped messages). A pop
reads the group's pop retry topic ``%RETRY%<group>_<topic>`` first with probability
``popFromRetryProbability`` %, else after the topic when the batch is not full. Retry messages go
out under the topic's name with their own ``POP_CK`` property; for the others the client builds
it from the answer's startOffsetInfo/msgOffsetInfo.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field

from pyrmq.broker.filter.consumer_filter_manager import is_tag_type
from pyrmq.broker.filter.expression_message_filter import ExpressionMessageFilter
from pyrmq.broker.pop.inflight import PopInflightMessageCounter
from pyrmq.broker.pop.long_polling import PollingResult, PopLongPollingService
from pyrmq.broker.pop.order_info import ConsumerOrderInfoManager
from pyrmq.broker.pop.revive_log import ReviveLog, lock_key
from pyrmq.common.constants import FAQ_SUGGEST, RETRY_GROUP_TOPIC_PREFIX, MessageConst, is_readable
from pyrmq.common.java_lang import hashmap_order
from pyrmq.protocol.bodies.broker import SubscriptionData
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.pop import (
    POP_ORDER_REVIVE_QUEUE,
    OffsetInfo,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    build_extra_info,
    build_pop_retry_topic,
)
from pyrmq.remoting.server import RequestContext, handles
from pyrmq.store import message as m
from pyrmq.store.pop import PopCheckPoint
from pyrmq.store.results import GetMessageStatus

log = logging.getLogger("pyrmq.broker.pop")

#: ConsumeInitMode
INIT_MODE_MAX, INIT_MODE_MIN = 0, 1
MAX_MSG_NUMS = 32
_RESET = (GetMessageStatus.OFFSET_TOO_SMALL, GetMessageStatus.OFFSET_OVERFLOW_BADLY, GetMessageStatus.OFFSET_FOUND_NULL)
_SKIPPED = (
    GetMessageStatus.NO_MATCHED_MESSAGE,
    GetMessageStatus.OFFSET_FOUND_NULL,
    GetMessageStatus.MESSAGE_WAS_REMOVING,
    GetMessageStatus.NO_MATCHED_LOGIC_QUEUE,
)


@dataclass(slots=True)
class PopBatch:
    """One pop's answer as it grows, queue after queue."""

    header: PopMessageRequestHeader
    pop_time: int
    revive_qid: int
    message_filter: ExpressionMessageFilter | None
    remote: str
    buffers: list[bytes | memoryview] = field(default_factory=list)
    info: OffsetInfo = field(default_factory=OffsetInfo)

    @property
    def full(self) -> bool:
        return len(self.buffers) >= self.header.max_msg_nums


class PopMessageProcessor:
    def __init__(
        self,
        *,
        config,
        message_store,
        topic_config_manager,
        subscription_group_manager,
        consumer_offset_manager,
        consumer_filter_manager,
        revive_log: ReviveLog,
        pop_long_polling_service: PopLongPollingService,
        consumer_order_info_manager: ConsumerOrderInfoManager,
        pop_inflight_message_counter: PopInflightMessageCounter,
        broker_metrics,
        now,
        consumer_manager,
    ) -> None:
        self.config = config
        self.consumer_manager = consumer_manager
        self.broker_metrics = broker_metrics
        self.inflight = pop_inflight_message_counter
        self.message_store = message_store
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.consumer_filter_manager = consumer_filter_manager
        self.revive_log = revive_log
        self.locks = revive_log.queue_lock_manager
        self.long_polling = pop_long_polling_service
        self.order_info = consumer_order_info_manager
        self.now = now
        self.random = random.Random()

    @handles(RequestCode.POP_MESSAGE)
    async def pop_message(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand | None:
        """None when the request waits in long polling (answered later)."""
        cfg = self.config
        begin = self.now()
        h = PopMessageRequestHeader.from_ext_fields(cmd.ext_fields)
        # Java: a POP request alone makes the group known as a POP group (the lag metrics of a group
        # with no heartbeat, as the proxy's simple consumers are, read it)
        self.consumer_manager.compensate_basic_consumer_info(h.consumer_group, "CONSUME_POP", "CLUSTERING")
        if h.born_time == 0:  # Java fills it in the request, so a re-run after polling keeps it
            h.born_time = begin
            if cmd.ext_fields is not None:
                cmd.ext_fields["bornTime"] = str(begin)
        ip = cfg.broker_ip
        if h.is_timeout_too_much(begin):
            return cmd.make_response(ResponseCode.POLLING_TIMEOUT, f"the broker[{ip}] pop message is timeout too much")
        if not is_readable(int(cfg["brokerPermission"])):
            return cmd.make_response(ResponseCode.NO_PERMISSION, f"the broker[{ip}] pop message is forbidden")
        if h.max_msg_nums > MAX_MSG_NUMS:
            return cmd.make_response(
                ResponseCode.INVALID_PARAMETER, f"the broker[{ip}] pop message's num is greater than 32"
            )
        if not cfg["timerWheelEnable"]:
            return cmd.make_response(
                ResponseCode.SYSTEM_ERROR,
                f"the broker[{ip}] pop message is forbidden because timerWheelEnable is false",
            )
        tc = self.topic_config_manager.select_topic_config(h.topic)
        if tc is None:
            log.error("The topic %s not exist, consumer: %s", h.topic, ctx.channel.remote_addr)
            return cmd.make_response(
                ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist, apply first please! {FAQ_SUGGEST}"
            )
        if not is_readable(tc.perm):
            return cmd.make_response(ResponseCode.NO_PERMISSION, f"the topic[{h.topic}] peeking message is forbidden")
        if h.queue_id >= tc.read_queue_nums:
            remark = (
                f"queueId[{h.queue_id}] is illegal, topic:[{h.topic}] topicConfig.readQueueNums:"
                f"[{tc.read_queue_nums}] consumer:[{ctx.channel.remote_addr}]"
            )
            return cmd.make_response(ResponseCode.INVALID_PARAMETER, remark)
        sg = self.subscription_group_manager.find_subscription_group_config(h.consumer_group)
        if sg is None:
            return cmd.make_response(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group [{h.consumer_group}] does not exist, {FAQ_SUGGEST}",
            )
        if not sg.consume_enable:
            return cmd.make_response(
                ResponseCode.NO_PERMISSION, f"subscription group no permission, {h.consumer_group}"
            )
        message_filter = None
        retry_topic = build_pop_retry_topic(h.topic, h.consumer_group, bool(cfg["enableRetryTopicV2"]))
        # Java compensates the topic's subscription and the POP retry topic's ("*")
        sub = SubscriptionData.build(h.topic, h.exp or "*", h.exp_type if h.exp else "TAG")
        self.consumer_manager.compensate_subscribe_data(h.consumer_group, h.topic, sub)
        retry_sub = SubscriptionData.build(retry_topic, "*", h.exp_type if h.exp else "TAG")
        self.consumer_manager.compensate_subscribe_data(h.consumer_group, retry_topic, retry_sub)
        if h.exp:
            filter_data = None
            if not is_tag_type(sub.expression_type):
                filter_data = self.consumer_filter_manager.build(
                    h.topic, h.consumer_group, h.exp, sub.expression_type, 0
                )
                if filter_data is None:
                    log.warning("Parse the consumer's subscription[%s] failed, group: %s", h.exp, h.consumer_group)
                    return cmd.make_response(
                        ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed"
                    )
            message_filter = ExpressionMessageFilter(sub, filter_data, self.consumer_filter_manager)

        order = bool(h.order)
        random_q = self.random.randrange(100)
        revive_qid = POP_ORDER_REVIVE_QUEUE if order else self.revive_log.next_revive_qid()
        batch = PopBatch(h, self.now(), revive_qid, message_filter, ctx.channel.remote_addr)
        need_retry = random_q < int(cfg["popFromRetryProbability"])
        rest = 0
        if need_retry and not order:
            rest = await self._pop_from_topic(retry_topic, True, batch, random_q, rest)
        if h.queue_id < 0:
            rest = await self._pop_from_topic(h.topic, False, batch, random_q, rest)
        else:
            rest = await self._pop_from_queue(h.topic, False, batch, h.queue_id, rest)
        if not need_retry and not batch.full and not order:
            rest = await self._pop_from_topic(retry_topic, True, batch, random_q, rest)

        if batch.buffers:
            code, status = ResponseCode.SUCCESS, GetMessageStatus.FOUND.name
            if rest > 0:  # Java: let another waiting pop take the rest
                self.long_polling.notify_message_arriving(h.topic, h.queue_id, h.consumer_group)
        else:
            polled = self.long_polling.polling(
                ctx, cmd, h.topic, h.consumer_group, h.queue_id, h.born_time, h.poll_time
            )
            if polled is PollingResult.POLLING_SUC:
                if rest > 0:
                    self.long_polling.notify_message_arriving(h.topic, h.queue_id, h.consumer_group)
                return None
            code = ResponseCode.POLLING_FULL if polled is PollingResult.POLLING_FULL else ResponseCode.POLLING_TIMEOUT
            status = GetMessageStatus.NO_MESSAGE_IN_QUEUE.name
        rh = PopMessageResponseHeader(
            pop_time=batch.pop_time,
            invisible_time=h.invisible_time,
            revive_qid=revive_qid,
            rest_num=rest,
            start_offset_info=OffsetInfo.join(batch.info.start),
            msg_offset_info=OffsetInfo.join(batch.info.msg),
            order_count_info=OffsetInfo.join(batch.info.order_count) if order else None,
        )
        response = cmd.make_response(code, status, rh.to_ext_fields())
        if code == ResponseCode.SUCCESS:
            response.body = b"".join(batch.buffers)
        return response

    async def _pop_from_topic(self, topic: str, is_retry: bool, batch: PopBatch, random_q: int, rest: int) -> int:
        tc = self.topic_config_manager.select_topic_config(topic)
        if tc is None:
            return rest
        n = tc.read_queue_nums
        for i in range(n):
            rest = await self._pop_from_queue(topic, is_retry, batch, (random_q + i) % n, rest)
        return rest

    def get_pop_offset(self, topic: str, group: str, queue_id: int, init_mode: int, init: bool) -> int:
        offset = self.consumer_offset_manager.query_offset(group, topic, queue_id)
        if offset < 0:
            offset = self.get_init_offset(topic, group, queue_id, init_mode, init)
        return offset

    def get_init_offset(self, topic: str, group: str, queue_id: int, init_mode: int, init: bool) -> int:
        """Java PopMessageProcessor#getInitOffset: MIN, or the last message (the first one when
        the queue still starts at 0 in memory), committed at once when ``init``."""
        store = self.message_store
        if init_mode == INIT_MODE_MIN or topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            offset = store.get_min_offset_in_queue(topic, queue_id)
        elif (
            self.config["initPopOffsetByCheckMsgInMem"]
            and store.get_min_offset_in_queue(topic, queue_id) <= 0
            and store.check_in_mem_by_consume_offset(topic, queue_id, 0)
        ):
            offset = 0
        else:
            offset = max(store.get_max_offset_in_queue(topic, queue_id) - 1, 0)
        if init:
            self.consumer_offset_manager.commit_offset("getPopOffset", group, topic, queue_id, offset)
        return offset

    def _reset_pop_offset(self, topic: str, group: str, queue_id: int) -> int | None:
        reset = self.consumer_offset_manager.query_then_erase_reset_offset(topic, group, queue_id)
        if reset is not None:
            self.order_info.clear_block(topic, group, queue_id)
            self.consumer_offset_manager.commit_offset("ResetPopOffset", group, topic, queue_id, reset)
        return reset

    async def _pop_from_queue(self, topic: str, is_retry: bool, batch: PopBatch, queue_id: int, rest: int) -> int:
        h = batch.header
        group = h.consumer_group
        store = self.message_store
        key = lock_key(topic, group, queue_id)
        offset = self.get_pop_offset(topic, group, queue_id, h.init_mode, False)
        if not self.locks.try_lock(key):
            return rest if h.order else store.get_max_offset_in_queue(topic, queue_id) - offset + rest
        try:
            offset = self.get_pop_offset(topic, group, queue_id, h.init_mode, True)
            reset = self._reset_pop_offset(topic, group, queue_id)
            if reset is not None:
                offset = reset
            if h.order:
                if self.order_info.check_block(h.attempt_id, topic, group, queue_id, h.invisible_time):
                    return rest
                self.inflight.clear(topic, group, queue_id)
            if batch.full:
                return store.get_max_offset_in_queue(topic, queue_id) - offset + rest
            want = h.max_msg_nums - len(batch.buffers)
            result = store.get_message(group, topic, queue_id, offset, want, batch.message_filter)
            if result.status in _RESET:
                log.warning(
                    "Pop initial offset, because store is no correct, %s, %d->%d", key, offset, result.next_begin_offset
                )
                self.consumer_offset_manager.commit_offset(
                    batch.remote, group, topic, queue_id, result.next_begin_offset
                )
                offset = result.next_begin_offset
                result.release()
                result = store.get_message(group, topic, queue_id, offset, want, batch.message_filter)
            try:
                if result.message_buffer_list:
                    offsets = list(result.message_queue_offset)
                    if h.order:
                        self.order_info.update(
                            h.attempt_id,
                            is_retry,
                            topic,
                            group,
                            queue_id,
                            batch.pop_time,
                            h.invisible_time,
                            offsets,
                            batch.info,
                        )
                        self.consumer_offset_manager.commit_offset(batch.remote, group, topic, queue_id, offset)
                    elif not await self._append_check_point(h, topic, batch, queue_id, offset, offsets):
                        return rest + len(offsets)
                    else:
                        self.consumer_offset_manager.commit_offset(
                            batch.remote, group, topic, queue_id, result.next_begin_offset
                        )
                    batch.info.add_start(topic, queue_id, offset)
                    batch.info.add_msg(topic, queue_id, offsets)
                    self._add_messages(topic, is_retry, batch, queue_id, offset, result.message_buffer_list)
                    size = sum(len(b) for b in result.message_buffer_list)
                    self.broker_metrics.on_pop(h.topic, group, len(offsets), size, is_retry)
                    self.inflight.increment(topic, group, queue_id, len(offsets))
                elif result.status in _SKIPPED and result.next_begin_offset > -1:
                    # nothing matched up to there: the offset moves on (Java addCkMock / commitOffset)
                    self.consumer_offset_manager.commit_offset(
                        batch.remote, group, topic, queue_id, result.next_begin_offset
                    )
                return result.max_offset - result.next_begin_offset + rest
            finally:
                result.release()
        finally:
            self.locks.unlock(key)

    async def _append_check_point(
        self, h: PopMessageRequestHeader, topic: str, batch: PopBatch, queue_id: int, offset: int, offsets: list[int]
    ) -> bool:
        ck = PopCheckPoint(
            start_offset=offset,
            pop_time=batch.pop_time,
            invisible_time=h.invisible_time,
            num=len(offsets),
            queue_id=queue_id,
            topic=topic,
            cid=h.consumer_group,
            broker_name=self.config["brokerName"],
            queue_offset_diff=[o - offset for o in offsets],
        )
        return await self.revive_log.put_ck(ck, batch.revive_qid)

    def _add_messages(
        self, topic: str, is_retry: bool, batch: PopBatch, queue_id: int, offset: int, buffers: list
    ) -> None:
        h = batch.header
        if not is_retry or self.config["popResponseReturnActualRetryTopic"]:
            batch.buffers.extend(bytes(b) for b in buffers)
            return
        # a retry message goes out under the topic's name, carrying its own checkpoint info
        broker_name = self.config["brokerName"]
        for buf in buffers:
            stored = m.decode_message(buf)
            props = dict(stored.properties)
            props.setdefault(
                MessageConst.POP_CK,
                build_extra_info(
                    offset,
                    batch.pop_time,
                    h.invisible_time,
                    batch.revive_qid,
                    stored.topic,
                    broker_name,
                    stored.queue_id,
                    stored.queue_offset,
                ),
            )
            inner = m.MessageExtBrokerInner.from_stored(stored, hashmap_order(props), topic=h.topic)
            inner.store_timestamp = stored.store_timestamp
            batch.buffers.append(bytes(m.encode_message(inner, stored.queue_offset, stored.commit_log_offset)))
