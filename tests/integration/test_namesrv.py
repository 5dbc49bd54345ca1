"""A real NameServer on 127.0.0.1:<free>, driven over TCP by pyrmq.remoting.client."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.fakes import golden

from pyrmq.namesrv.config import NamesrvConfig
from pyrmq.namesrv.controller import NamesrvController
from pyrmq.protocol.bodies.namesrv import ClusterInfo, KVTable, RegisterBrokerBody, TopicRouteData
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand, encode
from pyrmq.remoting.client import RemotingClient

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_BODY = golden("bodies/register_broker_body.json")
V5_5_0 = 513


def run(coro, timeout: float = 30):
    async def bounded():
        async with asyncio.timeout(timeout):
            return await coro

    return asyncio.run(bounded())


async def start_ns(tmp_path: Path, **props: str) -> NamesrvController:
    base = {
        "listenPort": "0",
        "bindAddress": "127.0.0.1",
        "kvConfigPath": str(tmp_path / "kvConfig.json"),
        "configStorePath": str(tmp_path / "namesrv.properties"),
    }
    base.update(props)
    ns = NamesrvController(NamesrvConfig.from_properties(base))
    await ns.start()
    return ns


def reg_cmd(name: str = "broker-a", addr: str = "127.0.0.1:10911", bid: int = 0, **more: str) -> RemotingCommand:
    ext = {
        "brokerName": name,
        "brokerAddr": addr,
        "clusterName": "DefaultCluster",
        "haServerAddr": addr.replace("10911", "10912"),
        "brokerId": str(bid),
        "compressed": "false",
        "bodyCrc32": "0",
        "enableActingMaster": "false",
        "heartbeatTimeoutMillis": "120000",
    }
    ext.update(more)
    cmd = RemotingCommand.request(RequestCode.REGISTER_BROKER, ext, GOLDEN_BODY)
    cmd.version = V5_5_0
    return cmd


def route_cmd(topic: str, version: int = V5_5_0) -> RemotingCommand:
    cmd = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    cmd.version = version
    return cmd


def test_register_route_cluster_info_over_tcp(tmp_path: Path) -> None:
    async def scenario() -> None:
        ns = await start_ns(tmp_path)
        addr = f"127.0.0.1:{ns.port}"
        try:
            async with RemotingClient() as broker, RemotingClient() as client:
                r = await broker.invoke(addr, reg_cmd(), 5)
                assert r.code == ResponseCode.SUCCESS, r
                r = await client.invoke(addr, route_cmd("TopicTest"), 5)
                assert r.code == ResponseCode.SUCCESS
                route = TopicRouteData.decode(r.body)
                assert [(q.broker_name, q.write_queue_nums, q.perm) for q in route.queue_datas] == [("broker-a", 4, 6)]
                assert route.broker_datas[0].broker_addrs == {0: "127.0.0.1:10911"}
                assert b'{"0":"127.0.0.1:10911"}' in r.body
                old = await client.invoke(addr, route_cmd("TopicTest", version=317), 5)
                assert b'{0:"127.0.0.1:10911"}' in old.body and b" " not in old.body
                info = ClusterInfo.decode(
                    (await client.invoke(addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 5)).body
                )
                assert info.cluster_addr_table == {"DefaultCluster": ["broker-a"]}
                assert set(
                    RegisterBrokerBody.decode(GOLDEN_BODY).topic_config_serialize_wrapper.topic_config_table
                ) <= set(ns.route_info_manager.topic_queue_table)
                # the broker's connection closes: its routes go at once (BrokerHousekeepingService)
                await broker.close()
                for _ in range(100):
                    if not ns.route_info_manager.broker_addr_table:
                        break
                    await asyncio.sleep(0.02)
                r = await client.invoke(addr, route_cmd("TopicTest"), 5)
                assert r.code == ResponseCode.TOPIC_NOT_EXIST
        finally:
            await ns.shutdown()

    run(scenario())


def test_silent_broker_expires_and_its_connection_is_closed(tmp_path: Path) -> None:
    async def scenario() -> None:
        ns = await start_ns(tmp_path, scanNotActiveBrokerInterval="100", brokerChannelExpiredTime="400")
        addr = f"127.0.0.1:{ns.port}"
        try:
            async with RemotingClient() as broker, RemotingClient() as client:
                cmd = reg_cmd()
                del cmd.ext_fields["heartbeatTimeoutMillis"]  # 4.9.x broker: the configured default applies
                assert (await broker.invoke(addr, cmd, 5)).code == ResponseCode.SUCCESS
                ch = await broker.get_channel(addr)
                assert (await client.invoke(addr, route_cmd("TopicTest"), 5)).code == ResponseCode.SUCCESS
                # the first scan runs after min(5 s, interval), then every interval
                async with asyncio.timeout(5):
                    await ch.wait_closed()
                r = await client.invoke(addr, route_cmd("TopicTest"), 5)
                assert r.code == ResponseCode.TOPIC_NOT_EXIST
        finally:
            await ns.shutdown()

    run(scenario())


def test_unknown_code_and_bad_headers_keep_the_server_serving(tmp_path: Path) -> None:
    async def scenario() -> None:
        ns = await start_ns(tmp_path)
        addr = f"127.0.0.1:{ns.port}"
        try:
            async with RemotingClient() as client:
                r = await client.invoke(addr, RemotingCommand.request(9999), 5)
                assert (r.code, r.remark) == (
                    ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                    " request type 9999 not supported",
                )
                r = await client.invoke(addr, reg_cmd(brokerId="abc"), 5)
                assert r.code == ResponseCode.INVALID_PARAMETER and "brokerId" in r.remark
                bad = reg_cmd()
                bad.body = b"\x00garbage"
                r = await client.invoke(addr, bad, 5)
                assert r.code == ResponseCode.SYSTEM_ERROR and "RegisterBrokerBody" in r.remark
                r = await client.invoke(
                    addr,
                    RemotingCommand.request(RequestCode.PUT_KV_CONFIG, {"namespace": "n", "key": "k", "value": "v"}),
                    5,
                )
                assert r.code == ResponseCode.SUCCESS
                r = await client.invoke(
                    addr, RemotingCommand.request(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "n"}), 5
                )
                assert KVTable.decode(r.body).table == {"k": "v"}
        finally:
            await ns.shutdown()

    run(scenario())


def _closed_by_peer(sock: socket.socket, timeout: float = 5) -> bool:
    sock.settimeout(timeout)
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def _raw_request(port: int, frame: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        raw.sendall(frame)
        return raw.recv(4)


@pytest.mark.parametrize(
    "garbage",
    [
        pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", id="http"),
        pytest.param(struct.pack(">i", 64 * 1024 * 1024) + b"\x00" * 8, id="oversize_frame"),
        pytest.param(struct.pack(">iI", 12, 0x0000FFFF) + b"\x00" * 8, id="header_longer_than_frame"),
        pytest.param(struct.pack(">iI", 8, 0x07000004) + b"abcd", id="unknown_serialize_type"),
        pytest.param(struct.pack(">iI", 8, 4) + b"{{{{", id="bad_json_header"),
    ],
)
def test_garbage_on_one_connection_while_another_keeps_working(tmp_path: Path, garbage: bytes) -> None:
    async def scenario() -> None:
        ns = await start_ns(tmp_path)
        addr = f"127.0.0.1:{ns.port}"
        try:
            async with RemotingClient() as client:
                assert (await client.invoke(addr, reg_cmd(), 5)).code == ResponseCode.SUCCESS
                raw = socket.create_connection(("127.0.0.1", ns.port), timeout=5)
                try:
                    raw.sendall(garbage)
                    closed = await asyncio.to_thread(_closed_by_peer, raw)
                finally:
                    raw.close()
                assert closed, "server kept a connection that sent garbage"
                r = await client.invoke(addr, route_cmd("TopicTest"), 5)
                assert r.code == ResponseCode.SUCCESS
                # a good frame on a fresh raw connection is still answered
                head = await asyncio.to_thread(_raw_request, ns.port, encode(route_cmd("TopicTest")))
                assert len(head) == 4 and struct.unpack(">i", head)[0] > 0
        finally:
            await ns.shutdown()

    run(scenario())


def test_startup_process_boot_line_sigterm_and_kv_persistence(tmp_path: Path) -> None:
    from support.ports import free_port

    port = free_port()
    kv = tmp_path / "kv" / "kvConfig.json"
    conf = tmp_path / "namesrv.properties"
    conf.write_text(f"listenPort={port}\nbindAddress=127.0.0.1\nkvConfigPath={kv}\nnotAKey=1\n")
    env = dict(os.environ, PYTHONUNBUFFERED="1", HOME=str(tmp_path))
    proc = subprocess.Popen(
        [sys.executable, "-m", "pyrmq", "namesrv", "-c", str(conf)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        lines = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "boot success" in line:
                break
        assert any(
            f"The Name Server boot success. serializeType=JSON, address 127.0.0.1:{port}" in ln for ln in lines
        ), "".join(lines)

        async def put() -> int:
            async with RemotingClient() as c:
                r = await c.invoke(
                    f"127.0.0.1:{port}",
                    RemotingCommand.request(
                        RequestCode.PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "b:4"}
                    ),
                    5,
                )
                return r.code

        assert run(put()) == ResponseCode.SUCCESS
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=15)
        assert proc.returncode == 0, "".join(lines) + out
        assert "notAKey" in "".join(lines) + out  # unknown keys are reported
        assert kv.read_bytes() == b'{"configTable":{"ORDER_TOPIC_CONFIG":{"T":"b:4"}}}'
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


def test_print_config_and_help() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pyrmq", "namesrv", "-p"], cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0
    assert "listenPort=9876" in out.stdout and "scanNotActiveBrokerInterval=5000" in out.stdout
    out = subprocess.run(
        [sys.executable, "-m", "pyrmq", "namesrv", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0 and "--configFile" in out.stdout


def test_port_in_use_fails_with_javas_words(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        conf = tmp_path / "namesrv.properties"
        conf.write_text(f"listenPort={port}\nbindAddress=127.0.0.1\nkvConfigPath={tmp_path / 'kv.json'}\n")
        out = subprocess.run(
            [sys.executable, "-m", "pyrmq", "namesrv", "-c", str(conf)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=30,
            env=dict(os.environ, HOME=str(tmp_path)),
        )
    assert out.returncode == 1
    assert "Address already in use" in out.stderr  # what tests/support/servers.py retries on
