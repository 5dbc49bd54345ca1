"""Light message queues (LMQ): one record, also queued in every %LMQ% queue it names.

Java: store.LmqDispatch (offsets written into the record at append), queue.MultiDispatchUtils and
ConsumeQueue#multiDispatchLmqQueue (one consume-queue entry per LMQ at dispatch), MixAll's
LMQ_PREFIX/isLmq/topicAllowsLMQ. A producer lists the queues in INNER_MULTI_DISPATCH
("%LMQ%a,%LMQ%b"); with enableLmq the append writes each queue's offset into
INNER_MULTI_QUEUE_OFFSET ("3,0") and, with enableMultiDispatch, dispatch adds the entry
(commit-log offset, size, tags code) at that offset to consume queue ``%LMQ%a/0``. An LMQ has one
queue, id 0; its next offset lives in the commit log's topic-queue table like any queue's, so
recovery rebuilds it from the consume queues.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from pyrmq.common.constants import RETRY_GROUP_TOPIC_PREFIX, RMQ_SYS_SCHEDULE_TOPIC, SYSTEM_TOPIC_PREFIX, MessageConst
from pyrmq.store.store_config import MessageStoreConfig

log = logging.getLogger(__name__)

LMQ_PREFIX = "%LMQ%"
LMQ_QUEUE_ID = 0
LMQ_DISPATCH_SEPARATOR = ","
#: the longest file name (bytes) Linux file systems take: a consume-queue directory's name
NAME_MAX = 255


def is_lmq(name: str | None) -> bool:
    """Java MixAll#isLmq."""
    return name is not None and name.startswith(LMQ_PREFIX)


def topic_allows_lmq(topic: str) -> bool:
    """Java MixAll#topicAllowsLMQ (and MultiDispatchUtils#isNeedHandleMultiDispatch's topic part):
    retry, system and schedule topics are never multi-dispatched."""
    return not (
        topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
        or topic.startswith(SYSTEM_TOPIC_PREFIX)
        or topic == RMQ_SYS_SCHEDULE_TOPIC
    )


def java_split(value: str) -> list[str]:
    """``String#split(",")``: trailing empty strings are dropped, leading and inner ones kept."""
    parts = value.split(LMQ_DISPATCH_SEPARATOR)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def needs_lmq_offsets(config: MessageStoreConfig, topic: str, props: Mapping[str, str]) -> bool:
    """Java CommitLog doAppend's ``enableLmq && msgInner.needDispatchLMQ()``."""
    if not config.enable_lmq:
        return False
    names = props.get(MessageConst.INNER_MULTI_DISPATCH)
    return bool(names and names.strip()) and topic_allows_lmq(topic)


def lmq_queue_key(name: str) -> str:
    """The topic-queue table key of an LMQ (Java MultiDispatchUtils#lmqQueueKey)."""
    return f"{name}-{LMQ_QUEUE_ID}"


def assign_lmq_offsets(props: dict[str, str], next_offset: Callable[[str], int]) -> list[str]:
    """Set INNER_MULTI_QUEUE_OFFSET to each listed LMQ's next offset (empty for a name that is
    not an LMQ, as Java's StringUtils.join of a null); returns the LMQ names, whose offsets the
    caller advances once the record is written. Java LmqDispatch#wrapLmqDispatch."""
    names = java_split(props[MessageConst.INNER_MULTI_DISPATCH])
    offsets = [str(next_offset(n)) if is_lmq(n) else "" for n in names]
    props[MessageConst.INNER_MULTI_QUEUE_OFFSET] = LMQ_DISPATCH_SEPARATOR.join(offsets)
    wait = props.pop(MessageConst.WAIT_STORE_MSG_OK, None)
    if wait is not None:  # removeWaitStorePropertyString takes WAIT out and puts it back: last in its bucket
        props[MessageConst.WAIT_STORE_MSG_OK] = wait
    return [n for n in names if is_lmq(n)]


def multi_dispatch_targets(
    config: MessageStoreConfig, topic: str, queue_id: int, props: Mapping[str, str] | None
) -> list[tuple[str, int, int]]:
    """(queue name, queue id, queue offset) of each extra consume-queue entry a dispatched
    record gets; none unless enableMultiDispatch and both properties are present with as many
    offsets as names. Java MultiDispatchUtils#checkMultiDispatchQueue + multiDispatchLmqQueue."""
    if not config.enable_multi_dispatch or not topic_allows_lmq(topic) or not props:
        return []
    names_s = props.get(MessageConst.INNER_MULTI_DISPATCH)
    offsets_s = props.get(MessageConst.INNER_MULTI_QUEUE_OFFSET)
    if not names_s or not names_s.strip() or not offsets_s or not offsets_s.strip():
        return []
    names, offsets = java_split(names_s), java_split(offsets_s)
    if len(names) != len(offsets):
        log.error("[bug] %s: %d multi-dispatch queues but %d offsets", topic, len(names), len(offsets))
        return []
    out = []
    for name, offset_s in zip(names, offsets, strict=True):
        if "/" in name:  # Java skips a name holding File.separator (it would escape consumequeue/)
            continue
        if "\x00" in name or len(name.encode("utf-8", "surrogatepass")) > NAME_MAX:
            # no directory can have this name: Java's put fails, is retried and given up; skipping
            # it keeps dispatch from stalling on a consume queue that can never be written
            log.error("%s: multi-dispatch queue name %.64r... cannot be a directory; not dispatched", topic, name)
            continue
        try:
            offset = int(offset_s)
        except ValueError:
            log.error("%s: multi-dispatch queue %s has no offset (%r); not dispatched", topic, name, offset_s)
            continue
        qid = LMQ_QUEUE_ID if config.enable_lmq and is_lmq(name) else queue_id
        out.append((name, qid, offset))
    return out
