"""Custom headers of the NameServer requests and responses.

Java: ``remoting/protocol/header/namesrv/*`` (5.x) and
``GetRouteInfoRequestHeader``. Fields without a default are Java's
``@CFNotNull`` ones: when absent the request is answered INVALID_PARAMETER
("the custom field <x> is null") instead of Java's later NullPointerException.
Where Java answers a missing field with its own remark (PUT_KV_CONFIG) the
field is optional here and the processor checks it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyrmq.protocol.headers.base import RemotingHeader

#: ext field holding the broker's zone (Java MixAll.ZONE_NAME)
ZONE_NAME = "__ZONE_NAME"
#: ext field asking for zone-filtered routes (Java MixAll.ZONE_MODE)
ZONE_MODE = "__ZONE_MODE"


@dataclass(slots=True)
class RegisterBrokerRequestHeader(RemotingHeader):
    broker_name: str
    broker_addr: str
    cluster_name: str
    ha_server_addr: str
    broker_id: int
    heartbeat_timeout_millis: int | None = None
    enable_acting_master: bool | None = None
    compressed: bool = False
    body_crc32: int = 0


@dataclass(slots=True)
class RegisterBrokerResponseHeader(RemotingHeader):
    ha_server_addr: str | None = None
    master_addr: str | None = None


@dataclass(slots=True)
class UnRegisterBrokerRequestHeader(RemotingHeader):
    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: int


@dataclass(slots=True)
class BrokerHeartbeatRequestHeader(RemotingHeader):
    cluster_name: str
    broker_addr: str
    broker_name: str
    broker_id: int | None = None
    epoch: int | None = None
    max_offset: int | None = None
    confirm_offset: int | None = None
    heartbeat_timeout_mills: int | None = None
    election_priority: int | None = None


@dataclass(slots=True)
class QueryDataVersionRequestHeader(RemotingHeader):
    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: int


@dataclass(slots=True)
class QueryDataVersionResponseHeader(RemotingHeader):
    changed: bool | None = None


@dataclass(slots=True)
class GetRouteInfoRequestHeader(RemotingHeader):
    topic: str
    accept_standard_json_only: bool | None = None


@dataclass(slots=True)
class GetBrokerMemberGroupRequestHeader(RemotingHeader):
    cluster_name: str
    broker_name: str


@dataclass(slots=True)
class WipeWritePermOfBrokerRequestHeader(RemotingHeader):
    broker_name: str


@dataclass(slots=True)
class WipeWritePermOfBrokerResponseHeader(RemotingHeader):
    wipe_topic_count: int


@dataclass(slots=True)
class AddWritePermOfBrokerRequestHeader(RemotingHeader):
    broker_name: str


@dataclass(slots=True)
class AddWritePermOfBrokerResponseHeader(RemotingHeader):
    add_topic_count: int


@dataclass(slots=True)
class DeleteTopicFromNamesrvRequestHeader(RemotingHeader):
    topic: str
    cluster_name: str | None = None


@dataclass(slots=True)
class RegisterTopicRequestHeader(RemotingHeader):
    topic: str


@dataclass(slots=True)
class GetTopicsByClusterRequestHeader(RemotingHeader):
    cluster: str


@dataclass(slots=True)
class PutKVConfigRequestHeader(RemotingHeader):
    namespace: str | None = None
    key: str | None = None
    value: str | None = None


@dataclass(slots=True)
class GetKVConfigRequestHeader(RemotingHeader):
    namespace: str | None = None
    key: str | None = None


@dataclass(slots=True)
class GetKVConfigResponseHeader(RemotingHeader):
    value: str | None = None


@dataclass(slots=True)
class DeleteKVConfigRequestHeader(RemotingHeader):
    namespace: str | None = None
    key: str | None = None


@dataclass(slots=True)
class GetKVListByNamespaceRequestHeader(RemotingHeader):
    namespace: str | None = None
