"""The broker's managers read and write config files through pyrmq.store.config: what a Java 5.5.0
broker wrote is loaded, and what they persist is Java 5.5.0's text (tests/golden/store/config)."""

from __future__ import annotations

import pathlib
import shutil

import pytest
from support.fakes import GOLDEN_DIR

from pyrmq.broker.config import BrokerConfig
from pyrmq.broker.consumer_offset_manager import ConsumerOffsetManager
from pyrmq.broker.subscription_group_manager import SubscriptionGroupManager
from pyrmq.broker.topic_config_manager import TopicConfigManager
from pyrmq.store import config as cfg

GOLDEN = GOLDEN_DIR / "store" / "config" / "java-5.5.0"


def _copy(tmp_path: pathlib.Path, name: str) -> str:
    dst = tmp_path / "config" / name
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(GOLDEN / name, dst)
    return str(dst)


def _java_broker_config() -> BrokerConfig:
    c = BrokerConfig()
    c["brokerName"], c["brokerClusterName"] = "broker-a", "DefaultCluster"
    return c


def test_consumer_offsets_persist_is_javas_text(tmp_path) -> None:
    path = _copy(tmp_path, "consumerOffset.json")
    com = ConsumerOffsetManager(path)
    com.load()
    assert com.query_offset("GroupA", "TopicEight", 4) == 1
    com.persist()
    assert pathlib.Path(path).read_text() == (GOLDEN / "consumerOffset.json").read_text()
    assert pathlib.Path(path + ".bak").read_text() == (GOLDEN / "consumerOffset.json").read_text()


def test_consumer_offsets_write_pull_offsets_and_read_back(tmp_path) -> None:
    path = str(tmp_path / "config" / "consumerOffset.json")
    com = ConsumerOffsetManager(path)
    com.commit_offset("h", "g", "T", 3, 7)
    com.commit_pull_offset("h", "g", "T", 3, 9)
    com.persist()
    tree = cfg.loads(pathlib.Path(path).read_text())
    assert tree["offsetTable"] == {"T@g": {3: 7}} and tree["pullOffsetTable"] == {"T@g": {3: 9}}
    assert tree["groupTopicMap"] == {"g": ["T"]}
    again = ConsumerOffsetManager(path)
    again.load()
    assert again.query_offset("g", "T", 3) == 7


def test_subscription_groups_round_trip_through_the_manager(tmp_path) -> None:
    path = _copy(tmp_path, "subscriptionGroup.json")
    sgm = SubscriptionGroupManager(_java_broker_config(), path, now=lambda: 0)
    sgm.load()
    exp = sgm.table["GroupExp"].group_retry_policy.exponential_retry_policy
    assert (exp.initial, exp.max, exp.multiplier) == (2000, 60000, 3)
    assert sgm.table["GroupCust"].retry_max_times == 3
    sgm.persist()
    # same groups and data version as Java wrote (map order is the table's; Java's is a ConcurrentHashMap's)
    assert cfg.loads(pathlib.Path(path).read_text()) == cfg.loads((GOLDEN / "subscriptionGroup.json").read_text())
    assert '\n\t"subscriptionGroupTable":{\n\t\t"' in pathlib.Path(path).read_text()


def test_topics_round_trip_through_the_manager(tmp_path) -> None:
    path = _copy(tmp_path, "topics.json")
    tcm = TopicConfigManager(_java_broker_config(), path, now=lambda: 0)
    tcm.load()
    assert tcm.select_topic_config("TopicOne").order
    tcm.persist()
    got = cfg.decode_config(cfg.TopicConfigSerializeWrapper, pathlib.Path(path).read_text())
    java = cfg.decode_config(cfg.TopicConfigSerializeWrapper, (GOLDEN / "topics.json").read_text())
    assert got.data_version == java.data_version
    for name, tc in java.topic_config_table.items():
        assert got.topic_config_table[name] == tc
    # what the manager writes for the table it holds is exactly the shared module's text
    assert pathlib.Path(path).read_text() == cfg.encode_config(tcm.build_serialize_wrapper())


@pytest.mark.parametrize("damage", ["garbage", "empty"])
def test_managers_fall_back_to_bak(tmp_path, damage) -> None:
    path = _copy(tmp_path, "consumerOffset.json")
    shutil.copyfile(path, path + ".bak")
    pathlib.Path(path).write_text("{not json" if damage == "garbage" else "")
    com = ConsumerOffsetManager(path)
    com.load()
    assert com.query_offset("GroupA", "TopicEight", 5) == 2


