"""JSON bodies of the admin answers, in the fastjson dialect (MessageQueue-keyed maps as object keys).

Java: ``remoting/protocol/admin/{TopicStatsTable,TopicOffset,ConsumeStats,OffsetWrapper}``,
``remoting/protocol/body/{ConsumeStatsList,GroupList,ProducerConnection,ProducerTableInfo,
ProducerInfo,ResetOffsetBody,BrokerStatsData,BrokerStatsItem,SubscriptionGroupWrapper,
QueryConsumeQueueResponseBody,ConsumeQueueData,QuerySubscriptionResponseBody}``.
Doubles are never NaN/Infinity (spec §5).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyrmq.remoting.bodies import DataVersion, FastJsonBody

from ..bodies import Connection, MessageQueue, SubscriptionData


@dataclass(slots=True)
class TopicOffset(FastJsonBody):
    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0


@dataclass(slots=True)
class TopicStatsTable(FastJsonBody):
    offset_table: dict[MessageQueue, TopicOffset] = field(default_factory=dict)
    topic_put_tps: float = 0.0


@dataclass(slots=True)
class OffsetWrapper(FastJsonBody):
    broker_offset: int = 0
    consumer_offset: int = 0
    pull_offset: int = 0
    last_timestamp: int = 0


@dataclass(slots=True)
class ConsumeStats(FastJsonBody):
    offset_table: dict[MessageQueue, OffsetWrapper] = field(default_factory=dict)
    consume_tps: float = 0.0


@dataclass(slots=True)
class ConsumeStatsList(FastJsonBody):
    consume_stats_list: list[dict[str, list[ConsumeStats]]] = field(default_factory=list)
    broker_addr: str | None = None
    total_diff: int = 0
    total_inflight_diff: int = 0


@dataclass(slots=True)
class GroupList(FastJsonBody):
    group_list: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ProducerConnection(FastJsonBody):
    connection_set: list[Connection] = field(default_factory=list)


@dataclass(slots=True)
class ProducerInfo(FastJsonBody):
    client_id: str | None = None
    remote_ip: str | None = field(default=None, metadata={"json": "remoteIP"})
    language: str | None = None
    version: int = 0
    last_update_timestamp: int = 0


@dataclass(slots=True)
class ProducerTableInfo(FastJsonBody):
    data: dict[str, list[ProducerInfo]] = field(default_factory=dict)


@dataclass(slots=True)
class ResetOffsetBody(FastJsonBody):
    offset_table: dict[MessageQueue, int] = field(default_factory=dict)


@dataclass(slots=True)
class BrokerStatsItem(FastJsonBody):
    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0


@dataclass(slots=True)
class BrokerStatsData(FastJsonBody):
    stats_minute: BrokerStatsItem = field(default_factory=BrokerStatsItem)
    stats_hour: BrokerStatsItem = field(default_factory=BrokerStatsItem)
    stats_day: BrokerStatsItem = field(default_factory=BrokerStatsItem)


@dataclass(slots=True)
class SubscriptionGroupWrapper(FastJsonBody):
    subscription_group_table: dict[str, Any] = field(default_factory=dict)
    forbidden_table: dict[str, dict[str, int]] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)


@dataclass(slots=True)
class QuerySubscriptionResponseBody(FastJsonBody):
    subscription_data: SubscriptionData | None = None
    group: str | None = None
    topic: str | None = None


@dataclass(slots=True)
class ConsumeQueueData(FastJsonBody):
    physic_offset: int = 0
    physic_size: int = 0
    tags_code: int = 0
    extend_data_json: str | None = None
    bit_map: str | None = None
    eval: bool = False
    msg: str | None = None


@dataclass(slots=True)
class QueryConsumeQueueResponseBody(FastJsonBody):
    subscription_data: SubscriptionData | None = None
    filter_data: str | None = None
    queue_data: list[ConsumeQueueData] = field(default_factory=list)
    max_queue_index: int = 0
    min_queue_index: int = 0
