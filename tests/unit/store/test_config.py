"""Config JSON files: the fastjson dialects, Java 5.5.0's exact bytes, ConfigManager persistence."""

from __future__ import annotations

import difflib
import os
import pathlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.fakes import GOLDEN_DIR

from pyrmq.store import config as cfg
from pyrmq.store.config import (
    CONFIG_FILES,
    ConfigFileError,
    ConsumerOffsetSerializeWrapper,
    CustomizedRetryPolicy,
    DataVersion,
    DelayOffsetSerializeWrapper,
    SubscriptionGroupConfig,
    SubscriptionGroupSerializeWrapper,
    TopicConfig,
    TopicConfigSerializeWrapper,
    dumps_pretty,
    loads,
)

GOLDEN = GOLDEN_DIR / "store" / "config"
JAVA_FILES = sorted((GOLDEN / "java-5.5.0").glob("*.json"))


def _diff(want: str, got: str) -> str:
    return "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "java", "pyrmq"))


@pytest.mark.parametrize("path", JAVA_FILES, ids=lambda p: p.name)
def test_java_file_round_trips_byte_for_byte(path: pathlib.Path) -> None:
    text = path.read_bytes().decode("utf-8")
    obj = cfg.decode_config(CONFIG_FILES[path.name], text)
    got = cfg.encode_config(obj)
    assert got == text, _diff(text, got)


def test_java_files_present() -> None:
    assert {p.name for p in JAVA_FILES} == set(CONFIG_FILES)


def test_java_topics_decoded_fields() -> None:
    w = cfg.decode_config(TopicConfigSerializeWrapper, (GOLDEN / "java-5.5.0/topics.json").read_text())
    eight = w.topic_config_table["TopicEight"]
    assert (eight.read_queue_nums, eight.write_queue_nums, eight.perm, eight.order) == (8, 8, 6, False)
    assert w.topic_config_table["TopicOne"].order is True
    assert w.topic_config_table["TopicFifo"].attributes == {"message.type": "FIFO"}
    assert w.topic_config_table["SCHEDULE_TOPIC_XXXX"].read_queue_nums == 18
    assert w.data_version.counter > 0 and w.data_version.timestamp > 1_600_000_000_000


def test_java_consumer_offsets_decoded() -> None:
    w = cfg.decode_config(ConsumerOffsetSerializeWrapper, (GOLDEN / "java-5.5.0/consumerOffset.json").read_text())
    assert w.offset_table == {"TopicEight@GroupA": {3: 4, 4: 1, 5: 2}}
    assert w.group_topic_map() == {"GroupA": ["TopicEight"]}


def test_java_delay_offsets_decoded() -> None:
    w = cfg.decode_config(DelayOffsetSerializeWrapper, (GOLDEN / "java-5.5.0/delayOffset.json").read_text())
    assert w.offset_table == {2: 1}  # delay level 2 delivered one message


def test_java_subscription_groups_decoded_and_defaults_match_java() -> None:
    w = cfg.decode_config(SubscriptionGroupSerializeWrapper, (GOLDEN / "java-5.5.0/subscriptionGroup.json").read_text())
    t = w.subscription_group_table
    # a group the broker creates with Java's defaults equals our defaults
    assert t["SELF_TEST_C_GROUP"] == SubscriptionGroupConfig(group_name="SELF_TEST_C_GROUP")
    assert t["GroupCust"].retry_max_times == 3
    assert t["GroupCust"].group_retry_policy.customized_retry_policy == CustomizedRetryPolicy((1000, 2000, 4000))
    exp = t["GroupExp"].group_retry_policy
    assert exp.type == "EXPONENTIAL"
    assert (exp.exponential_retry_policy.initial, exp.exponential_retry_policy.max) == (2000, 60000)
    assert w.forbidden_table == {}


def test_fastjson1_dialect_is_read() -> None:
    """4.9.x brokers (fastjson 1.x) put integer-keyed maps on one line."""
    w = cfg.decode_config(ConsumerOffsetSerializeWrapper, (GOLDEN / "fastjson1/consumerOffset.json").read_text())
    assert w.offset_table == {"%RETRY%group_a@group_a": {0: 3}, "TopicTest@group_a": {0: 250, 1: 251, 2: 0}}
    assert w.data_version is None or isinstance(w.data_version, DataVersion)


