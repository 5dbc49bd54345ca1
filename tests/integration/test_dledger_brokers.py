"""Three `pyrmq broker` processes with enableDLegerCommitLog=true (one DLedger group,
preferredLeaderId=n1) and two `pyrmq namesrv` (namesrvAddr lists both): the DLedger leader, n1,
registers as the master (brokerId 0) and the others as slaves (the digits of dLegerSelfId + 1), at
both name servers; sends to the master are SEND_OK once a majority holds them; the master
SIGKILLed, a new leader registers as brokerId 0 at both, takes sends, and serves every message
that was acknowledged, in order; the killed broker restarted on its files catches up and is handed
the leadership back (the preferred leader), master again at both name servers, and serves them all
too, as does the slave the old new master became; with both slaves killed a send is not
acknowledged."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from support.ports import free_port, free_port_block
from support.procs import ManagedProcess
from support.pyrmq_proc import venv_python
from support.requests import pull, send_v2
from support.servers import write_properties

from pyrmq.protocol.bodies.namesrv import ClusterInfo
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import CreateTopicRequestHeader
from pyrmq.remoting.client import RemotingClient
from pyrmq.store import message as m

ROOT = Path(__file__).resolve().parents[2]
TOPIC = "DlT"
NAME = "dl-broker"
IDS = ("n0", "n1", "n2")
#: preferredLeaderId on every broker: DLedger's checkPreferredLeader hands the leadership to it
PREFERRED = "n1"


def _proc(tmp_path: Path, name: str, argv: list[str]) -> ManagedProcess:
    return ManagedProcess(
        name,
        [venv_python(), "-m", "pyrmq", *argv],
        tmp_path / f"{name}.out",
        cwd=ROOT,
        env=dict(os.environ, HOME=str(tmp_path)),
    )


async def _broker_addrs(c: RemotingClient, ns_addr: str) -> dict[int, str]:
    r = await c.invoke(ns_addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 5)
    info = ClusterInfo.decode(r.body)
    data = (info.broker_addr_table or {}).get(NAME)
    return dict(data.broker_addrs) if data is not None else {}


async def _wait_master(c: RemotingClient, ns_addr: str, addrs: list[str], timeout: float, not_addr: str = "") -> str:
    """The address registered as brokerId 0, once it is one of ``addrs`` and not ``not_addr``."""
    deadline = time.monotonic() + timeout
    while True:
        table = await _broker_addrs(c, ns_addr)
        master = table.get(0, "")
        if master in addrs and master != not_addr:
            return master
        assert time.monotonic() < deadline, f"no new master registered: {table}"
        await asyncio.sleep(0.2)


async def _same_table(c: RemotingClient, ns_addr: str, expected: dict[int, str], timeout: float) -> None:
    """Until the name server at ``ns_addr`` lists exactly ``expected`` (the other one's table)."""
    deadline = time.monotonic() + timeout
    while (table := await _broker_addrs(c, ns_addr)) != expected:
        assert time.monotonic() < deadline, f"{ns_addr}: {table}, not {expected}"
        await asyncio.sleep(0.2)


async def _send(c: RemotingClient, addr: str, body: bytes, timeout: float = 10) -> None:
    """SEND_OK, retried while the new master is not ready (SERVICE_NOT_AVAILABLE, SYSTEM_BUSY)."""
    deadline = time.monotonic() + timeout
    while True:
        r = await c.invoke(addr, send_v2(TOPIC, NAME, body, queues=1), 5)
        if r.code == ResponseCode.SUCCESS:
            return
        assert r.code in (ResponseCode.SERVICE_NOT_AVAILABLE, ResponseCode.SYSTEM_BUSY), r
        assert time.monotonic() < deadline, r
        await asyncio.sleep(0.2)


async def _pull_all(c: RemotingClient, addr: str) -> list[bytes]:
    got: list[bytes] = []
    while True:
        r = await c.invoke(addr, pull(TOPIC, "dlg", len(got)), 5)
        if r.code != ResponseCode.SUCCESS:
            return got
        got += [x.body for x in m.decode_messages(r.body)]


def test_dledger_brokers_fail_over_without_losing_acknowledged_sends(tmp_path: Path) -> None:
    ns_ports = [free_port(), free_port()]
    procs = []
    for k, port in enumerate(ns_ports):
        conf = write_properties(
            tmp_path / f"namesrv{k}.conf", {"listenPort": port, "kvConfigPath": tmp_path / f"kv{k}.json"}
        )
        procs.append(_proc(tmp_path, f"namesrv{k}", ["namesrv", "-c", str(conf), "--host", "127.0.0.1"]))
    ns_port = ns_ports[0]
    ns2_addr = f"127.0.0.1:{ns_ports[1]}"
    ports = {i: free_port_block((-2, 0)) for i in IDS}
    peers = ";".join(f"{i}-127.0.0.1:{free_port()}" for i in IDS)
    brokers: dict[str, ManagedProcess] = {}
    try:
        for proc, port in zip(procs, ns_ports, strict=True):
            proc.wait_port(port, 20)
        for i in IDS:
            conf = write_properties(
                tmp_path / f"{i}.conf",
                {
                    "brokerClusterName": "DlCluster",
                    "brokerName": NAME,
                    "namesrvAddr": ";".join(f"127.0.0.1:{port}" for port in ns_ports),
                    "listenPort": ports[i],
                    "brokerIP1": "127.0.0.1",
                    "bindAddress": "127.0.0.1",
                    "storePathRootDir": tmp_path / i,
                    "mappedFileSizeCommitLog": 1024 * 1024,
                    "enableDLegerCommitLog": "true",
                    "dLegerGroup": NAME,
                    "dLegerPeers": peers,
                    "dLegerSelfId": i,
                    "slaveReadEnable": "true",
                    "preferredLeaderId": PREFERRED,
                },
            )
            brokers[i] = _proc(tmp_path, i, ["broker", "-c", str(conf)])
            procs.append(brokers[i])
        confs = {i: tmp_path / f"{i}.conf" for i in IDS}
        addrs = {i: f"127.0.0.1:{ports[i]}" for i in IDS}
        for i in IDS:
            brokers[i].wait_line(f"The broker[{NAME}, {addrs[i]}] boot success.")

        async def scenario() -> None:
            ns_addr = f"127.0.0.1:{ns_port}"
            async with RemotingClient() as c:
                create = CreateTopicRequestHeader(topic=TOPIC, read_queue_nums=1, write_queue_nums=1).to_ext_fields()
                for addr in addrs.values():
                    r = await c.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, create), 5)
                    assert r.code == ResponseCode.SUCCESS, r
                # the preferred leader is the master (elected, or handed the leadership by the
                # first leader), the two others are slaves with their DLedger ids + 1, at both
                # name servers
                master = addrs[PREFERRED]
                expected = {0: master} | {int(i[1:]) + 1: a for i, a in addrs.items() if a != master}
                for at in (ns_addr, ns2_addr):
                    await _same_table(c, at, expected, 30)
                acked = [f"before-{k}".encode() for k in range(30)]
                for body in acked:
                    await _send(c, master, body)
                # a slave refuses sends
                slave = next(a for a in addrs.values() if a != master)
                r = await c.invoke(slave, send_v2(TOPIC, NAME, b"to a slave", queues=1), 5)
                assert r.code != ResponseCode.SUCCESS
                old = next(i for i, a in addrs.items() if a == master)
                brokers[old].kill9()
                new_master = await _wait_master(
                    c, ns_addr, [a for i, a in addrs.items() if i != old], 40, not_addr=master
                )
                # the role changes registered at both name servers, the killed master gone
                other = next(i for i, a in addrs.items() if i != old and a != new_master)
                survivors = {0: new_master, int(other[1:]) + 1: addrs[other]}
                for at in (ns_addr, ns2_addr):
                    await _same_table(c, at, survivors, 15)
                after = [f"after-{k}".encode() for k in range(20)]
                for body in after:
                    await _send(c, new_master, body)
                assert await _pull_all(c, new_master) == acked + after
                # the killed broker, the preferred leader, restarted on its files (abnormal
                # recovery): it follows, catches up, and the leader hands the leadership back to it
                # (a preferred-leader transfer between brokers): the master again at both name
                # servers, the others slaves, each serving everything
                brokers[old] = _proc(tmp_path, f"{old}-again", ["broker", "-c", str(confs[old])])
                procs.append(brokers[old])
                for at in (ns_addr, ns2_addr):
                    await _same_table(c, at, expected, 60)
                assert await _pull_all(c, master) == acked + after
                assert await _pull_all(c, new_master) == acked + after  # a slave now
                await _send(c, master, b"back on the preferred leader")
                acked += [*after, b"back on the preferred leader"]
                # both slaves gone: the master acknowledges nothing and serves nothing more
                for i, a in addrs.items():
                    if a != master:
                        brokers[i].kill9()
                r = await c.invoke(master, send_v2(TOPIC, NAME, b"lonely", queues=1), 10)
                assert r.code != ResponseCode.SUCCESS, r
                assert await _pull_all(c, master) == acked

        asyncio.run(scenario())
    finally:
        for p in reversed(procs):
            p.stop(10)
