"""The controller's state machine (ReplicasInfoManager) and DefaultElectPolicy: each Java check,
its response code and remark, and the events a request produces. No I/O: events are applied by
hand, as the manager does after persisting them."""

from __future__ import annotations

import pytest

from pyrmq.controller.elect_policy import DefaultElectPolicy
from pyrmq.controller.events import (
    AlterSyncStateSetEvent,
    ApplyBrokerIdEvent,
    CleanBrokerDataEvent,
    ControllerResult,
    ElectMasterEvent,
    UpdateBrokerAddressEvent,
)
from pyrmq.controller.heartbeat import BrokerHeartbeatManager
from pyrmq.controller.replicas_info import InvalidRequest, ReplicasInfoManager
from pyrmq.protocol.bodies.controller import BrokerReplicasInfo, ElectMasterResponseBody, SyncStateSet
from pyrmq.protocol.codes import ResponseCode as RC
from pyrmq.protocol.headers.controller import (
    AlterSyncStateSetRequestHeader,
    ApplyBrokerIdRequestHeader,
    CleanControllerBrokerDataRequestHeader,
    ElectMasterRequestHeader,
    GetNextBrokerIdRequestHeader,
    GetReplicaInfoRequestHeader,
    RegisterBrokerToControllerRequestHeader,
)

pytestmark = pytest.mark.unit

CLUSTER, NAME = "c1", "b1"
ADDR = {1: "10.0.0.1:10911", 2: "10.0.0.2:10911", 3: "10.0.0.3:10911"}


class World:
    """A manager, a heartbeat table on a fake clock and a policy wired like the controller's."""

    def __init__(self, unclean: bool = False) -> None:
        self.now = 1_000_000
        self.hb = BrokerHeartbeatManager(clock=lambda: self.now)
        self.m = ReplicasInfoManager(enable_elect_unclean_master=lambda: unclean)
        self.policy = DefaultElectPolicy(self.hb.is_broker_active, self.hb.get_broker_live_info)

    def alive(self, cluster, name, broker_id) -> bool:
        return self.hb.is_broker_active(cluster, name, broker_id)

    def apply(self, result: ControllerResult) -> ControllerResult:
        for e in result.events:
            self.m.apply_event(e)
        return result

    def beat(self, broker_id: int, epoch: int = 1, offset: int = 0, priority: int | None = None) -> None:
        self.hb.on_broker_heartbeat(
            CLUSTER, NAME, ADDR[broker_id], broker_id, 10_000, object(), epoch, offset, 0, priority
        )

    def add(self, broker_id: int) -> ControllerResult:
        h = ApplyBrokerIdRequestHeader(CLUSTER, NAME, broker_id, f"{ADDR[broker_id]};{broker_id}")
        return self.apply(self.m.apply_broker_id(h))

    def elect(self, broker_id: int = -1, designate: bool = False) -> ControllerResult:
        h = ElectMasterRequestHeader(
            cluster_name=CLUSTER, broker_name=NAME, broker_id=broker_id, designate_elect=designate
        )
        return self.apply(self.m.elect_master(h, self.policy))

    def alter(self, master: int, master_epoch: int, ids: set[int], epoch: int) -> ControllerResult:
        h = AlterSyncStateSetRequestHeader(NAME, master, master_epoch)
        return self.apply(self.m.alter_sync_state_set(h, SyncStateSet(ids, epoch), self.alive))

    def info(self):
        return self.m.sync_state_set_info_table[NAME]


def group_of_two(unclean: bool = False) -> World:
    """Ids 1 and 2, both alive, 1 elected (epoch 1), SyncStateSet {1, 2} (epoch 2)."""
    w = World(unclean)
    w.add(1)
    w.add(2)
    w.beat(1)
    w.beat(2)
    assert w.elect(1).code == RC.SUCCESS
    assert w.alter(1, 1, {1, 2}, 1).code == RC.SUCCESS
    return w


# ---------------------------------------------------------------- broker ids


