"""Expired-file deletion and the disk-full guard, with injected disk usage, clock and hour."""

from __future__ import annotations

import os
import threading

import pytest

from pyrmq.store.cleanup import (
    MAX_MANUAL_DELETE_FILE_TIMES,
    StoreCleaner,
    disk_partition_space_used_percent,
    is_it_time_to_do,
)
from pyrmq.store.results import GetMessageStatus, PutMessageStatus
from pyrmq.store.running_flags import RunningFlag

HOUR = 3600 * 1000
NO_SLEEP = dict(delete_commit_log_files_interval=0, delete_consume_queue_files_interval=0)


class Disk:
    """Injected disk usage: one ratio per path prefix, default for the rest; counts calls."""

    def __init__(self, ratio: float = 0.10) -> None:
        self.ratio = ratio
        self.calls: list[str] = []
        self.seen = threading.Event()

    def __call__(self, path: str) -> float:
        self.calls.append(path)
        self.seen.set()
        return self.ratio


def _fill(store, msg_factory, n: int = 120) -> None:
    for i in range(n):
        assert store.put_message(msg_factory(i, queue_id=i % 2)).is_ok()


def _commit_log_files(store) -> list[str]:
    return sorted(os.listdir(store.config.commit_log_dir))


def _age_files(store, now_ms: int, age_hours: float, count: int) -> None:
    """Set the mtime of the first `count` commit log files to now - age."""
    for name in _commit_log_files(store)[:count]:
        t = (now_ms - age_hours * HOUR) / 1000
        os.utime(os.path.join(store.config.commit_log_dir, name), (t, t))


def _cleaner(store, clock, disk=None, hour=12, **kw):
    return StoreCleaner(store, disk_usage=disk or Disk(), clock=clock, local_hour=lambda ms: hour, **kw)


@pytest.mark.parametrize(
    "when, hour, expected",
    [
        ("04", 4, True),
        ("04", 5, False),
        ("01;02;03", 2, True),
        ("01;02;03", 4, False),
        ("4", 4, True),
        ("", 4, False),
        ("xx;04", 4, True),
    ],
)
def test_is_it_time_to_do(when: str, hour: int, expected: bool) -> None:
    assert is_it_time_to_do(when, hour) is expected


def test_disk_usage_of_a_real_partition(tmp_path) -> None:
    r = disk_partition_space_used_percent(str(tmp_path))
    assert 0.0 <= r <= 1.0 and round(r * 100) == pytest.approx(r * 100)
    # a folder not created yet is measured on the partition it will be created on
    assert disk_partition_space_used_percent(str(tmp_path / "missing" / "commitlog")) == r
    assert disk_partition_space_used_percent("") == -1.0


def test_fresh_store_without_commit_log_folder_is_not_full(open_store, clock, caplog) -> None:
    """Java takes the -1 of a missing folder for a full disk and warns on every round."""
    s = open_store(**NO_SLEEP)
    assert not os.path.exists(s.config.commit_log_dir)
    c = StoreCleaner(s, clock=clock, local_hour=lambda ms: 12)
    with caplog.at_level("INFO", logger="pyrmq.store"):
        for _ in range(3):
            r = c.run_once()
            assert not r.space_to_delete and not r.disk_full
            assert 0.0 <= r.commit_log_ratio <= 1.0
    assert [rec for rec in caplog.records if rec.levelno >= 30] == []
    assert s.running_flags.is_writeable()


def test_unmeasurable_usage_is_one_warning_not_a_full_disk(open_store, clock, caplog) -> None:
    s = open_store(**NO_SLEEP)
    c = _cleaner(s, clock, disk=Disk(-1.0))
    with caplog.at_level("INFO", logger="pyrmq.store"):
        for _ in range(3):
            r = c.run_once()
            assert not r.space_to_delete and r.commit_log_files_deleted == 0
    warnings = [rec.getMessage() for rec in caplog.records if rec.levelno >= 30]
    assert len(warnings) == 1 and "cannot measure disk usage" in warnings[0]
    assert s.running_flags.is_writeable()


def test_nothing_deleted_outside_delete_when_with_free_disk(open_store, msg_factory, clock) -> None:
    s = open_store(**NO_SLEEP)
    _fill(s, msg_factory)
    files = _commit_log_files(s)
    assert len(files) >= 5
    _age_files(s, clock.now(), 100, len(files))
    r = _cleaner(s, clock, hour=5).run_once()
    assert not (r.time_up or r.space_to_delete or r.manual)
    assert _commit_log_files(s) == files


