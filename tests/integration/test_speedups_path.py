"""`pyrmq dev` on each codec implementation: PYRMQ_PURE=1 (the pure-Python references) and the
default (the compiled pyrmq/_speedups when built), driven by this process's client, so a
compiled client talks to a pure broker and the other way round. tests/unit/test_speedups.py
compares the functions one by one; this is the send / pull round trip through both."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from support.ports import free_port, free_port_block
from support.procs import ManagedProcess
from support.pyrmq_proc import venv_python

from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import SendMessageResponseHeader
from pyrmq.store import message as m

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = os.environ.get("PYRMQ_REQUIRE_SPEEDUPS", "") not in ("", "0")


def _send(topic: str, i: int) -> RemotingCommand:
    props = {"TAGS": f"Tag{i % 2}", "KEYS": f"key-{i} é", "UNIQ_KEY": f"{i:032X}", "WAIT": "true"}
    ext = {
        "a": "pg",
        "b": topic,
        "c": "TBW102",
        "d": "4",
        "e": "1",
        "f": "0",
        "g": "1764272000000",
        "h": str(i),
        "i": m.message_properties_to_string(props),
        "j": "0",
        "k": "false",
        "m": "false",
    }
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, f"body {i} ü".encode())


@pytest.mark.parametrize("pure", ["1", "0"], ids=["pure-broker", "default-broker"])
def test_send_pull_round_trip(tmp_path: Path, pure: str) -> None:
    ns_port, b_port = free_port(), free_port_block((-2, 0))
    dev = ManagedProcess(
        "dev",
        [venv_python(), "-m", "pyrmq", "dev", "--namesrv-port", str(ns_port), "--broker-port", str(b_port),
         "--store", str(tmp_path / "s"), "--grpc-port", "-1", "--metrics-port", "-1"],
        tmp_path / "dev.out",
        cwd=ROOT,
        env=dict(os.environ, HOME=str(tmp_path), PYRMQ_PURE=pure),
    )  # fmt: skip
    try:
        dev.wait_line("pyrmq dev ready")
        expect = "pure Python (PYRMQ_PURE is set)" if pure == "1" else ("compiled" if REQUIRED else "codec speed-ups")
        assert expect in dev.tail(20), dev.tail(20)
        broker = f"127.0.0.1:{b_port}"

        async def scenario() -> None:
            from pyrmq.remoting.client import RemotingClient

            async with RemotingClient() as c:
                for i in range(20):
                    r = await c.invoke(broker, _send("SpT", i), 5)
                    assert r.code == ResponseCode.SUCCESS, r
                    assert SendMessageResponseHeader.from_command(r).queue_offset == i
                pull = {
                    "consumerGroup": "g", "topic": "SpT", "queueId": "1", "queueOffset": "0", "maxMsgNums": "32",
                    "sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "Tag1",
                    "subVersion": "0", "expressionType": "TAG",
                }  # fmt: skip
                r = await c.invoke(broker, RemotingCommand.request(RequestCode.PULL_MESSAGE, pull), 5)
                assert r.code == ResponseCode.SUCCESS, r
                got = list(m.decode_messages(r.body))
                assert [x.body for x in got] == [f"body {i} ü".encode() for i in range(1, 20, 2)]
                assert [x.keys for x in got] == [f"key-{i} é" for i in range(1, 20, 2)]

        asyncio.run(scenario())
    finally:
        assert dev.stop(10) == 0
