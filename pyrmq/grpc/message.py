"""v2 ``Message`` <-> RocketMQ message properties. Java: ``SendMessageActivity#buildMessageProperty``
(in) and ``GrpcConverter#buildMessage`` (out)."""

from __future__ import annotations

import hashlib
import itertools
import time
from typing import Any

from google.protobuf import duration_pb2, timestamp_pb2

from pyrmq.common.constants import (
    CID_RMQ_SYS_PREFIX,
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    MessageConst,
    is_system_topic,
)
from pyrmq.common.java_lang import java_string_hash
from pyrmq.grpc.proto import pb
from pyrmq.grpc.status import Code, GrpcProxyError
from pyrmq.grpc.validate import contains_control, validate_tag
from pyrmq.store.message import MessageSysFlag

BORN_HOST = "__BORNHOST"  # MessageConst.PROPERTY_BORN_HOST
KEY_SEPARATOR = " "

#: ProxyConfig defaults
MAX_MESSAGE_SIZE = 4 * 1024 * 1024
MAX_USER_PROPERTY_SIZE = 16 * 1024
USER_PROPERTY_MAX_NUM = 128
MAX_MESSAGE_GROUP_SIZE = 64
MAX_DELAY_TIME_MS = 24 * 3600 * 1000

#: MessageConst.STRING_HASH_SET: names a user property may not take
_EXTRA_RESERVED = (
    "POP_CK_OFFSET",
    "EXTEND_UNIQ_INFO",
    "TIMER_ROLL_TIMES",
    "TIMER_DELAY_LEVEL",
    "DLQ_ORIGIN_TOPIC",
    "DLQ_ORIGIN_MESSAGE_ID",
    BORN_HOST,
)
RESERVED_PROPERTIES = frozenset(
    itertools.chain((v for k, v in vars(MessageConst).items() if k.isupper() and isinstance(v, str)), _EXTRA_RESERVED)
) - {
    MessageConst.SHARDING_KEY,
    MessageConst.TRANSACTION_ID,
    MessageConst.START_DELIVER_TIME,
    MessageConst.TRACE_CONTEXT,
}


def millis(ts: Any) -> int:
    return int(ts.seconds) * 1000 + int(ts.nanos) // 1_000_000


def timestamp(ms: int) -> timestamp_pb2.Timestamp:
    t = timestamp_pb2.Timestamp()
    t.FromMilliseconds(int(ms))
    return t


def duration(ms: int) -> duration_pb2.Duration:
    d = duration_pb2.Duration()
    d.FromMilliseconds(int(ms))
    return d


def sys_flag(message: Any) -> int:
    """SendMessageActivity#buildSysFlag."""
    flag = 0
    sp = message.system_properties
    if sp.body_encoding == pb.GZIP:
        flag |= MessageSysFlag.COMPRESSED_FLAG
    if sp.message_type == pb.TRANSACTION:
        flag |= MessageSysFlag.TRANSACTION_PREPARED_TYPE
    return flag


def _check_key(key: str) -> None:
    if key and not key.strip():
        raise GrpcProxyError(Code.ILLEGAL_MESSAGE_KEY, "key cannot be the char sequence of whitespace")
    if contains_control(key):
        raise GrpcProxyError(Code.ILLEGAL_MESSAGE_KEY, "key cannot contain control character")


def check_body(body: bytes) -> None:
    if not body:
        raise GrpcProxyError(Code.MESSAGE_BODY_EMPTY, "message body cannot be empty")
    if len(body) > MAX_MESSAGE_SIZE:
        raise GrpcProxyError(Code.MESSAGE_BODY_TOO_LARGE, f"message body cannot exceed the max {MAX_MESSAGE_SIZE}")


