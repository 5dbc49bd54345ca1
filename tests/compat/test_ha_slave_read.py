"""The official 5.5.0 client against a master/slave group whose slave is pyrmq: it produces to the
master, the master is SIGKILLed, and a push consumer started afterwards receives every acknowledged
message from the pyrmq slave (slaveReadEnable). Once with a pyrmq master, once with a Java master.

What the client sees on the way: the name server drops the dead master when its connection closes,
the route then lists only brokerId 1, and the client pulls from it; the slave answers found data
with suggestWhichBrokerId 0 and anything else with PULL_RETRY_IMMEDIATELY (Java's rule while it
has no acting-master view of the group), which the client simply retries."""

from __future__ import annotations

import asyncio
import time

import pytest
from support.java import mqadmin, run_junit

from pyrmq.protocol.bodies.namesrv import TopicRouteData
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import CreateTopicRequestHeader
from pyrmq.remoting.client import RemotingClient

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.slow]

TOPIC = "SlaveReadT"
COUNT = 200


async def _create_topic(addr: str, topic: str) -> None:
    header = CreateTopicRequestHeader(topic=topic, read_queue_nums=4, write_queue_nums=4).to_ext_fields()
    async with RemotingClient() as c:
        r = await c.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header), 10)
    assert r.code == ResponseCode.SUCCESS, r


async def _route_brokers(namesrv: str, topic: str) -> dict[int, str]:
    async with RemotingClient() as c:
        r = await c.invoke(namesrv, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}), 10)
    if r.code != ResponseCode.SUCCESS:
        return {}
    route = TopicRouteData.decode(r.body)
    return dict(route.broker_datas[0].broker_addrs) if route.broker_datas else {}


def _wait_route(namesrv: str, topic: str, want: set[int], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while set(asyncio.run(_route_brokers(namesrv, topic))) != want:
        assert time.monotonic() < deadline, f"route never listed exactly broker ids {want}"
        time.sleep(0.5)


def _wait_replicated(master_store, slave_store, timeout: float = 60) -> None:
    """Until the slave's commit log holds everything the master's does (the master is still up)."""

    def used(store) -> int:
        d = store / "commitlog"
        return sum(len(f.read_bytes().rstrip(b"\0")) for f in sorted(d.iterdir())) if d.is_dir() else 0

    deadline = time.monotonic() + timeout
    while used(slave_store) < used(master_store) or used(master_store) == 0:
        assert time.monotonic() < deadline, "the slave never caught up with the master"
        time.sleep(0.3)


def _ha_status(addr: str, java_home) -> dict[str, str]:
    out = mqadmin("5.5.0", "haStatus", "-b", addr, home=java_home)
    assert out.returncode == 0, out.stdout + out.stderr
    return {k: v.strip() for k, _, v in (line.partition("\t") for line in out.stdout.splitlines() if "\t" in line)}


def _check_ha_status(master_addr: str, slave_addr: str, java_home) -> None:
    """The official `mqadmin haStatus` on both: one slave, in sync, at the master's max offset."""
    on_master = _ha_status(master_addr, java_home)
    assert (on_master["#MasterAddr"], on_master["#SlaveNum"], on_master["#InSyncSlaveNum"]) == (master_addr, "1", "1")
    on_slave = _ha_status(slave_addr, java_home)
    assert on_slave["#CommitLogMaxOffset"] == on_master["#MasterCommitLogMaxOffset"], (on_master, on_slave)
    assert on_slave["#MasterAddr"].startswith("127.0.0.1:"), on_slave


def _scenario(namesrv, master, slave, java_home, tmp_path) -> None:
    """One topic and group per test, and the group stopped at the end: the consumer must see this
    group's messages only."""
    topic = f"{TOPIC}_{master.name}"
    try:
        asyncio.run(_create_topic(master.addr, topic))
        ids = tmp_path / "ids.txt"
        props = {"namesrv": namesrv.addr, "topic": topic, "ids": ids, "count": COUNT, "group": f"cg_{master.name}"}
        run_junit("5.5.0", "SlaveReadTest", "produce", props=props, home=java_home, timeout=180)
        assert len(ids.read_text().split()) == COUNT
        _wait_replicated(master.store_dir, slave.store_dir)
        _check_ha_status(master.addr, slave.addr, java_home)
        master.kill9()
        _wait_route(namesrv.addr, topic, {1})
        props["timeoutSec"] = 90
        run_junit("5.5.0", "SlaveReadTest", "consume", props=props, home=java_home, timeout=180)
    finally:
        slave.stop()
        master.stop()


def test_official_consumer_reads_the_pyrmq_slave_of_a_killed_pyrmq_master(
    pyrmq_namesrv, pyrmq_broker, java_home, tmp_path
):
    name = "slave-read-py"
    master = pyrmq_broker(pyrmq_namesrv.addr, name=name, brokerRole="ASYNC_MASTER", fresh=True)
    slave = pyrmq_broker(
        pyrmq_namesrv.addr, name=name, brokerId=1, brokerRole="SLAVE", slaveReadEnable="true", fresh=True
    )
    _scenario(pyrmq_namesrv, master, slave, java_home, tmp_path)


def test_official_consumer_reads_the_pyrmq_slave_of_a_killed_java_master(
    pyrmq_namesrv, pyrmq_broker, java_broker, java_home, tmp_path
):
    name = "slave-read-java"
    master = java_broker(pyrmq_namesrv.addr, name=name, brokerRole="ASYNC_MASTER", brokerIP2="127.0.0.1", fresh=True)
    slave = pyrmq_broker(
        pyrmq_namesrv.addr, name=name, brokerId=1, brokerRole="SLAVE", slaveReadEnable="true", fresh=True
    )
    _scenario(pyrmq_namesrv, master, slave, java_home, tmp_path)
