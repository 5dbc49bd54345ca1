"""Controller mode (AutoSwitch HA) against the official Java 5.5.0 controller.

Two pyrmq brokers with enableControllerMode=true and the same brokerName get their ids from a
JavaController (a DLedger group of one), one is elected master, the other replicates from it
with the AutoSwitch protocol (handshake with the master's epoch list, epoch-tagged frames) and
joins the sync state set. Sends go to the master with pyrmq's raw remoting client; the commit
logs must be byte-identical file for file and both epoch files must hold the controller's epoch.
Then the master is SIGKILLed: the controller elects the slave (it is in the sync state set),
tells it (NOTIFY_BROKER_ROLE_CHANGED), and a send to it succeeds. The time from the kill to the
first successful send is printed and asserted under a bound. The old master, restarted on its
store, rejoins as a slave of the new epoch.

The mixed tests put one Java 5.5.0 broker and one pyrmq broker in the group, each direction:
the first started is elected master, the other replicates with the other implementation's HA
code, then the master is killed and the survivor takes over.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import pytest
from support import java
from support.requests import send_v2
from support.servers import JavaController
from support.stores import commit_log_files, wait_identical_commit_logs

from pyrmq.ha.broker_metadata import BrokerMetadata
from pyrmq.ha.epoch import decode_checkpoint
from pyrmq.protocol.bodies.controller import BrokerReplicasInfo
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.remoting.client import RemotingClient
from pyrmq.store import message as m

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.slow]

CL_SIZE = 256 * 1024
TOPIC = "AutoSwitchT"
HEARTBEAT_TIMEOUT_MS = 3000  # controllerHeartBeatTimeoutMills of the SIGSTOP test: how long the controller waits
#: everywhere else Java's default: a short timeout on a loaded machine re-elected a live master (epoch 5
#: where the test expected 1); a SIGKILLed master's closed connection is noticed at once anyway
DEFAULT_HEARTBEAT_TIMEOUT_MS = 10_000


@pytest.fixture
def java_controller(java_harness, tmp_path_factory):
    ctrl = JavaController(tmp_path_factory.mktemp("java-controller"))
    yield ctrl
    ctrl.stop()


def _conf(
    controller_addr: str, name: str, heartbeat_timeout_ms: int = DEFAULT_HEARTBEAT_TIMEOUT_MS
) -> dict[str, object]:
    return {
        "name": name,
        "enableControllerMode": "true",
        "controllerAddr": controller_addr,
        "controllerHeartBeatTimeoutMills": heartbeat_timeout_ms,
        "mappedFileSizeCommitLog": CL_SIZE,
        "slaveReadEnable": "true",
        "fresh": True,
    }


def _send(broker_name: str, body: bytes) -> RemotingCommand:
    return send_v2(TOPIC, broker_name, body, group="AutoSwitchPG", tags=None)


async def _replicas(c: RemotingClient, controller: str, name: str):
    body = json.dumps([name]).encode()
    r = await c.invoke(controller, RemotingCommand.request(RequestCode.CONTROLLER_GET_SYNC_STATE_DATA, {}, body), 5)
    assert r.code == ResponseCode.SUCCESS, r
    return BrokerReplicasInfo.decode(r.body).replicas_info_table.get(name)


async def _wait_in_sync(c: RemotingClient, controller: str, name: str, n: int, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while True:
        info = await _replicas(c, controller, name)
        if info is not None and len(info.in_sync_replicas) == n:
            return info
        assert time.monotonic() < deadline, f"sync state set of {name} never reached {n}: {info}"
        await asyncio.sleep(0.3)


def _epochs(store: Path) -> list[tuple[int, int]]:
    return [(e.epoch, e.start_offset) for e in decode_checkpoint((store / "epochFileCheckpoint").read_text())]


def _identity(store: Path) -> BrokerMetadata:
    md = BrokerMetadata(str(store / "brokerIdentity"))
    assert md.read(), f"no brokerIdentity in {store}"
    return md


def test_pyrmq_pair_fails_over_through_java_controller(pyrmq_namesrv, pyrmq_broker, java_controller):
    name = "autoswitch-pyrmq"
    ctrl = java_controller.addr
    first = pyrmq_broker(pyrmq_namesrv.addr, **_conf(ctrl, name))  # returns once registered: elected master
    second = pyrmq_broker(pyrmq_namesrv.addr, **_conf(ctrl, name))
    bodies = [f"as-{i:04d}-".encode() * (1 + i % 100) for i in range(200)]

    async def scenario() -> float:
        async with RemotingClient() as c:
            info = await _wait_in_sync(c, ctrl, name, 2)
            assert info.master_address == first.addr, info
            assert info.master_epoch == 1, info
            for body in bodies:
                r = await c.invoke(first.addr, _send(name, body), 10)
                assert r.code == ResponseCode.SUCCESS, r
            wait_identical_commit_logs(first.store_dir, second.store_dir)
            # both epoch files: epoch 1 from offset 0 (the master wrote it, the slave learnt it)
            assert _epochs(first.store_dir) == [(1, 0)]
            assert _epochs(second.store_dir) == [(1, 0)]
            ids = {_identity(first.store_dir).broker_id, _identity(second.store_dir).broker_id}
            assert ids == {1, 2}
            # a send to the slave is refused like a Java slave's
            r = await c.invoke(second.addr, _send(name, b"to the slave"), 10)
            assert r.code == ResponseCode.SYSTEM_BUSY, r
            replicated_end = sum(len(b) for b in commit_log_files(first.store_dir).values())
            assert replicated_end > 0

            killed = time.monotonic()
            first.kill9()
            while True:
                r = await c.invoke(second.addr, _send(name, b"after the failover"), 10)
                if r.code == ResponseCode.SUCCESS:
                    break
                assert time.monotonic() - killed < 60, f"no successful send 60 s after the kill: {r}"
                await asyncio.sleep(0.1)
            took = time.monotonic() - killed
            info = await _replicas(c, ctrl, name)
            assert info is not None and info.master_address == second.addr, info
            assert info.master_epoch == 2, info
            return took

    took = asyncio.run(scenario())
    print(f"\nkill -> first successful send on the new master: {took:.2f} s")
    epochs = _epochs(second.store_dir)
    assert [e for e, _ in epochs] == [1, 2], epochs
    assert epochs[1][1] > 0  # epoch 2 starts where the replicated log ended
    assert took < 30

    # the old master comes back with its store and brokerIdentity: it is a slave of epoch 2 now,
    # handshakes, keeps what epoch 1 and 2 share and replicates the rest
    first.restart()

    async def rejoin() -> None:
        async with RemotingClient() as c:
            info = await _wait_in_sync(c, ctrl, name, 2)
            assert info.master_address == second.addr and info.master_epoch == 2, info
            for body in bodies[:20]:
                r = await c.invoke(second.addr, _send(name, body), 10)
                assert r.code == ResponseCode.SUCCESS, r
            wait_identical_commit_logs(second.store_dir, first.store_dir)
            r = await c.invoke(first.addr, _send(name, b"to the old master"), 10)
            assert r.code == ResponseCode.SYSTEM_BUSY, r

    asyncio.run(rejoin())
    assert _identity(first.store_dir).broker_id == 1
    assert _epochs(first.store_dir) == epochs


async def _fail_over(c: RemotingClient, ctrl: str, name: str, old, new) -> float:
    """SIGKILL ``old`` (the master); seconds until a send to ``new`` succeeds."""
    killed = time.monotonic()
    old.kill9()
    last = None
    while True:
        last = await c.invoke(new.addr, _send(name, b"after the failover"), 10)
        if last.code == ResponseCode.SUCCESS:
            break
        assert time.monotonic() - killed < 60, f"no successful send 60 s after the kill: {last}"
        await asyncio.sleep(0.1)
    took = time.monotonic() - killed
    info = await _replicas(c, ctrl, name)
    assert info is not None and info.master_address == new.addr, info
    return took


def _group_fails_over(kinds: tuple[str, str], namesrv, pyrmq_broker, java_broker, ctrl: str, java_home) -> float:
    """Start ``kinds[0]`` (elected master) then ``kinds[1]`` in one group, replicate, compare the
    stores and mqadmin getBrokerEpoch, SIGKILL the master; seconds until the other takes a send."""
    name = f"autoswitch-{kinds[0]}-{kinds[1]}"

    def start(kind: str):
        conf = _conf(ctrl, name)
        if kind == "java":
            conf.pop("fresh")
            return java_broker(namesrv.addr, fresh=True, brokerIP2="127.0.0.1", **conf)
        return pyrmq_broker(namesrv.addr, **conf)

    master = start(kinds[0])
    slave = start(kinds[1])
    bodies = [f"mx-{i:04d}-".encode() * (1 + i % 100) for i in range(200)]

    async def scenario() -> float:
        async with RemotingClient() as c:
            info = await _wait_in_sync(c, ctrl, name, 2, timeout=90)
            assert info.master_address == master.addr, info
            for body in bodies:
                r = await c.invoke(master.addr, _send(name, body), 10)
                assert r.code == ResponseCode.SUCCESS, r
            wait_identical_commit_logs(master.store_dir, slave.store_dir)
            assert _epochs(master.store_dir) == [(info.master_epoch, 0)]
            # the epoch files are the same bytes, whichever implementation wrote them
            epoch_file = "epochFileCheckpoint"
            assert (master.store_dir / epoch_file).read_bytes() == (slave.store_dir / epoch_file).read_bytes()
            # mqadmin getBrokerEpoch (GET_BROKER_EPOCH_CACHE) prints the same epochs for both
            out = java.mqadmin("5.5.0", "getBrokerEpoch", "-b", name, namesrv=namesrv.addr, home=java_home)
            blocks = {
                b.split("#brokerAddr\t")[1].split("\n")[0]: b for b in out.stdout.split("\n\n") if "#brokerAddr" in b
            }
            assert set(blocks) == {master.addr, slave.addr}, out.stdout + out.stderr
            epoch_lines = set()
            for block in blocks.values():
                assert f"#clusterName\tDefaultCluster\n#brokerName\t{name}" in block, block
                lines = [ln for ln in block.splitlines() if ln.startswith("#Epoch")]
                assert len(lines) == 1 and f"epoch={info.master_epoch}, startOffset=0," in lines[0], block
                epoch_lines.update(lines)
            assert len(epoch_lines) == 1, epoch_lines  # same epoch, same end (the max offset) on both
            assert {b.split("#brokerId\t")[1].split("\n")[0] for b in blocks.values()} == {"0", "2"}
            r = await c.invoke(slave.addr, _send(name, b"to the slave"), 10)
            assert r.code == ResponseCode.SYSTEM_BUSY, r
            return await _fail_over(c, ctrl, name, master, slave)

    took = asyncio.run(scenario())
    print(f"\n{kinds[0]} master killed, {kinds[1]} takes over: first successful send after {took:.2f} s")
    epochs = _epochs(slave.store_dir)
    assert len(epochs) == 2 and epochs[1][0] > epochs[0][0] and epochs[1][1] > 0, epochs
    assert took < 30
    return took


@pytest.mark.parametrize("kinds", [("java", "pyrmq"), ("pyrmq", "java")], ids=["java-master", "pyrmq-master"])
def test_mixed_group_fails_over(kinds, pyrmq_namesrv, pyrmq_broker, java_broker, java_controller, java_home):
    """One Java 5.5.0 broker and one pyrmq broker; the first of ``kinds`` starts first and is
    elected, the other replicates from it, then the master is killed and the other takes over."""
    _group_fails_over(kinds, pyrmq_namesrv, pyrmq_broker, java_broker, java_controller.addr, java_home)


@pytest.mark.parametrize("broker_kind", ["java"])
def test_reference_all_java_group_fails_over(
    broker_kind, pyrmq_namesrv, pyrmq_broker, java_broker, java_controller, java_home
):
    """The same scenario on two Java 5.5.0 brokers: the reference time for the failover (a
    reference run, opt-in with PYRMQ_COMPAT_REFERENCE=1, see conftest.py)."""
    _group_fails_over(("java", "java"), pyrmq_namesrv, pyrmq_broker, java_broker, java_controller.addr, java_home)


def test_paused_pyrmq_master_is_replaced_then_follows(pyrmq_namesrv, pyrmq_broker, java_controller):
    """SIGSTOP the master (a partition: its connections stay open, only its heartbeats stop): the
    controller elects the slave once controllerHeartBeatTimeoutMills passed. Resumed, the old
    master learns the new epoch (GET_REPLICA_INFO every syncBrokerMetadataPeriod), becomes a slave
    and replicates; its commit log ends up the new master's."""
    name = "autoswitch-paused"
    ctrl = java_controller.addr
    first = pyrmq_broker(pyrmq_namesrv.addr, **_conf(ctrl, name, HEARTBEAT_TIMEOUT_MS))
    second = pyrmq_broker(pyrmq_namesrv.addr, **_conf(ctrl, name, HEARTBEAT_TIMEOUT_MS))

    async def scenario() -> float:
        async with RemotingClient() as c:
            await _wait_in_sync(c, ctrl, name, 2)
            for i in range(30):
                r = await c.invoke(first.addr, _send(name, b"before-%d" % i), 10)
                assert r.code == ResponseCode.SUCCESS, r
            wait_identical_commit_logs(first.store_dir, second.store_dir)
            paused = time.monotonic()
            os.kill(first.pid, signal.SIGSTOP)
            try:
                while True:
                    r = await c.invoke(second.addr, _send(name, b"after the pause"), 10)
                    if r.code == ResponseCode.SUCCESS:
                        break
                    assert time.monotonic() - paused < 60, f"no successful send 60 s after the pause: {r}"
                    await asyncio.sleep(0.1)
                took = time.monotonic() - paused
            finally:
                os.kill(first.pid, signal.SIGCONT)
            deadline = time.monotonic() + 60
            while True:  # the old master steps down
                r = await c.invoke(first.addr, _send(name, b"to the old master"), 10)
                if r.code == ResponseCode.SYSTEM_BUSY:
                    break
                assert time.monotonic() < deadline, f"the old master still answers {r}"
                await asyncio.sleep(0.3)
            wait_identical_commit_logs(second.store_dir, first.store_dir)
            return took

    took = asyncio.run(scenario())
    print(f"\nmaster paused -> first successful send on the new master: {took:.2f} s")
    assert HEARTBEAT_TIMEOUT_MS / 1000 - 1.1 < took < 30  # the last heartbeat may precede the pause by 1 s
    assert _epochs(first.store_dir) == _epochs(second.store_dir)
    assert [e for e, _ in _epochs(second.store_dir)] == [1, 2]


