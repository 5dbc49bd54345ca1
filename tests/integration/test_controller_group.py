"""A controller group of 3 (`pyrmq controller` processes replicating their events over DLedger)
with two pyrmq brokers in controller mode whose controllerAddr lists all three, as Java's
brokers take it.

The brokers form a master/slave pair through the group's leader; the followers answer
CONTROLLER_NOT_LEADER and name the leader in their metadata. The controller leader is
SIGKILLed: the other two elect a new leader, which holds the same replicas info (it was applied
from the replicated log, not learned again). Then the broker master is SIGKILLed and the new
controller leader elects the slave.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from support.controller_group import (
    assert_one_leader,
    call,
    controller_mode_conf,
    in_sync_ids,
    serving_leader,
    until_serving_leader,
    wait_replica_state,
)
from support.ports import free_port
from support.pyrmq_proc import PyrmqBroker
from support.requests import send_v2
from support.servers import PyrmqControllerMember, PyrmqNamesrv, controller_peers

from pyrmq.controller.config import ControllerConfig
from pyrmq.controller.manager import ControllerManager
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.headers.controller import (
    ApplyBrokerIdRequestHeader,
    ElectMasterRequestHeader,
    GetNextBrokerIdRequestHeader,
    GetReplicaInfoRequestHeader,
)
from pyrmq.protocol.headers.namesrv import BrokerHeartbeatRequestHeader
from pyrmq.remoting.client import RemotingClient

NAME = "ctl3-pair"
TOPIC = "Ctl3T"


async def _serving_leader(
    c: RemotingClient, members: list[PyrmqControllerMember], timeout: float = 30
) -> PyrmqControllerMember:
    addr = await serving_leader(c, [m.addr for m in members], timeout)
    return next(m for m in members if m.addr == addr)


def test_group_of_three_keeps_its_state_and_fails_over(tmp_path):
    ports = [free_port() for _ in range(3)]
    peers = controller_peers(ports)
    members: list[PyrmqControllerMember] = []
    brokers: list[PyrmqBroker] = []
    ns = None
    try:
        members = [
            PyrmqControllerMember(tmp_path / f"c{i}", f"n{i}", p, peers, scanInactiveMasterInterval=1000)
            for i, p in enumerate(ports)
        ]
        ns = PyrmqNamesrv(tmp_path / "ns")
        conf = controller_mode_conf([m.addr for m in members], name=NAME)
        leader = next(m for m in members if m.addr == until_serving_leader([m.addr for m in members]))
        brokers.append(PyrmqBroker(ns.addr, tmp_path / "b1", **conf))  # returns once registered: the master
        brokers.append(PyrmqBroker(ns.addr, tmp_path / "b2", **conf))
        first, second = brokers

        async def scenario() -> tuple[float, float]:
            async with RemotingClient() as c:
                before = await wait_replica_state(c, leader.addr, NAME, lambda s: s[1] == first.addr and s[4] == [1, 2])
                assert before[:3] == ("1", first.addr, "1"), before
                followers = [m for m in members if m is not leader]
                await assert_one_leader(c, leader.addr, [m.addr for m in followers], ports)

                killed = time.monotonic()
                leader.kill9()
                new_leader = await _serving_leader(c, followers, timeout=30)
                elected_in = time.monotonic() - killed
                assert await wait_replica_state(c, new_leader.addr, NAME, lambda s: True) == before
                assert await in_sync_ids(c, new_leader.addr, NAME) == [1, 2]

                killed = time.monotonic()
                first.kill9()
                while True:
                    r = await c.invoke(second.addr, send_v2(TOPIC, NAME, b"after", group="Ctl3PG", tags=None), 10)
                    if r.code == ResponseCode.SUCCESS:
                        break
                    assert time.monotonic() - killed < 30, f"no successful send 30 s after the master's kill: {r}"
                    await asyncio.sleep(0.1)
                failover = time.monotonic() - killed
                after = await wait_replica_state(c, new_leader.addr, NAME, lambda s: s[1] == second.addr)
                assert after[:3] == ("2", second.addr, "2") and after[4] == [2], after
                return elected_in, failover

        elected_in, failover = asyncio.run(scenario())
        print(
            f"\ncontroller leader kill -> new serving leader {elected_in:.2f} s; master kill -> send {failover:.2f} s"
        )
    finally:
        for b in brokers:
            b.stop()
        if ns is not None:
            ns.stop()
        for m in members:
            m.stop()


# ---------------------------------------------------------------------- in one process


def _config(tmp_path: Path, self_id: str, peers: str) -> ControllerConfig:
    return ControllerConfig.from_properties(
        {
            "controllerDLegerGroup": "g3",
            "controllerDLegerPeers": peers,
            "controllerDLegerSelfId": self_id,
            "controllerStorePath": str(tmp_path / self_id),
            "configStorePath": str(tmp_path / f"{self_id}.properties"),
            "mappedFileSize": 1024 * 1024,
            "bindAddress": "127.0.0.1",
        }
    )


def _view(m: ControllerManager) -> tuple:
    """A member's applied state, read in memory (followers do not answer requests)."""
    info = m.replicas.get_replica_info(GetReplicaInfoRequestHeader("b3"))
    nxt = m.replicas.get_next_broker_id(GetNextBrokerIdRequestHeader("c3", "b3"))
    return info.code, info.response, info.body, nxt.response


