"""Consume-queue entry, index header and checkpoint bytes against golden hex (spec §3.1, §4.2, §5.1)."""

from __future__ import annotations

import os

from pyrmq.store import consume_queue as cqm
from pyrmq.store import index as ix
from pyrmq.store.checkpoint import CHECKPOINT, StoreCheckpoint


def test_consume_queue_entry(golden):
    want = golden("consume_queue_entry_v1.hex")
    got = cqm.encode_entry(0x0102030405060708, 139, 2598919)
    assert got == want, got.hex(" ")
    assert (
        cqm.CONSUME_QUEUE_ENTRY.build(dict(commit_log_offset=0x0102030405060708, size=139, tags_code=2598919)) == want
    )
    assert cqm.decode_entry(want) == (0x0102030405060708, 139, 2598919)


def test_consume_queue_file_written_by_queue(tmp_path, golden):
    q = cqm.ConsumeQueue("TopicTest", 3, str(tmp_path), 20 * 4)
    q.put_message_position_info(0x0102030405060708, 139, 2598919, 0)
    path = tmp_path / "TopicTest" / "3" / ("0" * 20)
    assert path.stat().st_size == 80
    assert path.read_bytes()[:20] == golden("consume_queue_entry_v1.hex")
    q.shutdown()


def test_index_header(tmp_path, golden):
    f = ix.IndexFile(str(tmp_path / "20231114221320000"), hash_slot_num=8, index_num=8)
    f.put_key("T#a", 0, 1700000000000)
    f.put_key("T#b", 128, 1700000000500)
    f.put_key("T#a", 256, 1700000001000)
    raw = f.mm[:40]
    assert raw == golden("index_header_v1.hex"), raw.hex(" ")
    hdr = ix.INDEX_HEADER.parse(raw)
    assert (hdr.hash_slot_count, hdr.index_count) == (2, 4)
    assert os.path.getsize(f.file_name) == 40 + 8 * 4 + 8 * 20
    # entry 3 chains back to entry 1 (same key), time diff in seconds from begin
    base = 40 + 8 * 4
    e3 = ix.INDEX_ENTRY.parse(f.mm[base + 3 * 20 : base + 4 * 20])
    assert (e3.key_hash, e3.phy_offset, e3.time_diff, e3.prev_index) == (ix.index_key_hash("T#a"), 256, 1, 1)
    f.close()


def test_checkpoint(tmp_path, golden):
    p = str(tmp_path / "checkpoint")
    cp = StoreCheckpoint(p)
    assert (cp.physic_msg_timestamp, cp.logics_msg_timestamp, cp.index_msg_timestamp) == (0, 0, 0)
    cp.physic_msg_timestamp = 1700000000000
    cp.logics_msg_timestamp = 1699999999000
    cp.index_msg_timestamp = 1699999998000
    cp.confirm_phy_offset = 0x0102030405060708
    cp.shutdown()
    raw = open(p, "rb").read()
    assert len(raw) == 4096 and raw[40:] == bytes(4056)
    assert raw[:40] == golden("checkpoint_v1.hex"), raw[:40].hex(" ")
    assert CHECKPOINT.parse(raw).confirm_phy_offset == 0x0102030405060708
    again = StoreCheckpoint(p)
    assert again.get_min_timestamp() == 1699999999000 - 3000
    assert again.get_min_timestamp_index() == 1699999996000
    again.shutdown()