def test_next_broker_id_starts_at_one_and_follows_applications():
    w = World()
    r = w.m.get_next_broker_id(GetNextBrokerIdRequestHeader(CLUSTER, NAME))
    assert (r.code, r.response.next_broker_id) == (RC.SUCCESS, 1)
    w.add(1)
    assert w.m.get_next_broker_id(GetNextBrokerIdRequestHeader(CLUSTER, NAME)).response.next_broker_id == 2


def test_apply_broker_id_rules():
    w = World()
    r = w.m.apply_broker_id(ApplyBrokerIdRequestHeader(CLUSTER, NAME, 2, "a:1;1"))
    assert (r.code, r.remark, r.events) == (
        RC.CONTROLLER_BROKER_ID_INVALID,
        "Broker-set: b1 hasn't been registered in controller, but broker try to apply brokerId: 2",
        [],
    )
    r = w.add(1)
    assert r.code == RC.SUCCESS
    assert r.events == [ApplyBrokerIdEvent(CLUSTER, NAME, ADDR[1], 1, f"{ADDR[1]};1")]
    # the same broker retrying (same check code) gets its id again; another one does not
    assert w.m.apply_broker_id(ApplyBrokerIdRequestHeader(CLUSTER, NAME, 1, f"{ADDR[1]};1")).code == RC.SUCCESS
    r = w.m.apply_broker_id(ApplyBrokerIdRequestHeader(CLUSTER, NAME, 1, "other:1;9"))
    assert (r.code, r.remark) == (RC.CONTROLLER_BROKER_ID_INVALID, "Fail to apply brokerId: 1 in broker-set: b1")
    with pytest.raises(InvalidRequest):
        w.m.apply_broker_id(ApplyBrokerIdRequestHeader(CLUSTER, NAME, 1, None))


def test_register_broker_checks_and_address_update():
    w = World()
    h = RegisterBrokerToControllerRequestHeader(CLUSTER, NAME, 1, ADDR[1])
    r = w.m.register_broker(h, w.alive)
    assert (r.code, r.remark) == (
        RC.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
        "Broker-set: b1 hasn't been registered in controller",
    )
    w.add(1)
    r = w.m.register_broker(RegisterBrokerToControllerRequestHeader(CLUSTER, NAME, 5, ADDR[1]), w.alive)
    assert (r.code, r.remark) == (
        RC.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
        "BrokerId: 5 hasn't been registered in broker-set: b1",
    )
    r = w.m.register_broker(h, w.alive)
    assert (r.code, r.events, r.response.master_broker_id) == (RC.SUCCESS, [], None)
    assert SyncStateSet.decode(r.body) == SyncStateSet(set(), 0)
    moved = RegisterBrokerToControllerRequestHeader(CLUSTER, NAME, 1, "10.9.9.9:1")
    r = w.apply(w.m.register_broker(moved, w.alive))
    assert r.events == [UpdateBrokerAddressEvent(CLUSTER, NAME, "10.9.9.9:1", 1)]
    assert w.m.replica_info_table[NAME].broker_address(1) == "10.9.9.9:1"


def test_register_broker_reports_only_an_alive_master():
    w = group_of_two()
    h = RegisterBrokerToControllerRequestHeader(CLUSTER, NAME, 2, ADDR[2])
    r = w.m.register_broker(h, w.alive)
    assert (r.response.master_broker_id, r.response.master_address, r.response.master_epoch) == (1, ADDR[1], 1)
    assert r.response.sync_state_set_epoch == 2
    w.hb.on_broker_channel_close(w.hb.get_broker_live_info(CLUSTER, NAME, 1).channel)
    r = w.m.register_broker(h, w.alive)
    assert r.response.master_broker_id is None and r.response.master_address is None


# ---------------------------------------------------------------- election


