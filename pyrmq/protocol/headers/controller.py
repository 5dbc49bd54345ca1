"""Custom headers of the 5.x controller requests (CONTROLLER_* codes, 1001-1013) and role changes.

Java: ``remoting/protocol/header/controller/**`` and
``header/NotifyBrokerRoleChangedRequestHeader``. The same classes serve the
controller (answering) and the broker's ReplicasManager (asking). Java fills
``invokeTime`` with the sender's clock; it is carried, never trusted.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyrmq.protocol.headers.base import RemotingHeader


@dataclass(slots=True)
class AlterSyncStateSetRequestHeader(RemotingHeader):
    broker_name: str | None = None
    master_broker_id: int | None = None
    master_epoch: int | None = None
    invoke_time: int = 0


@dataclass(slots=True)
class AlterSyncStateSetResponseHeader(RemotingHeader):
    new_sync_state_set_epoch: int = 0


@dataclass(slots=True)
class ElectMasterRequestHeader(RemotingHeader):
    """brokerId -1 with designateElect false: the controller picks; otherwise that broker is preferred."""

    cluster_name: str = ""
    broker_name: str = ""
    broker_id: int = -1
    designate_elect: bool = False
    invoke_time: int | None = None


@dataclass(slots=True)
class ElectMasterResponseHeader(RemotingHeader):
    master_broker_id: int | None = None
    master_address: str | None = None
    master_epoch: int | None = None
    sync_state_set_epoch: int | None = None


@dataclass(slots=True)
class GetMetaDataResponseHeader(RemotingHeader):
    group: str | None = None
    controller_leader_id: str | None = None
    controller_leader_address: str | None = None
    is_leader: bool = False
    peers: str | None = None


@dataclass(slots=True)
class GetReplicaInfoRequestHeader(RemotingHeader):
    broker_name: str | None = None


@dataclass(slots=True)
class GetReplicaInfoResponseHeader(RemotingHeader):
    master_broker_id: int | None = None
    master_address: str | None = None
    master_epoch: int | None = None


@dataclass(slots=True)
class CleanControllerBrokerDataRequestHeader(RemotingHeader):
    """brokerControllerIdsToClean is a ';'-separated id list; absent means every broker of the name."""

    broker_name: str
    cluster_name: str | None = None
    broker_controller_ids_to_clean: str | None = None
    is_clean_living_broker: bool = False
    invoke_time: int = 0


@dataclass(slots=True)
class GetNextBrokerIdRequestHeader(RemotingHeader):
    cluster_name: str | None = None
    broker_name: str | None = None


@dataclass(slots=True)
class GetNextBrokerIdResponseHeader(RemotingHeader):
    cluster_name: str | None = None
    broker_name: str | None = None
    next_broker_id: int | None = None


@dataclass(slots=True)
class ApplyBrokerIdRequestHeader(RemotingHeader):
    """registerCheckCode is "<broker address>;<timestamp>", Java's proof that a retry is the same broker."""

    cluster_name: str | None = None
    broker_name: str | None = None
    applied_broker_id: int | None = None
    register_check_code: str | None = None


@dataclass(slots=True)
class ApplyBrokerIdResponseHeader(RemotingHeader):
    cluster_name: str | None = None
    broker_name: str | None = None


@dataclass(slots=True)
class RegisterBrokerToControllerRequestHeader(RemotingHeader):
    cluster_name: str | None = None
    broker_name: str | None = None
    broker_id: int | None = None
    broker_address: str | None = None
    invoke_time: int = 0


@dataclass(slots=True)
class RegisterBrokerToControllerResponseHeader(RemotingHeader):
    cluster_name: str | None = None
    broker_name: str | None = None
    master_broker_id: int | None = None
    master_address: str | None = None
    master_epoch: int | None = None
    sync_state_set_epoch: int | None = None


@dataclass(slots=True)
class NotifyBrokerRoleChangedRequestHeader(RemotingHeader):
    """NOTIFY_BROKER_ROLE_CHANGED, controller -> broker (oneway), body a SyncStateSet."""

    master_address: str | None = None
    master_epoch: int | None = None
    sync_state_set_epoch: int | None = None
    master_broker_id: int | None = None
