"""KV config persistence format and the properties-file configuration."""

from __future__ import annotations

import json

import pytest

from pyrmq.common.properties import load_properties
from pyrmq.namesrv.config import NamesrvConfig
from pyrmq.namesrv.kv_config import NAMESPACE_ORDER_TOPIC_CONFIG, KVConfigManager
from pyrmq.protocol.bodies.namesrv import KVTable


def test_kv_persisted_in_java_format_and_reloaded(tmp_path) -> None:
    path = tmp_path / "namesrv" / "kvConfig.json"
    kv = KVConfigManager(str(path))
    kv.put_kv_config(NAMESPACE_ORDER_TOPIC_CONFIG, "TopicOrder", "broker-a:4;broker-b:4")
    kv.put_kv_config("ns2", "k", "v")
    assert path.read_bytes() == (
        b'{"configTable":{"ORDER_TOPIC_CONFIG":{"TopicOrder":"broker-a:4;broker-b:4"},"ns2":{"k":"v"}}}'
    )
    kv.delete_kv_config("ns2", "k")
    assert json.loads(path.read_bytes()) == {
        "configTable": {"ORDER_TOPIC_CONFIG": {"TopicOrder": "broker-a:4;broker-b:4"}, "ns2": {}}
    }
    again = KVConfigManager(str(path))
    again.load()
    assert again.get_kv_config(NAMESPACE_ORDER_TOPIC_CONFIG, "TopicOrder") == "broker-a:4;broker-b:4"
    assert KVTable.decode(again.get_kv_list_by_namespace("ns2")) == KVTable({})
    assert again.get_kv_list_by_namespace("nope") is None


def test_kv_loads_a_file_written_by_java(tmp_path) -> None:
    # Java (fastjson2 toJSONString) writes the same compact form; whitespace is tolerated too
    path = tmp_path / "kvConfig.json"
    path.write_text('{\n "configTable": {"ORDER_TOPIC_CONFIG": {"T": "b:8"}}\n}')
    kv = KVConfigManager(str(path))
    kv.load()
    assert kv.get_kv_config("ORDER_TOPIC_CONFIG", "T") == "b:8"


@pytest.mark.parametrize("content", [b"not json", b"[1]", b'{"configTable":3}', b""])
def test_kv_unreadable_file_starts_empty(tmp_path, content: bytes) -> None:
    path = tmp_path / "kvConfig.json"
    path.write_bytes(content)
    kv = KVConfigManager(str(path))
    kv.load()
    assert kv.config_table == {}


def test_kv_put_null_value_is_invisible(tmp_path) -> None:
    kv = KVConfigManager(str(tmp_path / "kv.json"))
    kv.put_kv_config("ns", "k", None)
    assert kv.get_kv_config("ns", "k") is None
    assert kv.get_kv_list_by_namespace("ns") == b'{"table":{}}'


def test_config_typed_values_unknown_keys_and_bad_values() -> None:
    cfg = NamesrvConfig.from_properties(
        {
            "listenPort": "9999",
            "orderMessageEnable": "TRUE",
            "scanNotActiveBrokerInterval": "abc",
            "listenHost": "127.0.0.1",
            "somethingElse": "1",
            "brokerChannelExpiredTime": "3000",
        }
    )
    assert cfg["listenPort"] == 9999
    assert cfg["orderMessageEnable"] is True
    assert cfg["scanNotActiveBrokerInterval"] == 5000  # unparseable: default kept
    assert cfg["bindAddress"] == "127.0.0.1"
    assert cfg["brokerChannelExpiredTime"] == 3000
    assert cfg.unknown_keys() == ["somethingElse"]
    props = cfg.all_properties()
    assert props["somethingElse"] == "1" and props["orderMessageEnable"] == "true"
    assert props["returnOrderTopicConfigToBroker"] == "true"


def test_config_update_changes_existing_keys_only_and_persists(tmp_path) -> None:
    store = tmp_path / "namesrv.properties"
    cfg = NamesrvConfig.from_properties({"configStorePath": str(store), "custom": "a"})
    cfg.update({"enableTopicList": "false", "custom": "b", "brandNew": "x"})
    cfg.persist()
    assert cfg["enableTopicList"] is False
    saved = load_properties(store.read_text())
    assert saved["enableTopicList"] == "false" and saved["custom"] == "b" and "brandNew" not in saved
    assert {"configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome"} <= cfg.black_list()
