"""ConsumerFilterManager, its bloom filter data and the store-side ExpressionMessageFilter."""

from __future__ import annotations

import json

from support.fakes import ManualClock

from pyrmq.broker.filter.bloom import BloomFilter, murmur3_x64_128
from pyrmq.broker.filter.consumer_filter_manager import ConsumerFilterManager
from pyrmq.broker.filter.expression_message_filter import ExpressionForRetryMessageFilter, ExpressionMessageFilter
from pyrmq.common.constants import MessageConst
from pyrmq.protocol.bodies.broker import SubscriptionData
from pyrmq.store import message as m

# Guava 32.0.1 Hashing.murmur3_128().hashString(s, UTF_8).asLong(), captured with jshell
GUAVA_MURMUR = {
    "": 0,
    "a": -8839064797231613815,
    "abcdefgh": -3708139591217214462,
    "abcdefghijklmnop": -4266531025627334877,
    "groupX#TopicY": -3199591812741552713,
    "héllo wörld with more than 16 bytes": -2617478948567504285,
}


def test_murmur3_matches_guava():
    for s, want in GUAVA_MURMUR.items():
        h1, _ = murmur3_x64_128(s.encode("utf-8"))
        assert (h1 - (1 << 64) if h1 >> 63 else h1) == want, s


def test_bloom_filter_shape_of_java_defaults():
    b = BloomFilter(20, 32)  # maxErrorRateOfBloomFilter, expectConsumerNumUseFilter
    assert (b.k, b.m) == (3, 112)
    pos = b.calc_bit_positions("groupX#TopicY")
    assert len(pos) == 3 and all(0 <= p < 112 for p in pos)


def _sub(topic, expr, version, kind="SQL92"):
    return SubscriptionData(topic=topic, sub_string=expr, expression_type=kind, sub_version=version)


def test_register_versions_dead_and_clean(tmp_path):
    clock = ManualClock()
    fm = ConsumerFilterManager(str(tmp_path / "consumerFilter.json"), now=clock)
    fm.register_group("g", [_sub("T", "a > 1", 10), _sub("%RETRY%g", "*", 10, "TAG")])
    d = fm.get("T", "g")
    assert d is not None and d.expression == "a > 1" and not d.is_dead()
    assert fm.get("%RETRY%g", "g") is None  # tags are not filter data
    # an older or equal version never replaces; a newer one does
    fm.register_group("g", [_sub("T", "a > 2", 9)])
    assert fm.get("T", "g").expression == "a > 1"
    fm.register_group("g", [_sub("T", "a > 2", 11)])
    assert fm.get("T", "g").expression == "a > 2" and fm.get("T", "g").client_version == 11
    # a newer version that does not compile removes the data (pull then says FILTER_DATA_NOT_EXIST)
    fm.register_group("g", [_sub("T", "a >", 12)])
    assert fm.get("T", "g") is None
    fm.register_group("g", [_sub("T", "b = 'x'", 13)])
    clock.advance(5)
    fm.unregister("g")
    assert fm.get("T", "g").is_dead()
    clock.advance(fm.clean_time_span_ms)
    fm.persist()
    assert json.loads((tmp_path / "consumerFilter.json").read_text()) == {"filterDataByTopic": {}}


def test_persist_format_and_reload(tmp_path):
    clock = ManualClock()
    path = tmp_path / "consumerFilter.json"
    fm = ConsumerFilterManager(str(path), now=clock)
    fm.register_group("grp", [_sub("Top", "a BETWEEN 3 AND 5", 42)])
    fm.persist()
    text = path.read_text()
    tree = json.loads(text)
    data = tree["filterDataByTopic"]["Top"]["groupFilterData"]["grp"]
    assert list(data) == [
        "bloomFilterData",
        "bornTime",
        "clientVersion",
        "consumerGroup",
        "deadTime",
        "expression",
        "expressionType",
        "topic",
    ]
    assert data["bloomFilterData"] == {"bitNum": 112, "bitPos": list(BloomFilter().calc_bit_positions("grp#Top"))}
    assert '"bitPos":[' in text  # an int[] stays on one line in fastjson2's pretty form
    clock.advance(100_000)
    fm2 = ConsumerFilterManager(str(path), now=clock)
    fm2.load()
    d = fm2.get("Top", "grp")
    assert d is not None and d.compiled_expression is not None and d.is_dead()  # dead until a heartbeat
    fm2.register_group("grp", [_sub("Top", "a BETWEEN 3 AND 5", 42)])
    assert not fm2.get("Top", "grp").is_dead()
    # a different bloom filter (other f/n) ignores everything persisted
    fm3 = ConsumerFilterManager(str(path), now=clock, max_error_rate=10)
    fm3.load()
    assert fm3.get("Top", "grp") is None


def _record(props: dict[str, str], topic="T") -> bytes:
    inner = m.MessageExtBrokerInner(topic=topic, body=b"x", properties=props, born_host=("127.0.0.1", 1))
    return bytes(m.encode_message(inner))


def test_expression_message_filter(tmp_path):
    fm = ConsumerFilterManager(str(tmp_path / "f.json"), now=ManualClock())
    sub = _sub("T", "a BETWEEN 3 AND 5 AND b = 'x'", 1)
    fm.register_group("g", [sub])
    f = ExpressionMessageFilter(sub, fm.get("T", "g"), fm)
    assert f.is_matched_by_consume_queue(12345)  # no bit map: decided on the commit log
    assert f.is_matched_by_commit_log(_record({"a": "4", "b": "x"}))
    assert not f.is_matched_by_commit_log(_record({"a": "6", "b": "x"}))
    assert not f.is_matched_by_commit_log(_record({"b": "x"}))
    assert f.is_matched_by_commit_log(None, {"a": "3", "b": "x"})
    # no filter data (a pull carrying a selector that did not compile): everything matches, like Java
    assert ExpressionMessageFilter(sub, None, fm).is_matched_by_commit_log(_record({"a": "9"}))
    tag = SubscriptionData.build("T", "A || B")
    ft = ExpressionMessageFilter(tag, None, fm)
    assert ft.is_matched_by_consume_queue(m.java_string_hash("A"))
    assert not ft.is_matched_by_consume_queue(m.java_string_hash("C"))
    assert ft.is_matched_by_commit_log(_record({}))


def test_retry_filter_uses_the_original_topic_expression(tmp_path):
    fm = ConsumerFilterManager(str(tmp_path / "f.json"), now=ManualClock())
    fm.register_group("g", [_sub("T", "a = 1", 1)])
    retry_sub = _sub("%RETRY%g", "a = 1", 1)
    f = ExpressionForRetryMessageFilter(retry_sub, None, fm)
    assert f.is_matched_by_commit_log(_record({"a": "1", MessageConst.RETRY_TOPIC: "T"}, "%RETRY%g"))
    assert not f.is_matched_by_commit_log(_record({"a": "2", MessageConst.RETRY_TOPIC: "T"}, "%RETRY%g"))
