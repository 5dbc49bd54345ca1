"""Requests the broker relays to a consumer's own connection, and the client-side offset reset.

Java: ``AdminBrokerProcessor#callConsumer`` (GET_CONSUMER_RUNNING_INFO,
CONSUME_MESSAGE_DIRECTLY), ``#getConsumerStatus`` and ``client/net/Broker2Client``
(callClient with a 10 s timeout, resetOffset -> RESET_CONSUMER_CLIENT_OFFSET one-way
to every member, getConsumeStatus -> GET_CONSUMER_STATUS_FROM_CLIENT).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pyrmq.protocol.bodies.admin import ResetOffsetBody
from pyrmq.protocol.bodies.broker import MessageQueue
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.errors import RemotingTimeout
from pyrmq.protocol.headers.admin import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
)
from pyrmq.protocol.version import MQVersion
from pyrmq.remoting.server import RequestContext, handles
from pyrmq.store import message as m

if TYPE_CHECKING:
    from pyrmq.broker.controller import BrokerController

log = logging.getLogger("pyrmq.broker.admin")

CALL_CLIENT_TIMEOUT_S = 10.0


def _version_desc(v: int) -> str:
    return f"V{v}"


class Broker2Client:
    """Java Broker2Client: the broker as a requester on clients' connections."""

    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller

    async def call_client(self, channel, request: RemotingCommand) -> RemotingCommand:
        return await channel.invoke(request, CALL_CLIENT_TIMEOUT_S)

    async def reset_offset(
        self, cmd: RemotingCommand, topic: str, group: str, timestamp: int, is_force: bool
    ) -> RemotingCommand:
        """Compute the offsets per queue and push them one-way to every consumer of the group."""
        c = self.controller
        tc = c.topic_config_manager.select_topic_config(topic)
        if tc is None:
            return cmd.make_response(
                ResponseCode.TOPIC_NOT_EXIST,
                f"[reset-offset] reset offset failed, no topic in this broker. topic={topic}",
            )
        store = c.message_store
        table: dict[MessageQueue, int] = {}
        for i in range(tc.write_queue_nums):
            mq = MessageQueue(topic, c.config["brokerName"], i)
            consumer_offset = c.consumer_offset_manager.query_offset(group, topic, i)
            if consumer_offset == -1:
                return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"THe consumer group <{group}> not exist")
            if timestamp == -1:
                ts_offset = store.get_max_offset_in_queue(topic, i)
            else:
                ts_offset = store.get_offset_in_queue_by_time(topic, i, timestamp)
            if ts_offset < 0:
                ts_offset = 0
            table[mq] = ts_offset if (is_force or ts_offset < consumer_offset) else consumer_offset
        info = c.consumer_manager.get_consumer_group_info(group)
        if info is None or not info.channel_info_table:
            return cmd.make_response(
                ResponseCode.CONSUMER_NOT_ONLINE,
                f"Consumer not online, so can not reset offset, Group: {group} Topic: {topic} Timestamp: {timestamp}",
            )
        body = ResetOffsetBody(table).encode()
        for ch, ci in list(info.channel_info_table.items()):
            if ci.version < MQVersion.V3_0_7_SNAPSHOT:
                return cmd.make_response(
                    ResponseCode.SYSTEM_ERROR,
                    f"the client does not support this feature. version={_version_desc(ci.version)}",
                )
            req = RemotingCommand.request(
                RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
                {"topic": topic, "group": group, "timestamp": str(timestamp), "isForce": "false"},
                body,
                oneway=True,
            )
            try:
                ch.send_oneway(req)
                log.info(
                    "[reset-offset] reset offset success. topic=%s, group=%s, clientId=%s", topic, group, ci.client_id
                )
            except Exception as e:
                log.error("[reset-offset] reset offset exception. topic=%s, group=%s ,error=%s", topic, group, e)
        return cmd.make_response(ResponseCode.SUCCESS, None, None, body)


class ClientForwardProcessor:
    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller

    async def _call_consumer(
        self,
        code: int,
        cmd: RemotingCommand,
        group: str,
        client_id: str | None,
        ext: dict[str, str],
        body: bytes | None,
    ) -> RemotingCommand:
        c = self.controller
        ci = c.consumer_manager.find_channel(group, client_id or "")
        if ci is None:
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"The Consumer <{group}> <{client_id}> not online")
        if ci.version < MQVersion.V3_1_8_SNAPSHOT:
            return cmd.make_response(
                ResponseCode.SYSTEM_ERROR,
                f"The Consumer <{client_id}> Version <{_version_desc(ci.version)}> too low to finish, please upgrade "
                f"it to V3_1_8_SNAPSHOT",
            )
        req = RemotingCommand.request(code, dict(ext), body)
        try:
            resp = await c.broker2client.call_client(ci.channel, req)
        except (TimeoutError, RemotingTimeout) as e:
            return cmd.make_response(ResponseCode.CONSUME_MSG_TIMEOUT, f"consumer <{group}> <{client_id}> Timeout: {e}")
        except Exception as e:
            return cmd.make_response(
                ResponseCode.SYSTEM_ERROR, f"invoke consumer <{group}> <{client_id}> Exception: {e}"
            )
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
        c = self.controller
        h = ConsumeMessageDirectlyResultRequestHeader.from_ext_fields(cmd.ext_fields)
        ext = dict(cmd.ext_fields or {})
        ext["brokerName"] = c.config["brokerName"]
        if h.topic:
            tc = c.topic_config_manager.topic_config_table.get(h.topic)
            if tc is not None:
                ext["topicSysFlag"] = str(tc.topic_sys_flag)
        if h.consumer_group:
            sg = c.subscription_group_manager.find_subscription_group_config(h.consumer_group)
            if sg is not None:
                ext["groupSysFlag"] = str(sg.group_sys_flag)
        body = cmd.body
        try:
            mid = m.decode_message_id(h.msg_id or "")
            sel = c.message_store.select_one_message_by_offset(mid.offset)
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
        c = self.controller
        h = GetConsumerStatusRequestHeader.from_ext_fields(cmd.ext_fields)
        info = c.consumer_manager.get_consumer_group_info(h.group)
        if info is None or not info.channel_info_table:
            return cmd.make_response(
                ResponseCode.SYSTEM_ERROR, f"No Any Consumer online in the consumer group: [{h.group}]"
            )
        table: dict[str, dict] = {}
        from pyrmq.protocol.fastjson import fastjson_dumps, lenient_loads

        for ch, ci in list(info.channel_info_table.items()):
            addr = getattr(ch, "remote_addr", "")
            if h.client_addr and h.client_addr != addr:
                continue
            if ci.version < MQVersion.V3_0_7_SNAPSHOT:
                return cmd.make_response(
                    ResponseCode.SYSTEM_ERROR,
                    f"the client does not support this feature. version={_version_desc(ci.version)}",
                )
            req = RemotingCommand.request(
                RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, {"topic": h.topic, "group": h.group, "clientAddr": addr}
            )
            try:
                resp = await c.broker2client.call_client(ch, req)
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
