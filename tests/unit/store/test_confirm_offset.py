"""A controller-mode slave dispatches replicated records only up to its master's confirm offset
(Java ReputMessageService#getReputEndOffset = CommitLog#getConfirmOffset): its consumers never
see a record the new master may truncate away. MessageStore.confirm_offset_source and reput_now."""

from __future__ import annotations

from .test_replica_append import put_many, replicate


def test_dispatch_stops_at_the_confirm_offset(open_store, tmp_path):
    master = open_store(tmp_path / "m")
    slave = open_store(tmp_path / "s")
    put_many(master, 20, queues=1)
    confirm = master.get_commit_log_offset_in_queue("T", 0, 8)  # the master confirmed 8 records
    slave.confirm_offset_source = lambda: confirm
    end = replicate(master, slave, 0, 700)
    assert slave.get_max_phy_offset() == end == master.get_max_phy_offset()
    assert slave.get_max_offset_in_queue("T", 0) == 8  # written, not dispatched beyond the confirm offset
    confirm = end
    slave.reput_now()
    assert slave.get_max_offset_in_queue("T", 0) == 20
    slave.confirm_offset_source = None  # a master dispatches everything it holds
    put_many(master, 3, queues=1)
    replicate(master, slave, end, 700)
    assert slave.get_max_offset_in_queue("T", 0) == 23
