"""Controller groups of 3 with Java on either side.

- Two official Java 5.5.0 brokers in controller mode (controllerAddr listing all three members,
  as Java's brokers take it) against a group of three `pyrmq controller`s: the pair forms through
  the leader; the controller leader is SIGKILLed and the new leader has the same replicas info;
  then the broker master is SIGKILLed and the new controller leader elects the slave. Opt-in
  (`soak`, PYRMQ_SOAK=1): Java brokers take most of a minute to start on the shared machine.
- A mixed group (2 pyrmq + 1 ControllerStartup 5.5.0): the events of both kinds of member are
  the same DLedger entries (EventSerializer's bytes), so whichever member leads, every member
  applies the same state. Reference-marked (PYRMQ_COMPAT_REFERENCE=1).
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from compat.test_controller_java import _wait
from support import probe
from support.ports import free_port
from support.requests import send_v2
from support.servers import (
    JavaBroker,
    JavaControllerMember,
    PyrmqControllerMember,
    PyrmqNamesrv,
    controller_peers,
)

from pyrmq.dledger import protocol as dp
from pyrmq.dledger.store_files import read_term_file
from pyrmq.protocol.bodies.controller import SyncStateSet
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.headers.controller import ApplyBrokerIdRequestHeader, GetNextBrokerIdRequestHeader
from pyrmq.remoting.client import RemotingClient

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.slow]

CLUSTER = "Ctl3Cluster"
GROUP = "ctl3group"
BROKER = "ctl3-java"
TOPIC = "Ctl3JavaT"
MEMBER_CONF = {"scanInactiveMasterInterval": 1000, "controllerDLegerGroup": GROUP}
BROKER_CONF = {
    "brokerId": -1,
    "enableControllerMode": "true",
    "brokerRole": "SLAVE",
    "syncBrokerMetadataPeriod": 1000,
    "checkSyncStateSetPeriod": 1000,
    "syncControllerMetadataPeriod": 1000,
    "controllerHeartBeatTimeoutMills": 6000,
    "brokerHeartbeatInterval": 1000,
    "haSendHeartbeatInterval": 1000,
}


def _leader(members: list) -> object | None:
    """The member every live member names as leader, once it serves requests."""
    named = set()
    for m in members:
        try:
            named.add(
                probe.request(m.addr, RequestCode.CONTROLLER_GET_METADATA_INFO).ext_fields.get(
                    "controllerLeaderAddress"
                )
            )
        except Exception:
            named.add(None)
    leader = next((m for m in members if m.addr in named), None)
    if len(named) != 1 or leader is None:
        return None
    r = probe.request(leader.addr, RequestCode.CONTROLLER_GET_REPLICA_INFO, {"brokerName": "none"})
    return leader if r.code != ResponseCode.CONTROLLER_NOT_LEADER else None


def _replica_info(addr: str, broker: str = BROKER) -> tuple | None:
    r = probe.request(addr, RequestCode.CONTROLLER_GET_REPLICA_INFO, {"brokerName": broker})
    if r.code != ResponseCode.SUCCESS:
        return None
    sss = SyncStateSet.decode(r.body) if r.body else SyncStateSet()
    ef = r.ext_fields
    return (ef.get("masterBrokerId"), ef.get("masterAddress"), ef.get("masterEpoch"), sss.sync_state_set_epoch,
            sorted(sss.sync_state_set))  # fmt: skip


def _sent_ok(addr: str) -> bool:
    async def once() -> int | None:
        client = RemotingClient(connect_timeout_s=1)
        try:
            return (await client.invoke(addr, send_v2(TOPIC, BROKER, b"ctl3", group="Ctl3PG"), 3)).code
        except Exception:
            return None
        finally:
            await client.close()

    return asyncio.run(once()) == ResponseCode.SUCCESS


def _stop_all(*groups) -> None:
    for group in groups:
        for s in group:
            s.stop()


@pytest.mark.soak
def test_java_brokers_fail_over_through_a_pyrmq_controller_group(java_harness, tmp_path):
    ports = [free_port() for _ in range(3)]
    peers = controller_peers(ports)
    members: list = []
    brokers: list[JavaBroker] = []
    ns = None
    try:
        members = [
            PyrmqControllerMember(tmp_path / f"c{i}", f"n{i}", p, peers, **MEMBER_CONF) for i, p in enumerate(ports)
        ]
        ns = PyrmqNamesrv(tmp_path / "ns")
        leader = _wait(lambda: _leader(members), "a serving controller leader", 30)
        conf = dict(BROKER_CONF, controllerAddr=";".join(m.addr for m in members))

        def one(i: int) -> JavaBroker:
            return JavaBroker(ns.addr, tmp_path / f"b{i}", name=BROKER, cluster=CLUSTER, start_timeout=120, **conf)

        with ThreadPoolExecutor(2) as ex:
            brokers = list(ex.map(one, range(2)))
        by_addr = {b.addr: b for b in brokers}
        state = _wait(
            lambda: (lambda s: s if s and s[1] in by_addr and len(s[4]) == 2 else None)(_replica_info(leader.addr)),
            "a master with both brokers in the SyncStateSet",
            120,
        )
        master = by_addr[state[1]]
        slave = next(b for b in brokers if b is not master)
        _wait(lambda: _sent_ok(master.addr), "a send to the master", 60)
        for m in members:
            if m is not leader:
                r = probe.request(m.addr, RequestCode.CONTROLLER_GET_REPLICA_INFO, {"brokerName": BROKER})
                assert r.code == ResponseCode.CONTROLLER_NOT_LEADER, r

        killed = time.monotonic()
        leader.kill9()
        rest = [m for m in members if m is not leader]
        new_leader = _wait(lambda: _leader(rest), "a new serving controller leader", 60)
        print(f"\ncontroller leader kill -> new serving leader: {time.monotonic() - killed:.2f} s")
        assert _replica_info(new_leader.addr) == state

        killed = time.monotonic()
        master.kill9()
        _wait(lambda: _sent_ok(slave.addr), "the first send to the new master", 90)
        print(f"broker master kill -> first SEND_OK on the new master: {time.monotonic() - killed:.2f} s")
        after = _replica_info(new_leader.addr)
        assert after is not None and after[1] == slave.addr and int(after[2]) == int(state[2]) + 1, after
    finally:
        _stop_all(brokers, [ns] if ns else [], members)


def _transfer(leader, self_id: str, to_id: str) -> None:
    """A DLedger LEADERSHIP_TRANSFER asked of the leader (its term read from its currterm file)."""
    term = read_term_file(str(leader.workdir / "controller-store" / f"dledger-{self_id}")).curr_term
    ask = dp.LeadershipTransferRequest(
        group=GROUP, remote_id=self_id, term=term, transfer_id=self_id, transferee_id=to_id
    )

    async def go() -> dp.LeadershipTransferResponse:
        async with RemotingClient() as client:
            cmd = await client.invoke(leader.addr, dp.request_command(ask), 10)
        return dp.LeadershipTransferResponse.decode(cmd.body)

    answer = asyncio.run(go())
    assert answer.code == dp.DLedgerResponseCode.SUCCESS, answer


def _apply_ids(leader, ids: range) -> None:
    for broker_id in ids:
        h = ApplyBrokerIdRequestHeader(CLUSTER, "mixed", broker_id, f"127.0.0.1:{30000 + broker_id};1")
        r = probe.request(leader.addr, RequestCode.CONTROLLER_APPLY_BROKER_ID, h.to_ext_fields())
        assert r.code == ResponseCode.SUCCESS, (leader, r)


def _next_id(addr: str) -> int:
    h = GetNextBrokerIdRequestHeader(CLUSTER, "mixed")
    r = probe.request(addr, RequestCode.CONTROLLER_GET_NEXT_BROKER_ID, h.to_ext_fields())
    assert r.code == ResponseCode.SUCCESS, r
    return int(r.ext_fields["nextBrokerId"])


@pytest.mark.reference
def test_mixed_group_two_pyrmq_one_java_controller(java_harness, tmp_path):
    """n0 and n1 pyrmq, n2 ControllerStartup 5.5.0 in one DLedger group. A pyrmq leader writes
    ids 1-2; the leadership is moved to the Java member, which must have applied them (next id
    3) and writes ids 3-4; the Java member is SIGKILLed and the new pyrmq leader must have
    applied Java's entries (next id 5) and keeps writing."""
    ports = [free_port() for _ in range(3)]
    peers = controller_peers(ports)
    conf = MEMBER_CONF
    members: list = []
    try:
        members = [
            PyrmqControllerMember(tmp_path / "c0", "n0", ports[0], peers, **conf),
            PyrmqControllerMember(tmp_path / "c1", "n1", ports[1], peers, **conf),
            JavaControllerMember(tmp_path / "c2", "n2", ports[2], peers, **conf),
        ]
        ids = {id(m): f"n{i}" for i, m in enumerate(members)}
        java = members[2]
        leader = _wait(lambda: _leader(members), "a serving controller leader", 60)
        if leader is java:
            _transfer(leader, "n2", "n0")
            leader = _wait(lambda: (lambda m: m if m is members[0] else None)(_leader(members)), "n0 serving", 30)
        _apply_ids(leader, range(1, 3))
        assert _next_id(leader.addr) == 3

        _transfer(leader, ids[id(leader)], "n2")
        _wait(lambda: _leader(members) is java, "the Java member serving", 30)
        assert _next_id(java.addr) == 3  # Java applied pyrmq's entries
        _apply_ids(java, range(3, 5))
        assert _next_id(java.addr) == 5

        java.kill9()
        rest = members[:2]
        leader = _wait(lambda: _leader(rest), "a pyrmq member serving again", 60)
        assert _next_id(leader.addr) == 5  # pyrmq applied Java's entries
        _apply_ids(leader, range(5, 6))
        assert _next_id(leader.addr) == 6
    finally:
        _stop_all(members)
