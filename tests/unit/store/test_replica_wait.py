"""A SYNC_MASTER put that waits (WAIT=true) asks the store's ReplicaAcks for inSyncReplicas acks
and answers what they say (Java CommitLog#handleHA, #handleDiskFlushAndHA); other puts never ask."""

from __future__ import annotations

from concurrent.futures import Future

import pytest

from pyrmq.store import message as m
from pyrmq.store.commitlog import MessageExtBatch
from pyrmq.store.results import PutMessageStatus
from pyrmq.store.store_config import BrokerRole, FlushDiskType

from .conftest import make_msg


def _batch_body() -> bytes:
    return m.encode_batch_body([m.BatchElement(b"a", "UNIQ_KEY\x01U1", 0), m.BatchElement(b"bb", "UNIQ_KEY\x01U2", 0)])


class FakeAcks:
    """Records each request; answers with `status` at once, or leaves the Future pending."""

    controller_mode = False

    def __init__(self, status: PutMessageStatus | None = PutMessageStatus.PUT_OK) -> None:
        self.status = status
        self.requests: list[tuple[int, int, int]] = []
        self.futures: list[Future[PutMessageStatus]] = []

    def request(self, next_offset: int, ack_nums: int, timeout_ms: int) -> Future[PutMessageStatus]:
        self.requests.append((next_offset, ack_nums, timeout_ms))
        fut: Future[PutMessageStatus] = Future()
        if self.status is not None:
            fut.set_result(self.status)
        self.futures.append(fut)
        return fut


def sync_master(open_store, acks, **kw):
    kw.setdefault("in_sync_replicas", 2)
    s = open_store(broker_role=BrokerRole.SYNC_MASTER, **kw)
    s.ha_service = acks
    return s


def test_acks_ok_is_put_ok_and_asks_for_the_record_end(open_store):
    acks = FakeAcks()
    s = sync_master(open_store, acks, slave_timeout=1234)
    r = s.put_message(make_msg(1))
    assert r.put_message_status is PutMessageStatus.PUT_OK and r.is_ok()
    amr = r.append_message_result
    assert acks.requests == [(amr.wrote_offset + amr.wrote_bytes, 2, 1234)]


def test_ack_timeout_is_flush_slave_timeout(open_store):
    acks = FakeAcks(PutMessageStatus.FLUSH_SLAVE_TIMEOUT)
    s = sync_master(open_store, acks)
    r = s.put_message(make_msg(1))
    assert r.put_message_status is PutMessageStatus.FLUSH_SLAVE_TIMEOUT
    assert r.append_message_result is not None and r.append_message_result.is_ok()  # it was written


def test_the_put_waits_for_the_acks(open_store):
    acks = FakeAcks(None)
    s = sync_master(open_store, acks)
    fut = s.put_message_async(make_msg(1))
    assert not fut.done()
    acks.futures[0].set_result(PutMessageStatus.PUT_OK)
    assert fut.result(timeout=5).put_message_status is PutMessageStatus.PUT_OK


def test_replica_status_wins_over_a_flush_ok(open_store):
    acks = FakeAcks(None)
    s = sync_master(open_store, acks, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    fut = s.put_message_async(make_msg(1))
    acks.futures[0].set_result(PutMessageStatus.FLUSH_SLAVE_TIMEOUT)
    assert fut.result(timeout=5).put_message_status is PutMessageStatus.FLUSH_SLAVE_TIMEOUT
    assert s.commit_log.mapped_file_queue.flushed_where == s.get_max_phy_offset()  # the flush ran too


@pytest.mark.parametrize("replicas", [0, 1])
def test_one_in_sync_replica_does_not_wait(open_store, replicas):
    acks = FakeAcks(None)
    s = sync_master(open_store, acks, in_sync_replicas=replicas)
    assert s.put_message(make_msg(1)).put_message_status is PutMessageStatus.PUT_OK
    assert acks.requests == []


def test_wait_false_does_not_wait(open_store):
    acks = FakeAcks(None)
    s = sync_master(open_store, acks)
    assert s.put_message(make_msg(1, WAIT="false")).put_message_status is PutMessageStatus.PUT_OK
    batch = MessageExtBatch(topic="B", body=_batch_body(), wait_store_msg_ok=False)
    assert s.put_messages(batch).put_message_status is PutMessageStatus.PUT_OK
    assert acks.requests == []


def test_async_master_does_not_wait(open_store):
    acks = FakeAcks(None)
    s = open_store(broker_role=BrokerRole.ASYNC_MASTER, in_sync_replicas=2)
    s.ha_service = acks
    assert s.put_message(make_msg(1)).put_message_status is PutMessageStatus.PUT_OK
    assert acks.requests == []


def test_batch_waits_for_its_end(open_store):
    acks = FakeAcks(PutMessageStatus.FLUSH_SLAVE_TIMEOUT)
    s = sync_master(open_store, acks)
    r = s.put_messages(MessageExtBatch(topic="B", body=_batch_body()))
    assert r.put_message_status is PutMessageStatus.FLUSH_SLAVE_TIMEOUT
    assert acks.requests == [(s.get_max_phy_offset(), 2, 3000)]


def test_no_ha_service_is_flush_slave_timeout(open_store):
    s = open_store(broker_role=BrokerRole.SYNC_MASTER, in_sync_replicas=2)
    assert s.put_message(make_msg(1)).put_message_status is PutMessageStatus.FLUSH_SLAVE_TIMEOUT
