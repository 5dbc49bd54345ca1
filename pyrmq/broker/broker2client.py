"""Java ``broker/client/net/Broker2Client``: the broker as a requester on its clients' connections.

``call_client`` relays a request with Java's 10 s timeout; ``reset_offset`` computes the
offsets per queue and pushes them one-way (RESET_CONSUMER_CLIENT_OFFSET) to every member.
"""

from __future__ import annotations

import logging

from pyrmq.protocol.bodies.admin import ResetOffsetBody
from pyrmq.protocol.bodies.broker import MessageQueue
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.errors import ConsumerNotOnline, SystemError_, TopicNotExist
from pyrmq.protocol.version import MQVersion

log = logging.getLogger("pyrmq.broker.admin")

CALL_CLIENT_TIMEOUT_S = 10.0


def version_desc(v: int) -> str:
    """How Java names a client version in a remark (MQVersion#getVersionDesc, by ordinal)."""
    return f"V{v}"


class Broker2Client:
    """Java Broker2Client: the broker as a requester on clients' connections."""

    def __init__(
        self, *, config, topic_config_manager, consumer_offset_manager, consumer_manager, message_store
    ) -> None:
        self.config = config
        self.topic_config_manager = topic_config_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.consumer_manager = consumer_manager
        self.message_store = message_store

    async def call_client(self, channel, request: RemotingCommand) -> RemotingCommand:
        return await channel.invoke(request, CALL_CLIENT_TIMEOUT_S)

    async def reset_offset(
        self, cmd: RemotingCommand, topic: str, group: str, timestamp: int, is_force: bool
    ) -> RemotingCommand:
        """Compute the offsets per queue and push them one-way to every consumer of the group."""
        tc = self.topic_config_manager.select_topic_config(topic)
        if tc is None:
            raise TopicNotExist(f"[reset-offset] reset offset failed, no topic in this broker. topic={topic}")
        store = self.message_store
        table: dict[MessageQueue, int] = {}
        for i in range(tc.write_queue_nums):
            mq = MessageQueue(topic, self.config["brokerName"], i)
            consumer_offset = self.consumer_offset_manager.query_offset(group, topic, i)
            if consumer_offset == -1:
                raise SystemError_(f"THe consumer group <{group}> not exist")
            if timestamp == -1:
                ts_offset = store.get_max_offset_in_queue(topic, i)
            else:
                ts_offset = store.get_offset_in_queue_by_time(topic, i, timestamp)
            if ts_offset < 0:
                ts_offset = 0
            table[mq] = ts_offset if (is_force or ts_offset < consumer_offset) else consumer_offset
        info = self.consumer_manager.get_consumer_group_info(group)
        if info is None or not info.channel_info_table:
            raise ConsumerNotOnline(
                f"Consumer not online, so can not reset offset, Group: {group} Topic: {topic} Timestamp: {timestamp}"
            )
        body = ResetOffsetBody(table).encode()
        for ch, ci in list(info.channel_info_table.items()):
            if ci.version < MQVersion.V3_0_7_SNAPSHOT:
                raise SystemError_(f"the client does not support this feature. version={version_desc(ci.version)}")
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
