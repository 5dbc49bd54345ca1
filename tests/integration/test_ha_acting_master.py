"""Slave acting master with pyrmq processes: a name server (supportActingMaster=true), group
``ga`` (master + slave, both enableSlaveActingMaster and enableRemoteEscape; the master with
totalReplicas=2, so it runs BrokerPreOnlineService when it comes back) and group ``gb`` (one
master) for the escape bridge.

The master of ``ga`` is SIGKILLed; then the route shows the slave as ga's read-only broker 0; a
consumer pulls from it with long polling (held, not PULL_RETRY_IMMEDIATELY), commits its offset
there; a send-back is refused as Java refuses it; a delayed message that falls due during the
outage is delivered to ``gb`` through the escape bridge. The master restarts, takes the slave's
larger consumer and delay offsets before it registers, and the slave stops acting.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from support.ports import free_port_block
from support.procs import ManagedProcess
from support.pyrmq_proc import venv_python
from support.requests import pull, send_v2
from support.servers import PyrmqNamesrv, write_properties

from pyrmq.common.constants import MessageConst, is_writeable
from pyrmq.protocol.bodies.admin import HARuntimeInfo
from pyrmq.protocol.bodies.namesrv import ClusterInfo, TopicRouteData
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import CreateTopicRequestHeader
from pyrmq.remoting.client import RemotingClient
from pyrmq.store import message as m
from pyrmq.store.config import DelayOffsetSerializeWrapper

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
TOPIC = "ActT"
GROUP = "actg"
DELAY_LEVELS = "1s 2s 6s"  # level 3: due 6 s after it was sent


def _broker(tmp: Path, name: str, broker_name: str, ns: str, port: int, **conf: object) -> ManagedProcess:
    path = write_properties(
        tmp / f"{name}.conf",
        {
            "brokerClusterName": "ActCluster",
            "brokerName": broker_name,
            "namesrvAddr": ns,
            "listenPort": port,
            "brokerIP1": "127.0.0.1",
            "bindAddress": "127.0.0.1",
            "storePathRootDir": tmp / name,
            "mappedFileSizeCommitLog": 1024 * 1024,
            "messageDelayLevel": DELAY_LEVELS,
            "flushConsumerOffsetInterval": 200,
            "enableSlaveActingMaster": "true",
            "enableRemoteEscape": "true",
            **conf,
        },
    )
    return ManagedProcess(
        name,
        [venv_python(), "-m", "pyrmq", "broker", "-c", str(path)],
        tmp / f"{name}.out",
        cwd=ROOT,
        env=dict(os.environ, HOME=str(tmp)),
    )


def _send(broker_name: str, body: bytes, **props: str) -> RemotingCommand:
    return send_v2(TOPIC, broker_name, body, queues=1, tags=None, **props)


def _pull(offset: int, suspend_ms: int = 0, commit: int = 0) -> RemotingCommand:
    return pull(TOPIC, GROUP, offset, suspend_ms=suspend_ms, commit=commit)


def _offset_cmd(code: int, offset: int | None = None) -> RemotingCommand:
    ext = {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "0"}
    if offset is not None:
        ext["commitOffset"] = str(offset)
    return RemotingCommand.request(code, ext)


async def _until(what: str, timeout: float, probe):
    deadline = time.monotonic() + timeout
    while True:
        got = await probe()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.2)


def test_slave_acts_as_master_and_hands_back(tmp_path):
    ns = PyrmqNamesrv(tmp_path / "ns", supportActingMaster="true")
    a0_port, b0_port = free_port_block((-2, 0, 1)), free_port_block((-2, 0, 1))
    a1_port = free_port_block((-2, 0, 1))  # a slave listens on its HA port too
    a0_addr, a1_addr, b0_addr = (f"127.0.0.1:{p}" for p in (a0_port, a1_port, b0_port))
    master_conf = {"brokerId": 0, "brokerRole": "ASYNC_MASTER", "totalReplicas": 2}
    procs: list[ManagedProcess] = []

    def start(name: str, broker_name: str, port: int, **conf: object) -> ManagedProcess:
        p = _broker(tmp_path, name, broker_name, ns.addr, port, **conf)
        procs.append(p)
        p.wait_line(f"The broker[{broker_name}, 127.0.0.1:{port}] boot success.", 30)
        return p

    timings: dict[str, float] = {}
    try:
        a0 = start("a0", "ga", a0_port, **master_conf)
        # a1 and b0 use BROKER_HEARTBEAT and GET_BROKER_MEMBER_GROUP, a0 Java's default
        # (QUERY_DATA_VERSION and the rmq_sys_SYNC_BROKER_MEMBER_ route)
        new_ns = {"compatibleWithOldNameSrv": "false"}
        start("a1", "ga", a1_port, brokerId=1, brokerRole="SLAVE", slaveReadEnable="true", **new_ns)
        start("b0", "gb", b0_port, brokerId=0, brokerRole="ASYNC_MASTER", skipPreOnline="true", **new_ns)
        b0_registered = time.monotonic()

        async def before_kill() -> None:
            async with RemotingClient() as c:
                create = CreateTopicRequestHeader(topic=TOPIC, read_queue_nums=1, write_queue_nums=1).to_ext_fields()
                for addr in (a0_addr, a1_addr, b0_addr):
                    r = await c.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, create), 5)
                    assert r.code == ResponseCode.SUCCESS, r
                for i in range(20):
                    r = await c.invoke(a0_addr, _send("ga", f"m{i}".encode()), 5)
                    assert r.code == ResponseCode.SUCCESS, r
                r = await c.invoke(a0_addr, _send("ga", b"delayed", DELAY="3"), 5)
                assert r.code == ResponseCode.SUCCESS, r
                timings["delayed_sent"] = time.monotonic()
                for addr in (a0_addr, a1_addr):  # a first pull creates the group (autoCreateSubscriptionGroup)
                    await c.invoke(addr, _pull(0), 5)
                r = await c.invoke(a0_addr, _offset_cmd(RequestCode.UPDATE_CONSUMER_OFFSET, 5), 5)
                assert r.code == ResponseCode.SUCCESS, r

                async def replicated():  # the slave acknowledged the master's whole commit log
                    r = await c.invoke(a0_addr, RemotingCommand.request(RequestCode.GET_BROKER_HA_STATUS), 5)
                    info = HARuntimeInfo.decode(r.body)
                    acks = [conn.slave_ack_offset for conn in info.ha_connection_info or []]
                    return acks == [info.master_commit_log_max_offset]

                await _until("replication", 20, replicated)
                await asyncio.sleep(0.6)  # consumerOffset.json persisted (flushConsumerOffsetInterval 200)

        asyncio.run(before_kill())
        a0.kill9()
        killed = time.monotonic()

        async def outage() -> None:
            async with RemotingClient() as c:

                async def route_shows_the_slave():
                    r = await c.invoke(
                        ns.addr, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC}), 5
                    )
                    if r.code != ResponseCode.SUCCESS:
                        return None
                    route = TopicRouteData.decode(r.body)
                    bd = {b.broker_name: b.broker_addrs for b in route.broker_datas or []}
                    qd = {q.broker_name: q.perm for q in route.queue_datas or []}
                    return route if bd.get("ga") == {0: a1_addr} and not is_writeable(qd["ga"]) else None

                route = await _until("the slave as ga's read-only broker 0", 20, route_shows_the_slave)
                timings["route"] = time.monotonic() - killed
                assert {q.broker_name: is_writeable(q.perm) for q in route.queue_datas} == {"ga": False, "gb": True}

                async def acting():  # held pulls: the slave no longer sends consumers to a master
                    return "Min broker changed" in (tmp_path / "a1.out").read_text()

                await _until("the slave to act", 20, acting)
                timings["acting"] = time.monotonic() - killed
                # the consumer reads everything from the acting slave and commits there
                got: list[bytes] = []
                while len(got) < 20:
                    r = await c.invoke(a1_addr, _pull(len(got)), 5)
                    assert r.code == ResponseCode.SUCCESS, r
                    got += [x.body for x in m.decode_messages(r.body)]
                assert got == [f"m{i}".encode() for i in range(20)]
                # at the end of the queue the pull is held (long polling), then PULL_NOT_FOUND
                begin = time.monotonic()
                r = await c.invoke(a1_addr, _pull(20, suspend_ms=1500, commit=15), 5)
                held = time.monotonic() - begin
                assert r.code == ResponseCode.PULL_NOT_FOUND, r
                assert 1.3 <= held <= 4.0, held
                timings["held_pull"] = held
                r = await c.invoke(a1_addr, _offset_cmd(RequestCode.QUERY_CONSUMER_OFFSET), 5)
                assert (r.code, r.ext_fields["offset"]) == (ResponseCode.SUCCESS, "15"), r
                r = await c.invoke(a1_addr, _offset_cmd(RequestCode.UPDATE_CONSUMER_OFFSET, 18), 5)
                assert r.code == ResponseCode.SUCCESS, r
                # a send-back: Java's acting slave answers SYSTEM_ERROR, the client re-sends itself
                back = RemotingCommand.request(
                    RequestCode.CONSUMER_SEND_MSG_BACK, {"offset": "0", "group": GROUP, "delayLevel": "0"}
                )
                r = await c.invoke(a1_addr, back, 5)
                assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, "no master available along with 127.0.0.1")
                # the delayed message falls due during the outage and lands in gb
                delivered: list[m.StoredMessage] = []

                async def escaped():
                    r = await c.invoke(b0_addr, _pull(0), 5)
                    if r.code == ResponseCode.SUCCESS:
                        delivered.extend(m.decode_messages(r.body))
                    return bool(delivered)

                await _until("the delayed message in gb", 30, escaped)
                timings["delayed_in_gb_after_send"] = time.monotonic() - timings["delayed_sent"]
                (msg,) = delivered
                assert msg.body == b"delayed" and msg.topic == TOPIC
                assert MessageConst.DELAY_TIME_LEVEL not in msg.properties
                assert msg.properties[MessageConst.REAL_TOPIC] == TOPIC

        asyncio.run(outage())
        back_at = time.monotonic()
        a0 = start("a0", "ga", a0_port, **master_conf)

        async def after_return() -> None:
            async with RemotingClient() as c:

                async def registered():
                    r = await c.invoke(
                        ns.addr, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC}), 5
                    )
                    route = TopicRouteData.decode(r.body)
                    bd = {b.broker_name: b.broker_addrs for b in route.broker_datas or []}
                    qd = {q.broker_name: q.perm for q in route.queue_datas or []}
                    return bd.get("ga") == {0: a0_addr, 1: a1_addr} and is_writeable(qd["ga"])

                await _until("the master back in the route", 30, registered)
                timings["master_back"] = time.monotonic() - back_at
                # before registering, the master took the slave's larger offsets
                r = await c.invoke(a0_addr, _offset_cmd(RequestCode.QUERY_CONSUMER_OFFSET), 5)
                assert (r.code, r.ext_fields["offset"]) == (ResponseCode.SUCCESS, "18"), r
                r = await c.invoke(a0_addr, RemotingCommand.request(RequestCode.GET_ALL_DELAY_OFFSET), 5)
                assert DelayOffsetSerializeWrapper.decode(r.body).offset_table.get(3) == 1
                log = (tmp_path / "a0.out").read_text()
                assert "master preOnline complete, start service" in log
                # the slave follows the master again and stops delivering

                async def handed_back():
                    return (tmp_path / "a1.out").read_text().count("Min broker changed") >= 2

                await _until("the slave to stop acting", 20, handed_back)
                r = await c.invoke(a0_addr, _send("ga", b"after"), 5)
                assert r.code == ResponseCode.SUCCESS, r
                # b0 registered once (registerNameServerPeriod is 30 s); its heartbeats keep it
                # past brokerNotActiveTimeoutMillis (10 s) at a name server scanning every second
                await asyncio.sleep(max(0.0, 12 - (time.monotonic() - b0_registered)))
                r = await c.invoke(ns.addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 5)
                info = ClusterInfo.decode(r.body)
                assert info.broker_addr_table is not None
                assert info.broker_addr_table["gb"].broker_addrs == {0: b0_addr}
                assert info.broker_addr_table["ga"].broker_addrs == {0: a0_addr, 1: a1_addr}

        asyncio.run(after_return())
        print("acting-master timings (s):", {k: round(v, 2) for k, v in timings.items() if k != "delayed_sent"})
    finally:
        for p in reversed(procs):
            p.stop(10)
        ns.stop(10)
