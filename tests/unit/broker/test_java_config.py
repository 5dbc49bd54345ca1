"""The broker knows every key of Java 5.5.0's GET_BROKER_CONFIG answer (broker/java_config.py)."""

from __future__ import annotations

from pyrmq.broker.config import BROKER_KEYS, BrokerConfig, _core_defaults
from pyrmq.broker.java_config import MACHINE_DEFAULTS, Machine, accepted_only_defaults
from pyrmq.broker.java_config_keys import JAVA_BROKER_CONFIG_KEYS, MACHINE_DEPENDENT_KEYS
from pyrmq.common.properties import load_properties
from pyrmq.store.store_config import MessageStoreConfig


def test_every_java_key_is_reported():
    props = BrokerConfig().all_properties()
    missing = sorted(k for k in JAVA_BROKER_CONFIG_KEYS if k not in props)
    assert missing == []


def test_keys_pyrmq_acts_on_have_javas_types():
    for key, (_owner, tp, _default) in JAVA_BROKER_CONFIG_KEYS.items():
        if key in _core_defaults():
            assert BROKER_KEYS.types[key] is tp, key
        elif key in MessageStoreConfig.KEYS and key not in ("brokerRole", "flushDiskType"):  # enums there
            assert MessageStoreConfig.KEYS.types[key] is tp, key


def test_store_key_with_an_acronym_keeps_javas_name():
    assert MessageStoreConfig.from_properties({"checkCRCOnRecover": "false"}).check_crc_on_recover is False
    assert "checkCrcOnRecover" not in MessageStoreConfig.KEYS


def test_accepted_key_is_parsed_with_javas_policy_and_reported():
    cfg = BrokerConfig.from_properties({"ackMessageThreadPoolNums": "7", "enableBroadcastOffsetStore": "nope"})
    props = cfg.all_properties()
    assert props["ackMessageThreadPoolNums"] == "7"
    assert props["enableBroadcastOffsetStore"] == "false"  # Boolean.parseBoolean
    bad = BrokerConfig.from_properties({"ackMessageThreadPoolNums": "many"})
    assert bad.all_properties()["ackMessageThreadPoolNums"] == "16"  # kept, like properties2Object
    assert cfg.unknown_keys() == []


def test_machine_defaults_follow_the_processor_count():
    four = accepted_only_defaults([], Machine(cpus=4, home="/h"))
    one = accepted_only_defaults([], Machine(cpus=1, home="/h"))
    assert (four["pullMessageThreadPoolNums"], one["pullMessageThreadPoolNums"]) == (24, 18)
    assert (four["sendMessageThreadPoolNums"], one["sendMessageThreadPoolNums"]) == (4, 1)
    assert four["storePathRootDir"] == "/h/store"
    assert set(MACHINE_DEFAULTS) == MACHINE_DEPENDENT_KEYS


def test_persisted_config_reads_back(tmp_path):
    cfg = BrokerConfig({"brokerConfigPath": str(tmp_path / "broker.conf")})
    cfg.apply({"recoverThreadPoolNums": "5"})
    cfg.persist()
    again = BrokerConfig.from_properties(load_properties((tmp_path / "broker.conf").read_text()))
    assert again["recoverThreadPoolNums"] == 5
