"""JSON bodies of the 5.x controller requests and of the broker's epoch and HA status answers.

Java: ``remoting/protocol/body/{SyncStateSet,BrokerReplicasInfo,
ElectMasterResponseBody,EpochEntryCache,HARuntimeInfo}`` and
``remoting/protocol/EpochEntry``. Broker ids are Java ``Long``; a ``Set<Long>``
is written as a JSON array.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyrmq.protocol.bodies.namesrv import BrokerMemberGroup
from pyrmq.protocol.fastjson import FastJsonBody

#: Java EpochEntry's endOffset until the next epoch starts (Long.MAX_VALUE)
EPOCH_OPEN_END = (1 << 63) - 1


@dataclass(slots=True)
class SyncStateSet(FastJsonBody):
    """The broker ids in sync with the master, versioned by syncStateSetEpoch."""

    sync_state_set: set[int] = field(default_factory=set)
    sync_state_set_epoch: int = 0


@dataclass(slots=True)
class ReplicaIdentity(FastJsonBody):
    broker_name: str | None = None
    broker_id: int | None = None
    broker_address: str | None = None
    alive: bool | None = None


@dataclass(slots=True)
class ReplicasInfo(FastJsonBody):
    master_broker_id: int | None = None
    master_address: str | None = None
    master_epoch: int | None = None
    sync_state_set_epoch: int | None = None
    in_sync_replicas: list[ReplicaIdentity] = field(default_factory=list)
    not_in_sync_replicas: list[ReplicaIdentity] = field(default_factory=list)


@dataclass(slots=True)
class BrokerReplicasInfo(FastJsonBody):
    """CONTROLLER_GET_SYNC_STATE_DATA answer: per broker name, master and replicas."""

    replicas_info_table: dict[str, ReplicasInfo] = field(default_factory=dict)


@dataclass(slots=True)
class ElectMasterResponseBody(FastJsonBody):
    broker_member_group: BrokerMemberGroup | None = None
    sync_state_set: set[int] = field(default_factory=set)


@dataclass(slots=True)
class EpochEntry(FastJsonBody):
    """One master term: the commit-log range [startOffset, endOffset) written under it."""

    epoch: int = 0
    start_offset: int = 0
    end_offset: int = EPOCH_OPEN_END


@dataclass(slots=True)
class EpochEntryCache(FastJsonBody):
    """GET_BROKER_EPOCH_CACHE answer (mqadmin getBrokerEpoch)."""

    cluster_name: str | None = None
    broker_name: str | None = None
    broker_id: int = 0
    epoch_list: list[EpochEntry] = field(default_factory=list)
    max_offset: int = 0
