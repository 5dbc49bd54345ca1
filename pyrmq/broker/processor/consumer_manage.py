"""GET_CONSUMER_LIST_BY_GROUP (38), UPDATE_CONSUMER_OFFSET (15), QUERY_CONSUMER_OFFSET (14).

Java: ``broker/processor/ConsumerManageProcessor`` (spec §5.4, §5.5).
"""

from __future__ import annotations

import logging

from pyrmq.protocol.bodies.broker import GetConsumerListByGroupResponseBody
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.errors import SubscriptionGroupNotExist, SystemError_, TopicNotExist
from pyrmq.protocol.headers.broker import (
    GetConsumerListByGroupRequestHeader,
    QueryConsumerOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from pyrmq.remoting.server import RequestContext, handles

log = logging.getLogger("pyrmq.broker.offset")


class ConsumerManageProcessor:
    def __init__(
        self,
        *,
        consumer_manager,
        subscription_group_manager,
        topic_config_manager,
        consumer_offset_manager,
        message_store,
    ) -> None:
        self.consumer_manager = consumer_manager
        self.subscription_group_manager = subscription_group_manager
        self.topic_config_manager = topic_config_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.message_store = message_store

    @handles(RequestCode.GET_CONSUMER_LIST_BY_GROUP)
    async def get_consumer_list_by_group(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = GetConsumerListByGroupRequestHeader.from_ext_fields(cmd.ext_fields)
        info = self.consumer_manager.get_consumer_group_info(h.consumer_group)
        if info is not None:
            ids = info.all_client_ids()
            if ids:
                body = GetConsumerListByGroupResponseBody(ids).encode()
                return cmd.make_response(ResponseCode.SUCCESS, None, body=body)
            log.warning("getAllClientId failed, %s %s", h.consumer_group, ctx.channel.remote_addr)
        else:
            log.warning("getConsumerGroupInfo failed, %s %s", h.consumer_group, ctx.channel.remote_addr)
        raise SystemError_(f"no consumer for this group, {h.consumer_group}")

    @handles(RequestCode.UPDATE_CONSUMER_OFFSET)
    async def update_consumer_offset(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = UpdateConsumerOffsetRequestHeader.from_ext_fields(cmd.ext_fields)
        if not self.subscription_group_manager.contains(h.consumer_group):
            raise SubscriptionGroupNotExist(f"Group {h.consumer_group} not exist!")
        if self.topic_config_manager.select_topic_config(h.topic) is None:
            raise TopicNotExist(f"Topic {h.topic} not exist!")
        self.consumer_offset_manager.commit_offset(
            ctx.channel.remote_addr, h.consumer_group, h.topic, h.queue_id, h.commit_offset
        )
        return cmd.make_response(ResponseCode.SUCCESS)

    @handles(RequestCode.QUERY_CONSUMER_OFFSET)
    async def query_consumer_offset(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = QueryConsumerOffsetRequestHeader.from_ext_fields(cmd.ext_fields)
        offset = self.consumer_offset_manager.query_offset(h.consumer_group, h.topic, h.queue_id)
        if offset >= 0:
            return cmd.make_response(ResponseCode.SUCCESS, None, {"offset": str(offset)})
        store = self.message_store
        min_offset = store.get_min_offset_in_queue(h.topic, h.queue_id)
        if h.set_zero_if_not_found is False:
            return cmd.make_response(
                ResponseCode.QUERY_NOT_FOUND, "Not found, do not set to zero, maybe this group boot first"
            )
        if min_offset <= 0 and self.message_store.check_in_mem_by_consume_offset(h.topic, h.queue_id, 0):
            return cmd.make_response(ResponseCode.SUCCESS, None, {"offset": "0"})
        return cmd.make_response(
            ResponseCode.QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"
        )
