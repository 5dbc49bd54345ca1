"""JSON bodies of the admin answers, in the fastjson dialect (MessageQueue-keyed maps as object keys).

Java: ``remoting/protocol/admin/{TopicStatsTable,TopicOffset,ConsumeStats,OffsetWrapper}``,
``remoting/protocol/body/{ConsumeStatsList,GroupList,ProducerConnection,ProducerTableInfo,
ProducerInfo,ResetOffsetBody,BrokerStatsData,BrokerStatsItem,SubscriptionGroupWrapper,
QueryConsumeQueueResponseBody,ConsumeQueueData,QuerySubscriptionResponseBody}``.
Doubles are never NaN/Infinity (spec §5).

Reading: fastjson writes a MessageQueue-keyed map with the key bean itself as the key; the
lenient parser returns such keys as ``tuple(sorted(items))`` (or a JSON string when the writer
quoted them), which the generic bean coercion cannot turn into ``MessageQueue``; the readers at
the end of this module do (spec §1.8 item 3).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pyrmq.protocol.bodies.broker import Connection, MessageQueue, SubscriptionData
from pyrmq.protocol.bodies.common import DataVersion
from pyrmq.protocol.fastjson import BodyDecodeError, FastJsonBody, lenient_loads

_V = TypeVar("_V")


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
class ConsumerRunningInfo(FastJsonBody):
    """Java remoting/protocol/body/ConsumerRunningInfo, as the gRPC endpoint relays it (Java's
    GrpcClientChannel): the client's thread dump in ``jstack``, the tables empty."""

    properties: dict[str, str] = field(default_factory=dict)
    subscription_set: list[SubscriptionData] = field(default_factory=list)
    mq_table: dict[str, Any] = field(default_factory=dict)
    mq_pop_table: dict[str, Any] = field(default_factory=dict)
    status_table: dict[str, Any] = field(default_factory=dict)
    user_consumer_info: dict[str, str] = field(default_factory=dict)
    jstack: str | None = None


@dataclass(slots=True)
class ConsumeMessageDirectlyResult(FastJsonBody):
    """Java remoting/protocol/body/ConsumeMessageDirectlyResult (``consumeResult``: a CMResult name)."""

    order: bool = False
    auto_commit: bool = True
    consume_result: str | None = None
    remark: str | None = None
    spent_time_mills: int = 0


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


# --------------------------------------------------------------------------- MessageQueue-keyed readers


def message_queue(key: Any) -> MessageQueue:
    if isinstance(key, str):
        key = lenient_loads(key)
    d = dict(key) if isinstance(key, tuple) else key
    if not isinstance(d, dict):
        raise BodyDecodeError(f"not a MessageQueue key: {key!r}")
    return MessageQueue(d.get("topic"), d.get("brokerName"), int(d.get("queueId", 0)))


def _table(obj: dict[Any, Any], value: Callable[[Any], _V]) -> dict[MessageQueue, _V]:
    raw = obj.get("offsetTable") or {}
    return {message_queue(k): value(v) for k, v in raw.items()}


def _obj(body: bytes | None) -> dict[Any, Any]:
    """A parsed fastjson object (its keys may be MessageQueue objects, see message_queue)."""
    obj = lenient_loads(body or b"{}")
    if not isinstance(obj, dict):
        raise BodyDecodeError("body is not a JSON object")
    return obj


def topic_stats_table(body: bytes | None) -> TopicStatsTable:
    obj = _obj(body)
    return TopicStatsTable(_table(obj, TopicOffset.from_obj), float(obj.get("topicPutTps") or 0.0))


def consume_stats(body: bytes | None) -> ConsumeStats:
    obj = _obj(body)
    return ConsumeStats(_table(obj, OffsetWrapper.from_obj), float(obj.get("consumeTps") or 0.0))


def reset_offset_body(body: bytes | None) -> ResetOffsetBody:
    return ResetOffsetBody(_table(_obj(body), int))


@dataclass(slots=True)
class HAConnectionRuntimeInfo(FastJsonBody):
    """One slave as its master sees it. Java HARuntimeInfo.HAConnectionRuntimeInfo."""

    addr: str | None = None
    slave_ack_offset: int = 0
    diff: int = 0
    in_sync: bool = False
    transferred_byte_in_second: int = 0
    transfer_from_where: int = 0


@dataclass(slots=True)
class HAClientRuntimeInfo(FastJsonBody):
    """A slave's replication client. Java HARuntimeInfo.HAClientRuntimeInfo."""

    master_addr: str | None = None
    transferred_byte_in_second: int = 0
    max_offset: int = 0
    last_read_timestamp: int = 0
    last_write_timestamp: int = 0
    master_flush_offset: int = 0
    activated: bool = False


@dataclass(slots=True)
class HARuntimeInfo(FastJsonBody):
    """GET_BROKER_HA_STATUS answer (mqadmin haStatus). Java body/HARuntimeInfo."""

    master: bool = False
    master_commit_log_max_offset: int = 0
    in_sync_slave_nums: int = 0
    ha_connection_info: list[HAConnectionRuntimeInfo] = field(default_factory=list)
    ha_client_runtime_info: HAClientRuntimeInfo = field(default_factory=HAClientRuntimeInfo)