def test_first_election_takes_the_asking_broker_even_if_not_alive():
    w = World()
    w.add(1)
    r = w.elect(1)
    assert r.code == RC.SUCCESS
    h = r.response
    assert (h.master_broker_id, h.master_address, h.master_epoch, h.sync_state_set_epoch) == (1, ADDR[1], 1, 1)
    body = ElectMasterResponseBody.decode(r.body)
    assert body.sync_state_set == {1} and body.broker_member_group.broker_addrs == {1: ADDR[1]}
    assert r.events == [ElectMasterEvent(NAME, 1)]
    assert (w.info().master_broker_id, w.info().master_epoch, w.info().sync_state_set) == (1, 1, {1})


def test_elect_unknown_broker_set():
    r = World().elect(1)
    assert (r.code, r.remark) == (RC.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED, "Broker hasn't been registered")


def test_master_still_alive_is_kept():
    w = group_of_two()
    r = w.elect(-1)
    assert r.code == RC.CONTROLLER_MASTER_STILL_EXIST
    assert r.remark == "The old master 1 is still alive, not need to elect new master for broker b1"
    assert (r.response.master_broker_id, r.response.master_epoch, r.response.sync_state_set_epoch) == (1, 1, 2)
    assert r.events == []


def test_dead_master_is_replaced_from_the_sync_state_set():
    w = group_of_two()
    w.hb.on_broker_channel_close(w.hb.get_broker_live_info(CLUSTER, NAME, 1).channel)
    r = w.elect(-1)
    assert r.code == RC.SUCCESS
    assert (r.response.master_broker_id, r.response.master_epoch, r.response.sync_state_set_epoch) == (2, 2, 3)
    assert (w.info().master_broker_id, w.info().sync_state_set) == (2, {2})


def test_no_candidate_controller_trigger_records_the_loss():
    w = World()
    w.add(1)
    w.add(2)
    w.beat(1)
    w.beat(2)
    w.elect(1)  # SyncStateSet {1}: 2 never caught up
    w.hb.on_broker_channel_close(w.hb.get_broker_live_info(CLUSTER, NAME, 1).channel)
    r = w.elect(-1)
    assert (r.code, r.remark) == (
        RC.CONTROLLER_MASTER_NOT_AVAILABLE,
        "Old master has down and failed to elect a new broker master",
    )
    assert r.events == [ElectMasterEvent(NAME, None, new_master_elected=False)]
    assert (w.info().master_broker_id, w.info().master_epoch, w.info().sync_state_set) == (None, 2, {1})
    # a broker asking for itself gets ELECT_MASTER_FAILED and changes nothing
    r = w.elect(2)
    assert (r.code, r.remark, r.events) == (RC.CONTROLLER_ELECT_MASTER_FAILED, "Failed to elect a new master", [])


def test_unclean_election_when_enabled():
    w = World(unclean=True)
    w.add(1)
    w.add(2)
    w.beat(1)
    w.beat(2)
    w.elect(1)
    w.hb.on_broker_channel_close(w.hb.get_broker_live_info(CLUSTER, NAME, 1).channel)
    r = w.elect(-1)
    assert (r.code, r.response.master_broker_id) == (RC.SUCCESS, 2)


def test_designated_election():
    w = group_of_two()
    r = w.elect(2, designate=True)
    assert (r.code, r.response.master_broker_id, r.response.master_epoch) == (RC.SUCCESS, 2, 2)
    # a designated broker that is not alive: nobody (the old master is not kept either)
    w2 = group_of_two()
    w2.hb.on_broker_channel_close(w2.hb.get_broker_live_info(CLUSTER, NAME, 2).channel)
    r = w2.elect(2, designate=True)
    assert r.code == RC.CONTROLLER_ELECT_MASTER_FAILED


