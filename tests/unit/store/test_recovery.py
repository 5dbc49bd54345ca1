"""Recovery after clean shutdown and after a crash (abort file present): torn tails, flipped bytes,
consume queues and index truncated/rebuilt to match (spec §5.5-5.6)."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys

import pytest

from pyrmq.store import message as m
from pyrmq.store.mapped_file import StoreLoadError
from pyrmq.store.message_store import MessageStore


def _fill(s, msg_factory, n, start=0):
    return [s.put_message(msg_factory(i, queue_id=i % 2)).append_message_result for i in range(start, start + n)]


def _crash(s, tmp_path):
    """What kill -9 leaves: the running store's files as they are now (page cache included, abort
    file present), copied to tmp_path/crash. Returns a function mapping a path of the running
    store to its copy."""
    root = s.config.store_path_root_dir
    shutil.copytree(root, tmp_path / "crash")
    return lambda path: str(tmp_path / "crash" / os.path.relpath(path, root))


def _reopen(tmp_path, clock, config_factory, root="store", **kw):
    s = MessageStore(config_factory(tmp_path / root, **kw), clock=clock)
    s.load()
    return s


def _queue_bodies(s, qid):
    r = s.get_message("g", "T", qid, 0, 1000)
    return [m.decode_message(b).body for b in r.message_buffer_list]


def test_normal_recovery_keeps_everything(open_store, msg_factory, tmp_path, clock, config_factory):
    s = open_store()
    res = _fill(s, msg_factory, 40)
    s.shutdown()
    assert not os.path.exists(s.config.abort_path)
    s2 = _reopen(tmp_path, clock, config_factory)
    assert s2.last_exit_ok
    assert s2.get_max_phy_offset() == res[-1].wrote_offset + res[-1].wrote_bytes
    assert s2.get_max_offset_in_queue("T", 0) == 20 and s2.get_max_offset_in_queue("T", 1) == 20
    s2.start()
    r = s2.put_message(msg_factory(40, queue_id=0))
    assert r.append_message_result.logics_offset == 20
    s2.shutdown()


def test_normal_recovery_rebuilds_missing_consume_queues(open_store, msg_factory, tmp_path, clock, config_factory):
    import shutil

    s = open_store()
    _fill(s, msg_factory, 30)
    s.shutdown()
    shutil.rmtree(s.config.consume_queue_dir)
    s2 = _reopen(tmp_path, clock, config_factory)
    assert s2.get_max_offset_in_queue("T", 0) == 15
    assert len(_queue_bodies(s2, 1)) == 15
    s2.start()
    s2.shutdown()


@pytest.mark.parametrize("damage", ["torn_tail", "flipped_body_byte", "zeroed_tail"])
def test_abnormal_recovery_cuts_at_last_valid_record(open_store, msg_factory, tmp_path, clock, config_factory, damage):
    s = open_store()
    res = _fill(s, msg_factory, 50)
    victim = res[45]
    copied = _crash(s, tmp_path)
    path = copied(s.commit_log.mapped_file_queue.find_mapped_file_by_offset(victim.wrote_offset).file_name)
    pos = victim.wrote_offset % 4096
    with open(path, "r+b") as f:
        if damage == "torn_tail":
            # the record was half written: everything after its 60th byte never reached the disk
            f.seek(pos + 60)
            f.write(bytes(4096 - pos - 60))
        elif damage == "flipped_body_byte":
            raw = bytearray(open(path, "rb").read()[pos : pos + victim.wrote_bytes])
            body_pos = 88  # IPv4 hosts: BODYLENGTH at 84, body at 88
            f.seek(pos + body_pos)
            f.write(bytes([raw[body_pos] ^ 0xFF]))
        else:
            f.seek(pos)
            f.write(bytes(4096 - pos))
    # later files (records 46..49) are left as they are: recovery must drop them all
    s2 = _reopen(tmp_path, clock, config_factory, "crash")
    assert not s2.last_exit_ok
    assert s2.get_max_phy_offset() == victim.wrote_offset
    # queue 1 holds odd i: 1..43 are valid (22 entries), 45 is the victim
    assert s2.get_max_offset_in_queue("T", 1) == 22
    assert s2.get_max_offset_in_queue("T", 0) == 23
    bodies1 = _queue_bodies(s2, 1)
    assert bodies1 == [msg_factory(i).body for i in range(1, 45, 2)]
    assert _queue_bodies(s2, 0) == [msg_factory(i).body for i in range(0, 45, 2)]
    assert s2.query_message("T", "k47", 32, 0, 2**62).phy_offsets == []
    assert s2.query_message("T", "k44", 32, 0, 2**62).phy_offsets == [res[44].wrote_offset]
    s2.start()
    again = s2.put_message(msg_factory(100, queue_id=1))
    assert again.append_message_result.wrote_offset == victim.wrote_offset
    assert again.append_message_result.logics_offset == 22
    s2.shutdown()
    s3 = _reopen(tmp_path, clock, config_factory, "crash")
    assert _queue_bodies(s3, 1)[-1] == msg_factory(100).body
    s3.start()
    s3.shutdown()


def test_abnormal_recovery_with_stale_consume_queue_entries(open_store, msg_factory, tmp_path, clock, config_factory):
    """CQ entries pointing beyond the recovered commit log end are truncated."""
    s = open_store()
    res = _fill(s, msg_factory, 20)
    commit_log_dir = _crash(s, tmp_path)(s.config.commit_log_dir)
    cut = res[10].wrote_offset
    for name in sorted(os.listdir(commit_log_dir)):
        start = int(name)
        p = os.path.join(commit_log_dir, name)
        with open(p, "r+b") as f:
            if start <= cut < start + 4096:
                f.seek(cut - start)
                f.write(bytes(4096 - (cut - start)))
            elif start > cut:
                f.write(bytes(4096))
    s2 = _reopen(tmp_path, clock, config_factory, "crash")
    assert s2.get_max_phy_offset() == cut
    assert s2.get_max_offset_in_queue("T", 0) == 5 and s2.get_max_offset_in_queue("T", 1) == 5
    assert s2.commit_log.topic_queue_table == {"T-0": 5, "T-1": 5}
    s2.start()
    s2.shutdown()


def test_mismatched_file_size_is_refused(open_store, msg_factory, tmp_path, clock, config_factory):
    s = open_store()
    _fill(s, msg_factory, 3)
    s.shutdown()
    with pytest.raises(StoreLoadError, match="not matched"):
        _reopen(tmp_path, clock, config_factory, mapped_file_size_commit_log=8192)


def test_lock_excludes_a_second_process(open_store, tmp_path):
    s = open_store()
    code = (
        "import sys; from pyrmq.store.checkpoint import StoreLock, StoreLockedError\n"
        "try:\n    StoreLock(sys.argv[1]).acquire()\nexcept StoreLockedError as e:\n    print(e); sys.exit(3)\n"
    )
    p = subprocess.run([sys.executable, "-c", code, s.config.lock_path], capture_output=True, text=True, timeout=30)
    assert p.returncode == 3 and "Lock failed" in p.stdout
    assert open(s.config.lock_path, "rb").read(4) == b"lock"
    s.shutdown()
    p = subprocess.run([sys.executable, "-c", code, s.config.lock_path], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stdout


def test_all_zero_preallocated_file_is_dropped(open_store, msg_factory, tmp_path, clock, config_factory):
    """Java preallocates the next file; recovery deletes files beyond the recovered end."""
    s = open_store()
    res = _fill(s, msg_factory, 5)
    s.shutdown()
    extra = os.path.join(s.config.commit_log_dir, f"{4096 * 5:020d}")
    with open(extra, "wb") as f:
        f.truncate(4096)
    s2 = _reopen(tmp_path, clock, config_factory)
    assert not os.path.exists(extra)
    assert s2.get_max_phy_offset() == res[-1].wrote_offset + res[-1].wrote_bytes
    s2.start()
    s2.shutdown()


def test_clean_restart_does_not_warn_about_consume_queues(
    open_store, msg_factory, tmp_path, clock, config_factory, caplog
):
    s = open_store()
    _fill(s, msg_factory, 10)
    s.shutdown()
    with caplog.at_level(logging.WARNING, logger="pyrmq.store"):
        s2 = _reopen(tmp_path, clock, config_factory)
    assert s2.last_exit_ok
    assert not [r for r in caplog.records if "beyond the commit log end" in r.getMessage()]
    s2.start()
    s2.shutdown()


def test_consume_queues_beyond_the_commit_log_are_reported_and_truncated(
    open_store, msg_factory, tmp_path, clock, config_factory, caplog
):
    """The last records are gone from the commit log (zeroed) but their queue entries survived."""
    s = open_store()
    res = _fill(s, msg_factory, 10)
    s.shutdown()
    cut, end = res[8].wrote_offset, res[-1].wrote_offset + res[-1].wrote_bytes
    path = os.path.join(s.config.commit_log_dir, f"{cut - cut % 4096:020d}")
    with open(path, "r+b") as f:
        f.seek(cut % 4096)
        f.write(bytes(4096 - cut % 4096))
    with caplog.at_level(logging.WARNING, logger="pyrmq.store"):
        s2 = _reopen(tmp_path, clock, config_factory)
    assert [r.getMessage() for r in caplog.records if "beyond the commit log end" in r.getMessage()] == [
        f"consume queues reach {end} beyond the commit log end {cut}; truncating them"
    ]
    assert s2.get_max_phy_offset() == cut
    assert s2.get_max_offset_in_queue("T", 0) + s2.get_max_offset_in_queue("T", 1) == 8
    s2.start()
    s2.shutdown()
