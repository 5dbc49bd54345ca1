"""JSON bodies of the client path (heartbeats, locks, consumer lists) in the fastjson dialect.

Java: ``remoting/protocol/heartbeat/{HeartbeatData,ConsumerData,ProducerData,
SubscriptionData}``, ``body/{LockBatchRequestBody,LockBatchResponseBody,
UnlockBatchRequestBody,GetConsumerListByGroupResponseBody,CheckClientRequestBody}``,
``common/message/MessageQueue``. Reading is lenient like fastjson (Go sends
``codeSet`` elements as strings; the broker recomputes codes from ``tagsSet``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyrmq.common.java_lang import java_string_hash
from pyrmq.protocol.fastjson import FastJsonBody

SUB_ALL = "*"


@dataclass(slots=True)
class SubscriptionData(FastJsonBody):
    class_filter_mode: bool = False
    topic: str | None = None
    sub_string: str | None = None
    tags_set: list[str] = field(default_factory=list)
    code_set: list[int] = field(default_factory=list)
    sub_version: int = 0
    expression_type: str = "TAG"

    @classmethod
    def build(
        cls, topic: str, sub_string: str | None, expression_type: str | None = None, sub_version: int = 0
    ) -> SubscriptionData:
        """Java FilterAPI#build / buildSubscriptionData: split 'a || b', hash each tag."""
        sd = cls(
            topic=topic, sub_string=sub_string, sub_version=sub_version, expression_type=(expression_type or "TAG")
        )
        if sd.expression_type.upper() != "TAG":
            return sd
        if not sub_string or sub_string.strip() in ("", SUB_ALL):
            sd.sub_string = SUB_ALL
            return sd
        for tag in sub_string.split("||"):
            t = tag.strip()
            if t:
                sd.tags_set.append(t)
                sd.code_set.append(java_string_hash(t))
        return sd

    def tags_codes(self) -> set[int] | None:
        """Codes to match on the consume queue; None = everything (``*``, or not TAG)."""
        if (self.expression_type or "TAG").upper() != "TAG":
            return None
        if not self.sub_string or self.sub_string.strip() == SUB_ALL:
            return None
        if self.tags_set:
            return {java_string_hash(t) for t in self.tags_set}
        return set(self.code_set)


@dataclass(slots=True)
class ConsumerData(FastJsonBody):
    group_name: str | None = None
    consume_type: str | None = None
    message_model: str | None = None
    consume_from_where: str | None = None
    subscription_data_set: list[SubscriptionData] = field(default_factory=list)
    unit_mode: bool = False


@dataclass(slots=True)
class ProducerData(FastJsonBody):
    group_name: str | None = None


@dataclass(slots=True)
class HeartbeatData(FastJsonBody):
    client_id: str | None = field(default=None, metadata={"json": "clientID"})
    producer_data_set: list[ProducerData] = field(default_factory=list)
    consumer_data_set: list[ConsumerData] = field(default_factory=list)
    heartbeat_fingerprint: int = 0
    without_sub: bool = False


@dataclass(slots=True, frozen=True)
class MessageQueue(FastJsonBody):
    topic: str | None = None
    broker_name: str | None = None
    queue_id: int = 0


@dataclass(slots=True)
class LockBatchRequestBody(FastJsonBody):
    consumer_group: str | None = None
    client_id: str | None = None
    only_this_broker: bool = False
    mq_set: list[MessageQueue] = field(default_factory=list)


@dataclass(slots=True)
class LockBatchResponseBody(FastJsonBody):
    lock_ok_mq_set: list[MessageQueue] = field(default_factory=list, metadata={"json": "lockOKMQSet"})


@dataclass(slots=True)
class UnlockBatchRequestBody(FastJsonBody):
    consumer_group: str | None = None
    client_id: str | None = None
    only_this_broker: bool = False
    mq_set: list[MessageQueue] = field(default_factory=list)


@dataclass(slots=True)
class GetConsumerListByGroupResponseBody(FastJsonBody):
    consumer_id_list: list[str] = field(default_factory=list)


@dataclass(slots=True)
class CheckClientRequestBody(FastJsonBody):
    client_id: str | None = None
    group: str | None = None
    subscription_data: SubscriptionData | None = None
    namespace: str | None = None


@dataclass(slots=True)
class Connection(FastJsonBody):
    """One client connection as admin tools see it. Java: body/Connection."""

    client_id: str | None = None
    client_addr: str | None = None
    language: str | None = None
    version: int = 0


@dataclass(slots=True)
class ConsumerConnection(FastJsonBody):
    """GET_CONSUMER_CONNECTION_LIST answer. Java: body/ConsumerConnection."""

    connection_set: list[Connection] = field(default_factory=list)
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)
    consume_type: str | None = None
    message_model: str | None = None
    consume_from_where: str | None = None
