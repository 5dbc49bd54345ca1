"""The broker's requests to a 5.x controller. Java BrokerOuterAPI (getControllerMetaData,
getNextBrokerId, applyBrokerId, registerBrokerToController, brokerElect, getReplicaInfo,
alterSyncStateSet, sendHeartbeatToController).

Every call but the heartbeat raises ControllerError (with the controller's response code) on
anything but SUCCESS; brokerElect also takes CONTROLLER_MASTER_STILL_EXIST as an answer, as Java
does. The heartbeat is one-way.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyrmq.protocol.bodies.controller import ElectMasterResponseBody, SyncStateSet
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.controller import (
    AlterSyncStateSetRequestHeader,
    ApplyBrokerIdRequestHeader,
    ElectMasterRequestHeader,
    ElectMasterResponseHeader,
    GetMetaDataResponseHeader,
    GetNextBrokerIdRequestHeader,
    GetNextBrokerIdResponseHeader,
    GetReplicaInfoRequestHeader,
    GetReplicaInfoResponseHeader,
    RegisterBrokerToControllerRequestHeader,
    RegisterBrokerToControllerResponseHeader,
)
from pyrmq.protocol.headers.namesrv import BrokerHeartbeatRequestHeader
from pyrmq.remoting.client import RemotingClient

TIMEOUT_S = 3.0


class ControllerError(Exception):
    """A controller answered with something other than SUCCESS."""

    def __init__(self, code: int, remark: str | None) -> None:
        super().__init__(f"controller answered {code}: {remark}")
        self.code = code
        self.remark = remark


@dataclass(frozen=True, slots=True)
class MasterInfo:
    """What register / elect / get-replica-info answer: the master and the sync state set."""

    master_broker_id: int | None
    master_address: str | None
    master_epoch: int
    sync_state_set_epoch: int
    sync_state_set: frozenset[int]


class ControllerApi:
    def __init__(self, client: RemotingClient) -> None:
        self.client = client

    async def _call(
        self,
        addr: str,
        code: RequestCode,
        header: object | None,
        body: bytes | None = None,
        ok: tuple[int, ...] = (ResponseCode.SUCCESS,),
    ) -> RemotingCommand:
        ext = header.to_ext_fields() if header is not None else {}  # type: ignore[attr-defined]
        resp = await self.client.invoke(addr, RemotingCommand.request(code, ext, body), TIMEOUT_S)
        if resp.code not in ok:
            raise ControllerError(resp.code, resp.remark)
        return resp

    async def get_controller_metadata(self, addr: str) -> GetMetaDataResponseHeader:
        resp = await self._call(addr, RequestCode.CONTROLLER_GET_METADATA_INFO, None)
        return GetMetaDataResponseHeader.from_ext_fields(resp.ext_fields)

    async def get_next_broker_id(self, addr: str, cluster: str, broker_name: str) -> int | None:
        resp = await self._call(
            addr, RequestCode.CONTROLLER_GET_NEXT_BROKER_ID, GetNextBrokerIdRequestHeader(cluster, broker_name)
        )
        return GetNextBrokerIdResponseHeader.from_ext_fields(resp.ext_fields).next_broker_id

    async def apply_broker_id(self, addr: str, cluster: str, broker_name: str, broker_id: int, code: str) -> None:
        await self._call(
            addr,
            RequestCode.CONTROLLER_APPLY_BROKER_ID,
            ApplyBrokerIdRequestHeader(cluster, broker_name, broker_id, code),
        )

    async def register_broker(
        self, addr: str, cluster: str, broker_name: str, broker_id: int, broker_address: str
    ) -> MasterInfo:
        header = RegisterBrokerToControllerRequestHeader(cluster, broker_name, broker_id, broker_address)
        resp = await self._call(addr, RequestCode.CONTROLLER_REGISTER_BROKER, header)
        h = RegisterBrokerToControllerResponseHeader.from_ext_fields(resp.ext_fields)
        sss = SyncStateSet.decode(resp.body) if resp.body else SyncStateSet()
        return MasterInfo(
            h.master_broker_id,
            h.master_address,
            h.master_epoch or 0,
            h.sync_state_set_epoch or 0,
            frozenset(sss.sync_state_set),
        )

    async def broker_elect(self, addr: str, cluster: str, broker_name: str, broker_id: int) -> MasterInfo:
        """A broker-triggered election (designateElect false: the controller prefers this broker)."""
        header = ElectMasterRequestHeader(cluster, broker_name, broker_id, False)
        resp = await self._call(
            addr,
            RequestCode.CONTROLLER_ELECT_MASTER,
            header,
            ok=(ResponseCode.SUCCESS, ResponseCode.CONTROLLER_MASTER_STILL_EXIST),
        )
        h = ElectMasterResponseHeader.from_ext_fields(resp.ext_fields)
        body = ElectMasterResponseBody.decode(resp.body) if resp.body else ElectMasterResponseBody()
        return MasterInfo(
            h.master_broker_id,
            h.master_address,
            h.master_epoch or 0,
            h.sync_state_set_epoch or 0,
            frozenset(body.sync_state_set),
        )

    async def get_replica_info(self, addr: str, broker_name: str) -> MasterInfo:
        resp = await self._call(addr, RequestCode.CONTROLLER_GET_REPLICA_INFO, GetReplicaInfoRequestHeader(broker_name))
        h = GetReplicaInfoResponseHeader.from_ext_fields(resp.ext_fields)
        sss = SyncStateSet.decode(resp.body) if resp.body else SyncStateSet()
        return MasterInfo(
            h.master_broker_id,
            h.master_address,
            h.master_epoch or 0,
            sss.sync_state_set_epoch,
            frozenset(sss.sync_state_set),
        )

    async def alter_sync_state_set(
        self,
        addr: str,
        broker_name: str,
        master_broker_id: int,
        master_epoch: int,
        new_set: set[int],
        sync_state_set_epoch: int,
    ) -> SyncStateSet:
        header = AlterSyncStateSetRequestHeader(broker_name, master_broker_id, master_epoch)
        body = SyncStateSet(set(new_set), sync_state_set_epoch).encode()
        resp = await self._call(addr, RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET, header, body)
        return SyncStateSet.decode(resp.body) if resp.body else SyncStateSet()

    async def send_heartbeat(self, addr: str, header: BrokerHeartbeatRequestHeader) -> None:
        await self.client.invoke_oneway(
            addr, RemotingCommand.request(RequestCode.BROKER_HEARTBEAT, header.to_ext_fields(), oneway=True)
        )


__all__ = ["ControllerApi", "ControllerError", "MasterInfo"]
