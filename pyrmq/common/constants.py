"""RocketMQ's names and numbers, one definition each: system topics and groups,
the %RETRY%/%DLQ% prefixes, permission bits, message property names.

Java: ``common/topic/TopicValidator``, ``common/MixAll``, ``common/constant/PermName``,
``common/message/MessageConst``. Broker, tools, store and Spark read them from
here; a name that appears twice in pyrmq/ is a bug waiting for one copy to change.
"""

from __future__ import annotations

import re

from pyrmq._speedups import pick

__all__ = [
    "AUTO_CREATE_TOPIC_KEY_TOPIC",
    "CID_RMQ_SYS_TRANS",
    "DLQ_GROUP_TOPIC_PREFIX",
    "FAQ_SUGGEST",
    "MASTER_ID",
    "NOT_ALLOWED_SEND_TOPIC_SET",
    "PERM_INHERIT",
    "PERM_PRIORITY",
    "PERM_READ",
    "PERM_WRITE",
    "RETRY_GROUP_TOPIC_PREFIX",
    "RMQ_SYS_SCHEDULE_TOPIC",
    "RMQ_SYS_TRACE_TOPIC",
    "RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "SYSTEM_GROUPS",
    "SYSTEM_TOPIC_PREFIX",
    "SYSTEM_TOPIC_SET",
    "TIMER_TOPIC",
    "TOOLS_CONSUMER_GROUP",
    "MessageConst",
    "dlq_topic",
    "is_readable",
    "is_system_topic",
    "is_writeable",
    "perm_string",
    "retry_topic",
    "validate_group",
    "validate_topic",
]

# --------------------------------------------------------------------------- PermName

PERM_PRIORITY = 0x8
PERM_READ = 0x4
PERM_WRITE = 0x2
PERM_INHERIT = 0x1


def is_readable(perm: int) -> bool:
    return bool(perm & PERM_READ)


def is_writeable(perm: int) -> bool:
    return bool(perm & PERM_WRITE)


def perm_string(perm: int) -> str:
    """``PermName#perm2String``: ``RW-``."""
    return (
        ("R" if perm & PERM_READ else "-") + ("W" if perm & PERM_WRITE else "-") + ("X" if perm & PERM_INHERIT else "-")
    )


# --------------------------------------------------------------------------- MixAll

#: the master's brokerId
MASTER_ID = 0
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
#: the group whose offsets track the transaction half and op queues
CID_RMQ_SYS_TRANS = "CID_RMQ_SYS_TRANS"
#: MixAll.SCHEDULE_CONSUMER_GROUP: the group the delay service "consumes" SCHEDULE_TOPIC_XXXX as
SCHEDULE_CONSUMER_GROUP = "SCHEDULE_CONSUMER"
#: MixAll.CID_RMQ_SYS_PREFIX: groups of the broker's own consumers
CID_RMQ_SYS_PREFIX = "CID_RMQ_SYS_"
#: groups a Java 5.5.0 broker creates at start, in its order (SubscriptionGroupManager#init)
SYSTEM_GROUPS = (
    TOOLS_CONSUMER_GROUP,
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
    CID_RMQ_SYS_TRANS,
)


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_GROUP_TOPIC_PREFIX + group


# --------------------------------------------------------------------------- TopicValidator

AUTO_CREATE_TOPIC_KEY_TOPIC = "TBW102"
RMQ_SYS_SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
RMQ_SYS_BENCHMARK_TOPIC = "BenchmarkTest"
RMQ_SYS_TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
RMQ_SYS_TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
RMQ_SYS_TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
RMQ_SYS_SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
RMQ_SYS_OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"
RMQ_SYS_ROCKSDB_OFFSET_TOPIC = "CHECKPOINT_TOPIC"
RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC = "RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC"  # 5.5.0 creates both at start
RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC = "RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC"
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
#: TimerMessageStore.TIMER_TOPIC: where timer messages wait
TIMER_TOPIC = SYSTEM_TOPIC_PREFIX + "wheel_timer"
#: delay levels 1..18 are queues 0..17 of SCHEDULE_TOPIC_XXXX
SCHEDULE_TOPIC_QUEUE_NUM = 18

SYSTEM_TOPIC_SET = frozenset(
    {
        AUTO_CREATE_TOPIC_KEY_TOPIC,
        RMQ_SYS_SCHEDULE_TOPIC,
        RMQ_SYS_BENCHMARK_TOPIC,
        RMQ_SYS_TRANS_HALF_TOPIC,
        RMQ_SYS_TRACE_TOPIC,
        RMQ_SYS_TRANS_OP_HALF_TOPIC,
        RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
        RMQ_SYS_SELF_TEST_TOPIC,
        RMQ_SYS_OFFSET_MOVED_EVENT,
        RMQ_SYS_ROCKSDB_OFFSET_TOPIC,
        RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC,
        RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC,
    }
)
NOT_ALLOWED_SEND_TOPIC_SET = frozenset(
    {
        RMQ_SYS_SCHEDULE_TOPIC,
        RMQ_SYS_TRANS_HALF_TOPIC,
        RMQ_SYS_TRANS_OP_HALF_TOPIC,
        RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
        RMQ_SYS_SELF_TEST_TOPIC,
        RMQ_SYS_OFFSET_MOVED_EVENT,
    }
)

TOPIC_MAX_LENGTH = 127
GROUP_MAX_LENGTH = 120
RETRY_OR_DLQ_TOPIC_MAX_LENGTH = 255
_VALID = re.compile(r"[%|a-zA-Z0-9_-]+")


