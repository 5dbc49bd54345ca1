"""Java 5.5.0 brokers in controller mode, failing over through pyrmq's controller.

Two official Java brokers with the same brokerName, enableControllerMode=true and
controllerAddr pointed at the controller (brokerId -1: the controller assigns ids),
registered at a pyrmq NameServer. They apply for broker ids, one is elected master,
the other becomes its slave; a send to the master succeeds. The master is then
SIGKILLed: the controller sees its connection close, elects the slave, tells it
(NOTIFY_BROKER_ROLE_CHANGED) and the first send to it succeeds. The time from the kill
to that first SEND_OK is measured, with the same scenario against the official Java
controller (ControllerStartup 5.5.0) in the same run; both are printed.

The mqadmin controller commands are compared between pyrmq's controller and a Java
controller, each with the same state built by the same requests; addresses, ports,
paths and the JraftConfig identity hash are normalised, the rest must be equal.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.remoting.client import RemotingClient
from pyrmq.store import message as m
from support import probe
from support.servers import JavaBroker, JavaController, PyrmqController, namesrv_under_test

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.slow]

CLUSTER = "CtlCluster"
BROKER = "ctl-broker"
TOPIC = "CtlTopic"
GET_REPLICA_INFO = 1004
ADDR = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}:\d{2,5}\b")

#: what both brokers are given on top of JavaBroker's defaults (small, fast, controller mode)
BROKER_CONF = {
    "brokerId": -1,
    "enableControllerMode": "true",
    "brokerRole": "SLAVE",
    "syncBrokerMetadataPeriod": 1000,
    "checkSyncStateSetPeriod": 1000,
    "syncControllerMetadataPeriod": 2000,
    "controllerHeartBeatTimeoutMills": 6000,
    "brokerHeartbeatInterval": 1000,
    "haSendHeartbeatInterval": 1000,
}


def _send(body: bytes) -> RemotingCommand:
    ext = {
        "a": "CtlPG",
        "b": TOPIC,
        "c": "TBW102",
        "d": "4",
        "e": "0",
        "f": "0",
        "g": str(int(time.time() * 1000)),
        "h": "0",
        "i": m.message_properties_to_string({"TAGS": "TagA", "WAIT": "true"}),
        "j": "0",
        "k": "false",
        "m": "false",
        "n": BROKER,
    }
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, body)


async def _send_once(addr: str, body: bytes) -> RemotingCommand | None:
    client = RemotingClient(connect_timeout_s=1)
    try:
        return await client.invoke(addr, _send(body), 3)
    except Exception:
        return None
    finally:
        await client.close()


def _master(controller_addr: str) -> tuple[int | None, str | None, int | None]:
    r = probe.request(controller_addr, GET_REPLICA_INFO, {"brokerName": BROKER})
    ef = r.ext_fields
    master_id = int(ef["masterBrokerId"]) if "masterBrokerId" in ef else None
    epoch = int(ef["masterEpoch"]) if "masterEpoch" in ef else None
    return master_id, ef.get("masterAddress"), epoch


def _sync_state_set(controller_addr: str) -> set[int]:
    r = probe.request(controller_addr, GET_REPLICA_INFO, {"brokerName": BROKER})
    return set(json.loads(r.body or b"{}").get("syncStateSet") or [])


def _wait(cond, what: str, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def _start_brokers(ns_addr: str, ctl_addr: str, workdir: Path) -> list[JavaBroker]:
    conf = dict(BROKER_CONF, controllerAddr=ctl_addr)

    def one(i: int) -> JavaBroker:
        return JavaBroker(ns_addr, workdir / f"b{i}", name=BROKER, cluster=CLUSTER, start_timeout=120, **conf)

    with ThreadPoolExecutor(2) as ex:
        return list(ex.map(one, range(2)))


def _failover(controller, ns, workdir: Path) -> float:
    """Master elected, send OK, SIGKILL the master, seconds until the slave's first SEND_OK."""
    brokers = _start_brokers(ns.addr, controller.addr, workdir)
    try:
        by_addr = {b.addr: b for b in brokers}
        master_id, master_addr, epoch = _wait(
            lambda: (lambda r: r if r[1] in by_addr else None)(_master(controller.addr)), "a master", 90
        )
        master = by_addr[master_addr]
        slave = next(b for b in brokers if b is not master)
        r = _wait(lambda: (lambda x: x if x and x.code == ResponseCode.SUCCESS else None)(
            asyncio.run(_send_once(master.addr, b"before-failover"))), "a send to the master", 60)
        assert r.code == ResponseCode.SUCCESS
        # only a broker in the SyncStateSet may become master (enableElectUncleanMaster=false):
        # the master adds the slave once it has caught up (ALTER_SYNC_STATE_SET)
        _wait(lambda: len(_sync_state_set(controller.addr)) == 2, "the slave in the SyncStateSet", 90)
        # the slave refuses writes while it is a slave
        r = asyncio.run(_send_once(slave.addr, b"to-slave"))
        assert r is not None and r.code != ResponseCode.SUCCESS, r

        killed_at = time.monotonic()
        master.kill9()
        r = _wait(
            lambda: (lambda x: x if x and x.code == ResponseCode.SUCCESS else None)(
                asyncio.run(_send_once(slave.addr, b"after-failover"))
            ),
            "the first send to the new master",
            90,
        )
        took = time.monotonic() - killed_at
        new_id, new_addr, new_epoch = _master(controller.addr)
        assert new_addr == slave.addr and new_id != master_id and new_epoch == epoch + 1, (new_id, new_addr, new_epoch)
        return took
    finally:
        for b in brokers:
            b.stop()


@pytest.fixture(scope="module")
def timings():
    out: dict[str, float] = {}
    yield out
    print("\nkill -> first SEND_OK on the new master:", ", ".join(f"{k} controller {v:.2f}s" for k, v in out.items()))


@pytest.mark.parametrize("controller_kind", ["pyrmq", "java"])
def test_java_brokers_fail_over(controller_kind, java_harness, tmp_path, timings):
    ns = namesrv_under_test(tmp_path / "ns")
    cls = PyrmqController if controller_kind == "pyrmq" else JavaController
    controller = cls(tmp_path / "ctl", scanNotActiveBrokerInterval=1000)
    try:
        took = _failover(controller, ns, tmp_path)
        timings[controller_kind] = took
        print(f"\n{controller_kind} controller: kill -> first SEND_OK {took:.2f}s")
    finally:
        controller.stop()
        ns.stop()