def test_unreadable_file_and_bak_refuse_to_load(tmp_path) -> None:
    path = str(tmp_path / "config" / "subscriptionGroup.json")
    pathlib.Path(path).parent.mkdir(parents=True)
    pathlib.Path(path).write_text("{oops")
    pathlib.Path(path + ".bak").write_text("[also bad")
    with pytest.raises(cfg.ConfigFileError):
        SubscriptionGroupManager(_java_broker_config(), path, now=lambda: 0).load()


def test_fresh_broker_has_javas_system_groups() -> None:
    java = cfg.loads((GOLDEN / "subscriptionGroup.json").read_text())["subscriptionGroupTable"]
    fresh = SubscriptionGroupManager(_java_broker_config(), None, now=lambda: 0).table
    assert set(fresh) == set(java) - {"GroupA", "GroupExp", "GroupCust"}
    for name, sg in fresh.items():
        assert cfg.loads(cfg.encode_config(sg)) == java[name]


def test_bad_store_value_is_logged_and_skipped(tmp_path, caplog) -> None:
    """MixAll#properties2Object: a value that does not parse keeps the key's value, nothing raises."""
    from pyrmq.broker.config import BrokerConfig

    with caplog.at_level("WARNING"):
        cfg = BrokerConfig.from_properties({"maxMessageSize": "4MB", "flushIntervalCommitLog": "250"})
    assert cfg.store.max_message_size == 4 * 1024 * 1024
    assert cfg.store.flush_interval_commit_log == 250
    assert any("maxMessageSize" in r.getMessage() and "4MB" in r.getMessage() for r in caplog.records)


def test_store_key_set_back_to_its_default_takes_effect() -> None:
    """updateBrokerConfig flushDiskType=ASYNC_FLUSH after SYNC_FLUSH (it used to be ignored)."""
    from pyrmq.broker.config import BrokerConfig
    from pyrmq.store.store_config import FlushDiskType

    cfg = BrokerConfig.from_properties({"flushDiskType": "SYNC_FLUSH", "maxMessageSize": "1000"})
    store = cfg.store
    assert store.flush_disk_type is FlushDiskType.SYNC_FLUSH
    cfg.apply({"flushDiskType": "ASYNC_FLUSH", "maxMessageSize": str(4 * 1024 * 1024)})
    assert cfg.store is store  # the running store shares this object
    assert store.flush_disk_type is FlushDiskType.ASYNC_FLUSH
    assert store.max_message_size == 4 * 1024 * 1024
    cfg.apply({"flushDiskType": "NOT_A_TYPE"})
    assert store.flush_disk_type is FlushDiskType.ASYNC_FLUSH


def test_a_topic_list_is_persisted_and_announced_once(tmp_path, monkeypatch) -> None:
    """UPDATE_AND_CREATE_TOPIC_LIST (Java updateTopicConfigList): every topic put, the data version
    bumped once per topic as Java's, but topics.json written once and one change notice for the
    list (once per topic made 10,000 topics in batches of 500 rewrite the file 10,000 times)."""
    notices: list[list[str]] = []
    path = str(tmp_path / "topics.json")
    tcm = TopicConfigManager(
        _java_broker_config(), path, now=lambda: 0, on_change=lambda tcs: notices.append([t.topic_name for t in tcs])
    )
    writes = []
    real_persist = tcm.persist
    monkeypatch.setattr(tcm, "persist", lambda: writes.append(1) or real_persist())
    before = tcm.data_version.counter
    names = [f"ListT{i}" for i in range(50)]
    tcm.update_topic_config_list(
        [cfg.TopicConfig(topic_name=n, read_queue_nums=8, write_queue_nums=8, perm=6, attributes={}) for n in names]
    )
    assert all(tcm.select_topic_config(n).read_queue_nums == 8 for n in names)
    assert tcm.data_version.counter == before + len(names)
    assert writes == [1] and notices == [names]
    on_disk = cfg.decode_config(cfg.TopicConfigSerializeWrapper, pathlib.Path(path).read_text())
    assert set(names) <= set(on_disk.topic_config_table)
