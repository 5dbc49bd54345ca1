"""The controller's event journal (replay, torn tail, corrupt record) and its config keys."""

from __future__ import annotations

import os

import pytest

from pyrmq.controller.config import CONTROLLER_KEYS, ControllerConfig, ControllerConfigError
from pyrmq.controller.events import (
    AlterSyncStateSetEvent,
    ApplyBrokerIdEvent,
    CleanBrokerDataEvent,
    ElectMasterEvent,
    UpdateBrokerAddressEvent,
    event_from_json,
    event_to_json,
)
from pyrmq.controller.journal import RECORD_HEADER, EventJournal, encode_record
from pyrmq.controller.replicas_info import ReplicasInfoManager

pytestmark = pytest.mark.unit

EVENTS = [
    [ApplyBrokerIdEvent("c1", "b1", "10.0.0.1:10911", 1, "10.0.0.1:10911;1")],
    [ApplyBrokerIdEvent("c1", "b1", "10.0.0.2:10911", 2, "10.0.0.2:10911;2")],
    [ElectMasterEvent("b1", 1)],
    [AlterSyncStateSetEvent("b1", frozenset({1, 2}))],
    [UpdateBrokerAddressEvent("c1", "b1", "10.0.0.9:10911", 2), CleanBrokerDataEvent("b1", frozenset({2}))],
    [ElectMasterEvent("b1", None, new_master_elected=False)],
]


def test_every_event_round_trips_through_json():
    for batch in EVENTS:
        for e in batch:
            assert event_from_json(event_to_json(e)) == e
    with pytest.raises(ValueError):
        event_from_json({"type": "NOPE"})


def _write(path, batches=EVENTS) -> EventJournal:
    j = EventJournal(str(path))
    j.open()
    for batch in batches:
        j.append(batch)
    j.close()
    return j


def _state(records) -> ReplicasInfoManager:
    m = ReplicasInfoManager()
    for batch in records:
        for e in batch:
            m.apply_event(e)
    return m


def test_replay_returns_what_was_appended(tmp_path):
    _write(tmp_path)
    records = EventJournal(str(tmp_path)).replay()
    assert records == EVENTS
    m = _state(records)
    info = m.sync_state_set_info_table["b1"]
    assert (info.master_broker_id, info.master_epoch, info.sync_state_set, info.sync_state_set_epoch) == (
        None,
        2,
        {1},
        2,
    )
    assert m.replica_info_table["b1"].broker_id_table() == {1: "10.0.0.1:10911"}


@pytest.mark.parametrize("cut", [1, RECORD_HEADER.size - 1, RECORD_HEADER.size, RECORD_HEADER.size + 3])
def test_torn_tail_is_dropped_and_cut(tmp_path, cut):
    """A crash in the middle of the last append: that record is lost, the rest replays, and the
    file is cut back so the next append follows the last whole record."""
    j = _write(tmp_path, EVENTS[:-1])
    whole = os.path.getsize(j.path)
    with open(j.path, "ab") as f:
        f.write(encode_record(EVENTS[-1])[:cut])
    assert EventJournal(str(tmp_path)).replay() == EVENTS[:-1]
    assert os.path.getsize(j.path) == whole
    _write(tmp_path, EVENTS[-1:])
    assert EventJournal(str(tmp_path)).replay() == EVENTS


def test_corrupt_record_stops_replay(tmp_path):
    j = _write(tmp_path)
    first = len(encode_record(EVENTS[0]))
    with open(j.path, "rb+") as f:
        f.seek(first + RECORD_HEADER.size + 2)
        b = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([b[0] ^ 0xFF]))
    assert EventJournal(str(tmp_path)).replay() == EVENTS[:1]


def test_no_journal_is_an_empty_state(tmp_path):
    assert EventJournal(str(tmp_path / "new")).replay() == []


# ---------------------------------------------------------------- config


def test_java_keys_and_defaults():
    cfg = ControllerConfig()
    expected = {
        "controllerType": "DLedger",
        "scanNotActiveBrokerInterval": 5000,
        "scanInactiveMasterInterval": 5000,
        "electMasterMaxRetryCount": 3,
        "enableElectUncleanMaster": False,
        "isProcessReadEvent": False,
        "notifyBrokerRoleChanged": True,
        "controllerDLegerGroup": None,
        "controllerDLegerPeers": None,
        "controllerDLegerSelfId": None,
        "controllerStorePath": "",
        "mappedFileSize": 1 << 30,
        "configBlackList": "configBlackList;configStorePath",
        "listenPort": 19876,
    }
    assert {k: cfg[k] for k in expected} == expected
    assert "jRaftInitConf" in CONTROLLER_KEYS


def test_file_keys_peer_port_and_store_path(tmp_path):
    cfg = ControllerConfig.from_properties(
        {
            "controllerDLegerGroup": "g",
            "controllerDLegerPeers": "n0-127.0.0.1:9878",
            "controllerDLegerSelfId": "n0",
            "processReadEvent": "true",  # Java's setter name for isProcessReadEvent
            "enableElectUncleanMaster": "TRUE",
            "listenPort": "1234",
        }
    )
    cfg.check()
    assert cfg.serve_port() == 9878 and cfg.self_address() == "127.0.0.1:9878"
    assert cfg["isProcessReadEvent"] is True and cfg["enableElectUncleanMaster"] is True
    assert cfg.store_path() == os.path.join(os.path.expanduser("~"), "DLedgerController")
    props = cfg.all_properties()
    assert props["jraftConfig"].startswith("org.apache.rocketmq.common.JraftConfig@")
    assert "jRaftInitConf" not in props and "controllerDLegerPeers" in props


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"controllerDLegerSelfId": "n0"}, "controllerDLegerPeers of ControllerConfig is null or empty"),
        ({"controllerDLegerPeers": "n0-127.0.0.1:9878"}, "controllerDLegerSelfId of ControllerConfig is null or empty"),
        ({"controllerDLegerPeers": "n0-127.0.0.1:9878", "controllerDLegerSelfId": "n1"}, "n1 is not in"),
        ({"controllerDLegerPeers": "n0-127.0.0.1:x", "controllerDLegerSelfId": "n0"}, "bad port"),
        ({"controllerDLegerPeers": "bad", "controllerDLegerSelfId": "n0"}, "bad peer"),
        ({"controllerDLegerPeers": "n0-a:1;n0-a:2", "controllerDLegerSelfId": "n0"}, "listed twice"),
        ({"controllerDLegerPeers": "n0-a:1", "controllerDLegerSelfId": "n0", "controllerType": "jRaft"}, "jRaft"),
    ],
)
def test_config_that_cannot_run(props, message):
    with pytest.raises(ControllerConfigError, match=message):
        ControllerConfig.from_properties(props).check()


def test_update_black_list_and_persist(tmp_path):
    cfg = ControllerConfig.from_properties({"configStorePath": str(tmp_path / "c.properties")})
    assert {"configBlackList", "configStorePath", "rocketmqHome"} <= cfg.black_list()
    cfg.update({"scanInactiveMasterInterval": "7000", "notAKey": "x"})
    cfg.persist()
    assert cfg["scanInactiveMasterInterval"] == 7000
    text = (tmp_path / "c.properties").read_text()
    assert "scanInactiveMasterInterval=7000\n" in text and "notAKey" not in text
