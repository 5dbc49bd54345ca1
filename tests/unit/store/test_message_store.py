"""MessageStore puts, rolling, batch, reads and lookups with tiny files (no background sleeps needed)."""

from __future__ import annotations

import os

import pytest

from pyrmq.store import message as m
from pyrmq.store.commitlog import MessageExtBatch
from pyrmq.store.message_store import TagsCodeMessageFilter
from pyrmq.store.results import GetMessageStatus, PutMessageResult, PutMessageStatus


def test_put_assigns_queue_offsets_and_rolls_files(open_store, msg_factory):
    s = open_store()
    results = [s.put_message(msg_factory(i, queue_id=i % 2)) for i in range(60)]
    assert all(r.is_ok() for r in results)
    assert [r.append_message_result.logics_offset for r in results[:6]] == [0, 0, 1, 1, 2, 2]
    files = sorted(os.listdir(s.config.commit_log_dir))
    assert len(files) > 2 and files[1] == f"{4096:020d}"
    assert all(os.path.getsize(os.path.join(s.config.commit_log_dir, f)) == 4096 for f in files)
    # each full file ends with a blank record whose TOTALSIZE is what was left
    mf = s.commit_log.mapped_file_queue.mapped_files[0]
    recs = list(m.decode_messages(mf.mm))
    end = sum(r.store_size for r in recs)
    total, magic = m.peek_total_size_and_magic(mf.mm, end)
    assert magic == m.BLANK_MAGIC_CODE and total == 4096 - end
    # record fields as written
    r0 = results[0].append_message_result
    got = s.look_message_by_offset(r0.wrote_offset)
    assert got.body == b"body-0" and got.queue_offset == 0 and got.commit_log_offset == r0.wrote_offset
    assert got.store_timestamp == r0.store_timestamp and got.msg_id == r0.msg_id
    assert got.properties["KEYS"] == "k0 common"
    assert m.decode_message_id(r0.msg_id).offset == r0.wrote_offset


def test_get_message_statuses_and_filter(open_store, msg_factory):
    s = open_store()
    for i in range(10):
        s.put_message(msg_factory(i))
    r = s.get_message("g", "T", 0, 0, 4)
    assert r.status is GetMessageStatus.FOUND and r.message_queue_offset == [0, 1, 2, 3]
    assert r.next_begin_offset == 4 and (r.min_offset, r.max_offset) == (0, 10)
    decoded = [m.decode_message(b) for b in r.message_buffer_list]
    assert [d.queue_offset for d in decoded] == [0, 1, 2, 3]
    r.release()
    assert s.get_message("g", "T", 0, 10, 4).status is GetMessageStatus.OFFSET_OVERFLOW_ONE
    bad = s.get_message("g", "T", 0, 12, 4)
    assert bad.status is GetMessageStatus.OFFSET_OVERFLOW_BADLY and bad.next_begin_offset == 0
    assert s.get_message("g", "T", 5, 0, 4).status is GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
    flt = TagsCodeMessageFilter({m.java_string_hash("tag1")})
    r = s.get_message("g", "T", 0, 0, 32, flt)
    assert r.message_queue_offset == [1, 4, 7] and r.next_begin_offset == 10
    none = s.get_message("g", "T", 0, 0, 32, TagsCodeMessageFilter({12345}))
    assert none.status is GetMessageStatus.NO_MATCHED_MESSAGE and none.next_begin_offset == 10


def test_queue_offsets_by_time_and_store_timestamps(open_store, msg_factory, clock):
    s = open_store()
    t0 = clock.now()
    for i in range(8):
        s.put_message(msg_factory(i))
        clock.advance(1000)
    assert s.get_offset_in_queue_by_time("T", 0, t0 + 3000) == 3
    assert s.get_offset_in_queue_by_time("T", 0, t0 + 2500) == 3
    assert s.get_offset_in_queue_by_time("T", 0, t0 - 5) == 0
    assert s.get_offset_in_queue_by_time("T", 0, t0 + 99_000) == 8
    assert s.get_earliest_message_time("T", 0) == t0
    assert s.get_message_store_timestamp("T", 0, 5) == t0 + 5000
    assert s.get_commit_log_offset_in_queue("T", 0, 0) == 0


