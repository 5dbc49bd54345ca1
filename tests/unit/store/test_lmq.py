"""Light message queues in the store: INNER_MULTI_QUEUE_OFFSET written at append in Java's
property order, one consume-queue entry per %LMQ% queue at dispatch, recovery rebuilding them."""

from __future__ import annotations

import os
import shutil

from pyrmq.store import message as m
from pyrmq.store.message_store import MessageStore
from pyrmq.store.results import PutMessageStatus

LMQ_ON = {"enable_lmq": True, "enable_multi_dispatch": True}


def _lmq_msg(msg_factory, i, names, topic="T", **props):
    return msg_factory(i, topic=topic, INNER_MULTI_DISPATCH=names, **props)


def _record(s, res):
    return m.decode_message(s.commit_log.get_message(res.wrote_offset, res.wrote_bytes))


def test_append_writes_each_lmq_offset_in_java_property_order(open_store, msg_factory):
    s = open_store(**LMQ_ON)
    r0 = s.put_message(_lmq_msg(msg_factory, 0, "%LMQ%a,%LMQ%b", WAIT="true")).append_message_result
    r1 = s.put_message(_lmq_msg(msg_factory, 1, "%LMQ%a,%LMQ%b")).append_message_result
    r2 = s.put_message(_lmq_msg(msg_factory, 2, "%LMQ%b")).append_message_result
    assert [_record(s, r).properties["INNER_MULTI_QUEUE_OFFSET"] for r in (r0, r1, r2)] == ["0,0", "1,1", "2"]
    # Java re-serialises the HashMap(128): buckets UNIQ_KEY 28, INNER_MULTI_QUEUE_OFFSET 47,
    # TAGS 62, KEYS 87, WAIT 93 (kept: removeWaitStorePropertyString's string is overwritten),
    # INNER_MULTI_DISPATCH 108
    expected = (
        "UNIQ_KEY\x01UNIQ00000000\x02INNER_MULTI_QUEUE_OFFSET\x010,0\x02TAGS\x01tag0\x02"
        "KEYS\x01k0 common\x02WAIT\x01true\x02INNER_MULTI_DISPATCH\x01%LMQ%a,%LMQ%b\x02"
    )
    rec = bytes(s.commit_log.get_message(r0.wrote_offset, r0.wrote_bytes))
    assert rec.endswith(len(expected).to_bytes(2, "big") + expected.encode())
    assert len(rec) == r0.wrote_bytes
    # the record's own queue offset is untouched
    assert (r0.logics_offset, r1.logics_offset, r2.logics_offset) == (0, 1, 2)


def test_wait_goes_last_in_its_bucket_as_javas_remove_and_put(open_store, msg_factory):
    """ "kar" shares WAIT's bucket (93 of 128): Java's remove-then-put of WAIT moves it behind."""
    s = open_store(**LMQ_ON)
    msg = msg_factory(0, INNER_MULTI_DISPATCH="%LMQ%a")
    msg.properties = {"WAIT": "true", "kar": "v", **msg.properties}  # the broker's HashMap order
    r = s.put_message(msg).append_message_result
    rec = bytes(s.commit_log.get_message(r.wrote_offset, r.wrote_bytes))
    assert b"kar\x01v\x02WAIT\x01true\x02" in rec


def test_dispatch_appends_an_entry_to_each_lmq_queue(open_store, msg_factory):
    s = open_store(**LMQ_ON)
    puts = [s.put_message(_lmq_msg(msg_factory, i, "%LMQ%a,%LMQ%b" if i % 2 else "%LMQ%a")) for i in range(5)]
    assert all(p.put_message_status is PutMessageStatus.PUT_OK for p in puts)
    assert s.get_max_offset_in_queue("%LMQ%a", 0) == 5
    assert s.get_max_offset_in_queue("%LMQ%b", 0) == 2
    assert os.path.isdir(os.path.join(s.config.consume_queue_dir, "%LMQ%a", "0"))
    got = s.get_message("g", "%LMQ%b", 0, 0, 32)
    assert got.message_queue_offset == [0, 1]
    bodies = [m.decode_message(b).body for b in got.message_buffer_list]
    assert bodies == [msg_factory(1).body, msg_factory(3).body]
    # the entry points at the very record of the original topic
    assert s.get_commit_log_offset_in_queue("%LMQ%b", 0, 1) == puts[3].append_message_result.wrote_offset


