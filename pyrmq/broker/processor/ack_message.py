"""ACK_MESSAGE (200051) and BATCH_ACK_MESSAGE (200151): a popped message is done. An ack is an
``ack``/``bAck`` record in the revive topic, delivered when the message would revive, so the
revive service finds its checkpoint acked; an orderly pop's ack moves the group's offset instead.

Java: ``broker/processor/AckMessageProcessor`` (appendAck, ackOrderly; enablePopBufferMerge
false). A failed revive-record put is only logged, as in Java.
"""

from __future__ import annotations

import logging

from pyrmq.broker.pop.inflight import PopInflightMessageCounter
from pyrmq.broker.pop.long_polling import PopLongPollingService
from pyrmq.broker.pop.order_info import ConsumerOrderInfoManager
from pyrmq.broker.pop.revive_log import ReviveLog, lock_key
from pyrmq.common.constants import FAQ_SUGGEST
from pyrmq.protocol.bodies.pop import BatchAck, BatchAckMessageRequestBody
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.errors import InvalidParameter, SystemError_
from pyrmq.protocol.fastjson import BodyDecodeError
from pyrmq.protocol.headers.pop import (
    POP_ORDER_REVIVE_QUEUE,
    AckMessageRequestHeader,
    ExtraInfo,
    ExtraInfoError,
    real_topic,
)
from pyrmq.remoting.server import RequestContext, handles
from pyrmq.store.pop import AckMsg, BatchAckMsg

log = logging.getLogger("pyrmq.broker.pop")


def parse_extra_info(text: str) -> ExtraInfo:
    """Java ExtraInfoUtil throws IllegalArgumentException; the remoting layer answers SYSTEM_ERROR."""
    try:
        return ExtraInfo.parse(text)
    except ExtraInfoError as e:
        raise SystemError_(str(e)) from None


