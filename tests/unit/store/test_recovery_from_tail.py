"""Recovery whose cost follows what must be checked: after a clean shutdown the commit-log check
starts at the last record the consume queues hold; after a crash the records the checkpoint
covers are only walked by their headers, the CRC check and dispatch start after them."""

from __future__ import annotations

import os
import shutil

from pyrmq.store import message as m
from pyrmq.store.checkpoint import StoreCheckpoint
from pyrmq.store.commitlog import CommitLog
from pyrmq.store.consume_queue import CQ_STORE_UNIT_SIZE
from pyrmq.store.message_store import MessageStore

FILE = 64 * 1024  # a commit-log file holds all the records of these tests


def _fill(s, msg_factory, clock, n, start=0):
    out = []
    for i in range(start, start + n):
        clock.advance(10)
        out.append(s.put_message(msg_factory(i, queue_id=i % 2)).append_message_result)
    return out


def _counting_checks(monkeypatch) -> list[int]:
    """Offsets-in-file of every record the recovery checked in full (CRC, decode)."""
    checked: list[int] = []
    real = CommitLog.check_message_and_return_size

    def spy(self, buf, pos, check_crc, read_body=True):
        checked.append(pos)
        return real(self, buf, pos, check_crc, read_body)

    monkeypatch.setattr(CommitLog, "check_message_and_return_size", spy)
    return checked


def _open(path, clock, config_factory, **kw) -> MessageStore:
    s = MessageStore(config_factory(path, mapped_file_size_commit_log=FILE, **kw), clock=clock)
    s.load()
    return s


def _bodies(s, qid):
    r = s.get_message("g", "T", qid, 0, 1000)
    try:
        return [m.decode_message(b).body for b in r.message_buffer_list]
    finally:
        r.release()


def test_clean_restart_checks_only_from_the_last_queued_record(
    open_store, msg_factory, tmp_path, clock, config_factory, monkeypatch
):
    s = open_store(mapped_file_size_commit_log=FILE)
    res = _fill(s, msg_factory, clock, 60)
    s.shutdown()
    checked = _counting_checks(monkeypatch)
    s2 = _open(tmp_path / "store", clock, config_factory)
    assert s2.last_exit_ok
    # the last record, then the end of the data: not the 59 before it
    assert checked == [res[-1].wrote_offset, res[-1].wrote_offset + res[-1].wrote_bytes]
    assert s2.get_max_phy_offset() == res[-1].wrote_offset + res[-1].wrote_bytes
    assert s2.commit_log.confirm_offset == res[-1].wrote_offset
    assert _bodies(s2, 0) == [msg_factory(i).body for i in range(0, 60, 2)]
    s2.start()
    again = s2.put_message(msg_factory(60, queue_id=0)).append_message_result
    assert again.wrote_offset == res[-1].wrote_offset + res[-1].wrote_bytes and again.logics_offset == 30
    s2.shutdown()


def test_clean_restart_dispatches_the_records_after_the_last_queued_one(
    open_store, msg_factory, tmp_path, clock, config_factory, monkeypatch
):
    """The queues lost their last entries (both queues, 3 records): recovery checks from the last
    record they still hold and puts the three back, in the queues and nowhere twice."""
    s = open_store(mapped_file_size_commit_log=FILE)
    res = _fill(s, msg_factory, clock, 40)
    s.shutdown()
    cq_dir = s.config.consume_queue_dir
    for qid, keep in ((0, 19), (1, 18)):  # records 38 (q0), 37 and 39 (q1) lose their entries
        name = sorted(os.listdir(os.path.join(cq_dir, "T", str(qid))))[-1]
        path = os.path.join(cq_dir, "T", str(qid), name)
        size = os.path.getsize(path)
        with open(path, "r+b") as f:
            f.seek(keep * CQ_STORE_UNIT_SIZE % size)
            f.write(bytes(CQ_STORE_UNIT_SIZE * 4))
    checked = _counting_checks(monkeypatch)
    s2 = _open(tmp_path / "store", clock, config_factory)
    assert checked[0] == res[36].wrote_offset  # the last record both queues still hold
    assert len(checked) == 5  # 36 .. 39, then the end
    assert s2.get_max_offset_in_queue("T", 0) == 20 and s2.get_max_offset_in_queue("T", 1) == 20
    assert _bodies(s2, 1) == [msg_factory(i).body for i in range(1, 40, 2)]
    assert s2.query_message("T", "k39", 32, 0, 2**62).phy_offsets == [res[39].wrote_offset]
    s2.start()
    s2.shutdown()


