"""Brokers in controller mode under a controller group that mixes pyrmq and Java controllers.

n0 and n1 are `pyrmq controller`, n2 is ControllerStartup 5.5.0, one DLedger group (as in
test_controller_group_java's mixed group). The broker group (`CASES`) is a pair of official Java
5.5.0 brokers, a Java master with a pyrmq slave, or a pyrmq master with a Java slave, with
`controllerAddr` listing the three members and SYNC settings (inSyncReplicas=2,
allAckInSyncStateSet): the pair forms its SyncStateSet through the leader, a pyrmq member at first.

Under the official client's load (FailoverLoadTest: 4 sync producer threads, a push consumer):
1. the pyrmq controller leader is SIGKILLed: a new leader serves the same replica info, the
   broker group keeps its master and no send fails;
2. the killed member is restarted on its store and rejoins; the leadership is moved to the Java
   member (DLedger LEADERSHIP_TRANSFER, unless it already leads), which serves the same state;
3. the Java controller is SIGKILLed: a pyrmq member leads again with the same state, still no
   failed send (skipped in the `java-elects` case, where the Java controller runs the election);
4. the broker master is SIGKILLed: the slave is elected (master epoch + 1), the client's sends
   resume on it, and every acknowledged body is consumed.
The times of steps 1, 3 and 4 are printed.

Opt-in (`soak`, PYRMQ_SOAK=1): two or three JVM servers, the client's JVM and a 45 s load take
three to four minutes on the shared machine.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from compat.test_controller_group_java import MEMBER_CONF, _leader, _replica_info, _transfer
from compat.test_controller_in_namesrv_java import BROKER_CONF
from compat.test_controller_in_namesrv_mixed import JAVA_COMMIT_LOG_FILE
from compat.test_controller_java import _wait
from support import probe
from support.controller_group import controller_mode_conf, in_sync_ids
from support.failover_load import measure, rows, run_load
from support.ports import free_port
from support.pyrmq_proc import PyrmqBroker
from support.servers import (
    JavaBroker,
    JavaControllerMember,
    PyrmqControllerMember,
    PyrmqNamesrv,
    controller_peers,
)

from pyrmq.remoting.client import RemotingClient

#: JVMs starting on a loaded machine take minutes: a longer limit than the suite's 600 s
pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.slow, pytest.mark.soak, pytest.mark.timeout(1200)]

CLUSTER = "CtlMixCluster"
NAME = "ctl-mix"
TOPIC = "CtlMixT"
#: long enough for both controller kills, the restart and the transfer before the master's kill
LOAD_MS = 45_000
KILL_AFTER_S = 2.0
BROKER_START_S = 300  # a JVM server starting on the loaded machine (brokers, the Java controller)
#: case -> (the pair: its master first, who leads the controllers when the master is killed)
CASES = {
    "java": ("java", "pyrmq"),
    "mixed": ("java-master", "pyrmq"),
    "pyrmq-master": ("pyrmq-master", "pyrmq"),
    "java-elects": ("java-master", "java"),
}


def _state(addr: str) -> tuple | None:
    return _replica_info(addr, NAME)


def _in_sync(addr: str) -> list[int]:
    async def run() -> list[int]:
        async with RemotingClient() as c:
            return await in_sync_ids(c, addr, NAME)

    return asyncio.run(run())


def _serving(members: list, timeout: float = 60) -> tuple[Any, float]:
    """The member every one of `members` names as leader once it serves, and how long that took."""
    started = time.monotonic()
    leader = _wait(lambda: _leader(members), f"a serving controller leader among {members}", timeout)
    return leader, time.monotonic() - started


def _start_pair(pair: str, ns: str, ctl: str, leader: str, workdir: Path) -> list:
    """The broker group: two Java brokers started together, or one broker (`pair` names it), master
    first, and then a broker of the other kind joining it (the same commit-log file size on both,
    docs/controller.md)."""
    java_conf = dict(BROKER_CONF, controllerAddr=ctl)

    def java(i: int) -> JavaBroker:
        return JavaBroker(ns, workdir / f"b{i}", name=NAME, cluster=CLUSTER, start_timeout=BROKER_START_S, **java_conf)

    def pyrmq(i: int) -> PyrmqBroker:
        conf = controller_mode_conf(
            ctl.split(";"), name=NAME, inSyncReplicas=2, allAckInSyncStateSet="true",
            mappedFileSizeCommitLog=JAVA_COMMIT_LOG_FILE,
        )  # fmt: skip
        return PyrmqBroker(ns, workdir / f"b{i}", cluster=CLUSTER, **conf)

    if pair == "java":
        with ThreadPoolExecutor(2) as ex:
            return list(ex.map(java, range(2)))
    first, second = (java, pyrmq) if pair == "java-master" else (pyrmq, java)
    brokers = [first(0)]
    try:
        _wait(lambda: (_state(leader) or [None, None])[1] == brokers[0].addr, f"the {pair} elected first", 120)
        return [brokers[0], second(1)]
    except BaseException:
        brokers[0].stop()
        raise


@pytest.mark.parametrize("case", list(CASES))
def test_brokers_fail_over_under_a_mixed_controller_group(case, java_harness, java_home, tmp_path):
    pair, elector = CASES[case]
    ports = [free_port() for _ in range(3)]
    peers = controller_peers(ports)
    members: list = []
    brokers: list = []
    ns = None
    started = time.monotonic()
    try:
        members = [
            PyrmqControllerMember(tmp_path / "c0", "n0", ports[0], peers, **MEMBER_CONF),
            PyrmqControllerMember(tmp_path / "c1", "n1", ports[1], peers, **MEMBER_CONF),
            JavaControllerMember(tmp_path / "c2", "n2", ports[2], peers, start_timeout=BROKER_START_S, **MEMBER_CONF),
        ]
        ids = {m.addr: f"n{i}" for i, m in enumerate(members)}
        java_ctl = members[2]
        leader, _ = _serving(members, timeout=BROKER_START_S)
        if leader is java_ctl:  # the first kill is of a pyrmq leader
            _transfer(leader, "n2", "n0")
            leader = _wait(lambda: (lambda m: m if m is members[0] else None)(_leader(members)), "n0 serving", 30)
        ns = PyrmqNamesrv(tmp_path / "ns")
        ctl = ";".join(m.addr for m in members)
        brokers = _start_pair(pair, ns.addr, ctl, leader.addr, tmp_path)
        by_addr = {b.addr: b for b in brokers}
        masters = set(by_addr) if pair == "java" else {brokers[0].addr}
        state = _wait(
            lambda: (lambda s: s if s and s[1] in masters and s[4] == [1, 2] else None)(_state(leader.addr)),
            "a master with both brokers in the SyncStateSet",
            120,
        )
        assert state[2] == "1" and state[3] >= 2, state  # the first master; its SyncStateSet grown to both
        assert _in_sync(leader.addr) == [1, 2]
        master = by_addr[state[1]]
        slave = next(b for b in brokers if b is not master)
        for b in brokers:
            probe.create_topic(b.addr, TOPIC)
        print(
            f"\n[{case}] controllers, name server and brokers up, the pair formed: {time.monotonic() - started:.1f} s"
        )

        times: dict[str, float] = {}
        last: list = []

        def kill() -> None:
            times["first_kill_ms"] = time.time() * 1000
            leader.kill9()  # 1. the pyrmq leader
            rest = [m for m in members if m is not leader]
            new, times["pyrmq_leader_killed_s"] = _serving(rest)
            assert _state(new.addr) == state, "the group's master changed with the controller leader"
            idx = members.index(leader)  # 2. back on its store, then the leadership to the Java member
            members[idx] = PyrmqControllerMember(
                tmp_path / f"c{idx}", f"n{idx}", ports[idx], peers, **MEMBER_CONF
            )  # fmt: skip
            new, _ = _serving(members)
            if new is not java_ctl:
                _transfer(new, ids[new.addr], "n2")
                _wait(lambda: _leader(members) is java_ctl, "the Java controller serving", 30)
            assert _state(java_ctl.addr) == state, "the Java controller leads another state"
            if elector == "pyrmq":
                java_ctl.kill9()  # 3. the Java leader
                rest = [m for m in members if m is not java_ctl]
                new, times["java_leader_killed_s"] = _serving(rest)
                assert _state(new.addr) == state, "the group's master changed with the controller leader"
            else:
                new = java_ctl  # it runs the election
            last.append(new)
            times["master_killed_ms"] = time.time() * 1000
            master.kill9()  # 4.

        out = tmp_path / "load"
        run = run_load(
            ns.addr, TOPIC, "ctl_mix_c", java_home, out, kill,
            threads=4, load_ms=LOAD_MS, drain_ms=60_000, kill_after_s=KILL_AFTER_S,
        )  # fmt: skip
        assert run.before_kill > 20, f"only {run.before_kill} SEND_OK before the first kill"
        assert last, "the kills did not finish"
        after = _wait(
            lambda: (lambda s: s if s and s[1] == slave.addr else None)(_state(last[0].addr)), "the slave elected", 30
        )
        assert int(after[2]) == int(state[2]) + 1 and after[4] == [int(after[0])], after
        window = (times["first_kill_ms"], times["master_killed_ms"])
        acked_between = [a for a in rows(out / "acked.tsv") if window[0] < int(a[3]) < window[1]]
        failed_between = [f for f in rows(out / "failed.tsv") if window[0] < int(f[2]) < window[1]]
        assert acked_between and not failed_between, (len(acked_between), failed_between[:5])
        measured = measure(dataclasses.replace(run, killed_ms=times["master_killed_ms"]), [slave.addr])
        java_kill = (
            f"Java controller leader kill -> new serving leader {times['java_leader_killed_s']:.2f} s "
            if "java_leader_killed_s" in times
            else "the Java controller leading at the master's kill "
        )
        print(
            f"[{case}] pyrmq controller leader kill -> new serving leader {times['pyrmq_leader_killed_s']:.2f} s; "
            f"{java_kill}({len(acked_between)} SEND_OK meanwhile, none failed)\n"
            + measured.line(f"[{case}] master {type(master).__name__} kill, {type(slave).__name__} elected")
        )
        assert measured.lost == 0, measured
    finally:
        with ThreadPoolExecutor(2) as ex:  # SIGTERM, both at once: a JVM holding the CDS claim dumps its archive
            list(ex.map(lambda b: b.stop(), brokers))
        for s in [ns, *members]:
            if s is not None:
                s.stop()
