"""Two Java 5.5.0 brokers in controller mode against three `pyrmq namesrv` with embedded controllers.

The name servers run enableControllerInNamesrv=true, one controller group of three (as Java's
NamesrvStartup runs it: each process a name server on its own port and a group member on its
peer port). The official Java brokers (brokerId -1, controllerAddr = the three members,
namesrvAddr = the three name servers) apply for ids 1 and 2 and form a SyncStateSet of both;
SYNC settings (inSyncReplicas=2, allAckInSyncStateSet) so a SEND_OK means both hold the message.

Under the official client's load (FailoverLoadTest: 4 sync producer threads and a push consumer,
namesrvAddr = all three name servers):
- the name server holding the controller leader is SIGKILLed: a new controller leader serves
  with the same replicas info, the group keeps its master and no send fails meanwhile;
- then the Java master is SIGKILLed: the new controller leader elects the Java slave, the
  client's sends resume on it, and every acknowledged body is consumed.
Both times are printed (kill -> new serving controller leader; kill -> first SEND_OK stored on
the new master).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from compat.test_controller_group_java import BROKER_CONF as GROUP_BROKER_CONF
from support import probe
from support.controller_group import (
    in_sync_ids,
    until_serving_leader,
    wait_replica_state,
)
from support.failover_load import measure, rows, run_load
from support.ports import free_port
from support.servers import JavaBroker, PyrmqNamesrvControllerMember, controller_peers

from pyrmq.remoting.client import RemotingClient

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.slow]

CLUSTER = "CtlNsJavaCluster"
NAME = "ctl-ns-java"
TOPIC = "CtlNsJavaT"
#: Java brokers as test_controller_group_java starts them, made SYNC (no acknowledged loss)
BROKER_CONF = {
    **GROUP_BROKER_CONF,
    "inSyncReplicas": 2,
    "allAckInSyncStateSet": "true",
    "brokerIP2": "127.0.0.1",
}
LOAD_MS = 14_000  # both kills take place inside it
KILL_AFTER_S = 1.5  # seconds of load before the controller leader's name server is killed
KEPT_MASTER_S = 0.5  # load on the kept master under the new controller leader, before its kill


def name_servers(workdir, **conf) -> list[PyrmqNamesrvControllerMember]:
    """Three `pyrmq namesrv` with embedded controllers n0..n2, one group, inactive masters scanned every second."""
    ports = [free_port() for _ in range(3)]
    peers = controller_peers(ports)
    return [
        PyrmqNamesrvControllerMember(workdir / f"ns{i}", f"n{i}", p, peers, scanInactiveMasterInterval=1000, **conf)
        for i, p in enumerate(ports)
    ]


def _replica_state(ctl: str, ok, timeout: float = 120) -> tuple:
    async def run() -> tuple:
        async with RemotingClient() as c:
            return await wait_replica_state(c, ctl, NAME, ok, timeout)

    return asyncio.run(run())


def _in_sync(ctl: str) -> list[int]:
    async def run() -> list[int]:
        async with RemotingClient() as c:
            return await in_sync_ids(c, ctl, NAME)

    return asyncio.run(run())


def test_java_pair_fails_over_through_pyrmq_name_servers(java_harness, java_home, tmp_path):
    servers: list[PyrmqNamesrvControllerMember] = []
    brokers: list[JavaBroker] = []
    started = time.monotonic()
    try:
        servers = name_servers(tmp_path)
        by_ctl = {s.controller_addr: s for s in servers}
        leader = by_ctl[until_serving_leader(list(by_ctl))]
        namesrv = ";".join(s.addr for s in servers)
        conf = dict(BROKER_CONF, controllerAddr=";".join(by_ctl), namesrvAddr=namesrv)

        def one(i: int) -> JavaBroker:
            return JavaBroker(
                servers[i].addr, tmp_path / f"b{i}", name=NAME, cluster=CLUSTER, start_timeout=120, **conf
            )

        with ThreadPoolExecutor(2) as ex:
            brokers = list(ex.map(one, range(2)))
        by_addr = {b.addr: b for b in brokers}
        print(f"\nname servers and Java brokers up {time.monotonic() - started:.1f} s")
        state = _replica_state(leader.controller_addr, lambda s: s[1] in by_addr and s[4] == [1, 2])
        assert state[2] == "1" and state[3] >= 2, state  # the first master; its SyncStateSet grown to both
        assert _in_sync(leader.controller_addr) == [1, 2]
        master = by_addr[state[1]]
        slave = next(b for b in brokers if b is not master)
        for s in servers:  # every name server lists both Java brokers (ids 0 and 1 after the roles)
            assert probe.broker_registered(s.addr, NAME, master.addr), s
        for b in brokers:
            probe.create_topic(b.addr, TOPIC)
        print(f"the pair formed {time.monotonic() - started:.1f} s")

        times: dict[str, float] = {}
        new_leaders: list[str] = []
        rest = [a for a in by_ctl if a != leader.controller_addr]

        def kill() -> None:
            times["ctl_killed_ms"] = time.time() * 1000
            killed = time.monotonic()
            leader.kill9()  # the name server and its controller: one process
            new_leader = until_serving_leader(rest, timeout=30)
            times["elected_s"] = time.monotonic() - killed
            new_leaders.append(new_leader)
            assert _replica_state(new_leader, lambda s: True) == state  # the group keeps its master
            time.sleep(KEPT_MASTER_S)
            times["master_killed_ms"] = time.time() * 1000
            master.kill9()

        out = tmp_path / "load"
        run = run_load(
            namesrv, TOPIC, "ctl_ns_java_c", java_home, out, kill,
            threads=4, load_ms=LOAD_MS, drain_ms=60_000, kill_after_s=KILL_AFTER_S,
        )  # fmt: skip
        assert run.before_kill > 20, f"only {run.before_kill} SEND_OK before the kill"
        after = _replica_state(new_leaders[0], lambda s: s[1] == slave.addr, 30)
        assert int(after[2]) == int(state[2]) + 1 and after[4] == [int(after[0])], after
        window = (times["ctl_killed_ms"], times["master_killed_ms"])
        acked_between = [a for a in rows(out / "acked.tsv") if window[0] < int(a[3]) < window[1]]
        failed_between = [f for f in rows(out / "failed.tsv") if window[0] < int(f[2]) < window[1]]
        assert acked_between and not failed_between, (len(acked_between), failed_between[:5])
        measured = measure(dataclasses.replace(run, killed_ms=times["master_killed_ms"]), [slave.addr])
        print(
            f"load done {time.monotonic() - started:.1f} s\npyrmq name servers, Java + Java: controller leader's name server kill -> new serving leader "
            f"{times['elected_s']:.2f} s ({len(acked_between)} SEND_OK meanwhile, none failed)\n"
            + measured.line("Java master kill")
        )
        assert measured.lost == 0, measured
    finally:
        with ThreadPoolExecutor(2) as ex:  # SIGTERM, both at once: a JVM holding the CDS claim dumps its archive
            list(ex.map(JavaBroker.stop, brokers))
        for s in servers:
            s.stop()
