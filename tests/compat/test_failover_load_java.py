"""Failover under load, seen by the official 5.5.0 client (issue 12).

A controller-mode broker group (two brokers, one brokerName, SYNC: the controller makes the
master a SYNC_MASTER, inSyncReplicas=2, allAckInSyncStateSet=true) takes the load of the Java
scenario FailoverLoadTest: 4 producer threads sending sync, one unique body after another,
and a push consumer. A few seconds into the load the test SIGKILLs the master; the controller
elects the slave, the clients find the new master through the name server, and the load goes on.

Measured from the scenario's records: kill -> the first SEND_OK stored on the new master (its
offsetMsgId names the broker), acknowledged messages lost (SEND_OK, never consumed: asserted
zero), duplicate deliveries (a body consumed more than once) and bodies stored twice.

Three groups in the same run, each bounded (< 4 minutes): (a) the pyrmq controller with two pyrmq
brokers, (b) the pyrmq controller with one Java 5.5.0 and one pyrmq broker (each kind the master
in turn), (c) the reference: the Java 5.5.0 controller, name server and two Java brokers.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import java
from support.servers import JavaController, JavaNamesrv, PyrmqController

from pyrmq.protocol.bodies.controller import BrokerReplicasInfo
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import CreateTopicRequestHeader
from pyrmq.remoting.client import RemotingClient

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.slow]

THREADS = 4
KILL_AFTER_S = 4.0  # seconds of load (from the first SEND_OK) before the master is killed
LOAD_MS = 14_000  # the whole load; the failover takes place inside it
DRAIN_MS = 60_000
PART_BOUND_S = 240  # each group's part, start to end


@dataclass
class Measured:
    acked: int
    failed: int
    kill_to_first_ok: float
    kill_to_last_failure: float
    lost: int
    duplicate_deliveries: int
    stored_twice: int
    failed_but_stored: int

    def line(self, group: str) -> str:
        return (
            f"{group}: kill -> first SEND_OK on the new master {self.kill_to_first_ok:.2f} s, "
            f"-> last failed send {self.kill_to_last_failure:.2f} s; {self.acked} SEND_OK, "
            f"{self.failed} failed sends ({self.failed_but_stored} of them stored and consumed anyway), "
            f"{self.lost} acknowledged lost, {self.duplicate_deliveries} duplicate deliveries, "
            f"{self.stored_twice} bodies stored twice"
        )


def _conf(controller: str, name: str) -> dict[str, object]:
    return {
        "name": name,
        "enableControllerMode": "true",
        "controllerAddr": controller,
        "controllerHeartBeatTimeoutMills": 3000,
        "inSyncReplicas": 2,
        "allAckInSyncStateSet": "true",
        "slaveReadEnable": "true",
    }


def _store_host(offset_msg_id: str) -> str:
    """The broker address in an offsetMsgId (Java MessageDecoder#createMessageId: IPv4, port, offset)."""
    raw = bytes.fromhex(offset_msg_id[:16])
    return f"{raw[0]}.{raw[1]}.{raw[2]}.{raw[3]}:{int.from_bytes(raw[4:8], 'big')}"


async def _wait_in_sync(controller: str, name: str, master: str, timeout: float = 90) -> None:
    body = json.dumps([name]).encode()
    deadline = time.monotonic() + timeout
    async with RemotingClient() as c:
        while True:
            r = await c.invoke(
                controller, RemotingCommand.request(RequestCode.CONTROLLER_GET_SYNC_STATE_DATA, {}, body), 5
            )
            info = BrokerReplicasInfo.decode(r.body).replicas_info_table.get(name) if r.code == 0 else None
            if info is not None and info.master_address == master and len(info.in_sync_replicas) == 2:
                return
            assert time.monotonic() < deadline, f"{name}: sync state set never both under {master}: {info}"
            await asyncio.sleep(0.3)


async def _create_topic(topic: str, *brokers: str) -> None:
    """On both brokers: the new master must know the topic without waiting for SlaveSynchronize."""
    create = CreateTopicRequestHeader(topic=topic, read_queue_nums=4, write_queue_nums=4).to_ext_fields()
    async with RemotingClient() as c:
        for addr in brokers:
            r = await c.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, create), 10)
            assert r.code == ResponseCode.SUCCESS, (addr, r)


def _rows(path: Path) -> list[list[str]]:
    return [ln.split("\t") for ln in path.read_text().splitlines() if ln]


