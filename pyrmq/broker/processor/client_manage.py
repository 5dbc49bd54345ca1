"""HEART_BEAT (34), UNREGISTER_CLIENT (35), CHECK_CLIENT_CONFIG (46).

Java: ``broker/processor/ClientManageProcessor``. A heartbeat registers the
channel's producer groups and consumer groups (with subscriptions), creating
the group config and its ``%RETRY%<group>`` topic on the way (spec §5.1).
"""

from __future__ import annotations

import logging

from pyrmq.broker.client_manager import ClientChannelInfo
from pyrmq.broker.filter.consumer_filter_manager import compile_expression
from pyrmq.broker.filter.sql92 import FilterParseError
from pyrmq.common.constants import PERM_READ, PERM_WRITE, RETRY_GROUP_TOPIC_PREFIX
from pyrmq.protocol.bodies.broker import CheckClientRequestBody, HeartbeatData, SubscriptionData
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.errors import InvalidParameter, SubscriptionParseFailed, SystemError_
from pyrmq.protocol.fastjson import BodyDecodeError
from pyrmq.protocol.headers.broker import UnregisterClientRequestHeader
from pyrmq.remoting.server import RequestContext, handles

log = logging.getLogger("pyrmq.broker.client")


def normalise_subscription(sub: SubscriptionData) -> SubscriptionData:
    """Recompute tag codes from the tag strings: Go sends them as strings and hashes UTF-8 bytes."""
    if (sub.expression_type or "TAG").upper() == "TAG" and sub.tags_set:
        from pyrmq.common.java_lang import java_string_hash

        sub.code_set = [java_string_hash(t) for t in sub.tags_set]
    return sub


class ClientManageProcessor:
    def __init__(
        self,
        *,
        config,
        topic_config_manager,
        subscription_group_manager,
        producer_manager,
        consumer_manager,
        consumer_filter_manager,
        now,
    ) -> None:
        self.config = config
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self.producer_manager = producer_manager
        self.consumer_manager = consumer_manager
        self.consumer_filter_manager = consumer_filter_manager
        self.now = now

    @handles(RequestCode.HEART_BEAT)
    async def heart_beat(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        try:
            data = HeartbeatData.decode(cmd.body or b"{}")
        except BodyDecodeError as e:
            raise InvalidParameter(f"heartbeat body is not readable: {e}") from None
        now = self.now()
        info = ClientChannelInfo(ctx.channel, data.client_id or "", cmd.language, cmd.version, now)
        for cd in data.consumer_data_set:
            group = cd.group_name
            if not group:
                continue
            sg = self.subscription_group_manager.find_subscription_group_config(group)
            notify = True
            if sg is not None:
                notify = sg.notify_consumer_ids_changed_enable
                sys_flag = 0x2 if cd.unit_mode else 0
                self.topic_config_manager.create_topic_in_send_message_back_method(
                    RETRY_GROUP_TOPIC_PREFIX + group, sg.retry_queue_nums, PERM_WRITE | PERM_READ, sys_flag
                )
            subs = [normalise_subscription(s) for s in cd.subscription_data_set]
            changed = self.consumer_manager.register_consumer(
                group,
                ClientChannelInfo(ctx.channel, info.client_id, cmd.language, cmd.version, now),
                cd.consume_type,
                cd.message_model,
                cd.consume_from_where,
                subs,
                notify and bool(self.config["notifyConsumerIdsChangedEnable"]) and cd.message_model != "BROADCASTING",
            )
            if changed:
                log.info(
                    "ClientManageProcessor: registerConsumer info changed, group=%s client=%s", group, info.client_id
                )
            self.consumer_filter_manager.register_group(group, subs)  # Java REGISTER event
        for pd in data.producer_data_set:
            if pd.group_name:
                self.producer_manager.register_producer(
                    pd.group_name, ClientChannelInfo(ctx.channel, info.client_id, cmd.language, cmd.version, now)
                )
        # 5.x extras (4.9.x clients ignore them): heartbeat V2 supported; V1 always "changed"
        return cmd.make_response(
            ResponseCode.SUCCESS, None, {"IS_SUPPORT_HEART_BEAT_V2": "true", "IS_SUB_CHANGE": "true"}
        )

    @handles(RequestCode.UNREGISTER_CLIENT)
    async def unregister_client(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = UnregisterClientRequestHeader.from_ext_fields(cmd.ext_fields)
        if h.producer_group:
            self.producer_manager.unregister_producer(h.producer_group, ctx.channel)
        if h.consumer_group:
            sg = self.subscription_group_manager.table.get(h.consumer_group)
            notify = sg.notify_consumer_ids_changed_enable if sg is not None else True
            self.consumer_manager.unregister_consumer(h.consumer_group, ctx.channel, notify)
        return cmd.make_response(ResponseCode.SUCCESS)

    @handles(RequestCode.CHECK_CLIENT_CONFIG)
    async def check_client_config(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        try:
            body = CheckClientRequestBody.decode(cmd.body or b"{}")
        except BodyDecodeError as e:
            raise InvalidParameter(f"check client body is not readable: {e}") from None
        sub = body.subscription_data
        if sub is not None and (sub.expression_type or "TAG").upper() != "TAG":
            if not self.config["enablePropertyFilter"]:
                raise SystemError_(f"The broker does not support consumer to filter message by {sub.expression_type}")
            try:
                compile_expression(sub.expression_type, sub.sub_string)
            except FilterParseError as e:
                log.warning(
                    "Client %s@%s filter message, but failed to compile expression! sub=%s, error=%s",
                    body.client_id,
                    body.group,
                    sub.sub_string,
                    e,
                )
                raise SubscriptionParseFailed(str(e)) from e
        return cmd.make_response(ResponseCode.SUCCESS)
