"""Two pyrmq brokers in controller mode failing over through three Java 5.5.0 NamesrvStartup with
enableControllerInNamesrv (one controller group of three, each process a name server and a group
member, as in test_controller_group_mqadmin's reference side).

The brokers (namesrvAddr and controllerAddr listing all three, SYNC settings: inSyncReplicas=2,
allAckInSyncStateSet) start one after the other: the first is elected master by the Java
leader, the second joins its SyncStateSet. Under the official client's load (FailoverLoadTest: 4
sync producer threads, a push consumer, namesrvAddr = the three name servers) the pyrmq master is
SIGKILLed: the Java controller elects the pyrmq slave (master epoch + 1, SyncStateSet of it
alone), the client's sends resume on it, and every acknowledged body is consumed. The time from
the kill to the first SEND_OK stored on the new master is printed.

Reference-marked (PYRMQ_COMPAT_REFERENCE=1): the controllers and name servers are Java's only.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from support import probe
from support.controller_group import controller_mode_conf, in_sync_ids_now, until_replica_state, until_serving_leader
from support.failover_load import measure, run_load
from support.ports import free_port
from support.pyrmq_proc import PyrmqBroker
from support.servers import JavaNamesrvControllerMember, controller_peers

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.slow, pytest.mark.reference]

CLUSTER = "CtlJavaNsPyCluster"
NAME = "ctl-java-ns-py"
TOPIC = "CtlJavaNsPyT"
LOAD_MS = 12_000
KILL_AFTER_S = 3.0


def test_pyrmq_pair_fails_over_through_java_name_servers(java_harness, java_home, tmp_path):
    members: list[JavaNamesrvControllerMember] = []
    brokers: list[PyrmqBroker] = []
    started = time.monotonic()
    try:
        ports = [free_port() for _ in range(3)]
        peers = controller_peers(ports)

        def member(i: int) -> JavaNamesrvControllerMember:
            return JavaNamesrvControllerMember(
                tmp_path / f"ns{i}", f"n{i}", ports[i], peers, start_timeout=120, scanInactiveMasterInterval=1000
            )

        with ThreadPoolExecutor(3) as ex:
            futures = [ex.submit(member, i) for i in range(3)]
        for f in futures:  # kept for the teardown even when another failed to start
            if f.exception() is None:
                members.append(f.result())
        assert len(members) == 3, [f.exception() for f in futures]
        ctl = [m.controller_addr for m in members]
        leader = until_serving_leader(ctl, timeout=120)
        namesrv = ";".join(m.addr for m in members)
        conf = controller_mode_conf(ctl, name=NAME, namesrvAddr=namesrv, inSyncReplicas=2, allAckInSyncStateSet="true")
        print(f"\nJava name servers with controllers up {time.monotonic() - started:.1f} s")
        for i in (1, 2):  # in turn: the first one registered is the master (broker id 1)
            brokers.append(PyrmqBroker(members[0].addr, tmp_path / f"b{i}", cluster=CLUSTER, **conf))
            if i == 1:
                until_replica_state(leader, NAME, lambda s: s[1] == brokers[0].addr)
        master, slave = brokers
        state = until_replica_state(leader, NAME, lambda s: s[1] == master.addr and s[4] == [1, 2])
        assert state[2] == "1" and state[3] >= 2, state  # the first master; its SyncStateSet grown to both
        assert in_sync_ids_now(leader, NAME) == [1, 2]
        for b in brokers:
            probe.create_topic(b.addr, TOPIC)
        print(f"the pair formed {time.monotonic() - started:.1f} s")

        out = tmp_path / "load"
        run = run_load(
            namesrv, TOPIC, "ctl_java_ns_py_c", java_home, out, master.kill9,
            threads=4, load_ms=LOAD_MS, drain_ms=60_000, kill_after_s=KILL_AFTER_S,
        )  # fmt: skip
        assert run.before_kill > 20, f"only {run.before_kill} SEND_OK before the kill"
        leader = until_serving_leader(ctl, timeout=30)
        after = until_replica_state(leader, NAME, lambda s: s[1] == slave.addr, 30)
        assert int(after[2]) == int(state[2]) + 1 and after[4] == [int(after[0])], after
        measured = measure(run, [slave.addr])
        print(
            f"load done {time.monotonic() - started:.1f} s\n"
            + measured.line("Java name servers with controllers, pyrmq + pyrmq: pyrmq master kill")
        )
        assert measured.lost == 0, measured
    finally:
        for b in brokers:
            b.stop()
        for m in members:
            m.stop()
