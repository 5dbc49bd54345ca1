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
import time
from pathlib import Path

import pytest
from support.failover_load import Measured, measure, run_load
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


def _load_and_kill(namesrv: str, ctrl: str, name: str, master, slave, java_home, out: Path) -> Measured:
    asyncio.run(_wait_in_sync(ctrl, name, master.addr))
    topic = f"FailoverLoad_{name}"
    asyncio.run(_create_topic(topic, master.addr, slave.addr))
    run = run_load(
        namesrv,
        topic,
        f"failover_load_{name}",
        java_home,
        out,
        master.kill9,
        threads=THREADS,
        load_ms=LOAD_MS,
        drain_ms=DRAIN_MS,
        kill_after_s=KILL_AFTER_S,
    )
    assert run.before_kill > 50, f"only {run.before_kill} SEND_OK before the kill"
    return measure(run, [slave.addr])


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
