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


def test_a_master_with_a_confirm_offset_dispatches_its_puts_once_confirmed(open_store, tmp_path):
    """A controller-mode master with allAckInSyncStateSet: a put is written at once but readable
    (consume queue) only when the confirm offset covers it; reput_now dispatches what it covers."""
    master = open_store(tmp_path / "m")
    put_many(master, 5, queues=1)
    confirm = master.get_max_phy_offset()
    master.confirm_offset_source = lambda: confirm
    put_many(master, 7, queues=1)  # written, not confirmed
    assert master.get_max_offset_in_queue("T", 0) == 5
    assert master.get_max_phy_offset() > confirm
    confirm += 1  # inside the first unconfirmed record: it stays unreadable
    master.reput_now()
    assert master.get_max_offset_in_queue("T", 0) == 5
    confirm = master.get_max_phy_offset()
    master.reput_now()
    assert master.get_max_offset_in_queue("T", 0) == 12
    put_many(master, 1, queues=1)  # confirm is behind again: the put waits
    assert master.get_max_offset_in_queue("T", 0) == 12
    master.confirm_offset_source = None
    put_many(master, 1, queues=1)  # dispatched at once, the one before it too
    assert master.get_max_offset_in_queue("T", 0) == 14