def test_pretty_writer_matches_fastjson2() -> None:
    """Same value as the Java program that produced the golden file (see its README)."""
    value = {
        "intMap": {-1: -7, 0: 5, 12: 9999999999},
        "emptyMap": {},
        "emptyList": [],
        "list": ["a", "b"],
        "longs": (1000, 2000),
        "objList": [{"x": 1}, {"y": True}],
        "str": "q\"b\\s/ \t\n\r\u0001\u001f\u007f é 中 \U0001f600 <>&'",
        "nullv": None,
        "withNull": {"a": None, "b": 1},
        "dbl": 1.5,
        "neg": -3,
    }
    want = (GOLDEN / "fastjson2_pretty_shapes.json").read_bytes().decode("utf-8")
    got = dumps_pretty(value)
    assert got == want, _diff(want, got)


@pytest.mark.parametrize(
    "text, value",
    [
        ("{0:1,1:2}", {0: 1, 1: 2}),
        ('{"0":1}', {"0": 1}),
        ("{\n\t-3:4\n}", {-3: 4}),
        ('{"a":{7:8\n\t\t},"b":[1,2]}', {"a": {7: 8}, "b": [1, 2]}),
        ('{"k":"{1:2,3:4}"}', {"k": "{1:2,3:4}"}),  # keys inside strings stay text
        ('{"k\\"{1:":5}', {'k"{1:': 5}),
        ("{'single':1}", {"single": 1}),  # fastjson leniency, via the slow parser
        ('{"\\u0000@g":{1:2}}', {"\x00@g": {1: 2}}),  # a NUL in a name does not confuse the fast path
        ('[{1:2},{"x":{}}]', [{1: 2}, {"x": {}}]),
    ],
)
def test_loads_dialects(text: str, value: object) -> None:
    got = loads(text)
    assert got == value
    assert [type(k) for k in _keys(got)] == [type(k) for k in _keys(value)]


def _keys(v: object) -> list:
    if isinstance(v, dict):
        return [k for kk, vv in v.items() for k in [kk, *_keys(vv)]]
    if isinstance(v, list):
        return [k for x in v for k in _keys(x)]
    return []


@pytest.mark.parametrize("bad", ["", "{", '{"a":}', "[1,,2]", '{"a":1}}', "nope"])
def test_loads_rejects_garbage(bad: str) -> None:
    with pytest.raises(ValueError):
        loads(bad)


def test_quoted_integer_keys_are_read_as_ints_by_the_typed_beans() -> None:
    w = cfg.decode_config(DelayOffsetSerializeWrapper, '{"offsetTable":{"1":12,"2":0}}')
    assert w.offset_table == {1: 12, 2: 0}
    assert w.data_version == DataVersion()  # missing property: the Java default
    w.data_version = None  # a 4.9.x-shaped file has none
    assert cfg.encode_config(w) == '{\n\t"offsetTable":{\n\t\t1:12,\n\t\t2:0\n\t}\n}'


def test_group_topic_map_skips_broadcast_keys() -> None:
    w = ConsumerOffsetSerializeWrapper(
        offset_table={"T1@g": {0: 1}, "T2@g": {0: 2}, "T3@h": {1: 5}, "T4@g@broadcast": {0: 1}}
    )
    assert w.group_topic_map() == {"g": ["T1", "T2"], "h": ["T3"]}
    back = cfg.decode_config(ConsumerOffsetSerializeWrapper, cfg.encode_config(w))
    assert back.offset_table == w.offset_table


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=12).map(lambda s: s + "@grp"),
        st.dictionaries(st.integers(0, 1023), st.integers(0, 2**63 - 1), max_size=8),
        max_size=6,
    ),
    st.integers(0, 2**62),
)
def test_consumer_offsets_round_trip(table: dict, counter: int) -> None:
    w = ConsumerOffsetSerializeWrapper(offset_table=table, data_version=DataVersion(counter, 0, 1700000000000))
    text = cfg.encode_config(w)
    back = cfg.decode_config(ConsumerOffsetSerializeWrapper, text)
    assert back.offset_table == table
    assert back.data_version == w.data_version
    assert cfg.encode_config(back) == text


