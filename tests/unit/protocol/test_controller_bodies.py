"""Controller headers and bodies read what Java's beans write (fastjson dialect, Long keys unquoted)."""

import pytest

from pyrmq.protocol.bodies.controller import (
    EPOCH_OPEN_END,
    BrokerReplicasInfo,
    ElectMasterResponseBody,
    EpochEntryCache,
    SyncStateSet,
)
from pyrmq.protocol.headers.controller import (
    CleanControllerBrokerDataRequestHeader,
    ElectMasterRequestHeader,
    GetMetaDataResponseHeader,
)

pytestmark = pytest.mark.unit


def test_sync_state_set_reads_back_as_a_set() -> None:
    body = SyncStateSet(sync_state_set={2, 1}, sync_state_set_epoch=3)
    assert body.encode() == b'{"syncStateSet":[1,2],"syncStateSetEpoch":3}'
    assert SyncStateSet.decode(b'{"syncStateSet":[2,1,2],"syncStateSetEpoch":"4"}') == SyncStateSet({1, 2}, 4)


def test_elect_master_body_keeps_java_long_keys() -> None:
    raw = b'{"brokerMemberGroup":{"brokerAddrs":{1:"a:1",2:"b:2"},"brokerName":"bn","cluster":"c"},"syncStateSet":[1]}'
    body = ElectMasterResponseBody.decode(raw)
    assert body.broker_member_group is not None
    assert body.broker_member_group.broker_addrs == {1: "a:1", 2: "b:2"}
    assert body.sync_state_set == {1}
    assert body.encode() == raw


def test_replicas_info_and_epoch_cache() -> None:
    raw = (
        b'{"replicasInfoTable":{"bn":{"inSyncReplicas":[{"alive":true,"brokerAddress":"a:1","brokerId":1,'
        b'"brokerName":"bn"}],"masterAddress":"a:1","masterBrokerId":1,"masterEpoch":2,"notInSyncReplicas":[],'
        b'"syncStateSetEpoch":3}}}'
    )
    info = BrokerReplicasInfo.decode(raw).replicas_info_table["bn"]
    assert (info.master_broker_id, info.master_epoch, info.in_sync_replicas[0].alive) == (1, 2, True)
    cache = EpochEntryCache.decode(b'{"brokerId":1,"epochList":[{"epoch":1,"startOffset":0}],"maxOffset":9}')
    assert cache.epoch_list[0].end_offset == EPOCH_OPEN_END


def test_controller_headers_use_java_field_names() -> None:
    assert GetMetaDataResponseHeader(group="g", is_leader=True).to_ext_fields() == {"group": "g", "isLeader": "true"}
    clean = CleanControllerBrokerDataRequestHeader.from_ext_fields({"brokerName": "b", "isCleanLivingBroker": "true"})
    assert clean.is_clean_living_broker and clean.broker_controller_ids_to_clean is None
    elect = ElectMasterRequestHeader.from_ext_fields({"clusterName": "c", "brokerName": "b", "brokerId": "2"})
    assert (elect.broker_id, elect.designate_elect) == (2, False)
