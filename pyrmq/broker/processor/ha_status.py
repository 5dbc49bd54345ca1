"""GET_BROKER_HA_STATUS (mqadmin haStatus). Java AdminBrokerProcessor#getBrokerHaStatus over
DefaultHAService#getRuntimeInfo."""

from __future__ import annotations

from collections.abc import Callable

from pyrmq.protocol.bodies.admin import HARuntimeInfo
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.remoting.server import RequestContext, handles

#: Java's remark when the store has no HA service
NO_HA_REMARK = "Can not get HARuntimeInfo, may be duplicationEnable is true"


class HAStatusProcessor:
    def __init__(self, *, ha_runtime_info: Callable[[], HARuntimeInfo | None]) -> None:
        self.ha_runtime_info = ha_runtime_info

    @handles(RequestCode.GET_BROKER_HA_STATUS)
    async def get_broker_ha_status(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        info = self.ha_runtime_info()
        if info is None:
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, NO_HA_REMARK)
        return cmd.make_response(ResponseCode.SUCCESS, None, None, info.encode())
