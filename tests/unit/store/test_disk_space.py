"""Disk space reserved before mapped writes, and what a full disk does to puts and dispatch.

The filesystem's answer is injected: `NoSpace` stands in for posix_fallocate and answers ENOSPC
for the files of one folder (or past a budget of calls), so a full disk is reached at an exact
point without a small filesystem (tests/reliability/test_disk_full.py does it on real tmpfs mounts).
"""

from __future__ import annotations

import errno
import os

import pytest

from pyrmq.store import space
from pyrmq.store.mapped_file import MappedFile
from pyrmq.store.results import GetMessageStatus, PutMessageStatus
from pyrmq.store.running_flags import RunningFlag


class NoSpace:
    """posix_fallocate that fails with ENOSPC for files under `full_under` (all files: "/") or
    after `budget` more allocations there; the calls it saw."""

    def __init__(self, real=os.posix_fallocate) -> None:
        self.real = real
        self.full_under: str | None = None
        self.budget: int | None = None
        self.max_length: int | None = None
        self.calls: list[tuple[int, int]] = []

    def __call__(self, fd: int, offset: int, length: int) -> None:
        self.calls.append((offset, length))
        if self.max_length is not None and length > self.max_length:
            raise OSError(errno.ENOSPC, "No space left on device")
        if self.full_under is not None and os.readlink(f"/proc/self/fd/{fd}").startswith(self.full_under):
            if self.budget is None or self.budget <= 0:
                raise OSError(errno.ENOSPC, "No space left on device")
            self.budget -= 1
        self.real(fd, offset, length)


@pytest.fixture
def fallocate(monkeypatch):
    f = NoSpace()
    monkeypatch.setattr(space.os, "posix_fallocate", f)
    return f


def test_reservation_runs_ahead_and_keeps_size_and_bytes(tmp_path, fallocate) -> None:
    path = tmp_path / "00000000000000000000"
    mf = MappedFile(str(path), 1 << 20, reserve_ahead=64 * 1024)
    try:
        assert mf.append_message(b"x" * 100)
        assert mf.reserved == 64 * 1024 + 4096  # the page of the write, then 64 KiB ahead
        assert fallocate.calls == [(0, mf.reserved)]
        for _ in range(600):  # 60 KB more: still inside the reservation, no new call
            assert mf.append_message(b"y" * 100)
        assert len(fallocate.calls) == 1
        assert os.path.getsize(path) == 1 << 20  # the size Java expects
        assert os.stat(path).st_blocks * 512 >= mf.reserved  # really allocated
        data = path.read_bytes()
        assert data[:100] == b"x" * 100 and data[60_100 : 1 << 20] == bytes((1 << 20) - 60_100)
    finally:
        mf.close()


def test_reservation_falls_back_to_what_the_write_needs_then_refuses(tmp_path, fallocate) -> None:
    mf = MappedFile(str(tmp_path / "00000000000000000000"), 1 << 20, reserve_ahead=64 * 1024)
    fallocate.max_length = 8192
    try:
        assert mf.append_message(b"a" * 5000)  # the ahead request fails, two pages succeed
        assert mf.reserved == 8192
        fallocate.full_under = "/"
        with pytest.raises(space.DiskFullError):
            mf.append_message(b"b" * 5000)
        assert mf.wrote_position == 5000  # nothing written
    finally:
        mf.close()


def test_full_disk_refuses_puts_with_disk_full_flag_then_resumes(open_store, msg_factory, fallocate) -> None:
    s = open_store()  # 4 KiB commit-log files: each new file needs a reservation
    assert s.put_message(msg_factory(0)).is_ok()
    fallocate.full_under = s.config.commit_log_dir
    # fill what the reservation made room for, until the commit log asks for more
    n, r = 1, s.put_message(msg_factory(1))
    while r.is_ok():
        n += 1
        r = s.put_message(msg_factory(n))
    assert r.put_message_status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert s.running_flags.is_set(RunningFlag.DISK_FULL)
    max_before = s.get_max_phy_offset()
    r = s.put_message(msg_factory(n + 1))  # refused before the commit log: nothing written
    assert r.put_message_status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert s.get_max_phy_offset() == max_before
    s._retry_after_disk_full()  # still full: still refused
    assert not s.running_flags.is_writeable()
    fallocate.full_under = None
    s._retry_after_disk_full()
    assert s.running_flags.is_writeable()
    assert s.put_message(msg_factory(n + 2)).is_ok()
    assert s.get_max_offset_in_queue("T", 0) == n + 1  # every accepted message has its entry