def test_policy_orders_by_epoch_offset_priority_then_id():
    w = World()
    for i in (1, 2, 3):
        w.beat(i, epoch=3, offset=100, priority=5)
    p = w.policy
    assert p.elect(CLUSTER, NAME, {1, 2, 3}, None, None, None) == 1  # all equal: lowest id
    w.beat(3, epoch=3, offset=200)
    assert p.elect(CLUSTER, NAME, {1, 2, 3}, None, None, None) == 3  # higher offset
    w.beat(2, epoch=4, offset=50)
    assert p.elect(CLUSTER, NAME, {1, 2, 3}, None, None, None) == 2  # higher epoch wins over offset
    w2 = World()
    w2.beat(1, priority=9)
    w2.beat(2, priority=1)
    assert w2.policy.elect(CLUSTER, NAME, {1, 2}, None, None, None) == 2  # lower priority value wins
    # nobody alive in the SyncStateSet: all replicas only when handed in (unclean)
    assert w2.policy.elect(CLUSTER, NAME, {3}, None, None, None) is None
    assert w2.policy.elect(CLUSTER, NAME, {3}, {1, 2, 3}, None, None) == 2


def test_heartbeat_keeps_the_best_epoch_and_offset():
    w = World()
    w.beat(1, epoch=2, offset=500)
    w.beat(1, epoch=1, offset=900)  # an older epoch does not demote
    info = w.hb.get_broker_live_info(CLUSTER, NAME, 1)
    assert (info.epoch, info.max_offset) == (2, 500)
    w.beat(1, epoch=2, offset=600)
    assert info.max_offset == 600
    w.now += 10_001
    assert not w.hb.is_broker_active(CLUSTER, NAME, 1)
    assert [k.broker_id for k, _ in w.hb.scan_not_active_broker()] == [1]
    assert w.hb.get_broker_live_info(CLUSTER, NAME, 1) is None


# ---------------------------------------------------------------- SyncStateSet


@pytest.mark.parametrize(
    ("master", "master_epoch", "ids", "epoch", "code", "remark"),
    [
        (
            1,
            1,
            {1, 2},
            2,
            RC.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
            "The newSyncStateSet is equal with oldSyncStateSet, no needed to update syncStateSet",
        ),
        (
            2,
            1,
            {1},
            2,
            RC.CONTROLLER_INVALID_MASTER,
            "Rejecting alter syncStateSet request because the current leader is:{1}, not {2}",
        ),
        (
            1,
            0,
            {1},
            2,
            RC.CONTROLLER_FENCED_MASTER_EPOCH,
            "Rejecting alter syncStateSet request because the current master epoch is:{1}, not {0}",
        ),
        (
            1,
            1,
            {1},
            1,
            RC.CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH,
            "Rejecting alter syncStateSet request because the current syncStateSet epoch is:{2}, not {1}",
        ),
        (
            1,
            1,
            {1, 7},
            2,
            RC.CONTROLLER_INVALID_REPLICAS,
            "Rejecting alter syncStateSet request because the replicas {7} don't exist",
        ),
        (
            1,
            1,
            {2},
            2,
            RC.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
            "Rejecting alter syncStateSet request because the newSyncStateSet don't contains origin leader {1}",
        ),
    ],
)
def test_alter_sync_state_set_checks(master, master_epoch, ids, epoch, code, remark):
    w = group_of_two()
    r = w.alter(master, master_epoch, ids, epoch)
    assert (r.code, r.remark, r.events) == (code, remark, [])
    assert (w.info().sync_state_set, w.info().sync_state_set_epoch) == ({1, 2}, 2)


def test_alter_sync_state_set_needs_alive_replicas_and_an_existing_set():
    w = group_of_two()
    w.add(3)
    r = w.alter(1, 1, {1, 2, 3}, 2)
    assert (r.code, r.remark) == (
        RC.CONTROLLER_BROKER_NOT_ALIVE,
        "Rejecting alter syncStateSet request because the replicas {3} don't alive",
    )
    h = AlterSyncStateSetRequestHeader("nope", 1, 1)
    r = w.m.alter_sync_state_set(h, SyncStateSet({1}, 0), w.alive)
    assert (r.code, r.remark) == (RC.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED, "Broker metadata is not existed")


