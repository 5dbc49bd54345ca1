"""SYNC_FLUSH makes a record readable (consume queue, index, dispatch listener) only once it is
flushed, like Java 5.x's ReputMessageService bounded by CommitLog#getConfirmOffset; and group
commit lets concurrent puts share a flush."""

from __future__ import annotations

import threading
import time

from pyrmq.store.message_store import MessageStore
from pyrmq.store.results import GetMessageStatus


class HeldSync:
    """SyncFn that blocks while `hold` is clear and counts the syncs that ran."""

    def __init__(self) -> None:
        self.hold = threading.Event()
        self.hold.set()
        self.calls = 0

    def __call__(self, mm, offset, length):
        self.hold.wait(10)
        mm.flush(offset, length)
        self.calls += 1


def _open(tmp_path, clock, config_factory, sync, seen, **kw):
    cfg = config_factory(tmp_path, flush_disk_type="SYNC_FLUSH", mapped_file_size_commit_log=1 << 20, **kw)
    s = MessageStore(cfg, clock=clock, sync=sync, on_dispatched=lambda t, q, mx, tc, req: seen.append((t, q, mx)))
    s.load()
    s.start()
    return s


def _wait_for(cond, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_unflushed_record_is_not_readable(tmp_path, clock, config_factory, msg_factory):
    sync, seen = HeldSync(), []
    s = _open(tmp_path, clock, config_factory, sync, seen)
    try:
        sync.hold.clear()
        fut = s.put_message_async(msg_factory(0, queue_id=1))  # waits for the flush
        r2 = s.put_message(msg_factory(1, queue_id=1, WAIT="false"))  # acked at once, not durable
        assert r2.is_ok() and not fut.done()
        time.sleep(0.05)
        assert s.get_max_offset_in_queue("T", 1) == 0
        assert s.get_message("g", "T", 1, 0, 32).status is not GetMessageStatus.FOUND
        assert s.query_message("T", "UNIQ00000000", 10, 0, 2**62).phy_offsets == []
        assert seen == []
        sync.hold.set()
        assert fut.result(timeout=5).is_ok()
        # acknowledged => readable and its long-polling listener already fired
        assert s.get_max_offset_in_queue("T", 1) >= 1 and seen[0] == ("T", 1, 1)
        _wait_for(lambda: s.get_max_offset_in_queue("T", 1) == 2)  # WAIT=false: next flush
        got = s.get_message("g", "T", 1, 0, 32)
        assert got.status is GetMessageStatus.FOUND and got.message_count == 2
        got.release()
        assert seen == [("T", 1, 1), ("T", 1, 2)]
        assert s.query_message("T", "UNIQ00000001", 10, 0, 2**62).phy_offsets == [r2.append_message_result.wrote_offset]
    finally:
        sync.hold.set()
        s.shutdown()


def test_read_un_committed_dispatches_before_the_flush(tmp_path, clock, config_factory, msg_factory):
    sync, seen = HeldSync(), []
    s = _open(tmp_path, clock, config_factory, sync, seen, read_un_committed=True)
    try:
        sync.hold.clear()
        fut = s.put_message_async(msg_factory(0, queue_id=2))
        assert s.get_max_offset_in_queue("T", 2) == 1 and seen == [("T", 2, 1)]
        assert not fut.done()
        sync.hold.set()
        assert fut.result(timeout=5).is_ok()
    finally:
        sync.hold.set()
        s.shutdown()


def test_shutdown_dispatches_the_last_flushed_records(tmp_path, clock, config_factory, msg_factory):
    sync, seen = HeldSync(), []
    s = _open(tmp_path, clock, config_factory, sync, seen)
    sync.hold.clear()
    futs = [s.put_message_async(msg_factory(i, WAIT="false")) for i in range(3)]
    assert all(f.result(timeout=1).is_ok() for f in futs)
    sync.hold.set()
    s.shutdown()
    assert s.reput_message_service.behind() == 0
    assert not (tmp_path / "abort").exists()  # dispatch caught up: clean shutdown
    s2 = MessageStore(config_factory(tmp_path, flush_disk_type="SYNC_FLUSH", mapped_file_size_commit_log=1 << 20))
    s2.load()
    try:
        assert s2.last_exit_ok and s2.get_max_offset_in_queue("T", 0) == 3
    finally:
        s2.shutdown()


def test_group_commit_shares_flushes_between_concurrent_puts(tmp_path, clock, config_factory, msg_factory):
    sync, seen = HeldSync(), []
    s = _open(tmp_path, clock, config_factory, sync, seen)
    try:
        sync.hold.clear()
        futs = [s.put_message_async(msg_factory(i, queue_id=3)) for i in range(50)]
        time.sleep(0.05)
        sync.hold.set()
        results = [f.result(timeout=5) for f in futs]
        assert all(r.is_ok() for r in results)
        assert sync.calls <= 5  # 50 waiting puts, a handful of syncs
        assert s.get_max_offset_in_queue("T", 3) == 50 and len(seen) == 50
    finally:
        sync.hold.set()
        s.shutdown()
