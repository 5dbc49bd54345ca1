"""Writing the revive topic: checkpoints of pops and acks of popped messages, each delivered by
the timer when its message revives (Java PopMessageProcessor#buildCkMsg, AckMessageProcessor,
ChangeInvisibleTimeProcessor#ackOrigin; PopBufferMergeService with enablePopBufferMerge=false,
the 5.5.0 default, which stores every checkpoint at once).

A checkpoint is delivered one ``ackTimeInterval`` (1 s) before its revive time and its acks at
the revive time, so the revive service reads a checkpoint and then the acks that cancel it.
Also the per-queue pop lock (Java QueueLockManager): everything runs on the event loop, so a
lock is a key that is held; a pop that finds it held moves on, like Java's tryLock.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from pyrmq.broker.put import await_put
from pyrmq.common.constants import MessageConst
from pyrmq.common.java_lang import hashmap_order
from pyrmq.store import message as m
from pyrmq.store.pop import ACK_TAG, BATCH_ACK_TAG, CK_TAG, AckMsg, BatchAckMsg, PopCheckPoint
from pyrmq.store.results import PutMessageResult, PutMessageStatus

log = logging.getLogger("pyrmq.broker.pop")

#: PopAckConstants
REVIVE_TOPIC_PREFIX = "rmq_sys_REVIVE_LOG_"
REVIVE_GROUP = "CID_RMQ_SYS_REVIVE_GROUP"
ACK_TIME_INTERVAL_MS = 1000
SECOND_MS = 1000
#: what counts as stored (Java checks these four statuses)
STORED = frozenset(
    {
        PutMessageStatus.PUT_OK,
        PutMessageStatus.FLUSH_DISK_TIMEOUT,
        PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
        PutMessageStatus.SLAVE_NOT_AVAILABLE,
    }
)


def revive_topic(cluster: str) -> str:
    return REVIVE_TOPIC_PREFIX + cluster


def lock_key(topic: str, group: str, queue_id: int) -> str:
    """Java KeyBuilder#buildPollingKey / QueueLockManager#buildLockKey."""
    return f"{topic}@{group}@{queue_id}"


class QueueLockManager:
    def __init__(self) -> None:
        self._held: set[str] = set()

    def try_lock(self, key: str) -> bool:
        if key in self._held:
            return False
        self._held.add(key)
        return True

    async def lock(self, key: str) -> None:
        """Wait for the key (Java spins on tryLock); a pop holds it only across its store calls."""
        while not self.try_lock(key):
            await asyncio.sleep(0.001)

    def unlock(self, key: str) -> None:
        self._held.discard(key)


class ReviveLog:
    """Puts revive records; ``store_host`` is read when a record is built (the port is known late)."""

    def __init__(self, *, config, message_store, now: Callable[[], int]) -> None:
        self.config = config
        self.message_store = message_store
        self.now = now
        self.topic = revive_topic(config["brokerClusterName"])
        self.queue_lock_manager = QueueLockManager()
        self._ck_number = 0
        #: (group, topic, "CK" or "ACK", put status name) per checkpoint or ack a pop, an ack or a
        #: change of invisible time wrote (Java PopMetricsManager#incPopRevivePutCount)
        self.on_put: Callable[[str, str, str, str], None] | None = None

    def next_revive_qid(self) -> int:
        """Java: ckMessageNumber round robin over reviveQueueNum."""
        qid = self._ck_number % max(int(self.config["reviveQueueNum"]), 1)
        self._ck_number += 1
        return qid

    def _record(self, body: bytes, revive_qid: int, tags: str, deliver_ms: int, uniq: str) -> m.MessageExtBrokerInner:
        host = (self.config.broker_ip, int(self.config["listenPort"]))
        props = {
            MessageConst.TAGS: tags,
            MessageConst.TIMER_DELIVER_MS: str(deliver_ms),
            MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: uniq,
        }
        return m.MessageExtBrokerInner(
            topic=self.topic,
            body=body,
            queue_id=revive_qid,
            properties=hashmap_order(props),
            born_timestamp=self.now(),
            born_host=host,
            store_host=host,
        )

    def build_ck_msg(self, ck: PopCheckPoint, revive_qid: int) -> m.MessageExtBrokerInner:
        return self._record(ck.encode(), revive_qid, CK_TAG, ck.revive_time - ACK_TIME_INTERVAL_MS, ck.unique_id())

    def build_ack_msg(self, ack: AckMsg | BatchAckMsg, revive_qid: int, deliver_ms: int) -> m.MessageExtBrokerInner:
        tags = BATCH_ACK_TAG if isinstance(ack, BatchAckMsg) else ACK_TAG
        return self._record(ack.encode(), revive_qid, tags, deliver_ms, ack.unique_id())

    async def put(self, msg: m.MessageExtBrokerInner) -> bool:
        return await self._put(msg) in STORED

    async def _put(self, msg: m.MessageExtBrokerInner) -> PutMessageStatus:
        try:
            result: PutMessageResult = await await_put(self.message_store.put_message_async(msg))
        except Exception:
            log.exception("revive record put failed, %s", msg.tags)
            return PutMessageStatus.UNKNOWN_ERROR
        if result.put_message_status not in STORED:
            log.error("revive record %s not stored: %s", msg.tags, result.put_message_status.name)
        return result.put_message_status

    async def put_ck(self, ck: PopCheckPoint, revive_qid: int) -> bool:
        status = await self._put(self.build_ck_msg(ck, revive_qid))
        if self.on_put is not None:
            self.on_put(ck.cid or "", ck.topic or "", "CK", status.name)
        return status in STORED

    async def put_ack(self, ack: AckMsg | BatchAckMsg, revive_qid: int, invisible_time: int) -> bool:
        """An ack is delivered when the popped messages revive: popTime + invisibleTime."""
        status = await self._put(self.build_ack_msg(ack, revive_qid, ack.pop_time + invisible_time))
        if self.on_put is not None:
            self.on_put(ack.consumer_group or "", ack.topic or "", "ACK", status.name)
        return status in STORED
