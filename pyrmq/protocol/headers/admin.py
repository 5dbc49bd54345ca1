"""Custom headers of the admin requests. Java: ``remoting/protocol/header/*`` of the same names.

Fields without a default are Java's ``@CFNotNull`` ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyrmq.protocol.headers.base import RemotingHeader


@dataclass(slots=True)
class DeleteTopicRequestHeader(RemotingHeader):
    topic: str


@dataclass(slots=True)
class DeleteSubscriptionGroupRequestHeader(RemotingHeader):
    group_name: str
    clean_offset: bool | None = None  # 5.x
    remove_offset: bool | None = None  # 4.9.x


@dataclass(slots=True)
class GetSubscriptionGroupConfigRequestHeader(RemotingHeader):
    group: str


@dataclass(slots=True)
class GetTopicStatsInfoRequestHeader(RemotingHeader):
    topic: str


@dataclass(slots=True)
class GetConsumeStatsRequestHeader(RemotingHeader):
    consumer_group: str
    topic: str | None = None
    topic_list: str | None = None


@dataclass(slots=True)
class GetProducerConnectionListRequestHeader(RemotingHeader):
    producer_group: str


@dataclass(slots=True)
class GetConsumerConnectionListRequestHeader(RemotingHeader):
    consumer_group: str


@dataclass(slots=True)
class QueryTopicConsumeByWhoRequestHeader(RemotingHeader):
    topic: str


@dataclass(slots=True)
class QueryTopicsByConsumerRequestHeader(RemotingHeader):
    group: str


@dataclass(slots=True)
class QuerySubscriptionByConsumerRequestHeader(RemotingHeader):
    group: str
    topic: str


@dataclass(slots=True)
class ResetOffsetRequestHeader(RemotingHeader):
    topic: str
    group: str
    timestamp: int
    is_force: bool
    queue_id: int = -1
    offset: int | None = None


@dataclass(slots=True)
class GetConsumerStatusRequestHeader(RemotingHeader):
    topic: str
    group: str
    client_addr: str | None = None


@dataclass(slots=True)
class ViewBrokerStatsDataRequestHeader(RemotingHeader):
    stats_name: str
    stats_key: str


@dataclass(slots=True)
class GetConsumeStatsInBrokerHeader(RemotingHeader):
    is_order: bool


@dataclass(slots=True)
class GetConsumerRunningInfoRequestHeader(RemotingHeader):
    consumer_group: str
    client_id: str
    jstack_enable: bool | None = None


@dataclass(slots=True)
class ConsumeMessageDirectlyResultRequestHeader(RemotingHeader):
    consumer_group: str
    client_id: str | None = None
    msg_id: str | None = None
    broker_name: str | None = None
    topic: str | None = None
    topic_sys_flag: int | None = None
    group_sys_flag: int | None = None


@dataclass(slots=True)
class QueryConsumeQueueRequestHeader(RemotingHeader):
    topic: str
    queue_id: int
    index: int
    count: int
    consumer_group: str | None = None


@dataclass(slots=True)
class CloneGroupOffsetRequestHeader(RemotingHeader):
    src_group: str
    dest_group: str
    topic: str | None = None
    offline: bool = False
