"""A mixed broker group (one Java 5.5.0 broker, one pyrmq broker) under three `pyrmq namesrv`
with embedded controllers, failing over both ways under the official client's load.

The Java broker starts first and is elected master; the pyrmq broker joins as its slave (SYNC:
inSyncReplicas=2, allAckInSyncStateSet). FailoverLoadTest (4 sync producer threads, a push
consumer, namesrvAddr = the three name servers) runs while the Java master is SIGKILLed: the
pyrmq slave is elected and takes the sends, nothing acknowledged is lost. The Java broker is then
restarted on its own port and store: it comes back as the pyrmq master's slave (its epoch file
and commit log checked against the new master's), both are in the SyncStateSet again, and a
second load kills the pyrmq master: the Java broker is elected and takes the sends.

Opt-in (`soak`, PYRMQ_SOAK=1): two loads and a Java broker started twice take about two minutes.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from compat.test_controller_in_namesrv_java import BROKER_CONF, CLUSTER, name_servers
from support import probe
from support.controller_group import controller_mode_conf, in_sync_ids, until_serving_leader, wait_replica_state
from support.failover_load import Measured, measure, run_load
from support.pyrmq_proc import PyrmqBroker, restart_broker
from support.servers import JavaBroker, PyrmqNamesrvControllerMember

from pyrmq.ha.epoch import decode_checkpoint
from pyrmq.remoting.client import RemotingClient

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.slow, pytest.mark.soak]

NAME = "ctl-ns-mixed"
LOAD_MS = 12_000
KILL_AFTER_S = 3.0
#: the Java broker's mappedFileSizeCommitLog (tests/support/servers.py): the members of a group must
#: agree on it, as in Java; a slave with larger files skips, at each of the master's file ends,
#: to its own next file start and dispatches nothing after it (docs/controller.md)
JAVA_COMMIT_LOG_FILE = 16 * 1024 * 1024


def _wait_pair(ctl: str, master: str, timeout: float = 120) -> tuple:
    """Until `master` leads NAME with both broker ids in sync (the replica info and the sync state data agree)."""

    async def run() -> tuple:
        async with RemotingClient() as c:
            state = await wait_replica_state(c, ctl, NAME, lambda s: s[1] == master and s[4] == [1, 2], timeout)
            assert await in_sync_ids(c, ctl, NAME) == [1, 2]
            return state

    return asyncio.run(run())


def _load(namesrv: str, phase: str, master, slave, java_home, tmp_path) -> Measured:
    topic = f"CtlNsMixed_{phase}"
    out = tmp_path / f"load_{phase}"
    for b in (master, slave):  # the new master must know the topic without waiting for SlaveSynchronize
        probe.create_topic(b.addr, topic)
    run = run_load(
        namesrv, topic, f"ctl_ns_mixed_{phase}", java_home, out, master.kill9,
        threads=4, load_ms=LOAD_MS, drain_ms=60_000, kill_after_s=KILL_AFTER_S,
    )  # fmt: skip
    assert run.before_kill > 20, f"{phase}: only {run.before_kill} SEND_OK before the kill"
    return measure(run, [slave.addr])


def test_mixed_group_fails_over_both_ways(java_harness, java_home, tmp_path):
    servers: list[PyrmqNamesrvControllerMember] = []
    brokers: list = []
    try:
        servers = name_servers(tmp_path)
        ctl_addrs = [s.controller_addr for s in servers]
        leader = until_serving_leader(ctl_addrs)
        namesrv = ";".join(s.addr for s in servers)
        java = JavaBroker(
            servers[0].addr, tmp_path / "java", name=NAME, cluster=CLUSTER, start_timeout=120,
            **dict(BROKER_CONF, controllerAddr=";".join(ctl_addrs), namesrvAddr=namesrv),
        )  # fmt: skip
        brokers.append(java)
        asyncio.run(_until_master(leader, java.addr))  # alone first: the master before pyrmq joins
        conf = controller_mode_conf(
            ctl_addrs, name=NAME, namesrvAddr=namesrv, inSyncReplicas=2, allAckInSyncStateSet="true",
            mappedFileSizeCommitLog=JAVA_COMMIT_LOG_FILE,
        )  # fmt: skip
        py = PyrmqBroker(servers[1].addr, tmp_path / "pyrmq", cluster=CLUSTER, **conf)
        brokers.append(py)
        before = _wait_pair(leader, java.addr)

        java_killed = _load(namesrv, "java_master", java, py, java_home, tmp_path)
        print("\n" + java_killed.line("pyrmq name servers, Java master killed, pyrmq slave elected"))
        assert java_killed.lost == 0, java_killed

        started = time.monotonic()
        restart_broker(java, timeout=120)
        state = _wait_pair(leader, py.addr)
        print(f"Java broker restarted -> back in the SyncStateSet as slave: {time.monotonic() - started:.2f} s")
        assert int(state[2]) == int(before[2]) + 1, (before, state)  # still the epoch of pyrmq's election
        # the Java broker cut its log back to where the two agree and took pyrmq's epoch: both epoch
        # files say the same, byte for byte (Java's CheckpointFile format, written by each side)
        java_epochs, py_epochs = (_epoch_file(b.store_dir) for b in (java, py))
        assert java_epochs == py_epochs, (java_epochs, py_epochs)
        assert [e.epoch for e in decode_checkpoint(py_epochs)] == [1, 2], py_epochs

        py_killed = _load(namesrv, "pyrmq_master", py, java, java_home, tmp_path)
        print(py_killed.line("pyrmq name servers, pyrmq master killed, Java slave elected"))
        assert py_killed.lost == 0, py_killed
        after = asyncio.run(_until_master(leader, java.addr))
        assert int(after[2]) == int(state[2]) + 1 and after[4] == [int(after[0])], after
    finally:
        for b in brokers:
            b.stop()
        for s in servers:
            s.stop()


def _epoch_file(store_dir: Path) -> str:
    return (store_dir / "epochFileCheckpoint").read_text()


async def _until_master(ctl: str, master: str, timeout: float = 120) -> tuple:
    async with RemotingClient() as c:
        return await wait_replica_state(c, ctl, NAME, lambda s: s[1] == master, timeout)
