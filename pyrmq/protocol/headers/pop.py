"""Headers of POP consumption, and the ``extraInfo`` strings that tie a popped message to its
checkpoint.

Java: ``remoting/protocol/header/{PopMessageRequestHeader,PopMessageResponseHeader,
AckMessageRequestHeader,ChangeInvisibleTimeRequestHeader,ChangeInvisibleTimeResponseHeader,
PeekMessageRequestHeader,NotificationRequestHeader,NotificationResponseHeader,
PollingInfoRequestHeader,PollingInfoResponseHeader,ExtraInfoUtil}``.

An extraInfo (the ``POP_CK`` property a client acks with) is space separated:
``ckQueueOffset popTime invisibleTime reviveQid retryFlag brokerName queueId [msgQueueOffset]``,
retryFlag ``0`` for the topic itself, ``1`` for ``%RETRY%<group>_<topic>``, ``2`` for the V2
``%RETRY%<group>+<topic>``. The response's startOffsetInfo, msgOffsetInfo and orderCountInfo
are ``;``-separated ``retryFlag queueId value`` triples (msgOffsetInfo's value a ``,`` list).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pyrmq.common.constants import RETRY_GROUP_TOPIC_PREFIX
from pyrmq.protocol.headers.base import RemotingHeader

#: KeyBuilder.POP_ORDER_REVIVE_QUEUE: the reviveQid of an orderly pop (no checkpoint is written)
POP_ORDER_REVIVE_QUEUE = 999
_NORMAL, _RETRY_V1, _RETRY_V2 = "0", "1", "2"


@dataclass(slots=True)
class PopMessageRequestHeader(RemotingHeader):
    consumer_group: str
    topic: str
    queue_id: int
    max_msg_nums: int
    invisible_time: int
    poll_time: int
    born_time: int
    init_mode: int
    exp_type: str | None = None
    exp: str | None = None
    order: bool | None = False
    attempt_id: str | None = None

    def is_timeout_too_much(self, now_ms: int) -> bool:
        """Java: answered more than 500 ms after the client stopped waiting."""
        return now_ms - self.born_time - self.poll_time > 500


@dataclass(slots=True)
class PopMessageResponseHeader(RemotingHeader):
    pop_time: int
    invisible_time: int
    revive_qid: int
    rest_num: int
    start_offset_info: str | None = None
    msg_offset_info: str | None = None
    order_count_info: str | None = None


@dataclass(slots=True)
class AckMessageRequestHeader(RemotingHeader):
    consumer_group: str
    topic: str
    queue_id: int
    extra_info: str
    offset: int
    lite_topic: str | None = None


@dataclass(slots=True)
class ChangeInvisibleTimeRequestHeader(RemotingHeader):
    consumer_group: str
    topic: str
    queue_id: int
    extra_info: str
    offset: int
    invisible_time: int
    lite_topic: str | None = None
    suspend: bool = False


@dataclass(slots=True)
class ChangeInvisibleTimeResponseHeader(RemotingHeader):
    pop_time: int
    invisible_time: int
    revive_qid: int


@dataclass(slots=True)
class PeekMessageRequestHeader(RemotingHeader):
    consumer_group: str
    topic: str
    queue_id: int
    max_msg_nums: int


@dataclass(slots=True)
class NotificationRequestHeader(RemotingHeader):
    consumer_group: str
    topic: str
    queue_id: int
    poll_time: int
    born_time: int
    order: bool | None = False
    attempt_id: str | None = None


@dataclass(slots=True)
class NotificationResponseHeader(RemotingHeader):
    has_msg: bool = False
    polling_full: bool = False


@dataclass(slots=True)
class PollingInfoRequestHeader(RemotingHeader):
    consumer_group: str
    topic: str
    queue_id: int


@dataclass(slots=True)
class PollingInfoResponseHeader(RemotingHeader):
    polling_num: int = 0


# ---------------------------------------------------------------------------- KeyBuilder


def build_pop_retry_topic(topic: str, group: str, v2: bool = False) -> str:
    """``%RETRY%<group>_<topic>``, or ``%RETRY%<group>+<topic>`` with enableRetryTopicV2."""
    return f"{RETRY_GROUP_TOPIC_PREFIX}{group}{'+' if v2 else '_'}{topic}"


def is_pop_retry_topic_v2(topic: str) -> bool:
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX) and "+" in topic


def parse_normal_topic(topic: str, group: str) -> str:
    """The topic a pop retry topic of ``group`` serves (Java KeyBuilder#parseNormalTopic)."""
    if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return topic
    v2 = f"{RETRY_GROUP_TOPIC_PREFIX}{group}+"
    if topic.startswith(v2):
        return topic[len(v2) :]
    return topic[len(f"{RETRY_GROUP_TOPIC_PREFIX}{group}_") :]


def retry_flag(topic: str) -> str:
    if is_pop_retry_topic_v2(topic):
        return _RETRY_V2
    return _RETRY_V1 if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else _NORMAL


# ---------------------------------------------------------------------------- ExtraInfoUtil


class ExtraInfoError(ValueError):
    """An extraInfo string with too few fields or a bad number (Java: IllegalArgumentException)."""


@dataclass(slots=True, frozen=True)
class ExtraInfo:
    ck_queue_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    retry: str
    broker_name: str
    queue_id: int | None = None
    queue_offset: int | None = None

    @classmethod
    def parse(cls, text: str) -> ExtraInfo:
        parts = text.split(" ")
        if len(parts) < 6:
            raise ExtraInfoError(f"extraInfo needs at least 6 fields: {text!r}")
        try:
            return cls(
                int(parts[0]),
                int(parts[1]),
                int(parts[2]),
                int(parts[3]),
                parts[4],
                parts[5],
                int(parts[6]) if len(parts) > 6 else None,
                int(parts[7]) if len(parts) > 7 else None,
            )
        except ValueError:
            raise ExtraInfoError(f"extraInfo has a bad number: {text!r}") from None

    @property
    def is_order(self) -> bool:
        return self.revive_qid == POP_ORDER_REVIVE_QUEUE

    def real_topic(self, topic: str, group: str) -> str:
        """The topic the message was popped from (Java ExtraInfoUtil#getRealTopic)."""
        return real_topic(topic, group, self.retry)


def real_topic(topic: str, group: str, retry: str) -> str:
    if retry == _NORMAL:
        return topic
    if retry == _RETRY_V1:
        return build_pop_retry_topic(topic, group)
    if retry == _RETRY_V2:
        return build_pop_retry_topic(topic, group, v2=True)
    raise ExtraInfoError(f"unknown retry flag {retry!r}")


def build_extra_info(
    ck_queue_offset: int,
    pop_time: int,
    invisible_time: int,
    revive_qid: int,
    topic: str,
    broker_name: str,
    queue_id: int,
    msg_queue_offset: int | None = None,
) -> str:
    parts = [ck_queue_offset, pop_time, invisible_time, revive_qid, retry_flag(topic), broker_name, queue_id]
    if msg_queue_offset is not None:
        parts.append(msg_queue_offset)
    return " ".join(str(p) for p in parts)


class OffsetInfo:
    """The response header's ``;``-joined info strings, built while popping queue after queue."""

    def __init__(self) -> None:
        self.start: list[str] = []
        self.msg: list[str] = []
        self.order_count: list[str] = []

    def add_start(self, topic: str, queue_id: int, start_offset: int) -> None:
        self.start.append(f"{retry_flag(topic)} {queue_id} {start_offset}")

    def add_msg(self, topic: str, queue_id: int, offsets: Iterable[int]) -> None:
        self.msg.append(f"{retry_flag(topic)} {queue_id} {','.join(str(o) for o in offsets)}")

    def add_queue_order_count(self, topic: str, queue_id: int, count: int) -> None:
        self.order_count.append(f"{retry_flag(topic)} {queue_id} {count}")

    def add_offset_order_count(self, topic: str, queue_id: int, queue_offset: int, count: int) -> None:
        self.order_count.append(f"{retry_flag(topic)} qo{queue_id}%{queue_offset} {count}")

    @staticmethod
    def join(items: list[str]) -> str:
        return ";".join(items)


def parse_info(text: str | None) -> dict[str, str]:
    """``retryFlag@queueId`` -> value of a startOffsetInfo/msgOffsetInfo/orderCountInfo string."""
    out: dict[str, str] = {}
    if not text:
        return out
    for one in text.split(";"):
        parts = one.split(" ")
        if len(parts) != 3:
            raise ExtraInfoError(f"bad offset info: {text!r}")
        out[f"{parts[0]}@{parts[1]}"] = parts[2]
    return out