def build_properties(message: Any, producer_group: str, remote_addr: str, now_ms: int) -> dict[str, str]:
    """SendMessageActivity#buildMessageProperty: user properties, then the system ones."""
    user = dict(message.user_properties)
    if len(user) > USER_PROPERTY_MAX_NUM:
        raise GrpcProxyError(
            Code.MESSAGE_PROPERTIES_TOO_LARGE, f"too many user properties, max is {USER_PROPERTY_MAX_NUM}"
        )
    size = 0
    for k, v in user.items():
        if k in RESERVED_PROPERTIES:
            raise GrpcProxyError(Code.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property is used by system: {k}")
        if contains_control(k):
            raise GrpcProxyError(
                Code.ILLEGAL_MESSAGE_PROPERTY_KEY, "the key of property cannot contain control character"
            )
        if contains_control(v):
            raise GrpcProxyError(
                Code.ILLEGAL_MESSAGE_PROPERTY_KEY, "the value of property cannot contain control character"
            )
        size += len(k.encode()) + len(v.encode())
    props = dict(user)
    sp = message.system_properties
    tag = sp.tag
    validate_tag(tag)
    if tag:
        props[MessageConst.TAGS] = tag
    size += len(tag.encode())
    keys = list(sp.keys)
    for key in keys:
        _check_key(key)
        size += len(key.encode())
    if keys:
        props[MessageConst.KEYS] = KEY_SEPARATOR.join(keys)
    if size > MAX_USER_PROPERTY_SIZE:
        raise GrpcProxyError(
            Code.MESSAGE_PROPERTIES_TOO_LARGE,
            f"the total size of user property is too large, max is {MAX_USER_PROPERTY_SIZE}",
        )
    if not sp.message_id.strip():
        raise GrpcProxyError(Code.ILLEGAL_MESSAGE_ID, "message id cannot be empty")
    props[MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = sp.message_id
    if sp.message_type == pb.TRANSACTION:
        props[MessageConst.TRANSACTION_PREPARED] = "true"
        if sp.HasField("orphaned_transaction_recovery_duration"):
            props[MessageConst.CHECK_IMMUNITY_TIME_IN_SECONDS] = str(sp.orphaned_transaction_recovery_duration.seconds)
    if sp.HasField("delivery_timestamp"):
        deliver_ms = millis(sp.delivery_timestamp)
        if deliver_ms - now_ms > MAX_DELAY_TIME_MS:
            raise GrpcProxyError(
                Code.ILLEGAL_DELIVERY_TIME, f"the max delay time of message is too large, max is {MAX_DELAY_TIME_MS}"
            )
        props[MessageConst.TIMER_DELIVER_MS] = str(deliver_ms)
    props[MessageConst.RECONSUME_TIME] = str(sp.delivery_attempt)
    props[MessageConst.PRODUCER_GROUP] = producer_group
    group = sp.message_group
    if group:
        if not group.strip():
            raise GrpcProxyError(Code.ILLEGAL_MESSAGE_GROUP, "message group cannot be the char sequence of whitespace")
        if len(group.encode()) >= MAX_MESSAGE_GROUP_SIZE:
            raise GrpcProxyError(
                Code.ILLEGAL_MESSAGE_GROUP, f"message group exceed the max size {MAX_MESSAGE_GROUP_SIZE}"
            )
        if contains_control(group):
            raise GrpcProxyError(Code.ILLEGAL_MESSAGE_GROUP, "message group cannot contain control character")
        props[MessageConst.SHARDING_KEY] = group
    if sp.trace_context:
        props[MessageConst.TRACE_CONTEXT] = sp.trace_context
    born_host = sp.born_host.strip() or remote_addr
    if born_host:
        props[BORN_HOST] = born_host
    if sp.HasField("born_timestamp") and (sp.born_timestamp.seconds or sp.born_timestamp.nanos):
        props[MessageConst.BORN_TIMESTAMP] = str(millis(sp.born_timestamp))
    return props


def _host(host: Any) -> str:
    return f"{host[0]}:{host[1]}" if isinstance(host, tuple) else str(host)


NAMESPACE_SEPARATOR = "%"


def _without_retry_and_dlq(name: str) -> tuple[str, str]:
    for prefix in (RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX):
        if name.startswith(prefix):
            return prefix, name[len(prefix) :]
    return "", name


def resource_of(name: str) -> Any:
    """GrpcConverter#buildResource: a stored name ``ns%name`` as name and resource_namespace
    (NamespaceUtil#withoutNamespace, #getNamespaceFromResource; system names stay whole)."""
    if not name or is_system_topic(name) or name.startswith(CID_RMQ_SYS_PREFIX):
        return pb.Resource(name=name)
    prefix, rest = _without_retry_and_dlq(name)
    index = rest.find(NAMESPACE_SEPARATOR)
    if index <= 0:
        return pb.Resource(name=name)
    return pb.Resource(name=prefix + rest[index + 1 :], resource_namespace=rest[:index])


def to_v2_message(msg: Any, receipt_handle: str | None) -> Any:
    """GrpcConverter#buildMessage: a popped message as the SDK receives it; its topic is the
    stored message's (a retry message's is the topic the client popped, as the broker answers)."""
    props = msg.properties
    sp = pb.SystemProperties()
    tag = props.get(MessageConst.TAGS)
    if tag is not None:
        sp.tag = tag
    keys = props.get(MessageConst.KEYS)
    if keys is not None:
        sp.keys.extend(keys.split(KEY_SEPARATOR))
    sp.message_id = props.get(MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or msg.msg_id
    body = msg.body or b""
    sp.body_digest.CopyFrom(pb.Digest(type=pb.MD5, checksum=hashlib.md5(body).hexdigest().upper()))
    sp.body_encoding = pb.GZIP if msg.sys_flag & MessageSysFlag.COMPRESSED_FLAG else pb.IDENTITY
    if props.get(MessageConst.TRANSACTION_PREPARED) == "true":
        sp.message_type = pb.TRANSACTION
    elif any(
        k in props for k in (MessageConst.DELAY_TIME_LEVEL, MessageConst.TIMER_DELIVER_MS, MessageConst.TIMER_DELAY_SEC)
    ):
        sp.message_type = pb.DELAY
    elif MessageConst.SHARDING_KEY in props:
        sp.message_type = pb.FIFO
    else:
        sp.message_type = pb.NORMAL
    sp.born_timestamp.CopyFrom(timestamp(msg.born_timestamp))
    born_host = (props.get(BORN_HOST) or "").strip() or _host(msg.born_host)
    if born_host:
        sp.born_host = born_host
    sp.store_timestamp.CopyFrom(timestamp(msg.store_timestamp))
    sp.store_host = _host(msg.store_host)
    if MessageConst.TIMER_DELAY_SEC in props:
        sp.delivery_timestamp.CopyFrom(
            timestamp(int(time.time() * 1000) + int(props[MessageConst.TIMER_DELAY_SEC]) * 1000)
        )
    elif MessageConst.TIMER_DELIVER_MS in props:
        sp.delivery_timestamp.CopyFrom(timestamp(int(props[MessageConst.TIMER_DELIVER_MS])))
    if MessageConst.SHARDING_KEY in props:
        sp.message_group = props[MessageConst.SHARDING_KEY]
    if receipt_handle is not None:
        sp.receipt_handle = receipt_handle
    sp.queue_id = msg.queue_id
    sp.queue_offset = msg.queue_offset
    sp.delivery_attempt = msg.reconsume_times + 1
    if MessageConst.TRACE_CONTEXT in props:
        sp.trace_context = props[MessageConst.TRACE_CONTEXT]
    user = {k: v for k, v in props.items() if k not in RESERVED_PROPERTIES}
    return pb.Message(topic=resource_of(msg.topic), user_properties=user, system_properties=sp, body=body)


def message_type_of(props: dict[str, str]) -> str:
    """TopicMessageType#parseFromMessageProperty."""
    if props.get(MessageConst.TRANSACTION_PREPARED) == "true":
        return "TRANSACTION"
    delay_keys = (
        MessageConst.DELAY_TIME_LEVEL,
        MessageConst.TIMER_DELIVER_MS,
        MessageConst.TIMER_DELAY_SEC,
        MessageConst.TIMER_DELAY_MS,
    )
    if any(k in props for k in delay_keys):
        return "DELAY"
    return "FIFO" if MessageConst.SHARDING_KEY in props else "NORMAL"


def check_message_type(topic: str, topic_type: str, props: dict[str, str]) -> None:
    """ProducerProcessor + DefaultTopicMessageTypeValidator (enableTopicMessageTypeCheck, Java's default)."""
    if MessageConst.TRANSFER_FLAG in props or topic.startswith(("%RETRY%", "%DLQ%")):
        return
    actual = message_type_of(props)
    if actual != topic_type and topic_type != "MIXED":
        raise GrpcProxyError(
            Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
            f"TopicMessageType validate failed, the expected type is {topic_type}, but actual type is {actual}",
        )


def consistent_hash(value: int, buckets: int) -> int:
    """Guava Hashing#consistentHash(long, int) (the Java proxy picks a message group's queue with it)."""
    state = value & 0xFFFFFFFFFFFFFFFF
    candidate = 0
    while True:
        state = (2862933555777941757 * state + 1) & 0xFFFFFFFFFFFFFFFF
        next_double = ((state >> 33) + 1) / float(1 << 31)  # a 31-bit value: Java's (int) cast keeps it
        nxt = int((candidate + 1) / next_double)
        if 0 <= nxt < buckets:
            candidate = nxt
        else:
            return candidate


def group_bucket(message_group: str, buckets: int) -> int:
    return consistent_hash(java_string_hash(message_group), buckets)


__all__ = [
    "BORN_HOST",
    "build_properties",
    "check_body",
    "check_message_type",
    "consistent_hash",
    "duration",
    "group_bucket",
    "message_type_of",
    "millis",
    "resource_of",
    "sys_flag",
    "timestamp",
    "to_v2_message",
]
