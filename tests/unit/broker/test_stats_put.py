"""The send path's put counters (Java BrokerStatsManager#incTopicPutNums/Size, incBrokerPutNums)."""

from __future__ import annotations

from types import SimpleNamespace

from pyrmq.broker.stats import BROKER_PUT_NUMS, TOPIC_PUT_NUMS, TOPIC_PUT_SIZE, BrokerStatsManager, record_put


def _ok(msgs: int, size: int):
    amr = SimpleNamespace(msg_num=msgs, wrote_bytes=size)
    return SimpleNamespace(append_message_result=amr, is_ok=lambda: True)


def test_record_put_counts_topic_and_broker_items_and_store_totals():
    s = BrokerStatsManager("c", now=lambda: 0)
    record_put(s, "T", _ok(1, 100))
    record_put(s, "T", _ok(16, 1600))  # a batch: 16 messages, one request
    record_put(s, "RMQ_SYS_TRACE_TOPIC", _ok(1, 10))  # system: no BROKER_PUT_NUMS
    record_put(s, "T", SimpleNamespace(append_message_result=None, is_ok=lambda: False))
    nums, size = s.get_stats_item(TOPIC_PUT_NUMS, "T"), s.get_stats_item(TOPIC_PUT_SIZE, "T")
    assert (nums.value, nums.times, size.value, size.times) == (17, 2, 1700, 2)
    broker = s.get_stats_item(BROKER_PUT_NUMS, "c")
    assert (broker.value, broker.times, s.broker_put_nums) == (17, 2, 17)
    assert s.get_stats_item(TOPIC_PUT_NUMS, "RMQ_SYS_TRACE_TOPIC").value == 1
    assert (s.put_message_times_total, s.put_message_size_total, s.put_message_failed_times) == (18, 1710, 1)
    assert s.put_buckets[0] == 3


def test_a_deleted_topic_counts_from_zero_again():
    s = BrokerStatsManager("c", now=lambda: 0)
    record_put(s, "T", _ok(1, 100))
    s.on_topic_deleted("T")
    assert s.get_stats_item(TOPIC_PUT_NUMS, "T") is None
    record_put(s, "T", _ok(2, 200))
    assert s.get_stats_item(TOPIC_PUT_NUMS, "T").value == 2
    assert s.get_stats_item(TOPIC_PUT_SIZE, "T").value == 200
