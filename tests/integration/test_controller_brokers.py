"""All pyrmq in controller mode: `pyrmq controller` (or the controller inside `pyrmq namesrv`), a
`pyrmq namesrv` and two `pyrmq broker`s with enableControllerMode=true and one brokerName, as
processes on loopback.

The brokers apply for ids 1 and 2; the first started is elected master (epoch 1), the second
replicates with the AutoSwitch protocol and joins the sync state set. The master is SIGKILLed:
the controller sees its connection close, elects the slave (epoch 2) and tells it; a send to it
succeeds. The killed broker, restarted on its store, keeps id 1 and rejoins as a slave of epoch
2, catching up to the new master's commit log byte for byte.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from support.ports import free_port
from support.pyrmq_proc import PyrmqBroker
from support.requests import send_v2
from support.servers import PyrmqController, PyrmqNamesrv

from pyrmq.ha.broker_metadata import BrokerMetadata
from pyrmq.ha.epoch import decode_checkpoint
from pyrmq.protocol.bodies.controller import BrokerReplicasInfo, ReplicasInfo
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.remoting.client import RemotingClient

NAME = "ctl-pair"
TOPIC = "CtlPairT"


def _send(body: bytes) -> RemotingCommand:
    return send_v2(TOPIC, NAME, body, group="CtlPairPG", tags=None)


async def _first_send_ok(c: RemotingClient, addr: str, since: float) -> None:
    """Send until the new master answers SUCCESS, at most 30 s after ``since`` (the kill)."""
    while True:
        r = await c.invoke(addr, _send(b"after the failover"), 10)
        if r.code == ResponseCode.SUCCESS:
            return
        assert time.monotonic() - since < 30, f"no successful send 30 s after the kill: {r}"
        await asyncio.sleep(0.1)


async def _replicas(c: RemotingClient, controller: str) -> ReplicasInfo | None:
    body = json.dumps([NAME]).encode()
    r = await c.invoke(controller, RemotingCommand.request(RequestCode.CONTROLLER_GET_SYNC_STATE_DATA, {}, body), 5)
    assert r.code == ResponseCode.SUCCESS, r
    return BrokerReplicasInfo.decode(r.body).replicas_info_table.get(NAME)


async def _wait_in_sync(c: RemotingClient, controller: str, master: str, epoch: int, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while True:
        info = await _replicas(c, controller)
        if (
            info is not None
            and len(info.in_sync_replicas) == 2
            and info.master_address == master
            and info.master_epoch == epoch
        ):
            return info
        assert time.monotonic() < deadline, f"sync state set never {{both}} under {master} epoch {epoch}: {info}"
        await asyncio.sleep(0.2)


def _commit_log(store: Path) -> bytes:
    d = store / "commitlog"
    if not d.is_dir():
        return b""
    return b"".join((d / n).read_bytes() for n in sorted(p.name for p in d.iterdir())).rstrip(b"\0")


async def _wait_same_log(master: Path, slave: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while _commit_log(master) != _commit_log(slave):
        assert time.monotonic() < deadline, "the slave's commit log never matched the master's"
        await asyncio.sleep(0.2)


def _epochs(store: Path) -> list[tuple[int, int]]:
    return [(e.epoch, e.start_offset) for e in decode_checkpoint((store / "epochFileCheckpoint").read_text())]


def _broker_id(store: Path) -> int:
    md = BrokerMetadata(str(store / "brokerIdentity"))
    assert md.read(), f"no brokerIdentity in {store}"
    return md.broker_id


@pytest.fixture(params=["standalone", "in-namesrv"])
def servers(request, tmp_path):
    """(name server, controller address): `pyrmq controller` beside `pyrmq namesrv`, or the
    controller inside `pyrmq namesrv` (enableControllerInNamesrv) on its own peer port."""
    if request.param == "standalone":
        ctl = PyrmqController(tmp_path / "ctl")
        ns = PyrmqNamesrv(tmp_path / "ns")
        stop = [ns, ctl]
        addr = ctl.addr
    else:
        port = free_port()
        ns = PyrmqNamesrv(
            tmp_path / "ns",
            enableControllerInNamesrv="true",
            controllerDLegerGroup="nsgroup",
            controllerDLegerPeers=f"n0-127.0.0.1:{port}",
            controllerDLegerSelfId="n0",
            controllerStorePath=tmp_path / "ctl-store",
            scanNotActiveBrokerInterval=1000,
        )
        ns.managed.wait_port(port, 20)
        stop = [ns]
        addr = f"127.0.0.1:{port}"
    yield ns, addr
    for s in stop:
        s.stop()


def test_pyrmq_pair_fails_over_through_pyrmq_controller(servers, tmp_path):
    ns, ctl = servers
    conf = {
        "name": NAME,
        "enableControllerMode": "true",
        "controllerAddr": ctl,
        "controllerHeartBeatTimeoutMills": 3000,
        "mappedFileSizeCommitLog": 64 * 1024,
        "bindAddress": "127.0.0.1",
    }
    first = PyrmqBroker(ns.addr, tmp_path / "b1", **conf)  # returns once registered: the elected master
    second = PyrmqBroker(ns.addr, tmp_path / "b2", **conf)
    try:

        async def scenario() -> float:
            async with RemotingClient() as c:
                await _wait_in_sync(c, ctl, first.addr, 1)
                for i in range(60):
                    r = await c.invoke(first.addr, _send(b"pair-%03d-" % i * (1 + i % 20)), 10)
                    assert r.code == ResponseCode.SUCCESS, r
                await _wait_same_log(first.store_dir, second.store_dir)
                assert _epochs(first.store_dir) == _epochs(second.store_dir) == [(1, 0)]
                assert (_broker_id(first.store_dir), _broker_id(second.store_dir)) == (1, 2)
                r = await c.invoke(second.addr, _send(b"to the slave"), 10)
                assert r.code == ResponseCode.SYSTEM_BUSY, r

                killed = time.monotonic()
                first.kill9()
                await _first_send_ok(c, second.addr, killed)
                took = time.monotonic() - killed
                info = await _replicas(c, ctl)
                assert info is not None and (info.master_address, info.master_epoch) == (second.addr, 2), info
                return took

        took = asyncio.run(scenario())
        print(f"\nkill -> first successful send on the new master: {took:.2f} s")
        epochs = _epochs(second.store_dir)
        assert [e for e, _ in epochs] == [1, 2] and epochs[1][1] > 0, epochs

        first.restart()  # same store and brokerIdentity: a slave of epoch 2 now

        async def rejoin() -> None:
            async with RemotingClient() as c:
                await _wait_in_sync(c, ctl, second.addr, 2)
                for i in range(10):
                    r = await c.invoke(second.addr, _send(b"epoch-2-%d" % i), 10)
                    assert r.code == ResponseCode.SUCCESS, r
                await _wait_same_log(second.store_dir, first.store_dir)
                r = await c.invoke(first.addr, _send(b"to the old master"), 10)
                assert r.code == ResponseCode.SYSTEM_BUSY, r

        asyncio.run(rejoin())
        assert _broker_id(first.store_dir) == 1
        assert _epochs(first.store_dir) == epochs
    finally:
        second.stop()
        first.stop()


@pytest.mark.soak  # a controller, a name server, two brokers and a failover: about 30 s
def test_pair_fails_over_with_tls_enforced(tmp_path):
    """`pyrmq controller` and both brokers with tls.server.mode=enforcing (test-mode certificates;
    the name server permissive, for the harness' plain probes): the brokers apply, register and
    report to the controller over TLS, the controller tells the second broker of the failover over
    TLS (its own client follows the enforcing mode), and no broker ever refused a plain connection."""
    from pyrmq.remoting.tls import TlsConfig

    enforcing = {"tls.server.mode": "enforcing"}
    ctl = PyrmqController(tmp_path / "ctl", system_props=enforcing)
    ns = PyrmqNamesrv(tmp_path / "ns")
    started: list = [ns, ctl]
    conf = {
        "name": NAME,
        "enableControllerMode": "true",
        "controllerAddr": ctl.addr,
        "controllerHeartBeatTimeoutMills": 3000,
        "mappedFileSizeCommitLog": 64 * 1024,
        "bindAddress": "127.0.0.1",
    }
    try:
        first = PyrmqBroker(ns.addr, tmp_path / "b1", system_props=enforcing, **conf)
        started.append(first)
        second = PyrmqBroker(ns.addr, tmp_path / "b2", system_props=enforcing, **conf)
        started.append(second)

        async def scenario() -> None:
            async with RemotingClient(tls=TlsConfig().client_context()) as c:
                await _wait_in_sync(c, ctl.addr, first.addr, 1)
                r = await c.invoke(first.addr, _send(b"over tls"), 10)
                assert r.code == ResponseCode.SUCCESS, r
                await _wait_same_log(first.store_dir, second.store_dir)
                first.kill9()
                killed = time.monotonic()
                await _first_send_ok(c, second.addr, killed)
                info = await _replicas(c, ctl.addr)
                assert info is not None and (info.master_address, info.master_epoch) == (second.addr, 2), info

        asyncio.run(scenario())
        for broker in (first, second):
            log = broker.tail(5000)
            assert "an insecure connection while TLS is" not in log, log
        assert "Begin to change to master" in second.tail(5000)
    finally:
        for s in reversed(started):
            s.stop()