class SmallDisk:
    """os.statvfs of a partition of `files` commit-log files that holds only the commit log's
    allocated blocks (and `filler` bytes): tmpfs as the reliability test mounts it."""

    def __init__(self, commit_log_dir: str, files: int, file_size: int) -> None:
        self.dir, self.total, self.filler = commit_log_dir, files * file_size, 0

    def used(self) -> int:
        names = os.listdir(self.dir) if os.path.isdir(self.dir) else []
        return self.filler + sum(os.stat(os.path.join(self.dir, n)).st_blocks * 512 for n in names)

    def __call__(self, path: str) -> os.statvfs_result:
        free = max(0, self.total - self.used())
        return os.statvfs_result((1, 1, self.total, free, free, 0, 0, 0, 0, 255))


def test_resumes_when_its_own_reservation_fills_the_freed_space(
    open_store, msg_factory, fallocate, monkeypatch
) -> None:
    """Space freed to exactly one commit-log file: resuming reserves the next file's stretch, and
    that reservation alone must not read as a disk over diskSpaceWarningLevelRatio."""
    from pyrmq.store import cleanup

    s = open_store()
    size = s.config.mapped_file_size_commit_log
    disk = SmallDisk(s.config.commit_log_dir, 3, size)
    monkeypatch.setattr(cleanup.os, "statvfs", disk)
    n, r = 0, s.put_message(msg_factory(0))
    while s.commit_log.mapped_file_queue.get_last_mapped_file().file_from_offset < size:  # into file 2
        n += 1
        r = s.put_message(msg_factory(n))
    fallocate.full_under, disk.filler = s.config.commit_log_dir, size  # the third file's worth, taken
    while r.is_ok():
        n += 1
        r = s.put_message(msg_factory(n))
    assert r.put_message_status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    fallocate.full_under, disk.filler = None, 0  # freed: exactly one file's worth
    s._retry_after_disk_full()
    assert s.commit_log.space_reserved_ahead(s.config.commit_log_dir) > 0  # the next stretch is held
    assert disk.used() == disk.total  # which a plain statvfs reads as a full disk
    assert s.cleaner.commit_log_ratio() < s.cleaner.disk_space_warning_level_ratio()
    assert s.running_flags.is_writeable()
    assert s.put_message(msg_factory(n + 1)).is_ok()


def test_partition_ratio_counts_reserved_space_as_free(monkeypatch) -> None:
    from pyrmq.store import cleanup

    monkeypatch.setattr(cleanup.os, "statvfs", lambda p: os.statvfs_result((1, 1, 100, 10, 10, 0, 0, 0, 0, 255)))
    assert cleanup.disk_partition_space_used_percent("/") == 0.90
    assert cleanup.disk_partition_space_used_percent("/", 30) == 0.60
    assert cleanup.disk_partition_space_used_percent("/", 500) == 0.0  # never below empty


