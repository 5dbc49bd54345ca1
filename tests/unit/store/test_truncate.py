"""MessageStore truncation (controller mode: a slave cuts its log back to the offset it shares with
the new master; a new master cuts a torn replicated tail). Java DefaultMessageStore#truncateFiles,
#truncateDirtyFiles, AutoSwitchHAService#truncateInvalidMsg."""

from __future__ import annotations

import os

from pyrmq.store.results import GetMessageStatus

from .conftest import make_msg
from .test_replica_append import put_many, replicate

FILE = 4096


def test_truncate_files_cuts_log_queues_and_index(open_store, tmp_path):
    store = open_store(tmp_path / "s")
    put_many(store, 60, queues=1)
    assert len(store.commit_log.mapped_file_queue.mapped_files) > 2
    cut = store.get_commit_log_offset_in_queue("T", 0, 25)  # where the 26th record starts
    assert cut < FILE * 2
    files_before = sorted(os.listdir(store.config.commit_log_dir))
    assert store.truncate_files(cut)
    assert store.get_max_phy_offset() == cut
    assert store.get_max_offset_in_queue("T", 0) == 25
    assert store.get_message("g", "T", 0, 25, 1).status is not GetMessageStatus.FOUND
    assert len(os.listdir(store.config.commit_log_dir)) < len(files_before)  # whole files beyond are gone
    assert store.query_message("T", "k30", 32, 0, 2**62).message_buffer_list == []  # no index hit beyond
    # the next put continues exactly there, with the next queue offset
    r = store.put_message(make_msg(99, queue_id=0))
    assert r.is_ok()
    assert r.append_message_result.wrote_offset == cut
    assert r.append_message_result.logics_offset == 25


def test_truncate_files_refuses_a_misaligned_offset(open_store, tmp_path):
    store = open_store(tmp_path / "s")
    put_many(store, 10, queues=1)
    end = store.get_max_phy_offset()
    middle = store.get_commit_log_offset_in_queue("T", 0, 5) + 3
    assert not store.truncate_files(middle)
    assert store.get_max_phy_offset() == end
    assert store.truncate_files(end + 100)  # nothing beyond: nothing to do
    assert store.get_max_phy_offset() == end


def test_truncate_invalid_msg_cuts_a_torn_replicated_tail(open_store, tmp_path):
    master = open_store(tmp_path / "m")
    slave = open_store(tmp_path / "s")
    put_many(master, 12, queues=1)
    whole = replicate(master, slave, 0, 10**6)
    assert slave.truncate_invalid_msg() == -1  # whole records: nothing to cut
    put_many(master, 1, queues=1)
    view = master.get_commit_log_data(whole, 10)  # 10 bytes of the next record: a torn tail
    assert view is not None
    assert slave.append_to_commit_log(whole, bytes(view))
    view.release()
    assert slave.get_max_phy_offset() == whole + 10
    assert slave.truncate_invalid_msg() == whole
    assert slave.get_max_phy_offset() == whole
    assert slave.get_max_offset_in_queue("T", 0) == 12
