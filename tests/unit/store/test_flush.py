"""SYNC_FLUSH acknowledges only after msync covered the record; a failing msync fails the put."""

from __future__ import annotations

import threading
import time

from pyrmq.store.message_store import MessageStore
from pyrmq.store.results import PutMessageStatus


class RecordingSync:
    def __init__(self) -> None:
        self.fail = False
        self.calls: list[tuple[int, int]] = []
        self.block = threading.Event()
        self.block.set()

    def __call__(self, mm, offset, length):
        self.block.wait(10)
        if self.fail:
            raise OSError(5, "Input/output error (injected)")
        mm.flush(offset, length)
        self.calls.append((offset, length))


def _store(tmp_path, clock, config_factory, sync, **kw):
    s = MessageStore(config_factory(tmp_path, flush_disk_type="SYNC_FLUSH", **kw), clock=clock, sync=sync)
    s.load()
    s.start()
    return s


def test_sync_flush_ack_after_msync(tmp_path, clock, config_factory, msg_factory):
    sync = RecordingSync()
    s = _store(tmp_path, clock, config_factory, sync)
    try:
        sync.block.clear()  # hold the disk
        fut = s.put_message_async(msg_factory(0))
        time.sleep(0.05)
        assert not fut.done()  # the disk is held: no ack yet
        sync.block.set()
        r = fut.result(timeout=5)
        assert r.is_ok()
        end = r.append_message_result.wrote_offset + r.append_message_result.wrote_bytes
        assert s.commit_log.mapped_file_queue.flushed_where >= end
        assert sync.calls and sync.calls[-1][0] + sync.calls[-1][1] >= end
    finally:
        s.shutdown()


def test_failing_msync_fails_the_put(tmp_path, clock, config_factory, msg_factory):
    sync = RecordingSync()
    s = _store(tmp_path, clock, config_factory, sync)
    try:
        sync.fail = True
        r = s.put_message(msg_factory(0))
        assert not r.is_ok()
        assert r.put_message_status is PutMessageStatus.UNKNOWN_ERROR and "Input/output" in r.error
        sync.fail = False
        r2 = s.put_message(msg_factory(1))
        assert r2.is_ok()
    finally:
        s.shutdown()


def test_sync_flush_timeout(tmp_path, clock, config_factory, msg_factory):
    sync = RecordingSync()
    s = _store(tmp_path, clock, config_factory, sync, sync_flush_timeout=200)
    try:
        sync.block.clear()
        r = s.put_message(msg_factory(0))
        assert r.put_message_status is PutMessageStatus.FLUSH_DISK_TIMEOUT and not r.is_ok()
    finally:
        sync.block.set()
        s.shutdown()


def test_wait_false_returns_at_once(tmp_path, clock, config_factory, msg_factory):
    sync = RecordingSync()
    s = _store(tmp_path, clock, config_factory, sync)
    try:
        sync.block.clear()
        r = s.put_message(msg_factory(0, WAIT="false"))
        assert r.is_ok()
    finally:
        sync.block.set()
        s.shutdown()


def test_async_flush_eventually_flushes(tmp_path, clock, config_factory, msg_factory):
    import time

    sync = RecordingSync()
    s = MessageStore(
        config_factory(tmp_path, flush_interval_commit_log=20, flush_commit_log_thorough_interval=50),
        clock=clock,
        sync=sync,
    )
    s.load()
    s.start()
    try:
        r = s.put_message(msg_factory(0))
        end = r.append_message_result.wrote_offset + r.append_message_result.wrote_bytes
        deadline = time.monotonic() + 5
        while s.commit_log.mapped_file_queue.flushed_where < end and time.monotonic() < deadline:
            time.sleep(0.02)
        assert s.commit_log.mapped_file_queue.flushed_where >= end
        assert s.checkpoint.physic_msg_timestamp == clock.now()
    finally:
        s.shutdown()


def test_switch_to_async_flush_at_runtime_stops_the_wait(tmp_path, clock, config_factory, msg_factory):
    """updateBrokerConfig flushDiskType=ASYNC_FLUSH on a SYNC_FLUSH store: sends are acked
    without waiting for msync from then on (Java DefaultFlushManager reads the config per put);
    the started group-commit service still flushes them."""
    from pyrmq.store.store_config import FlushDiskType

    sync = RecordingSync()
    s = _store(tmp_path, clock, config_factory, sync)
    try:
        sync.block.clear()
        held = s.put_message_async(msg_factory(0))
        time.sleep(0.05)
        assert not held.done()
        s.config.apply_properties({"flushDiskType": "ASYNC_FLUSH"})
        assert s.config.flush_disk_type is FlushDiskType.ASYNC_FLUSH
        fast = s.put_message_async(msg_factory(1))
        assert fast.done() and fast.result().is_ok()  # acked with the disk still held
        sync.block.set()
        assert held.result(timeout=5).is_ok()
        end = fast.result().append_message_result.wrote_offset + fast.result().append_message_result.wrote_bytes
        deadline = time.monotonic() + 5
        while s.commit_log.mapped_file_queue.flushed_where < end and time.monotonic() < deadline:
            time.sleep(0.01)
        assert s.commit_log.mapped_file_queue.flushed_where >= end
    finally:
        s.shutdown()
