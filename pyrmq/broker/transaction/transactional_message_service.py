"""Half messages, op messages and the check pass over the half queue.

Java: ``broker/transaction/queue/{TransactionalMessageServiceImpl,
TransactionalMessageBridge}``. A half message is stored in
``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0 (no consume-queue entry for its real
topic); committing or rolling back appends an op message to
``RMQ_SYS_TRANS_OP_HALF_TOPIC`` (same queue id, tag ``d``, body
``"<half queue offset>,"``). Progress over both queues is the consumer
offset of group ``CID_RMQ_SYS_TRANS`` (``consumerOffset.json``), so a Java
broker started on the same store resumes where pyrmq stopped, and back.

The check pass (``check``) is Java's algorithm: read op messages into a
remove map, walk half messages from the committed offset; each half message
that has no op, is older than ``transactionTimeOut`` (or its
``CHECK_IMMUNITY_TIME_IN_SECONDS``) is appended again with
``TRANSACTION_CHECK_TIMES`` + 1 and the producer group is asked; past
``transactionCheckMax`` checks (or older than the commit-log retention) it
goes to ``TRANS_CHECK_MAX_TIME_TOPIC``. Differences: op messages are written
at once, one offset per message (Java 5.x batches them every
``transactionOpBatchInterval``; the body format is the same and Java reads
both); the pass runs on the event loop and awaits its 1 s pauses.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from pyrmq.broker.put import await_put
from pyrmq.broker.transaction.util import (
    MC,
    OFFSET_SEPARATOR,
    REMOVE_TAG,
    java_long,
    parse_half_message_inner,
    renew_half_message_inner,
    renew_immunity_half_message_inner,
)
from pyrmq.common.constants import (
    CID_RMQ_SYS_TRANS,
    PERM_READ,
    PERM_WRITE,
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
)
from pyrmq.protocol.codes import ResponseCode
from pyrmq.store import message as m
from pyrmq.store.results import GetMessageStatus, PutMessageResult, PutMessageStatus

if TYPE_CHECKING:
    from pyrmq.broker.config import BrokerConfig
    from pyrmq.broker.consumer_offset_manager import ConsumerOffsetManager
    from pyrmq.broker.topic_config_manager import TopicConfigManager
    from pyrmq.common.clock import Clock
    from pyrmq.store.message_store import MessageStore

log = logging.getLogger("pyrmq.broker.transaction")

MAX_PROCESS_TIME_LIMIT_MS = 60_000
MAX_RETRY_COUNT_WHEN_HALF_NULL = 1
#: Java MAX_RETRY_TIMES_FOR_ESCAPE: an acting slave gives up escaping one half message after this
MAX_RETRY_TIMES_FOR_ESCAPE = 10
OP_MSG_PULL_NUMS = 32
SLEEP_WHILE_NO_OP_S = 1.0


class PullStatus:
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


_PULL_STATUS = {
    GetMessageStatus.FOUND: PullStatus.FOUND,
    GetMessageStatus.NO_MATCHED_MESSAGE: PullStatus.NO_MATCHED_MSG,
    GetMessageStatus.NO_MESSAGE_IN_QUEUE: PullStatus.NO_NEW_MSG,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: PullStatus.NO_NEW_MSG,
}


@dataclass(slots=True)
class PullResult:
    """Java client PullResult, as the bridge builds it from a store read."""

    status: str
    next_begin_offset: int
    min_offset: int
    max_offset: int
    msg_found_list: list[m.StoredMessage] | None = None


def _never_written(pr: PullResult, offset: int) -> bool:
    """Offset 0 of a queue that holds nothing at all (Java's bridge answers OFFSET_ILLEGAL)."""
    return pr.status == PullStatus.OFFSET_ILLEGAL and offset == 0 and pr.max_offset == 0 and pr.min_offset == 0


@dataclass(slots=True)
class OperationResult:
    prepare_message: m.StoredMessage | None = None
    response_code: int = ResponseCode.SUCCESS
    response_remark: str | None = None


class CheckListener(Protocol):
    def resolve_half_msg(self, msg: m.StoredMessage) -> None: ...

    async def resolve_discard_msg(self, msg: m.StoredMessage) -> None: ...


@dataclass(slots=True)
class _CheckState:
    remove_map: dict[int, int] = field(default_factory=dict)  # half offset -> op offset
    op_msg_map: dict[int, set[int]] = field(default_factory=dict)  # op offset -> half offsets
    done_op_offset: list[int] = field(default_factory=list)


class TransactionalMessageService:
    def __init__(
        self,
        *,
        config: BrokerConfig,
        message_store: MessageStore,
        topic_config_manager: TopicConfigManager,
        consumer_offset_manager: ConsumerOffsetManager,
        now: Clock,
    ) -> None:
        self.config = config
        self.store = message_store
        self.topic_config_manager = topic_config_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.now = now
        #: slave acting master (pyrmq/broker/failover.py): whether this broker is an acting slave,
        #: and how it hands a half message to another group (Java TransactionalMessageBridge#escapeMessage)
        self.acting_slave: Callable[[], bool] = lambda: False
        self.escape_message: Callable[[m.MessageExtBrokerInner], Awaitable[bool]] | None = None

    # ------------------------------------------------------------------ bridge: store access

    @property
    def _store_host(self) -> tuple[str, int]:
        """brokerIP1 and the bound port (the controller writes it back into listenPort)."""
        return (self.config.broker_ip, int(self.config["listenPort"]))

    async def _put(self, msg: m.MessageExtBrokerInner) -> PutMessageResult:
        """Append through the store, whose put hooks (delay level / timer) apply to every put."""
        return await await_put(self.store.put_message_async(msg))

    def fetch_consume_offset(self, topic: str, queue_id: int) -> int:
        off = self.consumer_offset_manager.query_offset(CID_RMQ_SYS_TRANS, topic, queue_id)
        if off == -1:
            off = self.store.get_min_offset_in_queue(topic, queue_id)
        return off

    def update_consume_offset(self, topic: str, queue_id: int, offset: int) -> None:
        host = f"{self._store_host[0]}:{self._store_host[1]}"
        self.consumer_offset_manager.commit_offset(host, CID_RMQ_SYS_TRANS, topic, queue_id, offset)

    def fetch_message_queues(self, topic: str) -> list[int]:
        tcm = self.topic_config_manager
        tc = tcm.select_topic_config(topic)
        if tc is None:
            tc = tcm.create_topic_in_send_message_back_method(topic, 1, PERM_WRITE | PERM_READ, 0)
        return list(range(tc.read_queue_nums)) if tc is not None else []

    def _get_message(self, topic: str, queue_id: int, offset: int, nums: int) -> PullResult:
        """Java TransactionalMessageBridge#getMessage: a store read turned into a client-style PullResult."""
        r = self.store.get_message(CID_RMQ_SYS_TRANS, topic, queue_id, offset, nums, None)
        status = _PULL_STATUS.get(r.status, PullStatus.OFFSET_ILLEGAL)
        found = None
        try:
            if r.status == GetMessageStatus.FOUND:
                found = []
                for buf in r.message_buffer_list:
                    try:
                        found.append(m.decode_message(buf))
                    except m.MessageDecodeError:
                        log.warning("undecodable record in %s-%d", topic, queue_id)
        finally:
            r.release()
        return PullResult(status, r.next_begin_offset, r.min_offset, r.max_offset, found)

    def get_half_message(self, queue_id: int, offset: int, nums: int) -> PullResult:
        return self._get_message(RMQ_SYS_TRANS_HALF_TOPIC, queue_id, offset, nums)

    def get_op_message(self, queue_id: int, offset: int, nums: int) -> PullResult:
        return self._get_message(RMQ_SYS_TRANS_OP_HALF_TOPIC, queue_id, offset, nums)

    def look_message_by_offset(self, commit_log_offset: int) -> m.StoredMessage | None:
        return self.store.look_message_by_offset(commit_log_offset)

    # ------------------------------------------------------------------ prepare / end

    async def prepare_message(self, msg: m.MessageExtBrokerInner) -> PutMessageResult:
        """Java asyncPrepareMessage: store the message as a half message."""
        return await self._put(parse_half_message_inner(msg))

    def get_half_message_by_offset(self, commit_log_offset: int) -> OperationResult:
        msg = self.look_message_by_offset(commit_log_offset)
        if msg is None:
            return OperationResult(None, ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed")
        return OperationResult(msg)

    commit_message = get_half_message_by_offset
    rollback_message = get_half_message_by_offset

    async def delete_prepare_message(self, half: m.StoredMessage) -> bool:
        """Java deletePrepareMessage: an op message naming the half message's queue offset."""
        return await self.write_op(half.queue_id, f"{half.queue_offset}{OFFSET_SEPARATOR}")

    async def write_op(self, queue_id: int, data: str) -> bool:
        host = self._store_host
        props = {MC.TAGS: REMOVE_TAG, MC.WAIT_STORE_MSG_OK: "true"}
        msg = m.MessageExtBrokerInner(
            topic=RMQ_SYS_TRANS_OP_HALF_TOPIC,
            body=data.encode("utf-8"),
            queue_id=queue_id,
            properties=props,
            properties_string=m.message_properties_to_string(props),
            sys_flag=0,
            born_timestamp=self.now(),
            born_host=host,
            store_host=host,
        )
        result = await self._put(msg)
        if result.put_message_status != PutMessageStatus.PUT_OK:
            log.error("Transaction op message write failed. queueId is %d, data %s", queue_id, data)
            return False
        return True

    async def put_final_message(self, msg: m.MessageExtBrokerInner) -> PutMessageResult:
        """The committed message (a DELAY level still applies: the store's put hook)."""
        return await self._put(msg)

    # ------------------------------------------------------------------ check

    def _fill_op_remove_map(
        self, st: _CheckState, queue_id: int, pull_offset_of_op: int, mini_offset: int
    ) -> PullResult:
        """Java fillOpRemoveMap: op messages from ``pull_offset_of_op`` into the remove map."""
        pr = self.get_op_message(queue_id, pull_offset_of_op, OP_MSG_PULL_NUMS)
        if _never_written(pr, pull_offset_of_op):
            # no op message was ever written (the queue has no file yet): nothing is missing, where
            # Java warns "miss op offset=0 ... is illegal" on every check of an idle broker
            log.debug("op queue %d holds no message yet", queue_id)
            return pr
        if pr.status in (PullStatus.OFFSET_ILLEGAL, PullStatus.NO_MATCHED_MSG):
            log.warning("The miss op offset=%d in queue=%d is illegal, %s", pull_offset_of_op, queue_id, pr.status)
            self.update_consume_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC, queue_id, pr.next_begin_offset)
            return pr
        if pr.status == PullStatus.NO_NEW_MSG or pr.msg_found_list is None:
            return pr
        for op in pr.msg_found_list:
            if op.body is None:
                st.done_op_offset.append(op.queue_offset)
                continue
            offsets: set[int] = set()
            if op.tags == REMOVE_TAG:
                for s in op.body.decode("utf-8", "replace").split(OFFSET_SEPARATOR):
                    v = java_long(s)
                    if v < mini_offset:
                        continue
                    st.remove_map[v] = op.queue_offset
                    offsets.add(v)
            else:
                log.error("Found a illegal tag in op message at %d: %s", op.queue_offset, op.tags)
            if offsets:
                st.op_msg_map[op.queue_offset] = offsets
            else:
                st.done_op_offset.append(op.queue_offset)
        return pr

    @staticmethod
    def _need_discard(props: dict[str, str], check_max: int) -> bool:
        """Java needDiscard: count this check in TRANSACTION_CHECK_TIMES, or say it is one too many."""
        times = props.get(MC.TRANSACTION_CHECK_TIMES)
        n = 1
        if times is not None:
            n = java_long(times)
            if n > 2**31 - 1 or n < -(2**31):
                n = -1
            if n >= check_max:
                return True
            n += 1
        props[MC.TRANSACTION_CHECK_TIMES] = str(n)
        return False

    def _need_skip(self, msg: m.StoredMessage) -> bool:
        reserved_ms = int(self.config.store.file_reserved_time) * 3600 * 1000
        return self.now() - msg.born_timestamp > reserved_ms

    async def _check_prepare_queue_offset(self, st: _CheckState, msg: m.StoredMessage, props: dict[str, str]) -> bool:
        """Java checkPrepareQueueOffset (immunity): True = skip this half message."""
        prepared = props.get(MC.TRANSACTION_PREPARED_QUEUE_OFFSET)
        if prepared is None:
            return await self._put_ok(renew_immunity_half_message_inner(msg, props))
        off = java_long(prepared)
        if off == -1:
            return False
        op_off = st.remove_map.pop(off, None)
        if op_off is not None:
            st.done_op_offset.append(op_off)
            return True
        return await self._put_ok(renew_immunity_half_message_inner(msg, props))

    async def _put_ok(self, inner: m.MessageExtBrokerInner) -> bool:
        r = await self._put(inner)
        if r.put_message_status != PutMessageStatus.PUT_OK:
            log.error("Put message failed, topic: %s, queueId: %d", inner.topic, inner.queue_id)
            return False
        return True

    async def _put_back_half_msg_queue(self, msg: m.StoredMessage, props: dict[str, str]) -> m.StoredMessage | None:
        """Java putBackHalfMsgQueue: append again; the returned view has the new offsets and id."""
        inner = renew_half_message_inner(msg, props)
        r = await self._put(inner)
        amr = r.append_message_result
        if r.put_message_status != PutMessageStatus.PUT_OK or amr is None:
            log.error("PutBackToHalfQueueReturnResult write failed, topic: %s, queueId: %d", msg.topic, msg.queue_id)
            return None
        from dataclasses import replace

        return replace(msg, queue_offset=amr.logics_offset, commit_log_offset=amr.wrote_offset, properties=props)

    async def check(self, transaction_timeout: int, check_max: int, listener: CheckListener) -> None:
        """Java TransactionalMessageServiceImpl#check, one pass over every half queue."""
        try:
            queues = self.fetch_message_queues(RMQ_SYS_TRANS_HALF_TOPIC)
            if not queues:
                log.warning("The queue of topic is empty: %s", RMQ_SYS_TRANS_HALF_TOPIC)
                return
            for qid in queues:
                await self._check_queue(qid, transaction_timeout, check_max, listener)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("Check error")

    async def _check_queue(self, qid: int, transaction_timeout: int, check_max: int, listener: CheckListener) -> None:
        start = self.now()
        half_offset = self.fetch_consume_offset(RMQ_SYS_TRANS_HALF_TOPIC, qid)
        op_offset = self.fetch_consume_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC, qid)
        if half_offset < 0 or op_offset < 0:
            log.error("half queue %d illegal offset read: %d, op offset: %d, skip", qid, half_offset, op_offset)
            return
        st = _CheckState()
        pull = self._fill_op_remove_map(st, qid, op_offset, half_offset)
        null_count = 1
        escape_fail_count = 0
        new_offset = i = half_offset
        next_op_offset = pull.next_begin_offset
        while True:
            if self.now() - start > MAX_PROCESS_TIME_LIMIT_MS:
                log.info("half queue %d: process time reached %d ms", qid, MAX_PROCESS_TIME_LIMIT_MS)
                break
            removed_op = st.remove_map.pop(i, None)
            if removed_op is not None:
                halves = st.op_msg_map.get(removed_op)
                if halves is not None:
                    halves.discard(i)
                    if not halves:
                        del st.op_msg_map[removed_op]
                        st.done_op_offset.append(removed_op)
            else:
                half = self.get_half_message(qid, i, 1)
                msg = half.msg_found_list[0] if half.msg_found_list else None
                if msg is None:
                    null_count += 1
                    if null_count - 1 > MAX_RETRY_COUNT_WHEN_HALF_NULL:
                        break
                    if half.status == PullStatus.NO_NEW_MSG or _never_written(half, i):
                        break
                    log.info("Illegal offset, the miss offset=%d in half queue %d (%s)", i, qid, half.status)
                    i = new_offset = half.next_begin_offset
                    continue
                props = dict(msg.properties)
                if self.escape_message is not None and self.acting_slave():
                    # Java: an acting slave checks nothing itself; every open half message goes
                    # to another group, which asks the producer
                    if await self.escape_message(renew_half_message_inner(msg, props)):
                        escape_fail_count = 0
                    elif escape_fail_count < MAX_RETRY_TIMES_FOR_ESCAPE:
                        escape_fail_count += 1
                        log.warning(
                            "Escaping transactional message failed %d times! UNIQ_KEY(transactionId)=%s",
                            escape_fail_count,
                            props.get(MC.UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
                        )
                        await asyncio.sleep(0.1 * (2 ^ escape_fail_count))  # Java's XOR, kept
                        continue
                    else:
                        escape_fail_count = 0
                    new_offset = i + 1
                    i += 1
                    continue
                if self._need_discard(props, check_max) or self._need_skip(msg):
                    await listener.resolve_discard_msg(msg)
                    new_offset = i + 1
                    i += 1
                    continue
                if msg.store_timestamp >= start:
                    break  # fresh: later
                now = self.now()
                since_born = now - msg.born_timestamp
                immunity = transaction_timeout
                immunity_str = props.get(MC.CHECK_IMMUNITY_TIME_IN_SECONDS)
                if immunity_str is not None:
                    v = java_long(immunity_str)
                    immunity = transaction_timeout if v == -1 else v * 1000
                    if since_born <= immunity:
                        if await self._check_prepare_queue_offset(st, msg, props):
                            new_offset = i + 1
                            i += 1
                            continue
                elif 0 <= since_born <= immunity:
                    break  # new arrived: later
                op_msgs = pull.msg_found_list if pull is not None else None
                need_check = (
                    (op_msgs is None and since_born > immunity)
                    or (op_msgs is not None and op_msgs[-1].born_timestamp - start > transaction_timeout)
                    or since_born <= -1
                )
                if need_check:
                    renewed = await self._put_back_half_msg_queue(msg, props)
                    if renewed is None:
                        continue
                    log.info(
                        "Check transaction. real_topic=%s, uniqKey=%s, offset=%d, commitLogOffset=%d",
                        props.get(MC.REAL_TOPIC),
                        props.get(MC.UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
                        renewed.queue_offset,
                        renewed.commit_log_offset,
                    )
                    listener.resolve_half_msg(renewed)
                else:
                    next_op_offset = pull.next_begin_offset if pull is not None else next_op_offset
                    pull = self._fill_op_remove_map(st, qid, next_op_offset, half_offset)
                    if pull.status in (PullStatus.NO_NEW_MSG, PullStatus.OFFSET_ILLEGAL, PullStatus.NO_MATCHED_MSG):
                        await asyncio.sleep(SLEEP_WHILE_NO_OP_S)
                    continue
            new_offset = i + 1
            i += 1
        if new_offset != half_offset:
            self.update_consume_offset(RMQ_SYS_TRANS_HALF_TOPIC, qid, new_offset)
        new_op_offset = _calculate_op_offset(st.done_op_offset, op_offset)
        if new_op_offset != op_offset:
            self.update_consume_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC, qid, new_op_offset)


def _calculate_op_offset(done: list[int], old: int) -> int:
    new = old
    for off in sorted(done):
        if off == new:
            new += 1
        else:
            break
    return new
