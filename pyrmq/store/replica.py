"""What a SYNC_MASTER put waits for besides the flush: enough replicas holding the record.

Java: CommitLog#needHandleHA, #handleHA and #handleDiskFlushAndHA. The store knows the HA service
only through ``ReplicaAcks`` (the broker sets ``MessageStore.ha_service``), so it stays free of
asyncio and of pyrmq.ha; the HA service completes the returned Future from its own thread.
"""

from __future__ import annotations

import contextlib
import dataclasses
from concurrent.futures import Future, InvalidStateError
from typing import Protocol

from pyrmq.store.results import PutMessageResult, PutMessageStatus
from pyrmq.store.store_config import BrokerRole, MessageStoreConfig

#: MixAll.ALL_ACK_IN_SYNC_STATE_SET
ALL_ACK_IN_SYNC_STATE_SET = -1


class ReplicaAcks(Protocol):
    """The HA service as the put path sees it. Java HAService#putRequest(GroupCommitRequest)."""

    #: controller mode: allAckInSyncStateSet asks for every member of the sync state set
    controller_mode: bool

    def in_sync_replicas_nums(self, master_put_where: int) -> int:
        """Replicas in sync, the master included (controller mode: the sync state set's size)."""
        ...

    def request(self, next_offset: int, ack_nums: int, timeout_ms: int) -> Future[PutMessageStatus]:
        """PUT_OK once ``ack_nums`` replicas (the master counts as one; -1: every member of the
        sync state set) hold the commit log up to ``next_offset``, FLUSH_SLAVE_TIMEOUT after
        ``timeout_ms``. Callable from any thread."""
        ...


def need_handle_ha(config: MessageStoreConfig, wait_store_msg_ok: bool) -> bool:
    """Java CommitLog#needHandleHA: the producer waits (WAIT) and this broker is a SYNC_MASTER
    (duplicationEnable, which pyrmq does not have, would turn it off)."""
    return wait_store_msg_ok and BrokerRole(config.broker_role) is BrokerRole.SYNC_MASTER


def check_in_sync_replicas(
    config: MessageStoreConfig, acks: ReplicaAcks | None, wait_store_msg_ok: bool, put_where: int
) -> PutMessageResult | None:
    """Before a controller-mode SYNC_MASTER put that waits is written: IN_SYNC_REPLICAS_NOT_ENOUGH
    when the sync state set is smaller than minInSyncReplicas (nothing is written then). Java
    CommitLog#asyncPutMessage(s), the enableControllerMode branch."""
    if acks is None or not acks.controller_mode or not need_handle_ha(config, wait_store_msg_ok):
        return None
    if acks.in_sync_replicas_nums(put_where) < config.min_in_sync_replicas:
        return PutMessageResult(PutMessageStatus.IN_SYNC_REPLICAS_NOT_ENOUGH)
    return None


def handle_ha(
    config: MessageStoreConfig, acks: ReplicaAcks | None, result: PutMessageResult
) -> Future[PutMessageStatus] | None:
    """The replica wait of one appended record or batch; None when there is nothing to wait for
    (inSyncReplicas <= 1). Java CommitLog#handleHA. Without an HA service (a store used alone) no
    slave can ever acknowledge: FLUSH_SLAVE_TIMEOUT at once instead of after slaveTimeout."""
    need_ack_nums = config.in_sync_replicas
    if config.all_ack_in_sync_state_set and acks is not None and acks.controller_mode:
        need_ack_nums = ALL_ACK_IN_SYNC_STATE_SET  # Java CommitLog#asyncPutMessage, controller mode
    if 0 <= need_ack_nums <= 1:
        return None
    amr = result.append_message_result
    assert amr is not None
    if acks is None:
        fut: Future[PutMessageStatus] = Future()
        fut.set_result(PutMessageStatus.FLUSH_SLAVE_TIMEOUT)
        return fut
    return acks.request(amr.wrote_offset + amr.wrote_bytes, need_ack_nums, config.slave_timeout)


def combine_flush_and_ha(
    flush: Future[PutMessageResult], replica: Future[PutMessageStatus]
) -> Future[PutMessageResult]:
    """Both waits done: the flush's result, with the replica status when that is not PUT_OK
    (it wins over a flush failure, as in Java CommitLog#handleDiskFlushAndHA)."""
    out: Future[PutMessageResult] = Future()

    def done(_: object) -> None:
        if not (flush.done() and replica.done()):
            return
        try:
            value = flush.result()
            status = replica.result()
        except Exception as e:  # a failed wait is a failed put, never a false PUT_OK
            value = PutMessageResult(PutMessageStatus.UNKNOWN_ERROR, error=f"put wait failed: {e}")
            status = PutMessageStatus.PUT_OK
        if status is not PutMessageStatus.PUT_OK:
            value = dataclasses.replace(value, put_message_status=status)
        with contextlib.suppress(InvalidStateError):  # both callbacks may see both done
            out.set_result(value)

    flush.add_done_callback(done)
    replica.add_done_callback(done)
    return out


__all__ = [
    "ALL_ACK_IN_SYNC_STATE_SET",
    "ReplicaAcks",
    "check_in_sync_replicas",
    "combine_flush_and_ha",
    "handle_ha",
    "need_handle_ha",
]