def _load_and_kill(namesrv: str, ctrl: str, name: str, master, slave, java_home, out: Path) -> Measured:
    asyncio.run(_wait_in_sync(ctrl, name, master.addr))
    topic = f"FailoverLoad_{name}"
    asyncio.run(_create_topic(topic, master.addr, slave.addr))
    props = {
        "namesrv": namesrv,
        "topic": topic,
        "group": f"failover_load_{name}",
        "threads": THREADS,
        "loadMs": LOAD_MS,
        "drainMs": DRAIN_MS,
        "out": out,
    }
    argv = java.java_argv(
        "client5",
        "org.junit.platform.console.ConsoleLauncher",
        [
            "execute",
            f"--select-method={java.SCENARIO_PACKAGE}.FailoverLoadTest#load",
            "--disable-banner",
            "--disable-ansi-colors",
            "--details=tree",
            "--fail-if-no-tests",
        ],
        java.prepare_home(java_home),
        props,
        with_tests=True,
    )
    log = out.with_suffix(".log")
    with log.open("w") as sink:
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, env=java.java_env(java_home))
    try:
        progress = out / "progress"
        deadline = time.monotonic() + 60
        while not (progress.exists() and int(progress.read_text() or 0) > 0):
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "no SEND_OK within 60 s of load\n" + log.read_text()[-3000:]
            time.sleep(0.05)
        time.sleep(KILL_AFTER_S)
        before_kill = int(progress.read_text())
        killed_ms = time.time() * 1000
        master.kill9()
        rc = proc.wait(timeout=(LOAD_MS + DRAIN_MS) / 1000 + 60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == 0 and (out / "done").exists(), log.read_text()[-5000:]

    acked = _rows(out / "acked.tsv")
    failed = _rows(out / "failed.tsv")
    consumed = _rows(out / "consumed.tsv")
    assert before_kill > 50, f"only {before_kill} SEND_OK before the kill"
    after = [int(a[3]) for a in acked if int(a[3]) > killed_ms and _store_host(a[1]) == slave.addr]
    assert after, f"no SEND_OK from the new master {slave.addr}; failures: {failed[-5:]}"
    bodies = [c[0] for c in consumed]
    seen = set(bodies)
    lost = [a for a in acked if a[0] not in seen]
    copies: dict[str, set[str]] = {}
    for body, offset_id, _ in consumed:
        copies.setdefault(body, set()).add(offset_id)
    return Measured(
        acked=len(acked),
        failed=len(failed),
        kill_to_first_ok=(min(after) - killed_ms) / 1000,
        kill_to_last_failure=(max((int(f[2]) for f in failed), default=killed_ms) - killed_ms) / 1000,
        lost=len(lost),
        duplicate_deliveries=len(bodies) - len(seen),
        stored_twice=sum(1 for ids in copies.values() if len(ids) > 1),
        failed_but_stored=sum(1 for f in failed if f[0] in seen),
    )


def _check(group: str, measured: Measured, started: float) -> None:
    print("\n" + measured.line(group))
    assert measured.lost == 0, measured
    assert time.monotonic() - started < PART_BOUND_S, f"{group} took {time.monotonic() - started:.0f} s"


@pytest.fixture
def pyrmq_controller(tmp_path_factory):
    ctrl = PyrmqController(tmp_path_factory.mktemp("pyrmq-controller"))
    yield ctrl
    ctrl.stop()


def test_pyrmq_controller_two_pyrmq_brokers(
    java_harness, pyrmq_namesrv, pyrmq_broker, pyrmq_controller, java_home, tmp_path
):
    """(a) all pyrmq: the first broker started is elected master and killed under load."""
    started = time.monotonic()
    name = "fl-pyrmq-pyrmq"
    master = pyrmq_broker(pyrmq_namesrv.addr, fresh=True, **_conf(pyrmq_controller.addr, name))
    slave = pyrmq_broker(pyrmq_namesrv.addr, fresh=True, **_conf(pyrmq_controller.addr, name))
    try:
        measured = _load_and_kill(
            pyrmq_namesrv.addr, pyrmq_controller.addr, name, master, slave, java_home, tmp_path / "load"
        )
    finally:
        slave.stop()
        master.stop()
    _check("pyrmq controller, pyrmq + pyrmq", measured, started)


@pytest.mark.parametrize("master_kind", ["java", "pyrmq"])
def test_pyrmq_controller_mixed_group(
    master_kind, pyrmq_namesrv, pyrmq_broker, java_broker, pyrmq_controller, java_home, tmp_path
):
    """(b) one Java 5.5.0 broker and one pyrmq broker; ``master_kind`` starts first (elected) and is killed."""
    started = time.monotonic()
    name = f"fl-mixed-{master_kind}-master"
    conf = _conf(pyrmq_controller.addr, name)

    def start(kind: str):
        if kind == "java":
            return java_broker(pyrmq_namesrv.addr, fresh=True, brokerIP2="127.0.0.1", **conf)
        return pyrmq_broker(pyrmq_namesrv.addr, fresh=True, **conf)

    master = start(master_kind)
    slave = start("pyrmq" if master_kind == "java" else "java")
    try:
        measured = _load_and_kill(
            pyrmq_namesrv.addr, pyrmq_controller.addr, name, master, slave, java_home, tmp_path / "load"
        )
    finally:
        slave.stop()
        master.stop()
    _check(f"pyrmq controller, {master_kind} master killed", measured, started)


@pytest.mark.reference
def test_java_reference_group(java_harness, java_broker, java_home, tmp_path):
    """(c) the reference, in the same run: Java 5.5.0 name server, controller and two brokers."""
    started = time.monotonic()
    name = "fl-java-java"
    ns = JavaNamesrv(tmp_path / "java-ns")
    ctrl = JavaController(tmp_path / "java-ctl")
    try:
        conf = _conf(ctrl.addr, name)
        master = java_broker(ns.addr, fresh=True, brokerIP2="127.0.0.1", **conf)
        slave = java_broker(ns.addr, fresh=True, brokerIP2="127.0.0.1", **conf)
        try:
            measured = _load_and_kill(ns.addr, ctrl.addr, name, master, slave, java_home, tmp_path / "load")
        finally:
            slave.stop()
            master.stop()
        _check("Java controller, Java + Java", measured, started)
    finally:
        ctrl.stop()
        ns.stop()
