"""NOTIFICATION (200054): does the group have messages to pop here (long polling until it does),
and POLLING_INFO (200055): how many pops wait on a queue.

Java: ``broker/processor/NotificationProcessor`` (its own PopLongPollingService; no message filter
unless useMessageFilterForNotification, which pyrmq does not apply) and ``PollingInfoProcessor``.
"""

from __future__ import annotations

import random

from pyrmq.broker.pop.long_polling import PollingResult, PopLongPollingService
from pyrmq.broker.pop.order_info import ConsumerOrderInfoManager
from pyrmq.broker.processor.peek_message import check_pop_request, pop_offset
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.pop import (
    NotificationRequestHeader,
    NotificationResponseHeader,
    PollingInfoRequestHeader,
    PollingInfoResponseHeader,
    build_pop_retry_topic,
)
from pyrmq.remoting.server import RequestContext, handles


class NotificationProcessor:
    def __init__(
        self,
        *,
        config,
        message_store,
        topic_config_manager,
        subscription_group_manager,
        consumer_offset_manager,
        consumer_order_info_manager: ConsumerOrderInfoManager,
        notification_long_polling_service: PopLongPollingService,
        pop_long_polling_service: PopLongPollingService,
        now,
    ) -> None:
        self.config = config
        self.message_store = message_store
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.order_info = consumer_order_info_manager
        self.long_polling = notification_long_polling_service
        self.pop_long_polling = pop_long_polling_service
        self.now = now
        self.random = random.Random()

    def _check(
        self, cmd: RemotingCommand, ctx: RequestContext, topic: str, queue_id: int, group: str, bare: bool = False
    ):
        """``bare``: NOTIFICATION answers a forbidden broker, an unknown topic or group with the
        code alone (Java NotificationProcessor sets no remark there)."""
        bad = check_pop_request(
            self.config,
            self.topic_config_manager,
            self.subscription_group_manager,
            topic,
            queue_id,
            group,
            ctx.channel.remote_addr,
            "peeking",
        )
        if bad is None:
            return None
        code, remark = bad
        if bare and (
            code in (ResponseCode.TOPIC_NOT_EXIST, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST)
            or remark.startswith("the broker[")
        ):
            remark = None
        return cmd.make_response(code, remark)

    @handles(RequestCode.NOTIFICATION)
    async def notification(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand | None:
        h = NotificationRequestHeader.from_ext_fields(cmd.ext_fields)
        if h.born_time == 0:
            h.born_time = self.now()
            if cmd.ext_fields is not None:
                cmd.ext_fields["bornTime"] = str(h.born_time)
        bad = self._check(cmd, ctx, h.topic, h.queue_id, h.consumer_group, bare=True)
        if bad is not None:
            return bad
        random_q = self.random.randrange(100)
        if h.queue_id < 0:
            has_msg = self._has_msg_from_topic(h.topic, random_q, h)
        else:
            has_msg = self._has_msg_from_queue(h.topic, h, h.queue_id)
        if not has_msg:
            retry = build_pop_retry_topic(h.topic, h.consumer_group, bool(self.config["enableRetryTopicV2"]))
            has_msg = self._has_msg_from_topic(retry, random_q, h)
        rh = NotificationResponseHeader(has_msg=has_msg)
        if not has_msg:
            polled = self.long_polling.polling(
                ctx, cmd, h.topic, h.consumer_group, h.queue_id, h.born_time, h.poll_time
            )
            if polled is PollingResult.POLLING_SUC:
                return None
            rh.polling_full = polled is PollingResult.POLLING_FULL
        return cmd.make_response(ResponseCode.SUCCESS, None, rh.to_ext_fields())

    def _has_msg_from_topic(self, topic: str, random_q: int, h: NotificationRequestHeader) -> bool:
        tc = self.topic_config_manager.select_topic_config(topic)
        if tc is None:
            return False
        n = tc.read_queue_nums
        return any(self._has_msg_from_queue(topic, h, (random_q + i) % n) for i in range(n))

    def _has_msg_from_queue(self, topic: str, h: NotificationRequestHeader, queue_id: int) -> bool:
        if h.order and self.order_info.check_block(h.attempt_id, h.topic, h.consumer_group, queue_id, 0):
            return False
        offset = pop_offset(self.consumer_offset_manager, self.message_store, topic, h.consumer_group, queue_id)
        return self.message_store.get_max_offset_in_queue(topic, queue_id) - offset > 0

    @handles(RequestCode.POLLING_INFO)
    async def polling_info(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = PollingInfoRequestHeader.from_ext_fields(cmd.ext_fields)
        bad = self._check(cmd, ctx, h.topic, h.queue_id, h.consumer_group)
        if bad is not None:
            return bad
        n = self.pop_long_polling.polling_num(h.topic, h.consumer_group, h.queue_id)
        return cmd.make_response(ResponseCode.SUCCESS, None, PollingInfoResponseHeader(n).to_ext_fields())
