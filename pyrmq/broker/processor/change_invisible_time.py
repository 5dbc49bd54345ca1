"""CHANGE_MESSAGE_INVISIBLETIME (200053): a popped message becomes visible again after a new
``invisibleTime`` counted from now: a new one-message checkpoint, then an ack of the old one.
For an orderly pop only the message's next visible time changes.

Java: ``broker/processor/ChangeInvisibleTimeProcessor`` (appendCheckPointThenAckOrigin,
processChangeInvisibleTimeForOrder).
"""

from __future__ import annotations

import logging

from pyrmq.broker.pop.order_info import ConsumerOrderInfoManager
from pyrmq.broker.pop.revive_log import ReviveLog, lock_key
from pyrmq.broker.processor.ack_message import check_topic_queue, parse_extra_info
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.pop import ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader, ExtraInfo
from pyrmq.remoting.server import RequestContext, handles
from pyrmq.store.pop import AckMsg, PopCheckPoint

log = logging.getLogger("pyrmq.broker.pop")


class ChangeInvisibleTimeProcessor:
    def __init__(
        self,
        *,
        message_store,
        topic_config_manager,
        consumer_offset_manager,
        revive_log: ReviveLog,
        consumer_order_info_manager: ConsumerOrderInfoManager,
        now,
    ) -> None:
        self.message_store = message_store
        self.topic_config_manager = topic_config_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.revive_log = revive_log
        self.order_info = consumer_order_info_manager
        self.now = now

    @handles(RequestCode.CHANGE_MESSAGE_INVISIBLETIME)
    async def change_invisible_time(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = ChangeInvisibleTimeRequestHeader.from_ext_fields(cmd.ext_fields)
        if (refusal := check_topic_queue(self.topic_config_manager, h.topic, h.queue_id, ctx)) is not None:
            return cmd.make_response(*refusal)
        store = self.message_store
        lo = store.get_min_offset_in_queue(h.topic, h.queue_id)
        hi = store.get_max_offset_in_queue(h.topic, h.queue_id)
        if h.offset < lo or h.offset >= hi:
            return cmd.make_response(ResponseCode.NO_MESSAGE)
        extra = parse_extra_info(h.extra_info)
        if extra.is_order:
            return await self._change_for_order(h, extra, cmd)
        now = self.now()
        ck = PopCheckPoint(
            start_offset=h.offset,
            pop_time=now,
            invisible_time=h.invisible_time,
            num=1,
            queue_id=h.queue_id,
            topic=h.topic,
            cid=h.consumer_group,
            queue_offset_diff=[0],
            broker_name=extra.broker_name,
            suspend=h.suspend,
        )
        if not await self.revive_log.put_ck(ck, extra.revive_qid):
            return cmd.make_response(ResponseCode.SYSTEM_ERROR)
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
        rh = ChangeInvisibleTimeResponseHeader(now, h.invisible_time, extra.revive_qid)
        return cmd.make_response(ResponseCode.SUCCESS, None, rh.to_ext_fields())

    async def _change_for_order(
        self, h: ChangeInvisibleTimeRequestHeader, extra: ExtraInfo, cmd: RemotingCommand
    ) -> RemotingCommand:
        response = cmd.make_response(ResponseCode.SUCCESS)
        old = self.consumer_offset_manager.query_offset(h.consumer_group, h.topic, h.queue_id)
        if h.offset < old:
            return response
        key = lock_key(h.topic, h.consumer_group, h.queue_id)
        locks = self.revive_log.queue_lock_manager
        await locks.lock(key)
        try:
            if h.offset < self.consumer_offset_manager.query_offset(h.consumer_group, h.topic, h.queue_id):
                return response
            next_visible = self.now() + h.invisible_time
            self.order_info.update_next_visible_time(
                h.topic, h.consumer_group, h.queue_id, h.offset, extra.pop_time, next_visible
            )
            rh = ChangeInvisibleTimeResponseHeader(extra.pop_time, next_visible - extra.pop_time, extra.revive_qid)
            response.ext_fields = rh.to_ext_fields()
        finally:
            locks.unlock(key)
        return response
