"""The controller's DLedger entry bodies against the bytes RocketMQ 5.5.0's EventSerializer writes
(tests/golden/controller/events/, from compat/controller/ControllerEventGolden.java): pyrmq writes
the same bytes and reads them back to the same event."""

from __future__ import annotations

import pytest
from support.fakes import golden

from pyrmq.controller.event_serializer import deserialize_event, serialize_event
from pyrmq.controller.events import (
    AlterSyncStateSetEvent,
    ApplyBrokerIdEvent,
    CleanBrokerDataEvent,
    ElectMasterEvent,
    Event,
    UpdateBrokerAddressEvent,
)
from pyrmq.controller.replicas_info import ReplicasInfoManager
from pyrmq.protocol.bodies.controller import SyncStateSet
from pyrmq.protocol.codes import ResponseCode
from pyrmq.protocol.headers.controller import GetReplicaInfoRequestHeader, GetReplicaInfoResponseHeader

GOLDEN: dict[str, Event] = {
    "alter-sync-state-set": AlterSyncStateSetEvent("broker-a", frozenset({1, 2, 10})),
    "apply-broker-id": ApplyBrokerIdEvent(
        "DefaultCluster", "broker-a", "127.0.0.1:30911", 2, "127.0.0.1:30911;1764200000000"
    ),
    "elect-master": ElectMasterEvent("broker-a", 2),
    "elect-master-none": ElectMasterEvent("broker-a", None, new_master_elected=False),
    "clean-broker-data-ids": CleanBrokerDataEvent("broker-a", frozenset({1, 3})),
    "clean-broker-data-all": CleanBrokerDataEvent("broker-a", None),
    "update-broker-address": UpdateBrokerAddressEvent("DefaultCluster", "broker-a", "127.0.0.1:30915", 1),
    "non-ascii-name": ElectMasterEvent("brökér<a>", 1),
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_same_bytes_as_java_both_ways(name):
    java = golden(f"controller/events/{name}.bin")
    assert serialize_event(GOLDEN[name]) == java
    assert deserialize_event(java) == GOLDEN[name]


@pytest.mark.parametrize(
    "body",
    [
        b"",  # the leader's initial proposal
        b"\x00",
        b"\x00\x04{}",  # READ_EVENT
        b"\x00\x63{}",  # no such type
        b"\x00\x03not json",
        b"\x00\x03[1,2]",
        b"\x00\x03\xff\xfe",
        b'\x00\x01{"newSyncStateSet":[1]}',  # no brokerName
        b"\xff\xff{}",
    ],
)
def test_what_is_not_an_event_is_skipped(body):
    assert deserialize_event(body) is None


def test_java_entries_rebuild_the_state():
    """Entries a Java controller appended, applied in order, give the state they describe."""
    replicas = ReplicasInfoManager()
    for name in ("apply-broker-id", "elect-master", "alter-sync-state-set"):
        event = deserialize_event(golden(f"controller/events/{name}.bin"))
        assert event is not None
        replicas.apply_event(event)
    result = replicas.get_replica_info(GetReplicaInfoRequestHeader("broker-a"))
    assert result.code == ResponseCode.SUCCESS and isinstance(result.response, GetReplicaInfoResponseHeader)
    h = result.response
    assert (h.master_broker_id, h.master_address, h.master_epoch) == (2, "127.0.0.1:30911", 1)
    assert result.body is not None
    sss = SyncStateSet.decode(result.body)
    assert (sss.sync_state_set, sss.sync_state_set_epoch) == ({1, 2, 10}, 2)