def test_expired_files_deleted_at_delete_when_then_queues_and_reads_follow(open_store, msg_factory, clock) -> None:
    s = open_store(**NO_SLEEP, delete_when="03;04")
    _fill(s, msg_factory)
    files = _commit_log_files(s)
    _age_files(s, clock.now(), 73, 3)  # older than fileReservedTime (72 h)
    # files 3.. are younger than 72 h, so deletion stops at file 3 (no holes)
    for name in files[3:]:
        t = (clock.now() - 71 * HOUR) / 1000
        os.utime(os.path.join(s.config.commit_log_dir, name), (t, t))
    cq_files_before = sorted(os.listdir(os.path.join(s.config.consume_queue_dir, "T", "0")))
    cleaner = _cleaner(s, clock, hour=4)
    r = cleaner.run_once()
    assert r.time_up and not r.space_to_delete
    assert r.commit_log_files_deleted == 3
    assert _commit_log_files(s) == files[3:]
    min_phy = s.get_min_phy_offset()
    assert min_phy == int(files[3])
    # consume queues: leading files that only point below the new min offset are gone
    assert r.consume_queue_files_deleted >= 1
    cq_files_after = sorted(os.listdir(os.path.join(s.config.consume_queue_dir, "T", "0")))
    assert cq_files_after == cq_files_before[len(cq_files_before) - len(cq_files_after) :]
    assert len(cq_files_after) < len(cq_files_before)
    # the queue's min offset is the first entry still in the commit log, and reading from it works
    for qid in (0, 1):
        lo = s.get_min_offset_in_queue("T", qid)
        assert s.get_commit_log_offset_in_queue("T", qid, lo) >= min_phy
        assert lo > 0  # the queue lost its head along with the commit log files
        got = s.get_message("g", "T", qid, lo, 4)
        assert got.status is GetMessageStatus.FOUND
        got.release()
    # the next round with an unchanged min offset leaves the queues alone
    assert cleaner.run_once().consume_queue_files_deleted == 0
    # writes go on
    assert s.put_message(msg_factory(1000)).is_ok()


def test_last_file_is_never_deleted_even_when_all_expired(open_store, msg_factory, clock) -> None:
    s = open_store(**NO_SLEEP)
    _fill(s, msg_factory)
    files = _commit_log_files(s)
    _age_files(s, clock.now(), 1000, len(files))
    c = _cleaner(s, clock, hour=4)
    total = 0
    for _ in range(5):
        total += c.run_once().commit_log_files_deleted
    assert total == len(files) - 1
    assert _commit_log_files(s) == files[-1:]


def test_usage_above_max_used_ratio_deletes_only_expired(open_store, msg_factory, clock) -> None:
    s = open_store(**NO_SLEEP)
    _fill(s, msg_factory)
    files = _commit_log_files(s)
    _age_files(s, clock.now(), 80, 2)
    r = _cleaner(s, clock, Disk(0.80)).run_once()  # 75% < 80% < 85%
    assert r.space_to_delete and not r.clean_immediately and not r.disk_full
    assert r.commit_log_files_deleted == 2
    assert _commit_log_files(s) == files[2:]


def test_usage_above_clean_forcibly_ratio_deletes_young_files_batch_limited(open_store, msg_factory, clock) -> None:
    s = open_store(**NO_SLEEP, delete_file_batch_max=2)
    _fill(s, msg_factory)
    files = _commit_log_files(s)  # all young
    r = _cleaner(s, clock, Disk(0.87)).run_once()
    assert r.clean_immediately and not r.disk_full
    assert r.commit_log_files_deleted == 2
    assert _commit_log_files(s) == files[2:]


def test_forcibly_disabled_keeps_young_files(open_store, msg_factory, clock) -> None:
    s = open_store(**NO_SLEEP, clean_file_forcibly_enable=False)
    _fill(s, msg_factory)
    files = _commit_log_files(s)
    r = _cleaner(s, clock, Disk(0.87)).run_once()
    assert r.space_to_delete and r.commit_log_files_deleted == 0
    assert _commit_log_files(s) == files


def test_disk_full_refuses_puts_until_space_is_back(open_store, msg_factory, clock) -> None:
    s = open_store(**NO_SLEEP)
    _fill(s, msg_factory, 10)
    disk = Disk(0.95)
    c = _cleaner(s, clock, disk)
    r = c.run_once()
    assert r.disk_full and c.disk_full
    assert "diskSpaceWarningLevelRatio" in c.disk_full_reason and "95%" in c.disk_full_reason
    refused = s.put_message(msg_factory(500))
    assert refused.put_message_status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert not refused.is_ok()
    # reads still work while full
    got = s.get_message("g", "T", 0, 0, 4)
    assert got.status is GetMessageStatus.FOUND
    got.release()
    disk.ratio = 0.50
    r = c.run_once()
    assert not r.disk_full and not c.disk_full and c.disk_full_reason == ""
    assert s.put_message(msg_factory(501)).is_ok()


