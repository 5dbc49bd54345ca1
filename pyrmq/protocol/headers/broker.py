"""Custom headers of the broker's client-path requests and responses.

Java: ``remoting/protocol/header/*RequestHeader`` / ``*ResponseHeader``. Fields
without a default are Java's ``@CFNotNull`` ones. SEND_MESSAGE_V2's
single-letter keys are normalised to the V1 field set like
``SendMessageRequestHeaderV2#createSendMessageRequestHeaderV1``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyrmq.protocol.headers.base import RemotingHeader, key


@dataclass(slots=True)
class SendMessageRequestHeader(RemotingHeader):
    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    sys_flag: int
    born_timestamp: int
    flag: int
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool | None = None
    batch: bool | None = None
    max_reconsume_times: int | None = None
    bname: str | None = None


@dataclass(slots=True)
class SendMessageRequestHeaderV2(RemotingHeader):
    a: str  # producerGroup
    b: str  # topic
    c: str  # defaultTopic
    d: int  # defaultTopicQueueNums
    e: int  # queueId
    f: int  # sysFlag
    g: int  # bornTimestamp
    h: int  # flag
    i: str | None = None  # properties
    j: int | None = None  # reconsumeTimes
    k: bool | None = None  # unitMode
    l: int | None = None  # maxReconsumeTimes  # noqa: E741
    m: bool | None = None  # batch
    n: str | None = None  # brokerName

    def to_v1(self) -> SendMessageRequestHeader:
        return SendMessageRequestHeader(
            self.a,
            self.b,
            self.c,
            self.d,
            self.e,
            self.f,
            self.g,
            self.h,
            self.i,
            self.j,
            self.k,
            self.m,
            self.l,
            self.n,
        )


@dataclass(slots=True)
class SendMessageResponseHeader(RemotingHeader):
    msg_id: str
    queue_id: int
    queue_offset: int
    transaction_id: str | None = None
    batch_uniq_id: str | None = None
    recall_handle: str | None = None  # 5.5.0: a timer message's (pyrmq.common.recall_handle)


@dataclass(slots=True)
class RecallMessageRequestHeader(RemotingHeader):
    """RECALL_MESSAGE (370), 5.5.0."""

    topic: str
    recall_handle: str
    producer_group: str | None = None


@dataclass(slots=True)
class RecallMessageResponseHeader(RemotingHeader):
    msg_id: str


@dataclass(slots=True)
class PullMessageRequestHeader(RemotingHeader):
    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: int
    max_msg_nums: int
    sys_flag: int
    commit_offset: int
    suspend_timeout_millis: int
    sub_version: int
    subscription: str | None = None
    expression_type: str | None = None
    max_msg_bytes: int | None = None
    request_source: int | None = None
    proxy_froward_client_id: str | None = None
    bname: str | None = None


@dataclass(slots=True)
class PullMessageResponseHeader(RemotingHeader):
    suggest_which_broker_id: int
    next_begin_offset: int
    min_offset: int
    max_offset: int
    offset_delta: int | None = None
    topic_sys_flag: int | None = None
    group_sys_flag: int | None = None
    forbidden_type: int | None = None


@dataclass(slots=True)
class UnregisterClientRequestHeader(RemotingHeader):
    client_id: str = key("clientID")
    producer_group: str | None = None
    consumer_group: str | None = None


@dataclass(slots=True)
class GetConsumerListByGroupRequestHeader(RemotingHeader):
    consumer_group: str


@dataclass(slots=True)
class QueryConsumerOffsetRequestHeader(RemotingHeader):
    consumer_group: str
    topic: str
    queue_id: int
    set_zero_if_not_found: bool | None = None


@dataclass(slots=True)
class UpdateConsumerOffsetRequestHeader(RemotingHeader):
    consumer_group: str
    topic: str
    queue_id: int
    commit_offset: int


@dataclass(slots=True)
class OffsetResponseHeader(RemotingHeader):
    """QUERY_CONSUMER_OFFSET / GET_MAX_OFFSET / GET_MIN_OFFSET / SEARCH_OFFSET_BY_TIMESTAMP answers."""

    offset: int


@dataclass(slots=True)
class TopicQueueRequestHeader(RemotingHeader):
    """GET_MAX_OFFSET / GET_MIN_OFFSET / GET_EARLIEST_MSG_STORETIME requests."""

    topic: str
    queue_id: int
    committed: bool | None = None


@dataclass(slots=True)
class SearchOffsetRequestHeader(RemotingHeader):
    topic: str
    queue_id: int
    timestamp: int
    boundary_type: str | None = None


@dataclass(slots=True)
class GetEarliestMsgStoretimeResponseHeader(RemotingHeader):
    timestamp: int


@dataclass(slots=True)
class ViewMessageRequestHeader(RemotingHeader):
    offset: int
    topic: str | None = None


@dataclass(slots=True)
class QueryMessageRequestHeader(RemotingHeader):
    topic: str
    key: str
    max_num: int
    begin_timestamp: int
    end_timestamp: int


@dataclass(slots=True)
class QueryMessageResponseHeader(RemotingHeader):
    index_last_update_timestamp: int
    index_last_update_phyoffset: int


@dataclass(slots=True)
class CreateTopicRequestHeader(RemotingHeader):
    topic: str
    default_topic: str | None = None
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = 6
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int | None = None
    order: bool = False
    attributes: str | None = None
    force: bool | None = None


@dataclass(slots=True)
class GetTopicConfigRequestHeader(RemotingHeader):
    topic: str


@dataclass(slots=True)
class ConsumerSendMsgBackRequestHeader(RemotingHeader):
    offset: int
    group: str
    delay_level: int
    origin_msg_id: str | None = None
    origin_topic: str | None = None
    unit_mode: bool = False
    max_reconsume_times: int | None = None


@dataclass(slots=True)
class ReplyMessageRequestHeader(RemotingHeader):
    """Java remoting/protocol/header/ReplyMessageRequestHeader (broker -> requester, code 326)."""

    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    sys_flag: int
    born_timestamp: int
    flag: int
    born_host: str
    store_host: str
    store_timestamp: int
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool = False


@dataclass(slots=True)
class NotifyMinBrokerIdChangeRequestHeader(RemotingHeader):
    """NOTIFY_MIN_BROKER_ID_CHANGE (905), name server -> broker. Java:
    remoting/protocol/header/NotifyMinBrokerIdChangeRequestHeader (every field nullable)."""

    min_broker_id: int | None = None
    broker_name: str | None = None
    min_broker_addr: str | None = None
    offline_broker_addr: str | None = None
    ha_broker_addr: str | None = None


@dataclass(slots=True)
class ExchangeHAInfoRequestHeader(RemotingHeader):
    """EXCHANGE_BROKER_HA_INFO (906) request; the answer has the same three fields. Java:
    remoting/protocol/header/ExchangeHAInfoRequestHeader / ExchangeHAInfoResponseHeader."""

    master_ha_address: str | None = None
    master_flush_offset: int | None = None
    master_address: str | None = None