def test_members_apply_the_committed_log_and_a_restarted_member_replays_it(tmp_path):
    """Three ControllerManagers on one loop: writes through the leader are applied on every
    member; the leader stopped, a new one serves the same state and takes writes; the old one,
    restarted on its store, replays the log and catches up to the same state."""
    ports = [free_port() for _ in range(3)]
    peers = controller_peers(ports)

    async def leader_of(ms: list[ControllerManager], timeout: float = 30) -> ControllerManager:
        deadline = time.monotonic() + timeout
        while not any(m.is_leader_state for m in ms):
            assert time.monotonic() < deadline, "no controller leader"
            await asyncio.sleep(0.05)
        return next(m for m in ms if m.is_leader_state)

    async def same_view(ms: list[ControllerManager], timeout: float = 10) -> tuple:
        deadline = time.monotonic() + timeout
        while len({repr(_view(m)) for m in ms}) != 1:
            assert time.monotonic() < deadline, [_view(m) for m in ms]
            await asyncio.sleep(0.05)
        return _view(ms[0])

    async def main() -> None:
        ms = [ControllerManager(_config(tmp_path, f"n{i}", peers)) for i in range(3)]
        for m in ms:
            await m.start()
        try:
            async with RemotingClient() as c:
                leader = await leader_of(ms)
                addr = f"127.0.0.1:{leader.port}"
                for broker_id in (1, 2):
                    h = ApplyBrokerIdRequestHeader("c3", "b3", broker_id, f"127.0.0.1:{30000 + broker_id};1")
                    r = await call(c, addr, RequestCode.CONTROLLER_APPLY_BROKER_ID, h.to_ext_fields())
                    assert r.code == ResponseCode.SUCCESS, r
                hb = BrokerHeartbeatRequestHeader("c3", "127.0.0.1:30001", "b3", 1, heartbeat_timeout_mills=60000)
                await call(c, addr, RequestCode.BROKER_HEARTBEAT, hb.to_ext_fields())
                r = await call(
                    c,
                    addr,
                    RequestCode.CONTROLLER_ELECT_MASTER,
                    ElectMasterRequestHeader("c3", "b3", 1).to_ext_fields(),
                )
                assert r.code == ResponseCode.SUCCESS, r
                view = await same_view(ms)
                assert view[0] == ResponseCode.SUCCESS and view[1].master_broker_id == 1, view
                assert view[3].next_broker_id == 3
                follower = next(m for m in ms if m is not leader)
                r = await call(
                    c, f"127.0.0.1:{follower.port}", RequestCode.CONTROLLER_APPLY_BROKER_ID, h.to_ext_fields()
                )
                assert r.code == ResponseCode.CONTROLLER_NOT_LEADER, r

                await leader.shutdown()
                rest = [m for m in ms if m is not leader]
                new_leader = await leader_of(rest)
                assert _view(new_leader) == view
                h = ApplyBrokerIdRequestHeader("c3", "b3", 3, "127.0.0.1:30003;1")
                r = await call(
                    c, f"127.0.0.1:{new_leader.port}", RequestCode.CONTROLLER_APPLY_BROKER_ID, h.to_ext_fields()
                )
                assert r.code == ResponseCode.SUCCESS, r

                restarted = ControllerManager(leader.config)
                await restarted.start()
                ms = [*rest, restarted]
                view = await same_view(ms)
                assert view[1].master_broker_id == 1 and view[3].next_broker_id == 4, view
        finally:
            for m in ms:
                await m.shutdown()

    asyncio.run(main())