def test_consume_queue_without_space_stalls_dispatch_and_catches_up(open_store, msg_factory, fallocate) -> None:
    s = open_store()
    assert s.put_message(msg_factory(0)).is_ok()
    fallocate.full_under = os.path.join(s.config.consume_queue_dir, "T", "1")
    r = s.put_message(msg_factory(1, queue_id=1))
    assert r.is_ok()  # in the commit log: acknowledged, its entry waits
    assert s.running_flags.is_set(RunningFlag.WRITE_LOGICS_QUEUE_ERROR)
    assert s.reput_message_service.stalled is not None
    assert s.get_max_offset_in_queue("T", 1) == 0
    r = s.put_message(msg_factory(2))
    assert r.put_message_status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    s._retry_after_disk_full()
    assert not s.running_flags.is_writeable()
    fallocate.full_under = None
    s._retry_after_disk_full()
    assert s.running_flags.is_writeable() and s.reput_message_service.stalled is None
    assert s.get_max_offset_in_queue("T", 1) == 1
    got = s.get_message("g", "T", 1, 0, 8)
    assert got.status is GetMessageStatus.FOUND and got.message_count == 1
    got.release()
    assert s.put_message(msg_factory(3)).is_ok()
    assert s.get_max_offset_in_queue("T", 0) == 2


def test_index_stalled_mid_message_keeps_every_key(open_store, msg_factory, fallocate) -> None:
    s = open_store(max_hash_slot_num=65536)  # slots over 64 pages: keys land on unreserved pages
    index = s.index_service
    assert s.put_message(msg_factory(0)).is_ok()
    fallocate.full_under, fallocate.budget = s.config.index_dir, 1  # one more allocation, then full
    keys = " ".join(f"key{i}" for i in range(40))
    msg = msg_factory(1, KEYS=keys)
    assert s.put_message(msg).is_ok()
    assert s.running_flags.is_set(RunningFlag.WRITE_INDEX_FILE_ERROR)
    assert index._resume is not None and index._resume[1] > 0  # stopped part-way through the keys
    fallocate.full_under = None
    s._retry_after_disk_full()
    assert s.running_flags.is_writeable()
    ts = msg.store_timestamp
    for k in ["UNIQ00000001", *keys.split()]:
        assert len(s.query_message("T", k, 4, ts - 1000, ts + 1000).phy_offsets) == 1, k
    assert s.get_max_offset_in_queue("T", 0) == 2


def test_backed_prefix_and_data_ranges_of_a_sparse_file(tmp_path) -> None:
    path = tmp_path / "sparse"
    with open(path, "wb") as f:
        f.truncate(1 << 20)
    fd = os.open(path, os.O_RDWR)
    try:
        assert space.backed_prefix(fd, 1 << 20) == 0
        os.pwrite(fd, b"x" * 5000, 0)
        os.pwrite(fd, b"y", 600_000)
        os.fsync(fd)
        assert space.backed_prefix(fd, 1 << 20) == 8192  # two pages of data, then a hole
        ranges = space.data_ranges(fd, 0, 1 << 20)
        assert ranges[0] == (0, 8192) and len(ranges) == 2
        lo, hi = ranges[1]
        assert lo <= 600_000 < hi <= 1 << 20
        assert space.data_ranges(fd, 8192, 500_000) == []
    finally:
        os.close(fd)


def test_reopened_store_after_reservations_has_the_same_queues(open_store, msg_factory, tmp_path) -> None:
    """Reserved-ahead pages are zeros: recovery ends the data where the writes ended."""
    s = open_store(mapped_file_size_commit_log=1 << 20, mapped_file_size_consume_queue=20 * 1000)
    for i in range(30):
        assert s.put_message(msg_factory(i, queue_id=i % 2)).is_ok()
    cq = s.find_consume_queue("T", 0).mapped_file_queue.get_last_mapped_file()
    assert cq is not None and cq.reserved > cq.wrote_position  # space reserved past the entries
    max_phy = s.get_max_phy_offset()
    s.shutdown()
    again = open_store(
        root=tmp_path / "store", mapped_file_size_commit_log=1 << 20, mapped_file_size_consume_queue=20 * 1000
    )
    assert again.get_max_phy_offset() == max_phy
    assert again.get_max_offset_in_queue("T", 0) == 15 and again.get_max_offset_in_queue("T", 1) == 15
    assert again.put_message(msg_factory(30)).is_ok()
    assert again.get_max_offset_in_queue("T", 0) == 16