def test_logic_partition_full_also_refuses_puts(open_store, msg_factory, clock) -> None:
    s = open_store(**NO_SLEEP)

    def usage(path: str) -> float:
        return 0.95 if path == s.config.consume_queue_dir else 0.20

    c = StoreCleaner(s, disk_usage=usage, clock=clock, local_hour=lambda ms: 12)
    assert c.run_once().disk_full
    assert "consume queue" in c.disk_full_reason
    assert s.put_message(msg_factory(1)).put_message_status is PutMessageStatus.SERVICE_NOT_AVAILABLE


def test_disk_ok_does_not_reenable_a_store_made_unwritable_by_someone_else(open_store, msg_factory, clock) -> None:
    s = open_store(**NO_SLEEP)
    s.running_flags.make_not_writeable()  # e.g. a write error (Java NOT_WRITEABLE_BIT)
    c = _cleaner(s, clock, Disk(0.95))
    assert c.run_once().disk_full
    c.disk_usage = Disk(0.10)
    assert not c.run_once().disk_full
    assert not s.running_flags.is_writeable()
    refused = s.put_message(msg_factory(1))
    assert refused.put_message_status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    s.running_flags.make_not_writeable(False)
    assert s.put_message(msg_factory(2)).is_ok()


def test_the_store_owns_and_runs_its_cleaner(open_store, clock) -> None:
    """Java DefaultMessageStore starts its clean services with itself and stops them at shutdown."""
    s = open_store(clean_resource_interval=10)
    assert s.cleaner.store is s and s.cleaner._thread is not None and s.cleaner._thread.is_alive()
    t = s.cleaner._thread
    s.shutdown()
    assert not t.is_alive() and s.cleaner._thread is None


def test_disk_full_is_a_store_flag_with_a_readable_reason(open_store, msg_factory, clock) -> None:
    s = open_store(**NO_SLEEP)
    s.cleaner.disk_usage = Disk(0.93)
    assert s.cleaner.run_once().disk_full
    assert s.running_flags.is_set(RunningFlag.DISK_FULL) and not s.running_flags.is_set(RunningFlag.LOGIC_DISK_FULL)
    refused = s.put_message(msg_factory(1))
    assert refused.put_message_status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert "not writeable" in refused.error and "93%" in refused.error
    assert s.disk_util() == "CL:  0.93 CQ:  0.93 INDEX:  0.93"
    s.cleaner.disk_usage = Disk(0.20)
    s.cleaner.run_once()
    assert s.running_flags.is_writeable() and s.put_message(msg_factory(2)).is_ok()


def test_ratios_are_clamped_like_java(open_store, clock) -> None:
    s = open_store(disk_space_warning_level_ratio=99, disk_space_clean_forcibly_ratio=10, disk_max_used_space_ratio=1)
    c = _cleaner(s, clock)
    assert c.disk_space_warning_level_ratio() == 0.90
    assert c.disk_space_clean_forcibly_ratio() == 0.30
    assert c.disk_max_used_space_ratio() == 0.10


def test_manual_delete_runs_for_twenty_rounds(open_store, msg_factory, clock) -> None:
    s = open_store(**NO_SLEEP, delete_file_batch_max=1)
    _fill(s, msg_factory)
    files = _commit_log_files(s)
    _age_files(s, clock.now(), 100, len(files))
    c = _cleaner(s, clock)
    assert c.run_once().commit_log_files_deleted == 0
    c.execute_delete_files_manually()
    r = c.run_once()
    assert r.manual and r.commit_log_files_deleted == 1
    for _ in range(MAX_MANUAL_DELETE_FILE_TIMES - 1):
        c.run_once()
    assert c.run_once().manual is False


def test_background_thread_runs_rounds_and_stops(open_store, clock) -> None:
    s = open_store(clean_resource_interval=10)
    disk = Disk(0.10)
    c = _cleaner(s, clock, disk)
    c.start(initial_delay_ms=0)
    try:
        assert disk.seen.wait(5), "no cleaning round ran"
    finally:
        c.shutdown()
    n = len(disk.calls)
    assert n >= 2  # commit log and consume queue partitions
    assert c._thread is None
