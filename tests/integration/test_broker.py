"""pyrmq namesrv + pyrmq broker as processes on free loopback ports, driven by pyrmq.remoting.client.

Send -> pull round trip through the route the broker registered; a long-poll
pull answered as soon as a message arrives; the VIP port serves sends but not
pulls; SIGTERM unregisters, persists offsets and removes the abort file;
`pyrmq dev` comes up with both servers.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from support.ports import free_port, free_port_block
from support.procs import ManagedProcess
from support.pyrmq_proc import venv_python
from support.servers import write_properties

from pyrmq.protocol.bodies.namesrv import TopicRouteData
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.remoting.client import RemotingClient
from pyrmq.store import message as m

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cluster(tmp_path):
    """(namesrv addr, broker addr, broker process, store dir); everything is stopped at teardown."""
    ns_port = free_port()
    b_port = free_port_block((-2, 0))
    conf = write_properties(tmp_path / "namesrv.conf", {"listenPort": ns_port, "kvConfigPath": tmp_path / "kv.json"})
    ns = ManagedProcess(
        "namesrv",
        [venv_python(), "-m", "pyrmq", "namesrv", "-c", str(conf), "--host", "127.0.0.1"],
        tmp_path / "namesrv.out",
        cwd=ROOT,
        env=dict(os.environ, HOME=str(tmp_path)),
    )
    procs = [ns]
    try:
        ns.wait_port(ns_port, 20)
        store = tmp_path / "store"
        bconf = write_properties(
            tmp_path / "broker.conf",
            {
                "brokerClusterName": "ItCluster",
                "brokerName": "it-broker",
                "brokerId": 0,
                "namesrvAddr": f"127.0.0.1:{ns_port}",
                "listenPort": b_port,
                "brokerIP1": "127.0.0.1",
                "bindAddress": "127.0.0.1",
                "storePathRootDir": store,
                "mappedFileSizeCommitLog": 4 * 1024 * 1024,
                "flushDiskType": "SYNC_FLUSH",
                "someUnknownKey": "kept",
            },
        )
        broker = ManagedProcess(
            "broker",
            [venv_python(), "-m", "pyrmq", "broker", "-c", str(bconf)],
            tmp_path / "broker.out",
            cwd=ROOT,
            env=dict(os.environ, HOME=str(tmp_path)),
        )
        procs.append(broker)
        broker.wait_line(f"The broker[it-broker, 127.0.0.1:{b_port}] boot success.")
        yield f"127.0.0.1:{ns_port}", f"127.0.0.1:{b_port}", broker, store
    finally:
        for p in reversed(procs):
            p.stop(10)


def _send_ext(topic: str, queue_id: int = 0, tags: str = "TagA") -> dict[str, str]:
    return {
        "a": "pg",
        "b": topic,
        "c": "TBW102",
        "d": "4",
        "e": str(queue_id),
        "f": "0",
        "g": str(int(time.time() * 1000)),
        "h": "0",
        "i": m.message_properties_to_string({"TAGS": tags, "WAIT": "true"}),
        "j": "0",
        "k": "false",
        "m": "false",
        "n": "it-broker",
    }


def _pull_ext(topic: str, offset: int, suspend_ms: int = 0, sys_flag: int = 0x6) -> dict[str, str]:
    return {
        "consumerGroup": "itg",
        "topic": topic,
        "queueId": "0",
        "queueOffset": str(offset),
        "maxMsgNums": "32",
        "sysFlag": str(sys_flag),
        "commitOffset": "0",
        "suspendTimeoutMillis": str(suspend_ms),
        "subscription": "*",
        "subVersion": "0",
        "expressionType": "TAG",
    }


def test_send_pull_round_trip_and_long_poll(cluster):
    ns_addr, b_addr, broker, store = cluster

    async def scenario():
        async with RemotingClient() as c:
            r = await c.invoke(
                b_addr, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, _send_ext("ItT"), b"one"), 5
            )
            assert r.code == ResponseCode.SUCCESS, r
            # the auto-created topic was registered with the name server at once
            route = await c.invoke(
                ns_addr, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "ItT"})
            )
            assert route.code == ResponseCode.SUCCESS, route
            rd = TopicRouteData.decode(route.body)
            assert rd.broker_datas[0].broker_addrs[0] == b_addr and rd.queue_datas[0].write_queue_nums == 4
            r = await c.invoke(b_addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, _pull_ext("ItT", 0, 1000)), 5)
            assert r.code == ResponseCode.SUCCESS and [x.body for x in m.decode_messages(r.body)] == [b"one"]
            # long poll: held until the next send arrives, not until the 10 s timeout
            pull = asyncio.ensure_future(
                c.invoke(b_addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, _pull_ext("ItT", 1, 10000)), 15)
            )
            await asyncio.sleep(0.3)
            assert not pull.done()
            t0 = time.monotonic()
            r = await c.invoke(
                b_addr, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, _send_ext("ItT"), b"two"), 5
            )
            assert r.code == ResponseCode.SUCCESS
            got = await pull
            assert time.monotonic() - t0 < 2
            assert got.code == ResponseCode.SUCCESS and [x.body for x in m.decode_messages(got.body)] == [b"two"]
            # short suspend with nothing new: PULL_NOT_FOUND after the hold
            t0 = time.monotonic()
            r = await c.invoke(b_addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, _pull_ext("ItT", 2, 400)), 5)
            assert r.code == ResponseCode.PULL_NOT_FOUND and 0.3 < time.monotonic() - t0 < 3
            # the VIP port (listenPort - 2) takes sends but not pulls
            host, port = b_addr.split(":")
            vip = f"{host}:{int(port) - 2}"
            r = await c.invoke(vip, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, _send_ext("ItT"), b"vip"), 5)
            assert r.code == ResponseCode.SUCCESS
            r = await c.invoke(vip, RemotingCommand.request(RequestCode.PULL_MESSAGE, _pull_ext("ItT", 0)), 5)
            assert r.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
            # commit an offset so shutdown has something to persist
            upd = {"consumerGroup": "itg", "topic": "ItT", "queueId": "0", "commitOffset": "2"}
            r = await c.invoke(b_addr, RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, upd), 5)
            assert r.code == ResponseCode.SUCCESS

    asyncio.run(scenario())
    assert (store / "abort").exists()
    assert broker.stop(15) == 0
    assert not (store / "abort").exists()  # clean shutdown
    assert '"ItT@itg":{\n\t\t\t0:2\n\t\t}' in (store / "config" / "consumerOffset.json").read_text()
    assert '"ItT"' in (store / "config" / "topics.json").read_text()
    log = broker.log.read_text()
    assert "someUnknownKey" in log  # reported, not fatal

    async def unregistered():
        async with RemotingClient() as c:
            r = await c.invoke(ns_addr, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "ItT"}))
            return r.code

    assert asyncio.run(unregistered()) == ResponseCode.TOPIC_NOT_EXIST


def test_dev_starts_both_servers(tmp_path):
    ns_port = free_port()
    b_port = free_port_block((-2, 0))
    t0 = time.monotonic()
    dev = ManagedProcess(
        "dev",
        [
            venv_python(),
            "-m",
            "pyrmq",
            "dev",
            "--namesrv-port",
            str(ns_port),
            "--broker-port",
            str(b_port),
            "--store",
            str(tmp_path / "s"),
            "--grpc-port",
            "-1",
        ],
        tmp_path / "dev.out",
        cwd=ROOT,
        env=dict(os.environ, HOME=str(tmp_path)),
    )
    try:
        dev.wait_line(f"namesrv 127.0.0.1:{ns_port}  broker 127.0.0.1:{b_port}")
        ready = time.monotonic() - t0

        async def scenario():
            async with RemotingClient() as c:
                r = await c.invoke(
                    f"127.0.0.1:{b_port}",
                    RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, _send_ext("DevT"), b"d"),
                    5,
                )
                assert r.code == ResponseCode.SUCCESS
                r = await c.invoke(
                    f"127.0.0.1:{ns_port}",
                    RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "DevT"}),
                )
                assert r.code == ResponseCode.SUCCESS

        asyncio.run(scenario())
        print(f"pyrmq dev ready after {ready:.2f}s (incl. interpreter start)")
        assert ready < 10
    finally:
        assert dev.stop(10) == 0
    assert not (tmp_path / "s" / "abort").exists()