class AckMessageProcessor:
    def __init__(
        self,
        *,
        config,
        message_store,
        topic_config_manager,
        consumer_offset_manager,
        revive_log: ReviveLog,
        pop_long_polling_service: PopLongPollingService,
        consumer_order_info_manager: ConsumerOrderInfoManager,
        pop_inflight_message_counter: PopInflightMessageCounter,
    ) -> None:
        self.config = config
        self.message_store = message_store
        self.topic_config_manager = topic_config_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.revive_log = revive_log
        self.long_polling = pop_long_polling_service
        self.order_info = consumer_order_info_manager
        self.inflight = pop_inflight_message_counter

    @handles(RequestCode.ACK_MESSAGE)
    async def ack_message(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = AckMessageRequestHeader.from_ext_fields(cmd.ext_fields)
        response = cmd.make_response(ResponseCode.SUCCESS)
        if (refusal := check_topic_queue(self.topic_config_manager, h.topic, h.queue_id, ctx)) is not None:
            return cmd.make_response(*refusal)
        store = self.message_store
        lo = store.get_min_offset_in_queue(h.topic, h.queue_id)
        hi = store.get_max_offset_in_queue(h.topic, h.queue_id)
        if h.offset < lo or h.offset > hi:
            remark = f"offset is illegal, key:{h.topic}@{h.queue_id}, commit:{h.offset}, store:{lo}~{hi}"
            return cmd.make_response(ResponseCode.NO_MESSAGE, remark)
        extra = parse_extra_info(h.extra_info)
        if extra.revive_qid == POP_ORDER_REVIVE_QUEUE:
            await self.ack_orderly(
                h.topic, h.consumer_group, h.queue_id, h.offset, extra.pop_time, extra.invisible_time, ctx, response
            )
            return response
        ack = AckMsg(
            ack_offset=h.offset,
            start_offset=extra.ck_queue_offset,
            consumer_group=h.consumer_group,
            topic=h.topic,
            queue_id=h.queue_id,
            pop_time=extra.pop_time,
            broker_name=extra.broker_name,
        )
        await self.revive_log.put_ack(ack, extra.revive_qid, extra.invisible_time)
        self.inflight.decrement(h.topic, h.consumer_group, h.queue_id, 1, extra.pop_time)
        return response

    @handles(RequestCode.BATCH_ACK_MESSAGE)
    async def batch_ack_message(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        response = cmd.make_response(ResponseCode.SUCCESS)
        body = None
        if cmd.body:
            try:
                body = BatchAckMessageRequestBody.decode(cmd.body)
            except BodyDecodeError as e:
                raise InvalidParameter(f"batch ack body is not readable: {e}") from None
        if body is None or not body.acks:
            return cmd.make_response(ResponseCode.NO_MESSAGE)
        for back in body.acks:
            await self._append_batch_ack(back, body.broker_name, ctx, response)
        return response

    async def _append_batch_ack(
        self, back: BatchAck, broker_name: str | None, ctx: RequestContext, response: RemotingCommand
    ) -> None:
        group = back.consumer_group or ""
        try:
            topic = real_topic(back.topic or "", group, back.retry or "0")
        except ExtraInfoError as e:
            raise SystemError_(str(e)) from None
        store = self.message_store
        lo = store.get_min_offset_in_queue(topic, back.queue_id)
        hi = store.get_max_offset_in_queue(topic, back.queue_id)
        if lo == -1 or hi == -1:
            return
        offsets = [back.start_offset + i for i in back.bits() if lo <= back.start_offset + i <= hi]
        if back.revive_queue_id == POP_ORDER_REVIVE_QUEUE:
            for offset in offsets:
                await self.ack_orderly(
                    topic, group, back.queue_id, offset, back.pop_time, back.invisible_time, ctx, response
                )
            return
        if not offsets:
            return
        ack = BatchAckMsg(
            ack_offset_list=offsets,
            start_offset=back.start_offset,
            consumer_group=group,
            topic=topic,
            queue_id=back.queue_id,
            pop_time=back.pop_time,
            broker_name=broker_name,
        )
        await self.revive_log.put_ack(ack, back.revive_queue_id, back.invisible_time)
        self.inflight.decrement(topic, group, back.queue_id, len(offsets), back.pop_time)

    async def ack_orderly(
        self,
        topic: str,
        group: str,
        queue_id: int,
        ack_offset: int,
        pop_time: int,
        invisible_time: int,
        ctx: RequestContext,
        response: RemotingCommand,
    ) -> None:
        """Java AckMessageProcessor#ackOrderly: the group's offset becomes the first unacked
        message of the orderly pop, and a pop waiting for the queue is woken."""
        com = self.consumer_offset_manager
        old = com.query_offset(group, topic, queue_id)
        if ack_offset < old:
            return
        key = lock_key(topic, group, queue_id)
        locks = self.revive_log.queue_lock_manager
        await locks.lock(key)
        try:
            old = com.query_offset(group, topic, queue_id)  # again, under the lock
            if ack_offset < old:
                return
            nxt = self.order_info.commit_and_next(topic, group, queue_id, ack_offset, pop_time)
            if nxt > -1:
                if not com.has_offset_reset(topic, group, queue_id):
                    com.commit_offset(ctx.channel.remote_addr, group, topic, queue_id, nxt)
                if not self.order_info.check_block(None, topic, group, queue_id, invisible_time):
                    self.long_polling.notify_message_arriving(topic, queue_id, group)
            elif nxt == -1:
                response.code = ResponseCode.MESSAGE_ILLEGAL
                response.remark = (
                    f"offset is illegal, key:{key}, old:{old}, commit:{ack_offset}, next:{nxt}, "
                    f"{ctx.channel.remote_addr}"
                )
        finally:
            locks.unlock(key)
        self.inflight.decrement(topic, group, queue_id, 1, pop_time)  # not after the early returns, as Java


def check_topic_queue(topic_config_manager, topic: str, queue_id: int, ctx: RequestContext) -> tuple[int, str] | None:
    """The code and remark Java's ack and change-invisible-time processors answer when the topic
    does not exist or the queue is not one of its read queues; None when both are fine."""
    tc = topic_config_manager.select_topic_config(topic)
    if tc is None:
        return ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please! {FAQ_SUGGEST}"
    if queue_id >= tc.read_queue_nums or queue_id < 0:
        return ResponseCode.MESSAGE_ILLEGAL, (
            f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:"
            f"[{tc.read_queue_nums}] consumer:[{ctx.channel.remote_addr}]"
        )
    return None
