"""Slave acting master with the official 5.5.0 client: a pyrmq name server
(supportActingMaster=true), group ``ga`` (pyrmq master + pyrmq slave, enableSlaveActingMaster) and
group ``gb`` (one pyrmq master). The producer sends to both groups; ga's master is SIGKILLed;
a push consumer started afterwards consumes everything, ga's messages from the acting slave (the
route shows it as ga's read-only broker 0), and asks for every ga message once more
(RECONSUME_LATER). The acting slave answers the send-back with SYSTEM_ERROR, as Java's does; the
client then sends the message to %RETRY% itself, and only gb's queues are writable, so the
retries are read from gb (ActingMasterTest#consume checks the broker name)."""

from __future__ import annotations

import asyncio
import time

import pytest
from support.java import run_junit
from support.servers import JavaNamesrv, PyrmqNamesrv

from pyrmq.common.constants import is_writeable
from pyrmq.protocol.bodies.admin import HARuntimeInfo
from pyrmq.protocol.bodies.namesrv import TopicRouteData
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import CreateTopicRequestHeader
from pyrmq.remoting.client import RemotingClient

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.slow]

TOPIC = "ActingT"
COUNT = 40
#: level 3 (the client's first retry: 3 + reconsumeTimes) is 5 s instead of 10 s
DELAY_LEVELS = "1s 2s 5s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"


async def _create_topic(addr: str) -> None:
    header = CreateTopicRequestHeader(topic=TOPIC, read_queue_nums=2, write_queue_nums=2).to_ext_fields()
    async with RemotingClient() as c:
        r = await c.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header), 10)
    assert r.code == ResponseCode.SUCCESS, r


async def _ga_route(namesrv: str) -> tuple[dict[int, str], bool] | None:
    async with RemotingClient() as c:
        r = await c.invoke(namesrv, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC}), 10)
    if r.code != ResponseCode.SUCCESS:
        return None
    route = TopicRouteData.decode(r.body)
    addrs = {b.broker_name: dict(b.broker_addrs) for b in route.broker_datas or []}
    perms = {q.broker_name: q.perm for q in route.queue_datas or []}
    if "ga" not in addrs or "ga" not in perms:
        return None
    return addrs["ga"], is_writeable(perms["ga"])


async def _replicated(master: str) -> bool:
    """The slave acknowledged the master's whole commit log (haStatus)."""
    async with RemotingClient() as c:
        r = await c.invoke(master, RemotingCommand.request(RequestCode.GET_BROKER_HA_STATUS), 10)
    info = HARuntimeInfo.decode(r.body)
    return [conn.slave_ack_offset for conn in info.ha_connection_info or []] == [info.master_commit_log_max_offset]


def test_official_push_consumer_retries_through_an_acting_slave(pyrmq_broker, java_home, tmp_path):
    ns = PyrmqNamesrv(tmp_path / "ns", supportActingMaster="true")
    try:
        acting = {"enableSlaveActingMaster": "true", "enableRemoteEscape": "true", "messageDelayLevel": DELAY_LEVELS}
        master = pyrmq_broker(ns.addr, name="ga", brokerRole="ASYNC_MASTER", fresh=True, **acting)
        slave = pyrmq_broker(
            ns.addr, name="ga", brokerId=1, brokerRole="SLAVE", slaveReadEnable="true", fresh=True, **acting
        )
        other = pyrmq_broker(ns.addr, name="gb", brokerRole="ASYNC_MASTER", fresh=True, **acting)
        for b in (master, slave, other):
            asyncio.run(_create_topic(b.addr))
        ids = tmp_path / "ids.txt"
        props = {"namesrv": ns.addr, "topic": TOPIC, "ids": ids, "count": COUNT, "group": "acting_consumer"}
        run_junit("5.5.0", "ActingMasterTest", "produce", props=props, home=java_home, timeout=180)
        lines = ids.read_text().split("\n")
        assert {line.split()[1] for line in lines if line} == {"ga", "gb"}
        deadline = time.monotonic() + 20
        while not asyncio.run(_replicated(master.addr)):
            assert time.monotonic() < deadline, "the slave never acknowledged the master's commit log"
            time.sleep(0.2)
        master.kill9()
        t_kill = time.monotonic()
        deadline = time.monotonic() + 30
        while asyncio.run(_ga_route(ns.addr)) != ({0: slave.addr}, False):
            assert time.monotonic() < deadline, asyncio.run(_ga_route(ns.addr))
            time.sleep(0.5)
        print(f"acting: route shows the slave as ga's read-only broker 0 after {time.monotonic() - t_kill:.1f} s")
        killed = t_kill
        r = run_junit(
            "5.5.0",
            "ActingMasterTest",
            "consume",
            props={**props, "timeoutSec": 90, "retryBroker": "ga", "retryFrom": "gb"},
            home=java_home,
            timeout=180,
        )
        print(*(line for line in r.stdout.splitlines() if line.startswith("acting:")), sep="\n")
        print(f"acting: consumer done {time.monotonic() - killed:.1f} s after the master was killed")
    finally:
        ns.stop(10)


def test_pyrmq_acting_slave_under_the_java_name_server(java_harness, pyrmq_broker, tmp_path):
    """The official 5.5.0 name server with supportActingMaster and notifyMinBrokerIdChanged: it
    pushes NOTIFY_MIN_BROKER_ID_CHANGE to the pyrmq slave when the master's connection closes and
    again, with the master's HA address, when it registers; it answers the pyrmq brokers'
    QUERY_DATA_VERSION heartbeats and the rmq_sys_SYNC_BROKER_MEMBER_ route (Java's defaults,
    compatibleWithOldNameSrv=true) so they stay registered past brokerNotActiveTimeoutMillis."""
    ns = JavaNamesrv(tmp_path / "jns", supportActingMaster="true", notifyMinBrokerIdChanged="true")
    try:
        acting = {"enableSlaveActingMaster": "true"}
        master = pyrmq_broker(ns.addr, name="ga", brokerRole="ASYNC_MASTER", fresh=True, **acting)
        slave = pyrmq_broker(
            ns.addr, name="ga", brokerId=1, brokerRole="SLAVE", slaveReadEnable="true", fresh=True, **acting
        )
        for b in (master, slave):
            asyncio.run(_create_topic(b.addr))
        master.kill9()
        t_kill = time.monotonic()
        deadline = time.monotonic() + 30
        while asyncio.run(_ga_route(ns.addr)) != ({0: slave.addr}, False):
            assert time.monotonic() < deadline, asyncio.run(_ga_route(ns.addr))
            time.sleep(0.3)
        print(f"acting: Java name server shows the slave as broker 0 after {time.monotonic() - t_kill:.1f} s")
        deadline = time.monotonic() + 20
        while "min broker id changed, prev 0, new 1" not in slave.tail(400):  # the push, not a poll
            assert time.monotonic() < deadline, slave.tail(80)
            time.sleep(0.3)
        master.restart()
        ha = f"127.0.0.1:{master.port + 1}"
        deadline = time.monotonic() + 30
        while f"master {master.addr} online (HA {ha})" not in slave.tail(400):
            assert time.monotonic() < deadline, slave.tail(80)
            time.sleep(0.3)
        assert "min broker id changed, prev 1, new 0" in slave.tail(400)
        time.sleep(12)  # past brokerNotActiveTimeoutMillis (10 s): heartbeats keep both registered
        assert asyncio.run(_ga_route(ns.addr)) == ({0: master.addr, 1: slave.addr}, True)
    finally:
        ns.stop(10)