def test_alter_sync_state_set_shrinks():
    w = group_of_two()
    r = w.alter(1, 1, {1}, 2)
    assert (r.code, r.response.new_sync_state_set_epoch) == (RC.SUCCESS, 3)
    assert SyncStateSet.decode(r.body) == SyncStateSet({1}, 3)
    assert r.events == [AlterSyncStateSetEvent(NAME, frozenset({1}))]
    assert (w.info().sync_state_set, w.info().sync_state_set_epoch) == ({1}, 3)


# ---------------------------------------------------------------- reads and cleaning


def test_get_replica_info_and_sync_state_data():
    w = group_of_two()
    r = w.m.get_replica_info(GetReplicaInfoRequestHeader(NAME))
    assert (r.response.master_broker_id, r.response.master_address, r.response.master_epoch) == (1, ADDR[1], 1)
    assert SyncStateSet.decode(r.body) == SyncStateSet({1, 2}, 2)
    r = w.m.get_replica_info(GetReplicaInfoRequestHeader("nope"))
    assert (r.code, r.remark) == (RC.CONTROLLER_BROKER_METADATA_NOT_EXIST, "Broker metadata is not existed")
    w.add(3)
    data = BrokerReplicasInfo.decode(w.m.get_sync_state_data([NAME, "nope"], w.alive).body)
    info = data.replicas_info_table[NAME]
    assert list(data.replicas_info_table) == [NAME]
    assert (info.master_broker_id, info.master_epoch, info.sync_state_set_epoch) == (1, 1, 2)
    assert [(r.broker_id, r.alive) for r in info.in_sync_replicas] == [(1, True), (2, True)]
    assert [(r.broker_id, r.alive) for r in info.not_in_sync_replicas] == [(3, False)]


def test_clean_broker_data_rules():
    w = group_of_two()
    clean = CleanControllerBrokerDataRequestHeader
    r = w.m.clean_broker_data(clean(NAME, CLUSTER), w.alive)
    assert (r.code, r.remark) == (
        RC.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
        "Broker b1 is still alive, clean up failure",
    )
    r = w.m.clean_broker_data(clean(NAME, CLUSTER, "1;x"), w.alive)
    assert r.code == RC.CONTROLLER_INVALID_CLEAN_BROKER_METADATA
    assert r.remark == (
        "Please set the option <brokerControllerIdsToClean> according to the format, "
        'exception: java.lang.NumberFormatException: For input string: "x"'
    )
    r = w.m.clean_broker_data(clean(NAME, CLUSTER, "2"), w.alive)
    assert (r.code, r.remark) == (
        RC.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
        "Broker [b1,  2] is still alive, clean up failure",
    )
    r = w.m.clean_broker_data(clean("nope", CLUSTER, "2"), w.alive)
    assert (r.code, r.remark) == (
        RC.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
        "Broker nope is not existed,clean broker data failure.",
    )
    # one dead id: removed from the ids and the SyncStateSet
    w.hb.on_broker_channel_close(w.hb.get_broker_live_info(CLUSTER, NAME, 2).channel)
    r = w.apply(w.m.clean_broker_data(clean(NAME, CLUSTER, "2"), w.alive))
    assert r.events == [CleanBrokerDataEvent(NAME, frozenset({2}))]
    assert w.m.replica_info_table[NAME].all_brokers() == {1} and w.info().sync_state_set == {1}
    # a living broker set goes with isCleanLivingBroker
    r = w.apply(w.m.clean_broker_data(clean(NAME, CLUSTER, None, True), w.alive))
    assert r.events == [CleanBrokerDataEvent(NAME, None)]
    assert NAME not in w.m.replica_info_table and NAME not in w.m.sync_state_set_info_table


def test_scan_need_reelect():
    w = group_of_two()
    assert w.m.scan_need_reelect_broker_sets(w.alive) == []
    w.now += 5_000
    w.beat(2)
    w.now += 6_000  # 1 silent for 11 s, 2 for 6 s (timeout 10 s)
    assert w.m.scan_need_reelect_broker_sets(w.alive) == [NAME]