def is_system_topic(topic: str) -> bool:
    return topic in SYSTEM_TOPIC_SET or topic.startswith(SYSTEM_TOPIC_PREFIX)


def validate_topic(topic: str | None) -> str | None:
    """Java TopicValidator#validateTopic: None when valid, else Java's remark."""
    if topic is None or not topic.strip():
        return "The specified topic is blank."
    if not _VALID.fullmatch(topic):
        return f"The specified topic: {topic}, contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) or topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
        if len(topic) > RETRY_OR_DLQ_TOPIC_MAX_LENGTH:
            return (
                f"The specified topic is DLQ or Retry topic: {topic}, and it's longer than topic max "
                f"length: {RETRY_OR_DLQ_TOPIC_MAX_LENGTH}"
            )
    elif len(topic) > TOPIC_MAX_LENGTH:
        return f"The specified topic: {topic}, is longer than topic max length: {TOPIC_MAX_LENGTH}"
    return None


validate_topic = pick(validate_topic)  # the compiled twin (pyrmq/_speedups) when built


def validate_group(group: str | None) -> str | None:
    """Java TopicValidator#validateGroup."""
    if group is None or not group.strip():
        return "The specified group is blank."
    if not _VALID.fullmatch(group):
        return f"The specified group: {group}, contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    if len(group) > GROUP_MAX_LENGTH:
        return f"The specified group: {group}, is longer than group max length: {GROUP_MAX_LENGTH}"
    return None


# --------------------------------------------------------------------------- MessageConst


class MessageConst:
    """Message property names. Java: common.message.MessageConst (and the timer's, TimerMessageStore)."""

    KEYS = "KEYS"
    TAGS = "TAGS"
    WAIT_STORE_MSG_OK = "WAIT"
    DELAY_TIME_LEVEL = "DELAY"
    RETRY_TOPIC = "RETRY_TOPIC"
    REAL_TOPIC = "REAL_TOPIC"
    REAL_QUEUE_ID = "REAL_QID"
    TRANSACTION_PREPARED = "TRAN_MSG"
    PRODUCER_GROUP = "PGROUP"
    MIN_OFFSET = "MIN_OFFSET"
    MAX_OFFSET = "MAX_OFFSET"
    BUYER_ID = "BUYER_ID"
    ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
    TRANSFER_FLAG = "TRANSFER_FLAG"
    CORRECTION_FLAG = "CORRECTION_FLAG"
    MQ2_FLAG = "MQ2_FLAG"
    RECONSUME_TIME = "RECONSUME_TIME"
    MSG_REGION = "MSG_REGION"
    TRACE_SWITCH = "TRACE_ON"
    UNIQ_CLIENT_MESSAGE_ID_KEYIDX = "UNIQ_KEY"
    MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"
    CONSUME_START_TIMESTAMP = "CONSUME_START_TIME"
    TRANSACTION_PREPARED_QUEUE_OFFSET = "TRAN_PREPARED_QUEUE_OFFSET"
    TRANSACTION_CHECK_TIMES = "TRANSACTION_CHECK_TIMES"
    CHECK_IMMUNITY_TIME_IN_SECONDS = "CHECK_IMMUNITY_TIME_IN_SECONDS"
    INSTANCE_ID = "INSTANCE_ID"
    CORRELATION_ID = "CORRELATION_ID"
    MESSAGE_REPLY_TO_CLIENT = "REPLY_TO_CLIENT"
    MESSAGE_TTL = "TTL"
    REPLY_MESSAGE_ARRIVE_TIME = "ARRIVE_TIME"
    PUSH_REPLY_TIME = "PUSH_REPLY_TIME"
    CLUSTER = "CLUSTER"
    MESSAGE_TYPE = "MSG_TYPE"
    INNER_MULTI_DISPATCH = "INNER_MULTI_DISPATCH"
    INNER_MULTI_QUEUE_OFFSET = "INNER_MULTI_QUEUE_OFFSET"
    INNER_NUM = "INNER_NUM"
    INNER_BASE = "INNER_BASE"
    TIMER_DELIVER_MS = "TIMER_DELIVER_MS"
    TIMER_DELAY_SEC = "TIMER_DELAY_SEC"
    TIMER_DELAY_MS = "TIMER_DELAY_MS"
    DUP_INFO = "DUP_INFO"
    CRC32 = "__CRC32#"
    TRANSACTION_ID = "__transactionId__"
    TIMER_OUT_MS = "TIMER_OUT_MS"
    SHARDING_KEY = "__SHARDINGKEY"
    START_DELIVER_TIME = "__STARTDELIVERTIME"
    TIMER_ENQUEUE_MS = "TIMER_ENQUEUE_MS"
    TIMER_DEQUEUE_MS = "TIMER_DEQUEUE_MS"
    TIMER_DEL_UNIQKEY = "TIMER_DEL_UNIQKEY"
    BORN_TIMESTAMP = "BORN_TIMESTAMP"
    TRACE_CONTEXT = "TRACE_CONTEXT"
    POP_CK = "POP_CK"
    FIRST_POP_TIME = "1ST_POP_TIME"
    ORIGIN_GROUP = "ORIGIN_GROUP"


#: Java FAQUrl.suggestTodo(FAQUrl.APPLY_TOPIC_URL): the tail of "not exist" remarks
FAQ_SUGGEST = "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