def test_topic_config_defaults_are_javas() -> None:
    tc = TopicConfig(topic_name="T")
    assert (tc.read_queue_nums, tc.write_queue_nums, tc.perm, tc.topic_filter_type, tc.order) == (
        16,
        16,
        6,
        "SINGLE_TAG",
        False,
    )


# --------------------------------------------------------------------------- persistence


def _topics(n: int) -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper(
        topic_config_table={f"T{i}": TopicConfig(topic_name=f"T{i}", read_queue_nums=i + 1) for i in range(n)},
        data_version=DataVersion(n, 0, 1_700_000_000_000 + n),
    )


def test_persist_keeps_previous_version_as_bak(tmp_path: pathlib.Path) -> None:
    assert cfg.load_config(tmp_path, TopicConfigSerializeWrapper) is None
    path = cfg.persist_config(tmp_path, _topics(1))
    assert path == os.path.join(tmp_path, "config", "topics.json")
    assert not os.path.exists(path + ".bak")
    cfg.persist_config(tmp_path, _topics(2))
    assert sorted(os.listdir(tmp_path / "config")) == ["topics.json", "topics.json.bak"]
    assert cfg.load_config(tmp_path, TopicConfigSerializeWrapper) == _topics(2)
    bak = cfg.decode_config(TopicConfigSerializeWrapper, (tmp_path / "config/topics.json.bak").read_text())
    assert bak == _topics(1)


@pytest.mark.parametrize("damage", ["missing", "empty", "truncated", "garbage"])
def test_load_falls_back_to_bak(tmp_path: pathlib.Path, damage: str) -> None:
    cfg.persist_config(tmp_path, _topics(1))
    cfg.persist_config(tmp_path, _topics(2))
    main = tmp_path / "config/topics.json"
    if damage == "missing":
        main.unlink()
    elif damage == "empty":
        main.write_bytes(b"")
    elif damage == "truncated":
        main.write_bytes(main.read_bytes()[:40])
    else:
        main.write_bytes(b"\x00\x01 not json")
    assert cfg.load_config(tmp_path, TopicConfigSerializeWrapper) == _topics(1)
    if damage in ("truncated", "garbage"):
        assert (tmp_path / "config/topics.json.corrupt").exists()  # kept for inspection, not re-read
        assert not main.exists()
        # the next persist must not copy the corrupt file over the good backup
        cfg.persist_config(tmp_path, _topics(3))
        assert cfg.decode_config(
            TopicConfigSerializeWrapper, (tmp_path / "config/topics.json.bak").read_text()
        ) == _topics(1)
        assert cfg.load_config(tmp_path, TopicConfigSerializeWrapper) == _topics(3)


def test_both_unreadable_raises(tmp_path: pathlib.Path) -> None:
    d = tmp_path / "config"
    d.mkdir()
    (d / "consumerOffset.json").write_text("{garbage")
    (d / "consumerOffset.json.bak").write_text("{also garbage")
    with pytest.raises(ConfigFileError, match=r"consumerOffset\.json"):
        cfg.load_config(tmp_path, ConsumerOffsetSerializeWrapper)


def test_persist_leaves_no_tmp_and_is_what_java_writes(tmp_path: pathlib.Path) -> None:
    golden = (GOLDEN / "java-5.5.0/subscriptionGroup.json").read_text()
    w = cfg.decode_config(SubscriptionGroupSerializeWrapper, golden)
    cfg.persist_config(tmp_path, w)
    assert os.listdir(tmp_path / "config") == ["subscriptionGroup.json"]
    assert (tmp_path / "config/subscriptionGroup.json").read_text() == golden


def test_non_utf8_file_is_read(tmp_path: pathlib.Path) -> None:
    d = tmp_path / "config"
    d.mkdir()
    (d / "topics.json").write_bytes('{"topicConfigTable":{"T\xe9":{"topicName":"T\xe9"}}}'.encode("latin-1"))
    w = cfg.load_config(tmp_path, TopicConfigSerializeWrapper)
    assert list(w.topic_config_table) == ["T\xe9"]