def _crash_with_checkpoint(s, tmp_path, covered_ts):
    """The files of the running store as kill -9 leaves them, with a checkpoint saying that
    everything stored up to `covered_ts` + 3 s was flushed (Java keeps a 3 s margin)."""
    root = s.config.store_path_root_dir
    crash = tmp_path / "crash"
    shutil.copytree(root, crash)
    cp = StoreCheckpoint(str(crash / "checkpoint"))
    cp.physic_msg_timestamp = cp.logics_msg_timestamp = covered_ts + 3000
    cp.shutdown()
    return crash


def test_crash_recovery_dispatches_from_the_checkpoint(
    open_store, msg_factory, tmp_path, clock, config_factory, monkeypatch
):
    s = open_store(mapped_file_size_commit_log=FILE, message_index_enable=False)
    res = _fill(s, msg_factory, clock, 50)
    covered = m.decode_message(s.commit_log.get_message(res[39].wrote_offset, res[39].wrote_bytes)).store_timestamp
    crash = _crash_with_checkpoint(s, tmp_path, covered)
    # the queue pages written after the checkpoint never reached the disk
    for qid in (0, 1):
        qdir = crash / "consumequeue" / "T" / str(qid)
        path = qdir / sorted(os.listdir(qdir))[-1]
        with open(path, "r+b") as f:
            f.seek(20 * CQ_STORE_UNIT_SIZE % os.path.getsize(path))  # entries of records 40..49
            f.write(bytes(5 * CQ_STORE_UNIT_SIZE))
    checked = _counting_checks(monkeypatch)
    s2 = _open(crash, clock, config_factory, message_index_enable=False)
    assert not s2.last_exit_ok
    assert checked == [r.wrote_offset for r in res[40:]] + [res[-1].wrote_offset + res[-1].wrote_bytes]
    assert s2.get_max_phy_offset() == res[-1].wrote_offset + res[-1].wrote_bytes
    assert _bodies(s2, 0) == [msg_factory(i).body for i in range(0, 50, 2)]
    assert _bodies(s2, 1) == [msg_factory(i).body for i in range(1, 50, 2)]
    s2.start()
    assert s2.put_message(msg_factory(50, queue_id=0)).append_message_result.logics_offset == 25
    s2.shutdown()


def test_crash_recovery_rebuilds_the_index_it_deleted(
    open_store, msg_factory, tmp_path, clock, config_factory, monkeypatch
):
    """The index file written since the index checkpoint is deleted after a crash (Java's rule);
    dispatch then starts where the kept index files end, not at the queues' checkpoint, so every
    key is found again."""
    s = open_store(mapped_file_size_commit_log=FILE, max_index_num=4096)
    res = _fill(s, msg_factory, clock, 30)
    covered = m.decode_message(s.commit_log.get_message(res[25].wrote_offset, res[25].wrote_bytes)).store_timestamp
    crash = _crash_with_checkpoint(s, tmp_path, covered)
    checked = _counting_checks(monkeypatch)
    s2 = _open(crash, clock, config_factory, max_index_num=4096)
    assert len(checked) == 31  # every record again: no index file was kept
    assert s2.query_message("T", "k3", 32, 0, 2**62).phy_offsets == [res[3].wrote_offset]
    assert s2.query_message("T", "k28", 32, 0, 2**62).phy_offsets == [res[28].wrote_offset]
    assert s2.get_max_offset_in_queue("T", 0) == 15 and s2.get_max_offset_in_queue("T", 1) == 15
    s2.start()
    s2.shutdown()


def test_crash_recovery_stops_the_walk_at_a_damaged_record(open_store, msg_factory, tmp_path, clock, config_factory):
    """A record the checkpoint covers but whose header is gone (zeroed): the walk hands over to
    the full check there, which ends the data at it, as before."""
    s = open_store(mapped_file_size_commit_log=FILE, message_index_enable=False)
    res = _fill(s, msg_factory, clock, 20)
    covered = m.decode_message(s.commit_log.get_message(res[15].wrote_offset, res[15].wrote_bytes)).store_timestamp
    crash = _crash_with_checkpoint(s, tmp_path, covered)
    with open(crash / "commitlog" / f"{0:020d}", "r+b") as f:
        f.seek(res[10].wrote_offset)
        f.write(bytes(8))
    s2 = _open(crash, clock, config_factory, message_index_enable=False)
    assert s2.get_max_phy_offset() == res[10].wrote_offset
    assert s2.get_max_offset_in_queue("T", 0) == 5 and s2.get_max_offset_in_queue("T", 1) == 5
    assert s2.commit_log.confirm_offset == res[9].wrote_offset
    s2.start()
    s2.shutdown()
