"""MessageStore.append_to_commit_log (a slave's write) and get_commit_log_data (a master's read):
replicated bytes land byte for byte, are dispatched like put records, and bad offsets are refused."""

from __future__ import annotations

import filecmp
import os

import pytest

from pyrmq.store.message_store import MessageStore
from pyrmq.store.results import GetMessageStatus

from .conftest import make_msg

FILE = 4096


def replicate(master: MessageStore, slave: MessageStore, start: int, chunk: int) -> int:
    """Copy the master's commit log from `start` in frames of at most `chunk` bytes, like the HA
    master does (never past a file end); returns where it stopped."""
    offset = start
    while True:
        view = master.get_commit_log_data(offset, chunk)
        if view is None:
            return offset
        try:
            data = bytes(view)
        finally:
            view.release()
        assert slave.append_to_commit_log(offset, data)
        offset += len(data)


def put_many(store: MessageStore, n: int, queues: int = 3) -> None:
    for i in range(n):
        assert store.put_message(make_msg(i, queue_id=i % queues)).is_ok()


def same_messages(master: MessageStore, slave: MessageStore, topic: str = "T", queues: int = 3) -> None:
    for q in range(queues):
        assert slave.get_max_offset_in_queue(topic, q) == master.get_max_offset_in_queue(topic, q)
        assert slave.get_min_offset_in_queue(topic, q) == master.get_min_offset_in_queue(topic, q)
        offset = master.get_min_offset_in_queue(topic, q)
        while offset < master.get_max_offset_in_queue(topic, q):
            want = master.get_message("g", topic, q, offset, 32)
            got = slave.get_message("g", topic, q, offset, 32)
            assert got.status is GetMessageStatus.FOUND, (q, offset)
            assert [bytes(b) for b in got.message_buffer_list] == [bytes(b) for b in want.message_buffer_list]
            assert got.next_begin_offset == want.next_begin_offset
            offset = want.next_begin_offset
            want.release()
            got.release()


def test_replicated_bytes_are_identical_and_dispatched(open_store, tmp_path):
    master = open_store(tmp_path / "m")
    slave = open_store(tmp_path / "s")
    put_many(master, 60)
    assert len(master.commit_log.mapped_file_queue.mapped_files) > 2  # the log rolled
    end = replicate(master, slave, 0, 700)  # 700: frames end inside records
    assert end == slave.get_max_phy_offset() == master.get_max_phy_offset()
    names = sorted(os.listdir(master.config.commit_log_dir))
    assert sorted(os.listdir(slave.config.commit_log_dir)) == names
    match, mismatch, errors = filecmp.cmpfiles(
        master.config.commit_log_dir, slave.config.commit_log_dir, names, shallow=False
    )
    assert match == names and mismatch == [] and errors == []
    same_messages(master, slave)
    # the index was built by the slave's dispatch too
    assert slave.query_message("T", "UNIQ00000007", 10, 0, 2**62).phy_offsets == (
        master.query_message("T", "UNIQ00000007", 10, 0, 2**62).phy_offsets
    )
    # more puts continue the stream from where it stopped
    put_many(master, 10)
    assert replicate(master, slave, end, 32 * 1024) == master.get_max_phy_offset()
    same_messages(master, slave)


def test_slave_dispatch_wakes_the_listener(tmp_path, clock):
    from .conftest import tiny_config

    master = MessageStore(tiny_config(tmp_path / "m"), clock=clock)
    seen: list[tuple[str, int, int]] = []
    slave = MessageStore(
        tiny_config(tmp_path / "s"), clock=clock, on_dispatched=lambda t, q, mx, tc, r: seen.append((t, q, mx))
    )
    for s in (master, slave):
        s.load()
        s.start()
    try:
        put_many(master, 4, queues=1)
        replicate(master, slave, 0, 32 * 1024)
        assert seen == [("T", 0, 1), ("T", 0, 2), ("T", 0, 3), ("T", 0, 4)]
    finally:
        master.shutdown()
        slave.shutdown()


