"""The consume-queue flush pass (Java FlushConsumeQueueService) and the mapping of new
consume-queue files.

A pass flushes each queue only once flushConsumeQueueLeastPages are dirty, every queue only in the
thorough pass; the checkpoint on disk never holds a logicsMsgTimestamp newer than the queues on
disk. New consume-queue files are mapped without the kernel's read-around (MADV_RANDOM), which
otherwise fills up to read_ahead_kb of page cache at their first write.
"""

from __future__ import annotations

import os
import re
import time

import pytest

from pyrmq.store.checkpoint import CHECKPOINT_LAYOUT
from pyrmq.store.consume_queue import ConsumeQueue
from pyrmq.store.message_store import MessageStore


def _disk_logics_ts(path: str) -> int:
    with open(path, "rb") as f:
        return CHECKPOINT_LAYOUT.unpack(f.read(CHECKPOINT_LAYOUT.size))[1]


def _wait(cond, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def _running_store(tmp_path, clock, config_factory, thorough_interval_ms: int) -> MessageStore:
    """Passes every 20 ms, 20 KB consume-queue files, flushConsumeQueueLeastPages 2."""
    config = config_factory(
        tmp_path,
        flush_interval_consume_queue=20,
        mapped_file_size_consume_queue=20 * 1000,
        flush_consume_queue_least_pages=2,
        flush_consume_queue_thorough_interval=thorough_interval_ms,
    )
    s = MessageStore(config, clock=clock)
    s.load()
    s.start()
    return s


def test_a_pass_leaves_a_queue_below_least_pages_and_the_checkpoint_keeps_the_old_logics_time(
    tmp_path, clock, config_factory, msg_factory
):
    s = _running_store(tmp_path, clock, config_factory, thorough_interval_ms=3_600_000)
    try:
        assert s.put_message(msg_factory(0)).is_ok()
        cq = s.find_consume_queue("T", 0)
        assert _wait(lambda: cq.get_max_offset_in_queue() == 1)
        assert s.checkpoint.logics_msg_timestamp == clock.now()  # in memory: the put's time
        time.sleep(0.3)  # ~15 passes
        assert cq.mapped_file_queue.flushed_where == 0  # 20 bytes dirty, fewer than 2 pages
        assert _disk_logics_ts(s.config.checkpoint_path) == 0
    finally:
        s.shutdown()
    # shutdown flushes everything, then the checkpoint with the latest time
    assert _disk_logics_ts(s.config.checkpoint_path) == clock.now()


def test_the_thorough_pass_flushes_every_queue_then_moves_the_logics_time(tmp_path, clock, config_factory, msg_factory):
    s = _running_store(tmp_path, clock, config_factory, thorough_interval_ms=100)
    try:
        assert s.put_message(msg_factory(0)).is_ok()
        assert s.put_message(msg_factory(1, queue_id=1)).is_ok()
        put_time = clock.now()
        queues = [s.find_consume_queue("T", q) for q in (0, 1)]
        assert _wait(lambda: all(cq.mapped_file_queue.flushed_where == 20 for cq in queues))
        assert _wait(lambda: _disk_logics_ts(s.config.checkpoint_path) == put_time)
    finally:
        s.shutdown()


def _vm_flags(path: str) -> list[str]:
    """VmFlags of this process's mappings of `path` (/proc/self/smaps)."""
    flags, current = [], None
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split(None, 5)
            if re.match(r"[0-9a-f]+-[0-9a-f]+$", head[0]):  # a mapping's first line
                current = head[5].strip() if len(head) == 6 else None
            elif line.startswith("VmFlags:") and current == path:
                flags.append(line.split(":", 1)[1].split())
    return flags


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs Linux /proc")
def test_a_new_consume_queue_file_is_mapped_for_random_access_and_a_loaded_one_is_not(tmp_path):
    cq = ConsumeQueue("T", 0, str(tmp_path), 20 * 1000)
    cq.load()
    assert cq.put_message_position_info(0, 100, 7, 0)
    path = cq.mapped_file_queue.mapped_files[0].file_name
    flags = _vm_flags(path)
    assert flags and all("rr" in f for f in flags)  # MADV_RANDOM
    cq.shutdown()

    again = ConsumeQueue("T", 0, str(tmp_path), 20 * 1000)
    again.load()
    flags = _vm_flags(path)
    assert flags and not any("rr" in f for f in flags)  # recovery reads it in order: read-around helps
    again.shutdown()


@pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="needs Linux /proc")
def test_consume_queue_files_hold_no_descriptor_and_still_reserve_flush_and_read(tmp_path):
    """10,000 topics x 8 queues are 80,000 files, each a descriptor against the open-file limit.
    CPython 3.11's mmap keeps a duplicate of the descriptor it maps; the file's own one is opened
    only to reserve space and flush, so a file costs one descriptor, as a Java MappedFile does."""
    before = len(os.listdir("/proc/self/fd"))
    queues = [ConsumeQueue(f"T{i}", 0, str(tmp_path), 20 * 1000) for i in range(300)]
    for i, cq in enumerate(queues):
        cq.load()
        for n in range(250):  # 5,000 bytes: past the first 4 KiB reservation
            assert cq.put_message_position_info(1000 * i + n, 100, 7, n)
    assert len(os.listdir("/proc/self/fd")) - before < 300 + 10  # the mappings' own
    for cq in queues:
        assert cq.flush(0) is False  # something was flushed
        assert cq.mapped_file_queue.flushed_where == 250 * 20
    assert queues[7].get(249) == (7249, 100, 7)
    for cq in queues:
        cq.shutdown()
    with open(tmp_path / "T7" / "0" / "00000000000000000000", "rb") as f:
        f.seek(249 * 20)
        assert int.from_bytes(f.read(8), "big") == 7249