def test_all_ack_failover_loses_no_acknowledged_message(pyrmq_namesrv, pyrmq_broker, java_controller):
    """allAckInSyncStateSet=true: a send is acknowledged only once every member of the sync state
    set holds it. A sender keeps sending (each message until acknowledged, to whichever broker
    the controller names master). The slave is SIGSTOPped for 1.5 s (it acknowledges nothing, but
    stays in the sync state set), the master is SIGKILLed, the slave resumed and elected: every
    message the old master acknowledged is in the new master's commit log (duplicates of retried
    sends are allowed). Without allAckInSyncStateSet the sends during the pause would be
    acknowledged by the master alone and lost with it."""
    name = "autoswitch-allack"
    ctrl = java_controller.addr
    conf = {**_conf(ctrl, name), "allAckInSyncStateSet": "true"}
    first = pyrmq_broker(pyrmq_namesrv.addr, **conf)
    second = pyrmq_broker(pyrmq_namesrv.addr, **conf)
    acked: list[bytes] = []

    async def scenario() -> tuple[int, int, float]:
        async with RemotingClient() as c:
            await _wait_in_sync(c, ctrl, name, 2)
            stop = asyncio.Event()
            failures = 0

            async def sender() -> None:
                nonlocal failures
                master, i = first.addr, 0
                while not stop.is_set():
                    body = b"zl-%06d-" % i * 5
                    try:
                        r = await c.invoke(master, _send(name, body), 5)
                        ok = r.code == ResponseCode.SUCCESS
                    except Exception:
                        ok = False
                    if ok:
                        acked.append(body)
                        i += 1
                        continue
                    failures += 1
                    info = await _replicas(c, ctrl, name)
                    if info is not None and info.master_address:
                        master = info.master_address
                    await asyncio.sleep(0.05)

            task = asyncio.create_task(sender())
            while len(acked) < 200:
                await asyncio.sleep(0.05)
            os.kill(second.pid, signal.SIGSTOP)
            try:
                paused_at = len(acked)
                await asyncio.sleep(1.5)
                during_pause = len(acked) - paused_at
                killed = time.monotonic()
                first.kill9()
            finally:
                os.kill(second.pid, signal.SIGCONT)
            before = len(acked)
            while len(acked) <= before:
                assert time.monotonic() - killed < 60, "no acknowledged send 60 s after the kill"
                await asyncio.sleep(0.01)
            took = time.monotonic() - killed
            while len(acked) < before + 200:
                await asyncio.sleep(0.05)
            stop.set()
            await task
            return failures, during_pause, took

    failures, during_pause, took = asyncio.run(scenario())
    blob = b"".join(commit_log_files(second.store_dir).values())
    lost = [b for b in acked if b not in blob]
    print(
        f"\n{len(acked)} acknowledged ({during_pause} while the slave was paused), {failures} failed attempts, "
        f"{len(lost)} lost; kill -> next acknowledged send {took:.2f} s"
    )
    assert not lost, lost[:5]
    assert during_pause <= 1  # at most a send the slave had acknowledged just before the pause
    assert len(acked) >= 400