def test_wrong_start_offset_is_refused_and_nothing_written(open_store, tmp_path):
    master = open_store(tmp_path / "m")
    slave = open_store(tmp_path / "s")
    put_many(master, 5)
    view = master.get_commit_log_data(0, 32 * 1024)
    assert view is not None
    data = bytes(view)
    view.release()
    assert not slave.append_to_commit_log(100, data)  # an empty log starts at a file start
    assert slave.get_max_phy_offset() == 0 and not os.path.exists(slave.config.commit_log_dir)
    assert slave.append_to_commit_log(0, data[:300])
    assert not slave.append_to_commit_log(200, data[200:])  # overlaps
    assert not slave.append_to_commit_log(400, data[400:])  # leaves a gap
    assert slave.get_max_phy_offset() == 300
    assert slave.append_to_commit_log(300, data[300:])
    assert slave.get_max_phy_offset() == master.get_max_phy_offset()
    same_messages(master, slave)


def test_empty_slave_starts_at_the_masters_last_file(open_store, tmp_path):
    """The HA master sends an empty slave its last file only: the slave's log starts there and its
    consume queues start at the queue offsets that file holds."""
    master = open_store(tmp_path / "m")
    slave = open_store(tmp_path / "s")
    put_many(master, 60, queues=1)
    last = master.commit_log.mapped_file_queue.mapped_files[-1].file_from_offset
    assert last > 0
    replicate(master, slave, last, 32 * 1024)
    assert os.listdir(slave.config.commit_log_dir) == [f"{last:020d}"]
    assert slave.get_min_phy_offset() == last
    assert slave.get_max_offset_in_queue("T", 0) == master.get_max_offset_in_queue("T", 0)
    first = slave.get_min_offset_in_queue("T", 0)
    assert first > 0
    got = slave.get_message("g", "T", 0, first, 32)
    want = master.get_message("g", "T", 0, first, 32)
    assert got.status is GetMessageStatus.FOUND
    assert [bytes(b) for b in got.message_buffer_list] == [bytes(b) for b in want.message_buffer_list]
    got.release()
    want.release()


def test_data_crossing_a_file_end_is_refused(open_store, tmp_path):
    slave = open_store(tmp_path / "s")
    assert not slave.append_to_commit_log(0, bytes(FILE + 1))
    assert slave.get_max_phy_offset() == 0 and not os.path.exists(slave.config.commit_log_dir)


def test_a_full_file_rolls_to_the_next(open_store, tmp_path):
    master = open_store(tmp_path / "m")
    slave = open_store(tmp_path / "s")
    put_many(master, 40)
    first = bytes(master.commit_log.mapped_file_queue.mapped_files[0].mm)  # ends with its blank
    assert slave.append_to_commit_log(0, first)
    assert slave.get_max_phy_offset() == FILE
    view = master.get_commit_log_data(FILE, 100)
    assert view is not None and len(view) == 100
    assert slave.append_to_commit_log(FILE, bytes(view))
    view.release()
    assert sorted(os.listdir(slave.config.commit_log_dir)) == [f"{0:020d}", f"{FILE:020d}"]


def test_master_read_stops_at_the_file_end_and_the_write_position(open_store, tmp_path):
    master = open_store(tmp_path / "m")
    put_many(master, 40)
    files = master.commit_log.mapped_file_queue.mapped_files
    view = master.get_commit_log_data(FILE - 10, 1 << 20)
    assert view is not None and len(view) == 10  # the rest of the first file only
    view.release()
    end = master.get_max_phy_offset()
    view = master.get_commit_log_data(end - 5, 1 << 20)
    assert view is not None and len(view) == 5
    view.release()
    assert master.get_commit_log_data(end, 1 << 20) is None  # nothing written there yet
    assert master.get_commit_log_data(files[-1].file_from_offset + FILE, 10) is None  # no such file


def test_sync_flush_slave_dispatches_once_flushed(open_store, tmp_path):
    master = open_store(tmp_path / "m")
    slave = open_store(tmp_path / "s", flush_disk_type="SYNC_FLUSH")
    put_many(master, 5, queues=1)
    replicate(master, slave, 0, 32 * 1024)
    slave.flush()  # the group commit thread would get there within 10 ms
    assert slave.get_max_offset_in_queue("T", 0) == 5
    same_messages(master, slave, queues=1)


def test_shut_down_store_refuses(tmp_path, clock):
    from .conftest import tiny_config

    s = MessageStore(tiny_config(tmp_path / "s"), clock=clock)
    assert not s.append_to_commit_log(0, b"x")
    assert s.get_commit_log_data(0, 10) is None


@pytest.mark.parametrize("chunk", [1, 97])
def test_tiny_frames(open_store, tmp_path, chunk):
    master = open_store(tmp_path / "m")
    slave = open_store(tmp_path / "s")
    put_many(master, 8)
    replicate(master, slave, 0, chunk)
    same_messages(master, slave)