def test_batch_is_one_record_per_element(open_store):
    s = open_store()
    body = m.encode_batch_body(
        [m.BatchElement(b"a", "KEYS\x01ka\x02UNIQ_KEY\x01U1\x02", 1), m.BatchElement(b"bb", "UNIQ_KEY\x01U2", 2)]
    )
    r = s.put_messages(MessageExtBatch(topic="B", body=body, queue_id=1, properties_string="CLUSTER\x01c\x02"))
    assert r.is_ok() and r.append_message_result.msg_num == 2
    ids = r.append_message_result.msg_id.split(",")
    assert len(ids) == 2
    got = s.get_message("g", "B", 1, 0, 10)
    recs = [m.decode_message(b) for b in got.message_buffer_list]
    assert [x.body for x in recs] == [b"a", b"bb"] and [x.flag for x in recs] == [1, 2]
    assert [x.queue_offset for x in recs] == [0, 1]
    assert recs[0].properties == {"KEYS": "ka", "UNIQ_KEY": "U1", "CLUSTER": "c"}
    assert recs[1].properties == {"UNIQ_KEY": "U2", "CLUSTER": "c"}
    assert recs[1].commit_log_offset == recs[0].commit_log_offset + recs[0].store_size
    assert [x.msg_id for x in recs] == ids
    assert s.query_message("B", "U2", 10, 0, 2**62).phy_offsets == [recs[1].commit_log_offset]
    # the next single message continues the queue
    assert (
        s.put_message(m.MessageExtBrokerInner(topic="B", queue_id=1, body=b"c")).append_message_result.logics_offset
        == 2
    )


def test_batch_does_not_span_files(open_store):
    s = open_store()
    big = m.encode_batch_body([m.BatchElement(b"x" * 500) for _ in range(6)])
    for _ in range(3):
        r = s.put_messages(MessageExtBatch(topic="B", body=big))
        assert r.is_ok()
        start, n = r.append_message_result.wrote_offset, r.append_message_result.wrote_bytes
        assert start // 4096 == (start + n - 1) // 4096


def test_transaction_prepared_and_rollback_take_no_queue_offset(open_store):
    s = open_store()
    sf = m.MessageSysFlag
    half = s.put_message(m.MessageExtBrokerInner(topic="X", body=b"h", sys_flag=sf.TRANSACTION_PREPARED_TYPE))
    assert half.append_message_result.logics_offset == 0
    normal = s.put_message(m.MessageExtBrokerInner(topic="X", body=b"n"))
    rb = s.put_message(m.MessageExtBrokerInner(topic="X", body=b"r", sys_flag=sf.TRANSACTION_ROLLBACK_TYPE))
    commit = s.put_message(m.MessageExtBrokerInner(topic="X", body=b"c", sys_flag=sf.TRANSACTION_COMMIT_TYPE))
    assert (normal.append_message_result.logics_offset, commit.append_message_result.logics_offset) == (0, 1)
    assert rb.append_message_result.logics_offset == 0
    assert s.get_max_offset_in_queue("X", 0) == 2
    got = s.get_message("g", "X", 0, 0, 10)
    assert [m.decode_message(b).body for b in got.message_buffer_list] == [b"n", b"c"]


def test_schedule_topic_tags_code_is_deliver_time(open_store, clock):
    s = open_store()
    s.put_message(
        m.MessageExtBrokerInner(
            topic="SCHEDULE_TOPIC_XXXX", queue_id=2, body=b"d", properties={"DELAY": "3", "TAGS": "t"}
        )
    )
    cq = s.get_consume_queue("SCHEDULE_TOPIC_XXXX", 2)
    assert cq.get(0)[2] == clock.now() + 10_000  # level 3 = 10s


def test_index_query_by_keys_and_uniq_key(open_store, msg_factory, clock):
    s = open_store()
    offs = [s.put_message(msg_factory(i)).append_message_result.wrote_offset for i in range(30)]
    t = clock.now()
    assert s.query_message("T", "k7", 32, t - 1, t + 1).phy_offsets == [offs[7]]
    assert s.query_message("T", "UNIQ00000009", 32, t - 1, t + 1).phy_offsets == [offs[9]]
    assert s.query_message("T", "common", 5, t - 1, t + 1).phy_offsets == offs[::-1][:5]
    assert s.query_message("T", "common", 100, t - 1, t + 1).phy_offsets == offs[::-1]  # capped by maxMsgsNumBatch 64
    assert s.query_message("OTHER", "k7", 32, t - 1, t + 1).phy_offsets == []
    assert s.query_message("T", "k7", 32, t + 10, t + 20).phy_offsets == []
    # index files rolled (256 entries each, 4 keys per message) and chained lookups span them
    assert len(s.index_service.index_file_list) >= 1


def test_index_has_a_tag_entry_per_tagged_message_like_java_5_5_0(open_store, msg_factory, clock):
    """5.5.0 IndexService#buildIndex: after UNIQ_KEY and the KEYS, ``topic#T#<TAGS>``; none without tags."""
    s = open_store()
    offs = [s.put_message(msg_factory(i)).append_message_result.wrote_offset for i in range(6)]
    untagged = msg_factory(6)
    del untagged.properties["TAGS"]
    s.put_message(untagged)
    t = clock.now()
    assert s.index_service.query_offset("T", "T#tag1", 32, t - 1, t + 1)[0] == [offs[4], offs[1]]
    f = s.index_service.index_file_list[-1]
    assert f.index_count - 1 == 6 * 4 + 3  # uniq, k<i>, common, T#tag per tagged message; no tag entry for the last