def test_java_controller_mode_store_reopened_by_pyrmq(pyrmq_namesrv, pyrmq_broker, java_broker, java_controller):
    """A Java 5.5.0 broker in controller mode writes messages, its epoch file and its
    brokerIdentity, and stops. pyrmq's broker, started on that store, keeps the id the controller
    gave the Java broker, reads the epoch file, is elected for a newer epoch (appended to the same
    file) and serves the Java-written messages."""
    name = "autoswitch-reopen"
    ctrl = java_controller.addr
    conf = _conf(ctrl, name)
    conf.pop("fresh")
    jb = java_broker(pyrmq_namesrv.addr, fresh=True, brokerIP2="127.0.0.1", **conf)
    bodies = [b"java-%03d" % i for i in range(50)]

    async def send_all(addr: str) -> None:
        async with RemotingClient() as c:
            for body in bodies:
                r = await c.invoke(addr, _send(name, body), 10)
                assert r.code == ResponseCode.SUCCESS, r

    asyncio.run(send_all(jb.addr))
    java_epochs = _epochs(jb.store_dir)
    assert [e for e, _ in java_epochs] == [1], java_epochs
    java_id = _identity(jb.store_dir).broker_id
    jb.stop()

    pb = pyrmq_broker(
        pyrmq_namesrv.addr,
        store_dir=jb.store_dir,
        mappedFileSizeConsumeQueue=300000 * 20 // 100,  # what the Java broker used
        **_conf(ctrl, name),
    )

    async def check() -> None:
        async with RemotingClient() as c:
            info = await _replicas(c, ctrl, name)
            assert info is not None and info.master_address == pb.addr and info.master_epoch > 1, info
            got: list[bytes] = []
            for q in range(4):
                offset = 0
                while True:
                    ext = {
                        "consumerGroup": "reopenG",
                        "topic": TOPIC,
                        "queueId": str(q),
                        "queueOffset": str(offset),
                        "maxMsgNums": "32",
                        "sysFlag": "4",
                        "commitOffset": "0",
                        "suspendTimeoutMillis": "0",
                        "subscription": "*",
                        "subVersion": "0",
                        "expressionType": "TAG",
                    }
                    r = await c.invoke(pb.addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, ext), 10)
                    if r.code != ResponseCode.SUCCESS:
                        break
                    batch = [x.body for x in m.decode_messages(r.body)]
                    got += batch
                    offset += len(batch)
            assert sorted(got) == sorted(bodies)
            r = await c.invoke(pb.addr, _send(name, b"pyrmq after java"), 10)
            assert r.code == ResponseCode.SUCCESS, r

    asyncio.run(check())
    assert _identity(jb.store_dir).broker_id == java_id
    epochs = _epochs(jb.store_dir)
    assert epochs[0] == java_epochs[0] and len(epochs) == 2 and epochs[1][0] > 1, epochs
