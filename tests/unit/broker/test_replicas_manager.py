"""ReplicasManager (Java broker/controller/ReplicasManager): the controller-mode role state machine
against a fake controller that behaves like Java's (ids 1, 2, ... per broker name; the first broker
asking to be elected wins; every election and sync-state-set change bumps its epoch)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from pyrmq.broker.config import BrokerConfig
from pyrmq.broker.controller_api import ControllerError, MasterInfo
from pyrmq.broker.replicas_manager import RegisterState, ReplicasManager, State
from pyrmq.ha.epoch import EpochFileCache
from pyrmq.protocol.bodies.controller import SyncStateSet
from pyrmq.protocol.codes import ResponseCode
from pyrmq.protocol.headers.controller import GetMetaDataResponseHeader
from pyrmq.store.store_config import BrokerRole, MessageStoreConfig

LEADER = "127.0.0.1:9878"


@dataclass
class FakeController:
    next_id: int = 1
    applied: dict[int, str] = field(default_factory=dict)
    addrs: dict[int, str] = field(default_factory=dict)
    master: int | None = None
    epoch: int = 0
    sss: set[int] = field(default_factory=set)
    sss_epoch: int = 0
    calls: list[str] = field(default_factory=list)
    heartbeats: list = field(default_factory=list)

    def info(self) -> MasterInfo:
        addr = self.addrs.get(self.master) if self.master is not None else None
        return MasterInfo(self.master, addr, self.epoch, self.sss_epoch, frozenset(self.sss))

    async def get_controller_metadata(self, addr):
        self.calls.append("metadata")
        return GetMetaDataResponseHeader(controller_leader_address=LEADER, is_leader=True)

    async def get_next_broker_id(self, addr, cluster, name):
        assert addr == LEADER
        self.calls.append("next_id")
        return self.next_id

    async def apply_broker_id(self, addr, cluster, name, broker_id, code):
        self.calls.append(f"apply {broker_id}")
        if broker_id in self.applied and self.applied[broker_id] != code:
            raise ControllerError(ResponseCode.CONTROLLER_BROKER_ID_INVALID, "taken")
        self.applied[broker_id] = code
        self.next_id = max(self.next_id, broker_id + 1)

    async def register_broker(self, addr, cluster, name, broker_id, broker_address):
        self.calls.append(f"register {broker_id}")
        self.addrs[broker_id] = broker_address
        return self.info()

    async def broker_elect(self, addr, cluster, name, broker_id):
        self.calls.append(f"elect {broker_id}")
        if self.master is None:
            self.master, self.epoch = broker_id, self.epoch + 1
            self.sss, self.sss_epoch = {broker_id}, self.sss_epoch + 1
        return self.info()

    async def get_replica_info(self, addr, name):
        return self.info()

    async def alter_sync_state_set(self, addr, name, master_id, master_epoch, new, sss_epoch):
        self.calls.append(f"alter {sorted(new)}")
        assert master_id == self.master and master_epoch == self.epoch and sss_epoch == self.sss_epoch
        self.sss, self.sss_epoch = set(new), self.sss_epoch + 1
        return SyncStateSet(set(self.sss), self.sss_epoch)

    async def send_heartbeat(self, addr, header):
        self.heartbeats.append(header)


class FakeStore:
    def get_max_phy_offset(self) -> int:
        return 4096


class FakeHA:
    def __init__(self) -> None:
        self.store = FakeStore()
        self.epoch_cache = EpochFileCache()
        self.local_broker_id = None
        self.on_sync_state_set_changed = None
        self.calls: list[tuple] = []
        self.sss: set[int] = set()
        self.shrunk: set[int] | None = None

    def get_confirm_offset(self):
        return 4000

    async def change_to_master(self, epoch):
        self.calls.append(("master", epoch))
        self.epoch_cache.append_entry(epoch, self.store.get_max_phy_offset() + epoch)
        return True

    def change_to_master_when_last_role_is_master(self, epoch):
        self.calls.append(("master again", epoch))
        return True

    async def change_to_slave(self, addr, epoch, my_id):
        self.calls.append(("slave", addr, epoch, my_id))
        return True

    def change_to_slave_when_master_not_change(self, addr, epoch):
        self.calls.append(("slave again", addr, epoch))
        return True

    def set_sync_state_set(self, s):
        self.sss = set(s)

    def maybe_shrink_sync_state_set(self):
        return set(self.sss if self.shrunk is None else self.shrunk)


class FakeHost:
    def __init__(self, addr: str, config: BrokerConfig) -> None:
        self.broker_addr = addr
        self.config = config
        self.roles: list[tuple] = []
        self.fenced = True
        self.registrations = 0

    def apply_role(self, role, broker_id, master_addr, epoch):
        self.config.store.broker_role = role
        self.config["brokerId"] = broker_id
        self.roles.append((role, broker_id, master_addr, epoch))

    def set_fenced(self, fenced):
        self.fenced = fenced

    async def register_broker_all(self):
        self.registrations += 1


def manager(tmp_path, ctrl: FakeController, port: int, name: str = "b1") -> tuple[ReplicasManager, FakeHA, FakeHost]:
    store = MessageStoreConfig(store_path_root_dir=str(tmp_path / f"store-{port}"))
    config = BrokerConfig(
        {"brokerName": name, "brokerClusterName": "C", "enableControllerMode": True, "controllerAddr": LEADER},
        store,
    )
    ha = FakeHA()
    host = FakeHost(f"127.0.0.1:{port}", config)
    return ReplicasManager(config, ctrl, ha, host, now=lambda: 1795598638036, retry_interval_s=0.01), ha, host


def run(coro):
    return asyncio.run(coro)


def test_first_broker_gets_id_1_and_is_elected_master(tmp_path):
    ctrl = FakeController()
    rm, ha, host = manager(tmp_path, ctrl, 10911)

    async def go():
        await rm.update_controller_addr()
        assert await rm.start_basic_service()
        await asyncio.sleep(0)  # the name-server registration task
        await rm.shutdown()

    run(go())
    assert ctrl.calls[:4] == ["metadata", "next_id", "apply 1", "register 1"]
    assert "elect 1" in ctrl.calls
    assert rm.state is State.SHUTDOWN and rm.broker_controller_id == 1 and ha.local_broker_id == 1
    assert ctrl.applied[1] == "127.0.0.1:10911;1795598638036"  # Java's register check code
    root = tmp_path / "store-10911"
    assert (root / "brokerIdentity").read_bytes() == b"C#b1#1"
    assert not (root / "brokerIdentity-temp").exists()
    assert ha.calls == [("master", 1)]
    assert host.roles == [(BrokerRole.SYNC_MASTER, 0, None, 1)]
    assert not host.fenced and host.registrations == 1
    assert rm.master_epoch == 1 and rm.sync_state_set == {1} and ha.sss == {1}
    hb = ctrl.heartbeats[0]
    assert (hb.broker_id, hb.max_offset, hb.broker_name, hb.heartbeat_timeout_mills) == (1, 4096, "b1", 10000)
    assert hb.election_priority == 2147483647 and hb.confirm_offset == 4000
    assert hb.epoch == -1  # the manual heartbeat before the election: no epoch yet (Java: lastEpoch of an empty file)


def test_second_broker_becomes_slave_then_master_on_notify(tmp_path):
    ctrl = FakeController()
    rm1, ha1, host1 = manager(tmp_path, ctrl, 10911)
    rm2, ha2, host2 = manager(tmp_path, ctrl, 20911)

    async def go():
        for rm in (rm1, rm2):
            await rm.update_controller_addr()
            assert await rm.start_basic_service()
        assert rm2.broker_controller_id == 2
        assert ha2.calls == [("slave", "127.0.0.1:10911", 1, 2)]
        assert host2.roles == [(BrokerRole.SLAVE, 2, "127.0.0.1:10911", 1)]
        assert not host2.fenced
        # the controller elects broker 2 (epoch 2) and tells both
        ctrl.master, ctrl.epoch, ctrl.sss, ctrl.sss_epoch = 2, 2, {2}, 3
        for rm in (rm1, rm2):
            await rm.change_broker_role(2, "127.0.0.1:20911", 2, 3, {2})
        await rm2.change_broker_role(2, "127.0.0.1:20911", 2, 3, {2})  # a repeat changes nothing
        await rm1.change_broker_role(1, "127.0.0.1:10911", 1, 1, {1})  # an older epoch neither
        for rm in (rm1, rm2):
            await rm.shutdown()

    run(go())
    assert ha2.calls == [("slave", "127.0.0.1:10911", 1, 2), ("master", 2)]
    assert host2.roles[-1] == (BrokerRole.SYNC_MASTER, 0, None, 2)
    assert rm2.sync_state_set == {2} and rm2.sync_state_set_epoch == 3
    assert ha1.calls == [("master", 1), ("slave", "127.0.0.1:20911", 2, 1)]
    assert host1.roles[-1] == (BrokerRole.SLAVE, 1, "127.0.0.1:20911", 2)


def test_restart_reuses_the_id_in_brokerIdentity(tmp_path):
    ctrl = FakeController()
    rm, _, _ = manager(tmp_path, ctrl, 10911)
    rm.controller_leader_address = LEADER
    assert run(rm.register())
    ctrl.calls.clear()
    again, _, _ = manager(tmp_path, ctrl, 10911)
    again.controller_leader_address = LEADER
    assert run(again.register())
    assert ctrl.calls == ["register 1"]  # no new id asked for
    assert again.broker_controller_id == 1 and again.register_state is RegisterState.REGISTERED


def test_a_leftover_temp_file_is_applied_again(tmp_path):
    """Killed between APPLY_BROKER_ID and writing brokerIdentity: the temp file's id and check code
    are applied again (the controller accepts the same code), no new id is asked for."""
    ctrl = FakeController()
    rm, _, _ = manager(tmp_path, ctrl, 10911)
    rm.controller_leader_address = LEADER
    rm.temp_broker_metadata.update_and_persist_temp("C", "b1", 1, "127.0.0.1:10911;1")
    ctrl.applied[1] = "127.0.0.1:10911;1"
    assert run(rm.register())
    assert ctrl.calls == ["apply 1", "register 1"]
    assert (tmp_path / "store-10911" / "brokerIdentity").read_bytes() == b"C#b1#1"


def test_metadata_of_another_broker_name_is_refused(tmp_path):
    ctrl = FakeController()
    rm, _, _ = manager(tmp_path, ctrl, 10911)
    rm.broker_metadata.update_and_persist("C", "other", 4)
    assert not run(rm.register())
    assert ctrl.calls == []


def test_replica_info_drives_role_and_election(tmp_path):
    ctrl = FakeController()
    rm, ha, _ = manager(tmp_path, ctrl, 10911)

    async def go():
        await rm.update_controller_addr()
        await rm.start_basic_service()
        # another broker won epoch 5 while we did not hear the notification
        ctrl.addrs[3] = "127.0.0.1:30911"
        ctrl.master, ctrl.epoch = 3, 5
        await rm.sync_broker_metadata()
        assert ha.calls[-1] == ("slave", "127.0.0.1:30911", 5, 1)
        # the master is gone and nobody was elected: this broker asks for an election
        ctrl.master, ctrl.epoch = None, 6
        await rm.sync_broker_metadata()
        assert ctrl.calls[-1] == "elect 1"
        assert ha.calls[-1] == ("master", 7) and rm.master_epoch == 7
        await rm.shutdown()

    run(go())


def test_sync_state_set_changes_are_reported(tmp_path):
    ctrl = FakeController()
    rm, ha, _ = manager(tmp_path, ctrl, 10911)

    async def go():
        await rm.update_controller_addr()
        await rm.start_basic_service()
        await asyncio.sleep(0.01)
        # a slave caught up: the HA service's listener asks the controller to alter the set
        ha.on_sync_state_set_changed({1, 2})
        await asyncio.sleep(0.01)
        assert rm.sync_state_set == {1, 2} and ha.sss == {1, 2}
        # it fell behind: the periodic check shrinks and reports
        ha.shrunk = {1}
        await rm.check_sync_state_set_and_report()
        assert rm.sync_state_set == {1} and ha.sss == {1}
        calls = len(ctrl.calls)
        await rm.check_sync_state_set_and_report()  # unchanged: nothing reported
        assert len(ctrl.calls) == calls
        await rm.shutdown()

    run(go())
    assert [c for c in ctrl.calls if c.startswith("alter")] == ["alter [1, 2]", "alter [1]"]
    assert rm.sync_state_set_epoch == 3


def test_controller_addresses(tmp_path):
    """controllerAddr split on ';'; with fetchControllerAddrByDnsLookup, every address the name
    resolves to (Java BrokerOuterAPI#dnsLookupAddressByDomain)."""
    rm, _, _ = manager(tmp_path, FakeController(), 10911)
    rm.config["controllerAddr"] = "127.0.0.1:9878; 127.0.0.2:9878;"
    run(rm.update_controller_addr())
    assert rm.controller_addresses == ["127.0.0.1:9878", "127.0.0.2:9878"]
    rm.config["controllerAddr"] = "localhost:9878"
    rm.config["fetchControllerAddrByDnsLookup"] = True
    run(rm.update_controller_addr())
    assert "127.0.0.1:9878" in rm.controller_addresses
    rm.config["controllerAddr"] = "no-such-host.invalid:9878"
    run(rm.update_controller_addr())  # a failed lookup keeps the last addresses
    assert "127.0.0.1:9878" in rm.controller_addresses


def test_a_controller_whose_connect_hangs_does_not_hold_back_the_others_heartbeats(tmp_path):
    """Java sends each controller's BROKER_HEARTBEAT on its own executor task: with the first
    controllerAddr unreachable (its connect hangs, a host that is down), the live members still
    get a heartbeat every brokerHeartbeatInterval, so the leader keeps the broker alive."""
    dead, live = "10.255.255.1:9878", LEADER
    hanging = 0

    class Blackholed(FakeController):
        async def send_heartbeat(self, addr, header):
            nonlocal hanging
            if addr == dead:
                hanging += 1
                await asyncio.Event().wait()  # a connect that never completes
            self.heartbeats.append((addr, asyncio.get_running_loop().time()))

    ctrl = Blackholed()
    rm, _, _ = manager(tmp_path, ctrl, 10911)
    rm.config["controllerAddr"] = f"{dead};{live}"
    rm.config["brokerHeartbeatInterval"] = 50
    rm.config["sendHeartbeatTimeoutMillis"] = 1000

    async def go():
        await rm.update_controller_addr()
        rm.broker_controller_id, rm.fenced = 1, False
        loop = rm._spawn(rm._heartbeat_loop(), "hb")
        await asyncio.sleep(1.0)
        loop.cancel()
        await rm.shutdown()

    run(go())
    beats = [t for addr, t in ctrl.heartbeats if addr == live]
    assert len(beats) >= 5, beats  # ~20 at 50 ms; sent in turn, none until the dead one's connect gives up
    assert hanging == 1  # the dead member's hanging connect is not piled up every round