def test_switches_and_excluded_topics(open_store, msg_factory, tmp_path):
    off = open_store(root=tmp_path / "off")
    r = off.put_message(_lmq_msg(msg_factory, 0, "%LMQ%a")).append_message_result
    assert "INNER_MULTI_QUEUE_OFFSET" not in _record(off, r).properties
    assert off.get_consume_queue("%LMQ%a", 0) is None

    no_dispatch = open_store(root=tmp_path / "nodispatch", enable_lmq=True)
    r = no_dispatch.put_message(_lmq_msg(msg_factory, 0, "%LMQ%a")).append_message_result
    assert _record(no_dispatch, r).properties["INNER_MULTI_QUEUE_OFFSET"] == "0"
    assert no_dispatch.get_consume_queue("%LMQ%a", 0) is None

    on = open_store(root=tmp_path / "on", **LMQ_ON)
    for topic in ("%RETRY%g", "rmq_sys_x", "SCHEDULE_TOPIC_XXXX"):
        r = on.put_message(_lmq_msg(msg_factory, 0, "%LMQ%a", topic=topic)).append_message_result
        assert "INNER_MULTI_QUEUE_OFFSET" not in _record(on, r).properties, topic
    assert on.get_consume_queue("%LMQ%a", 0) is None
    # a name that is not an LMQ gets an empty offset; the joined list then has fewer offsets
    # than names after Java's split, so nothing is multi-dispatched (as in Java)
    r = on.put_message(_lmq_msg(msg_factory, 1, "%LMQ%a,plain")).append_message_result
    assert _record(on, r).properties["INNER_MULTI_QUEUE_OFFSET"] == "0,"
    assert on.get_consume_queue("%LMQ%a", 0) is None
    assert on.get_consume_queue("plain", 0) is None


def test_a_name_no_directory_can_have_does_not_stall_dispatch(open_store, msg_factory):
    s = open_store(**LMQ_ON)
    long_name = "%LMQ%" + "x" * 300
    r = s.put_message(_lmq_msg(msg_factory, 0, f"{long_name},%LMQ%ok"))
    assert r.put_message_status is PutMessageStatus.PUT_OK
    assert s.reput_message_service.stalled is None
    assert s.get_consume_queue(long_name, 0) is None
    assert s.get_max_offset_in_queue("%LMQ%ok", 0) == 1
    s.put_message(_lmq_msg(msg_factory, 1, "%LMQ%ok"))
    assert s.get_max_offset_in_queue("%LMQ%ok", 0) == 2 and s.get_max_offset_in_queue("T", 0) == 2


def test_max_lmq_consume_queue_num_is_not_enforced(open_store, msg_factory):
    """Java 5.x keeps the key (and the LMQ_CONSUME_QUEUE_NUM_EXCEEDED status) but no longer checks it."""
    s = open_store(max_lmq_consume_queue_num=1, **LMQ_ON)
    r = s.put_message(_lmq_msg(msg_factory, 0, "%LMQ%a,%LMQ%b,%LMQ%c"))
    assert r.put_message_status is PutMessageStatus.PUT_OK
    assert [s.get_max_offset_in_queue(f"%LMQ%{q}", 0) for q in "abc"] == [1, 1, 1]


def test_properties_grown_past_the_limit_are_refused(open_store, msg_factory):
    s = open_store(**LMQ_ON)
    names = ",".join(f"%LMQ%{i:05d}" for i in range(2900))  # ~31.9 KB: the offsets push it past 32767
    r = s.put_message(_lmq_msg(msg_factory, 0, names))
    assert r.put_message_status is PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    assert s.get_max_offset_in_queue("T", 0) == 0
    ok = s.put_message(_lmq_msg(msg_factory, 1, "%LMQ%00000"))
    assert _record(s, ok.append_message_result).properties["INNER_MULTI_QUEUE_OFFSET"] == "0"


def test_recovery_rebuilds_lmq_queues_and_continues_their_offsets(
    open_store, msg_factory, tmp_path, clock, config_factory
):
    s = open_store(**LMQ_ON)
    for i in range(6):
        s.put_message(_lmq_msg(msg_factory, i, "%LMQ%a,%LMQ%b" if i < 4 else "%LMQ%a"))
    s.shutdown()
    shutil.rmtree(os.path.join(s.config.consume_queue_dir, "%LMQ%a"))
    shutil.rmtree(os.path.join(s.config.consume_queue_dir, "T"))
    open(s.config.abort_path, "w").close()  # as after a crash: recover from the commit log
    s2 = MessageStore(config_factory(tmp_path / "store", **LMQ_ON), clock=clock)
    s2.load()
    s2.start()
    try:
        assert s2.get_max_offset_in_queue("%LMQ%a", 0) == 6
        assert s2.get_max_offset_in_queue("%LMQ%b", 0) == 4
        got = s2.get_message("g", "%LMQ%a", 0, 0, 32)
        assert [m.decode_message(b).body for b in got.message_buffer_list] == [msg_factory(i).body for i in range(6)]
        r = s2.put_message(_lmq_msg(msg_factory, 6, "%LMQ%b,%LMQ%a")).append_message_result
        assert _record(s2, r).properties["INNER_MULTI_QUEUE_OFFSET"] == "4,6"
        assert s2.get_max_offset_in_queue("%LMQ%b", 0) == 5
    finally:
        s2.shutdown()
