"""Request handlers of the controller, one method per request code.

Java: ``controller/processor/ControllerRequestProcessor`` (and what
``DLedgerController`` answers). Write requests go through the manager's
scheduler (compute, persist the events, apply, answer); a result becomes the
response with its header (also on failure codes: MASTER_STILL_EXIST carries
the current master), remark and body, as Java's
``createResponseCommandWithHeader`` does.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, Protocol

from pyrmq.common.properties import properties_text
from pyrmq.controller.config import ControllerConfig
from pyrmq.controller.elect_policy import ElectPolicy
from pyrmq.controller.events import ControllerResult
from pyrmq.controller.heartbeat import BrokerHeartbeatManager
from pyrmq.controller.replicas_info import InvalidRequest, ReplicasInfoManager
from pyrmq.protocol.bodies.common import decode_config_update
from pyrmq.protocol.bodies.controller import SyncStateSet
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.errors import SystemError_
from pyrmq.protocol.fastjson import BodyDecodeError
from pyrmq.protocol.headers.controller import (
    AlterSyncStateSetRequestHeader,
    ApplyBrokerIdRequestHeader,
    CleanControllerBrokerDataRequestHeader,
    ElectMasterRequestHeader,
    GetMetaDataResponseHeader,
    GetNextBrokerIdRequestHeader,
    GetReplicaInfoRequestHeader,
    RegisterBrokerToControllerRequestHeader,
)
from pyrmq.protocol.headers.namesrv import BrokerHeartbeatRequestHeader
from pyrmq.remoting.channel import RequestContext, handles

log = logging.getLogger("pyrmq.controller")


class ControllerServices(Protocol):
    """What the processor needs from the manager (manager.ControllerManager in production)."""

    config: ControllerConfig
    replicas: ReplicasInfoManager
    heartbeat: BrokerHeartbeatManager

    async def run(self, compute: Callable[[], ControllerResult]) -> ControllerResult: ...

    elect_policy: ElectPolicy

    def is_alive(self, cluster_name: str | None, broker_name: str, broker_id: int) -> bool: ...

    def metadata(self) -> GetMetaDataResponseHeader: ...

    def update_config(self, props: dict[str, str]) -> None: ...

    def notify_broker_role_changed(self, result: ControllerResult) -> Any: ...


def _respond(cmd: RemotingCommand, result: ControllerResult) -> RemotingCommand:
    ext = result.response.to_ext_fields() if result.response is not None else None
    return cmd.make_response(result.code, result.remark, ext_fields=ext, body=result.body)


def _not_set(cmd: RemotingCommand) -> RemotingCommand:
    """Java ``RemotingCommand.createResponseCommand(null)``: the answer to an empty request."""
    return cmd.make_response(ResponseCode.SYSTEM_ERROR, "not set any response code")


class ControllerRequestProcessor:
    """Every code ControllerManager#registerProcessor registers."""

    def __init__(self, manager: ControllerServices) -> None:
        self.manager = manager
        self.replicas = manager.replicas

    async def _result(self, compute: Callable[[], ControllerResult]) -> ControllerResult:
        """One request through the manager's scheduler; Java's failures become SYSTEM_ERROR answers."""
        try:
            return await self.manager.run(compute)
        except InvalidRequest as e:
            raise SystemError_(f"java.lang.NullPointerException: {e}") from None
        except OSError as e:
            log.error("controller journal append failed: %s", e)
            raise SystemError_(f"Failed to append event to the controller journal: {e}") from None

    async def _run(self, cmd: RemotingCommand, compute: Callable[[], ControllerResult]) -> RemotingCommand:
        return _respond(cmd, await self._result(compute))

    @handles(RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET)
    async def alter_sync_state_set(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = AlterSyncStateSetRequestHeader.from_command(cmd)
        try:
            body = SyncStateSet.decode(cmd.body or b"")
        except BodyDecodeError as e:
            raise SystemError_(f"Failed to decode SyncStateSet: {e}") from None
        return await self._run(cmd, lambda: self.replicas.alter_sync_state_set(h, body, self.manager.is_alive))

    @handles(RequestCode.CONTROLLER_ELECT_MASTER)
    async def elect_master(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = ElectMasterRequestHeader.from_command(cmd)
        result = await self._result(lambda: self.replicas.elect_master(h, self.manager.elect_policy))
        if result.code == ResponseCode.SUCCESS and self.manager.config["notifyBrokerRoleChanged"]:
            self.manager.notify_broker_role_changed(result)
        return _respond(cmd, result)

    @handles(RequestCode.CONTROLLER_GET_REPLICA_INFO)
    async def get_replica_info(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = GetReplicaInfoRequestHeader.from_command(cmd)
        return await self._run(cmd, lambda: self.replicas.get_replica_info(h))

    @handles(RequestCode.CONTROLLER_GET_METADATA_INFO)
    async def get_metadata_info(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response(ext_fields=self.manager.metadata().to_ext_fields())

    @handles(RequestCode.BROKER_HEARTBEAT)
    async def broker_heartbeat(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = BrokerHeartbeatRequestHeader.from_command(cmd)
        if h.broker_id is None:
            return cmd.make_response(ResponseCode.CONTROLLER_INVALID_REQUEST, "Heart beat with empty brokerId")
        self.manager.heartbeat.on_broker_heartbeat(
            h.cluster_name,
            h.broker_name,
            h.broker_addr,
            h.broker_id,
            h.heartbeat_timeout_mills,
            ctx.channel,
            h.epoch,
            h.max_offset,
            h.confirm_offset,
            h.election_priority,
        )
        return cmd.make_response(ResponseCode.SUCCESS, "Heart beat success")

    @handles(RequestCode.CONTROLLER_GET_SYNC_STATE_DATA)
    async def get_sync_state_data(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        if not cmd.body:
            return _not_set(cmd)
        try:
            names = json.loads(bytes(cmd.body).decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise SystemError_(f"Failed to decode the broker name list: {e}") from None
        if not isinstance(names, list) or not names:
            return _not_set(cmd)
        names = [str(n) for n in names]
        return await self._run(cmd, lambda: self.replicas.get_sync_state_data(names, self.manager.is_alive))

    @handles(RequestCode.CLEAN_BROKER_DATA)
    async def clean_broker_data(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = CleanControllerBrokerDataRequestHeader.from_command(cmd)
        return await self._run(cmd, lambda: self.replicas.clean_broker_data(h, self.manager.is_alive))

    @handles(RequestCode.CONTROLLER_GET_NEXT_BROKER_ID)
    async def get_next_broker_id(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = GetNextBrokerIdRequestHeader.from_command(cmd)
        return await self._run(cmd, lambda: self.replicas.get_next_broker_id(h))

    @handles(RequestCode.CONTROLLER_APPLY_BROKER_ID)
    async def apply_broker_id(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = ApplyBrokerIdRequestHeader.from_command(cmd)
        return await self._run(cmd, lambda: self.replicas.apply_broker_id(h))

    @handles(RequestCode.CONTROLLER_REGISTER_BROKER)
    async def register_broker(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = RegisterBrokerToControllerRequestHeader.from_command(cmd)
        return await self._run(cmd, lambda: self.replicas.register_broker(h, self.manager.is_alive))

    @handles(RequestCode.UPDATE_CONTROLLER_CONFIG)
    async def update_controller_config(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        log.info("updateConfig called by %s", getattr(getattr(ctx, "channel", None), "remote_addr", "?"))
        if cmd.body is not None:
            self.manager.update_config(decode_config_update(cmd.body, self.manager.config.black_list()))
        return cmd.make_response()

    @handles(RequestCode.GET_CONTROLLER_CONFIG)
    async def get_controller_config(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        text = properties_text(self.manager.config.all_properties())
        return cmd.make_response(body=text.encode("utf-8") if text else None)
