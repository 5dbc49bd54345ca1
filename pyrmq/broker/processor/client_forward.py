"""Requests the broker relays to a consumer's own connection, and the client-side offset reset.

Java: ``AdminBrokerProcessor#callConsumer`` (GET_CONSUMER_RUNNING_INFO,
CONSUME_MESSAGE_DIRECTLY) and ``#getConsumerStatus`` (GET_CONSUMER_STATUS_FROM_CLIENT), over
``pyrmq.broker.broker2client.Broker2Client``.
"""

from __future__ import annotations

import logging

from pyrmq.broker.broker2client import version_desc
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.errors import ConsumeMsgTimeout, RemotingTimeout, SystemError_
from pyrmq.protocol.headers.admin import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
)
from pyrmq.protocol.version import MQVersion
from pyrmq.remoting.server import RequestContext, handles
from pyrmq.store import message as m

log = logging.getLogger("pyrmq.broker.admin")


class ClientForwardProcessor:
    def __init__(
        self,
        *,
        config,
        topic_config_manager,
        subscription_group_manager,
        consumer_offset_manager,
        consumer_manager,
        message_store,
        broker2client,
    ) -> None:
        self.config = config
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.consumer_manager = consumer_manager
        self.message_store = message_store
        self.broker2client = broker2client

    async def _call_consumer(
        self,
        code: int,
        cmd: RemotingCommand,
        group: str,
        client_id: str | None,
        ext: dict[str, str],
        body: bytes | None,
    ) -> RemotingCommand:
        ci = self.consumer_manager.find_channel(group, client_id or "")
        if ci is None:
            raise SystemError_(f"The Consumer <{group}> <{client_id}> not online")
        if ci.version < MQVersion.V3_1_8_SNAPSHOT:
            raise SystemError_(
                f"The Consumer <{client_id}> Version <{version_desc(ci.version)}> too low to finish, please upgrade "
                f"it to V3_1_8_SNAPSHOT"
            )
        req = RemotingCommand.request(code, dict(ext), body)
        try:
            resp = await self.broker2client.call_client(ci.channel, req)
        except (TimeoutError, RemotingTimeout) as e:
            raise ConsumeMsgTimeout(f"consumer <{group}> <{client_id}> Timeout: {e}") from e
        except Exception as e:
            raise SystemError_(f"invoke consumer <{group}> <{client_id}> Exception: {e}") from e
        out = cmd.make_response(resp.code, resp.remark, dict(resp.ext_fields or {}) or None, resp.body)
        return out

    @handles(RequestCode.GET_CONSUMER_RUNNING_INFO)
    async def get_consumer_running_info(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = GetConsumerRunningInfoRequestHeader.from_ext_fields(cmd.ext_fields)
        return await self._call_consumer(
            RequestCode.GET_CONSUMER_RUNNING_INFO,
            cmd,
            h.consumer_group,
            h.client_id,
            dict(cmd.ext_fields or {}),
            cmd.body,
        )

    @handles(RequestCode.CONSUME_MESSAGE_DIRECTLY)
    async def consume_message_directly(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        """Attach the stored record (by the offset id) and relay to the client."""
        h = ConsumeMessageDirectlyResultRequestHeader.from_ext_fields(cmd.ext_fields)
        ext = dict(cmd.ext_fields or {})
        ext["brokerName"] = self.config["brokerName"]
        if h.topic:
            tc = self.topic_config_manager.topic_config_table.get(h.topic)
            if tc is not None:
                ext["topicSysFlag"] = str(tc.topic_sys_flag)
        if h.consumer_group:
            sg = self.subscription_group_manager.find_subscription_group_config(h.consumer_group)
            if sg is not None:
                ext["groupSysFlag"] = str(sg.group_sys_flag)
        body = cmd.body
        try:
            mid = m.decode_message_id(h.msg_id or "")
            sel = self.message_store.select_one_message_by_offset(mid.offset)
            if sel is not None:
                try:
                    body = bytes(sel.buffer)
                finally:
                    sel.release()
        except Exception:
            log.debug("consumeMessageDirectly: msgId %s does not decode", h.msg_id)
        return await self._call_consumer(
            RequestCode.CONSUME_MESSAGE_DIRECTLY, cmd, h.consumer_group, h.client_id, ext, body
        )

    @handles(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS)
    async def get_consumer_status(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        """Java Broker2Client#getConsumeStatus: ask every (or one) member for its offsets of ``topic``."""
        h = GetConsumerStatusRequestHeader.from_ext_fields(cmd.ext_fields)
        info = self.consumer_manager.get_consumer_group_info(h.group)
        if info is None or not info.channel_info_table:
            raise SystemError_(f"No Any Consumer online in the consumer group: [{h.group}]")
        table: dict[str, dict] = {}
        from pyrmq.protocol.fastjson import fastjson_dumps, lenient_loads

        for ch, ci in list(info.channel_info_table.items()):
            addr = getattr(ch, "remote_addr", "")
            if h.client_addr and h.client_addr != addr:
                continue
            if ci.version < MQVersion.V3_0_7_SNAPSHOT:
                raise SystemError_(f"the client does not support this feature. version={version_desc(ci.version)}")
            req = RemotingCommand.request(
                RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, {"topic": h.topic, "group": h.group, "clientAddr": addr}
            )
            try:
                resp = await self.broker2client.call_client(ch, req)
            except Exception as e:
                log.warning("getConsumeStatus from %s failed: %s", addr, e)
                continue
            if resp.code == ResponseCode.SUCCESS and resp.body:
                try:
                    obj = lenient_loads(resp.body)
                    table[ci.client_id] = (obj or {}).get("messageQueueTable") or {}
                except Exception:
                    log.warning("getConsumeStatus: bad body from %s", addr)
            if h.client_addr:
                break
        body = fastjson_dumps({"consumerTable": table})
        return cmd.make_response(ResponseCode.SUCCESS, None, None, body)
