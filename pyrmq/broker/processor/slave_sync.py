"""What a slave's SlaveSynchronize asks its master for, besides topics and subscription groups
(GET_ALL_TOPIC_CONFIG and GET_ALL_SUBSCRIPTIONGROUP_CONFIG are in admin.py and group_admin.py).

Java: ``broker/processor/AdminBrokerProcessor`` (getAllConsumerOffset, getAllDelayOffset,
getTimerCheckPoint, getTimerMetrics, getAllMessageRequestMode). The JSON bodies are the managers'
``encode()``: compact fastjson, the same tree as the config files.
"""

from __future__ import annotations

import logging

from pyrmq.protocol.bodies.common import DataVersion
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.fastjson import fastjson_dumps
from pyrmq.remoting.server import RequestContext, handles

log = logging.getLogger("pyrmq.broker.admin")


class SlaveSyncProcessor:
    def __init__(
        self,
        *,
        config,
        consumer_offset_manager,
        schedule_message_service,
        timer_message_store,
        message_request_mode_manager,
        now,
    ) -> None:
        self.config = config
        self._timer_metrics_version = DataVersion(timestamp=now())  # Java: new DataVersion() at start
        self.consumer_offset_manager = consumer_offset_manager
        self.schedule_message_service = schedule_message_service
        self.timer_message_store = timer_message_store
        self.message_request_mode_manager = message_request_mode_manager

    @handles(RequestCode.GET_ALL_CONSUMER_OFFSET)
    async def get_all_consumer_offset(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        """consumerOffset.json's tree, compact (Java ConsumerOffsetManager#encode)."""
        body = self.consumer_offset_manager.build_serialize_wrapper().encode()
        return cmd.make_response(ResponseCode.SUCCESS, None, None, body)

    @handles(RequestCode.GET_ALL_DELAY_OFFSET)
    async def get_all_delay_offset(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        """delayOffset.json's tree, compact (Java ScheduleMessageService#encode)."""
        body = self.schedule_message_service.build_serialize_wrapper().encode()
        return cmd.make_response(ResponseCode.SUCCESS, None, None, body)

    @handles(RequestCode.GET_TIMER_CHECK_POINT)
    async def get_timer_check_point(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        """The 56 bytes of TimerCheckpoint#encode; without the timer wheel Java has no checkpoint."""
        if not self.config["timerWheelEnable"]:
            log.error("getTimerCheckPoint: checkpoint is null, caller=%s", ctx.channel.remote_addr)
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, "The checkpoint is null")
        return cmd.make_response(ResponseCode.SUCCESS, None, None, self.timer_message_store.checkpoint.encode())

    @handles(RequestCode.GET_TIMER_METRICS)
    async def get_timer_metrics(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        """TimerMetrics#encode: {"dataVersion", "timingCount"}. pyrmq counts no per-topic timer
        metrics, so timingCount is empty and the data version never moves."""
        if not self.config["timerWheelEnable"]:
            log.error("The timer message store is null, client: %s", ctx.channel.remote_addr)
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, "The timer message store is null")
        body = fastjson_dumps({"dataVersion": self._timer_metrics_version, "timingCount": {}})
        return cmd.make_response(ResponseCode.SUCCESS, None, None, body)

    @handles(RequestCode.GET_ALL_MESSAGE_REQUEST_MODE)
    async def get_all_message_request_mode(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        """messageRequestMode.json's tree, compact (Java MessageRequestModeManager#encode)."""
        body = self.message_request_mode_manager.build_serialize_wrapper().encode()
        return cmd.make_response(ResponseCode.SUCCESS, None, None, body)