def test_index_rolls_files_and_still_finds_old_keys(open_store, msg_factory, clock):
    s = open_store(max_index_num=16)
    offs = []
    for i in range(20):
        offs.append(s.put_message(msg_factory(i)).append_message_result.wrote_offset)
        clock.advance(1000)
    assert len(s.index_service.index_file_list) > 3
    assert s.query_message("T", "k2", 32, 0, 2**62).phy_offsets == [offs[2]]
    assert s.query_message("T", "k19", 32, 0, 2**62).phy_offsets == [offs[19]]


def test_illegal_puts(open_store):
    s = open_store(max_message_size=1000)
    r = s.put_message(m.MessageExtBrokerInner(topic="T", body=b"x" * 2000))
    assert r.put_message_status is PutMessageStatus.MESSAGE_ILLEGAL and not r.is_ok()
    r = s.put_message(m.MessageExtBrokerInner(topic="T", body=b"", properties={"a": "b" * 40000}))
    assert r.put_message_status is PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    assert s.get_max_phy_offset() == 0


def test_ipv6_hosts(open_store):
    s = open_store()
    r = s.put_message(
        m.MessageExtBrokerInner(topic="T", body=b"6", born_host=("::1", 7), store_host=("fe80::1", 10911))
    )
    assert len(r.append_message_result.msg_id) == 56
    got = s.look_message_by_offset(0)
    assert got.sys_flag & 0x30 == 0x30 and got.store_host == ("fe80::1", 10911) and got.born_host == ("::1", 7)


def test_on_dispatched_listener(tmp_path, clock, config_factory, msg_factory):
    from pyrmq.store.message_store import MessageStore

    seen = []
    s = MessageStore(
        config_factory(tmp_path), clock=clock, on_dispatched=lambda t, q, mx, tc, req: seen.append((t, q, mx))
    )
    s.load()
    s.start()
    try:
        s.put_message(msg_factory(0, queue_id=3))
        s.put_message(msg_factory(1, queue_id=3))
    finally:
        s.shutdown()
    assert seen == [("T", 3, 1), ("T", 3, 2)]


def test_delete_topics(open_store, msg_factory):
    s = open_store()
    s.put_message(msg_factory(0, topic="D"))
    assert s.delete_topics({"D"}) == 1
    assert s.get_max_offset_in_queue("D", 0) == 0
    assert not os.path.exists(os.path.join(s.config.consume_queue_dir, "D"))


def test_put_hooks_run_in_order_and_may_refuse_or_change_the_message(open_store, msg_factory):
    """Java DefaultMessageStore#putMessageHookList: the first hook returning a result refuses the
    put (nothing is appended), None lets the next hook and then the commit log go on."""
    s = open_store()
    seen = []

    def divert(msg):
        seen.append(("divert", msg.topic))
        if isinstance(msg, m.MessageExtBrokerInner) and msg.topic == "Later":
            msg.topic = "Diverted"
        return None

    def refuse(msg):
        seen.append(("refuse", msg.topic))
        return PutMessageResult(PutMessageStatus.WHEEL_TIMER_NOT_ENABLE) if msg.topic == "No" else None

    s.put_message_hook_list.extend([divert, refuse])
    before = s.get_max_phy_offset()
    r = s.put_message(msg_factory(0, topic="No"))
    assert r.put_message_status is PutMessageStatus.WHEEL_TIMER_NOT_ENABLE and r.append_message_result is None
    assert s.get_max_phy_offset() == before
    assert s.put_message(msg_factory(1, topic="Later")).is_ok()
    assert s.get_max_offset_in_queue("Diverted", 0) == 1 and s.get_max_offset_in_queue("Later", 0) == 0
    batch = MessageExtBatch(topic="B", body=m.encode_batch_body([m.BatchElement(b"a")]))
    assert s.put_messages(batch).is_ok()
    assert seen == [
        ("divert", "No"),
        ("refuse", "No"),
        ("divert", "Later"),
        ("refuse", "Diverted"),
        ("divert", "B"),
        ("refuse", "B"),
    ]


def test_put_refused_before_the_hooks_when_not_writeable(open_store, msg_factory):
    s = open_store()
    s.put_message_hook_list.append(lambda msg: pytest.fail("hook ran on a refused put"))
    s.running_flags.make_not_writeable()
    r = s.put_message(msg_factory(0))
    assert r.put_message_status is PutMessageStatus.SERVICE_NOT_AVAILABLE and "not writeable" in r.error
