"""A master and a slave `pyrmq broker` (same brokerName, brokerId 0 and 1) and one `pyrmq namesrv`,
as processes on loopback. The slave learns its master's HA address from the name server's
REGISTER_BROKER answer, replicates, and serves pulls (slaveReadEnable) of what was sent to the
master; it refuses sends as Java does; the cluster table shows both broker ids; the two commit
logs are byte-identical."""

from __future__ import annotations

import asyncio
import contextlib
import filecmp
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import orjson
import pytest
from support.decoy_master import DecoyMaster
from support.ports import free_port, free_port_block
from support.procs import ManagedProcess
from support.pyrmq_proc import venv_python
from support.requests import pull, send_v2
from support.servers import write_properties
from support.stores import commit_log_files, wait_identical_commit_logs

from pyrmq.broker.processor import REJECT_REQUEST_REMARK
from pyrmq.protocol.bodies.admin import HARuntimeInfo
from pyrmq.protocol.bodies.namesrv import ClusterInfo
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import CreateTopicRequestHeader, SendMessageResponseHeader
from pyrmq.remoting.client import RemotingClient
from pyrmq.store import message as m

ROOT = Path(__file__).resolve().parents[2]
TOPIC = "HaT"


def _broker(
    tmp_path: Path, name: str, ns_port: int, port: int, system: tuple[str, ...] = (), **conf: object
) -> tuple[ManagedProcess, Path]:
    store = tmp_path / name
    path = write_properties(
        tmp_path / f"{name}.conf",
        {
            "brokerClusterName": "HaCluster",
            "brokerName": "ha-broker",
            "namesrvAddr": f"127.0.0.1:{ns_port}",
            "listenPort": port,
            "brokerIP1": "127.0.0.1",
            "bindAddress": "127.0.0.1",
            "storePathRootDir": store,
            "mappedFileSizeCommitLog": 64 * 1024,
            **conf,
        },
    )
    proc = ManagedProcess(
        name,
        [venv_python(), "-m", "pyrmq", "broker", "-c", str(path), *system],
        tmp_path / f"{name}.out",
        cwd=ROOT,
        env=dict(os.environ, HOME=str(tmp_path)),
    )
    return proc, store


def _namesrv(tmp_path: Path, system: tuple[str, ...] = ()) -> tuple[ManagedProcess, int]:
    """A `pyrmq namesrv` on a free port, once it listens (`system`: its -D options)."""
    port = free_port()
    conf = write_properties(tmp_path / "namesrv.conf", {"listenPort": port, "kvConfigPath": tmp_path / "kv.json"})
    ns = ManagedProcess(
        "namesrv",
        [venv_python(), "-m", "pyrmq", "namesrv", "-c", str(conf), "--host", "127.0.0.1", *system],
        tmp_path / "namesrv.out",
        cwd=ROOT,
        env=dict(os.environ, HOME=str(tmp_path)),
    )
    try:
        ns.wait_port(port, 20)
    except BaseException:
        ns.stop(10)
        raise
    return ns, port


class Pair(NamedTuple):
    ns_addr: str
    master_addr: str
    slave_addr: str
    master_store: Path
    slave_store: Path
    master: ManagedProcess
    slave: ManagedProcess


@contextlib.contextmanager
def _pair(
    tmp_path: Path, slave_conf: dict[str, object] | None = None, system: tuple[str, ...] = (), **master_conf: object
) -> Iterator[Pair]:
    """A name server, a master and a slave (slave_conf extends the slave's broker.conf; `system`:
    -D options of all three, as test_tls_servers.py's)."""
    m_port = free_port_block((-2, 0, 1))  # every broker's HA port is listenPort + 1
    s_port = free_port_block((-2, 0, 1))
    ns, ns_port = _namesrv(tmp_path, system)
    procs = [ns]
    try:
        master_conf.setdefault("brokerRole", "ASYNC_MASTER")
        master, m_store = _broker(tmp_path, "master", ns_port, m_port, system, brokerId=0, **master_conf)
        procs.append(master)
        master.wait_line(f"The broker[ha-broker, 127.0.0.1:{m_port}] boot success.")
        slave, s_store = _broker(
            tmp_path,
            "slave",
            ns_port,
            s_port,
            system,
            brokerId=1,
            brokerRole="SLAVE",
            slaveReadEnable="true",
            **(slave_conf or {}),
        )
        procs.append(slave)
        slave.wait_line(f"The broker[ha-broker, 127.0.0.1:{s_port}] boot success.")
        yield Pair(
            f"127.0.0.1:{ns_port}",
            f"127.0.0.1:{m_port}",
            f"127.0.0.1:{s_port}",
            m_store,
            s_store,
            master,
            slave,
        )
    finally:
        for p in reversed(procs):
            p.stop(10)


@pytest.fixture
def pair(tmp_path):
    """(namesrv addr, master addr, slave addr, master store, slave store)."""
    with _pair(tmp_path) as p:
        yield p.ns_addr, p.master_addr, p.slave_addr, p.master_store, p.slave_store


def _send(topic: str, body: bytes) -> RemotingCommand:
    return send_v2(topic, "ha-broker", body)


def _pull(topic: str, offset: int) -> RemotingCommand:
    return pull(topic, "hag", offset)


def test_master_slave_pair(pair):
    ns_addr, master_addr, slave_addr, m_store, s_store = pair
    bodies = [f"msg-{i}".encode() * 50 for i in range(200)]  # ~70 KiB: the 64 KiB commit log rolls

    async def scenario() -> None:
        async with RemotingClient() as c:
            create = CreateTopicRequestHeader(topic=TOPIC, read_queue_nums=1, write_queue_nums=1).to_ext_fields()
            for addr in (master_addr, slave_addr):  # the slave syncs no metadata yet (SlaveSynchronize)
                r = await c.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, create), 5)
                assert r.code == ResponseCode.SUCCESS, r
            for body in bodies:
                r = await c.invoke(master_addr, _send(TOPIC, body), 5)
                assert r.code == ResponseCode.SUCCESS, r
            # a slave refuses sends before processing them (Java SendMessageProcessor#rejectRequest)
            r = await c.invoke(slave_addr, _send(TOPIC, b"to the slave"), 5)
            assert (r.code, r.remark) == (ResponseCode.SYSTEM_BUSY, REJECT_REQUEST_REMARK)
            # the slave serves what the master took, through its own consume queue
            got: list[bytes] = []
            deadline = time.monotonic() + 20
            while len(got) < len(bodies):
                assert time.monotonic() < deadline, f"slave has {len(got)} of {len(bodies)}"
                r = await c.invoke(slave_addr, _pull(TOPIC, len(got)), 5)
                # with its master alive the slave points the consumer back to it (suggestWhichBrokerId 0)
                assert r.ext_fields["suggestWhichBrokerId"] == "0", r
                if r.code == ResponseCode.SUCCESS:
                    got += [x.body for x in m.decode_messages(r.body)]
                else:  # not yet replicated: Java answers "ask the master right away"
                    assert r.code == ResponseCode.PULL_RETRY_IMMEDIATELY, r
                    await asyncio.sleep(0.1)
            assert got == bodies
            # both broker ids under one broker name
            r = await c.invoke(ns_addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 5)
            info = ClusterInfo.decode(r.body)
            assert info.broker_addr_table is not None and info.cluster_addr_table is not None
            assert info.cluster_addr_table["HaCluster"] == ["ha-broker"]
            assert info.broker_addr_table["ha-broker"].broker_addrs == {0: master_addr, 1: slave_addr}
            # haStatus from both sides (Java DefaultHAService#getRuntimeInfo)
            ha = RemotingCommand.request(RequestCode.GET_BROKER_HA_STATUS)
            r = await c.invoke(master_addr, ha, 5)
            assert r.code == ResponseCode.SUCCESS, r
            on_master = HARuntimeInfo.decode(r.body)
            assert on_master.master and on_master.in_sync_slave_nums == 1
            (slave_conn,) = on_master.ha_connection_info
            assert slave_conn.slave_ack_offset == on_master.master_commit_log_max_offset > 0
            assert (slave_conn.diff, slave_conn.in_sync) == (0, True)
            assert slave_conn.addr is not None and slave_conn.addr.startswith("127.0.0.1:")
            r = await c.invoke(slave_addr, RemotingCommand.request(RequestCode.GET_BROKER_HA_STATUS), 5)
            on_slave = HARuntimeInfo.decode(r.body)
            assert not on_slave.master
            client = on_slave.ha_client_runtime_info
            assert client.master_addr == f"127.0.0.1:{int(master_addr.rsplit(':', 1)[1]) + 1}"
            assert client.max_offset == on_master.master_commit_log_max_offset
            assert client.last_read_timestamp > 0 and client.last_write_timestamp > 0
            # the slave counts replicated records as puts (Java ReputMessageService on a SLAVE):
            # clusterList's InTPS of a slave is not 0 while its master takes messages
            info = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO)
            tps = 0.0
            while tps == 0.0:
                assert time.monotonic() < deadline + 10, "the slave's putTps stayed 0"
                r = await c.invoke(slave_addr, info, 5)
                table = orjson.loads(r.body)["table"]
                tps = float(table["putTps"].split(" ")[0])
                await asyncio.sleep(0.2)
            assert int(table["putMessageTimesTotal"]) == len(bodies)

    asyncio.run(scenario())
    # the replicated range is byte for byte the master's
    names = sorted(os.listdir(s_store / "commitlog"))
    assert len(names) >= 2 and names == sorted(os.listdir(m_store / "commitlog"))
    match, mismatch, errors = filecmp.cmpfiles(m_store / "commitlog", s_store / "commitlog", names, shallow=False)
    assert (match, mismatch, errors) == (names, [], [])


def test_sync_master_waits_for_the_slave(tmp_path):
    """SYNC_MASTER with inSyncReplicas=2: SEND_OK only once the slave holds the message (it
    serves it at once); with the slave gone, FLUSH_SLAVE_TIMEOUT after slaveTimeout (Java
    CommitLog#handleHA, GroupTransferService)."""
    slave_timeout = 1500
    with _pair(tmp_path, brokerRole="SYNC_MASTER", inSyncReplicas=2, slaveTimeout=slave_timeout) as p:
        master_addr, slave_addr, slave = p.master_addr, p.slave_addr, p.slave

        async def scenario() -> None:
            async with RemotingClient() as c:
                create = CreateTopicRequestHeader(topic=TOPIC, read_queue_nums=1, write_queue_nums=1).to_ext_fields()
                for addr in (master_addr, slave_addr):
                    r = await c.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, create), 5)
                    assert r.code == ResponseCode.SUCCESS, r
                # the slave connects to the master's HA port after its first registration
                deadline = time.monotonic() + 20
                sent = 0
                while True:
                    r = await c.invoke(master_addr, _send(TOPIC, b"first"), 5)
                    sent += 1
                    if r.code == ResponseCode.SUCCESS:
                        break
                    assert r.code == ResponseCode.FLUSH_SLAVE_TIMEOUT, r
                    assert time.monotonic() < deadline, "the slave never acknowledged"
                for i in range(20):
                    body = f"sync-{i}".encode()
                    r = await c.invoke(master_addr, _send(TOPIC, body), 5)
                    assert r.code == ResponseCode.SUCCESS, r
                    offset = SendMessageResponseHeader.from_ext_fields(r.ext_fields).queue_offset
                    got = await c.invoke(slave_addr, _pull(TOPIC, offset), 5)  # no retry: it is there
                    assert got.code == ResponseCode.SUCCESS, got
                    assert next(iter(m.decode_messages(got.body))).body == body
                slave.stop(10)
                t0 = time.monotonic()
                r = await c.invoke(master_addr, _send(TOPIC, b"no slave"), 10)
                took = time.monotonic() - t0
                assert r.code == ResponseCode.FLUSH_SLAVE_TIMEOUT, r
                header = SendMessageResponseHeader.from_ext_fields(r.ext_fields)
                assert header.msg_id and header.queue_offset == sent + 20  # written, with the normal header
                assert slave_timeout / 1000 - 0.1 <= took <= slave_timeout / 1000 + 1.5, took

        asyncio.run(scenario())


def test_slave_needs_a_broker_id(tmp_path):
    proc, _ = _broker(tmp_path, "bad", free_port(), free_port_block((-2, 0)), brokerId=0, brokerRole="SLAVE")
    try:
        deadline = time.monotonic() + 20
        while proc.alive():
            assert time.monotonic() < deadline, proc.tail()
            time.sleep(0.05)
        assert "Slave's brokerId must be > 0" in proc.log.read_text()
    finally:
        proc.stop(5)


def _again(proc: ManagedProcess, tmp_path: Path, tag: str) -> ManagedProcess:
    """The same command line as a new process (same config, port and store)."""
    return ManagedProcess(
        proc.name, proc.argv, tmp_path / f"{proc.name}-{tag}.out", cwd=ROOT, env=dict(os.environ, HOME=str(tmp_path))
    )


def _used(store: Path) -> int:
    d = store / "commitlog"
    return sum(len(f.read_bytes().rstrip(b"\0")) for f in d.iterdir()) if d.is_dir() else 0


def _assert_identical(m_store: Path, s_store: Path, timeout: float = 60) -> None:
    """The shared poll (bytes read afresh each time: filecmp caches a verdict by size and mtime,
    which writes through a mapping leave as they were), and the same file names on both sides."""
    got = wait_identical_commit_logs(m_store, s_store, timeout)
    assert sorted(got) == sorted(commit_log_files(m_store)), (sorted(got), sorted(commit_log_files(m_store)))


def test_slave_killed_mid_transfer_resumes_byte_for_byte(tmp_path):
    """SIGKILL the slave while it is catching up on several MiB: restarted, it recovers its torn
    tail and resumes from its own max offset; the two logs end byte-identical."""
    with _pair(tmp_path) as p:

        async def send(n: int, size: int) -> None:
            async with RemotingClient() as c:
                create = CreateTopicRequestHeader(topic=TOPIC, read_queue_nums=1, write_queue_nums=1).to_ext_fields()
                r = await c.invoke(
                    p.master_addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, create), 5
                )
                assert r.code == ResponseCode.SUCCESS, r
                for i in range(n):
                    r = await c.invoke(p.master_addr, _send(TOPIC, bytes([65 + i % 26]) * size), 10)
                    assert r.code == ResponseCode.SUCCESS, r

        asyncio.run(send(1, 100))
        _assert_identical(p.master_store, p.slave_store)  # the slave holds a start: it resumes, not restarts
        p.slave.kill9()
        asyncio.run(send(240, 30_000))  # ~7 MiB in 64 KiB files, while the slave is down
        target = _used(p.master_store)
        slave = _again(p.slave, tmp_path, "2")
        try:
            deadline = time.monotonic() + 60
            while not 0 < _used(p.slave_store) - 100 < target // 2:
                assert time.monotonic() < deadline and slave.alive(), slave.tail()
                time.sleep(0.005)
            slave.kill9()
            assert _used(p.slave_store) < target
            slave = _again(p.slave, tmp_path, "3")
            _assert_identical(p.master_store, p.slave_store)
        finally:
            slave.stop(10)


def test_master_paused_then_resumed(tmp_path):
    """SIGSTOP the master (a partition: sockets open, nothing answered) longer than the slave's
    haHousekeepingInterval: the slave gives up the connection; after SIGCONT it reconnects and
    catches up with what the master takes next, byte for byte, nothing twice."""
    with _pair(tmp_path, slave_conf={"haHousekeepingInterval": 2000}) as p:

        async def send(first: int, n: int) -> None:
            async with RemotingClient() as c:
                create = CreateTopicRequestHeader(topic=TOPIC, read_queue_nums=1, write_queue_nums=1).to_ext_fields()
                r = await c.invoke(
                    p.master_addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, create), 5
                )
                assert r.code == ResponseCode.SUCCESS, r
                for i in range(first, first + n):
                    r = await c.invoke(p.master_addr, _send(TOPIC, f"paused-{i}".encode() * 50), 10)
                    assert r.code == ResponseCode.SUCCESS, r

        asyncio.run(send(0, 50))
        _assert_identical(p.master_store, p.slave_store)
        p.master.pause()
        try:
            p.slave.wait_line("master silent for", 15)
        finally:
            p.master.resume()
        asyncio.run(send(50, 50))
        _assert_identical(p.master_store, p.slave_store)

        async def pulled() -> list[bytes]:
            got: list[bytes] = []
            async with RemotingClient() as c:
                create = CreateTopicRequestHeader(topic=TOPIC, read_queue_nums=1, write_queue_nums=1).to_ext_fields()
                r = await c.invoke(
                    p.slave_addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, create), 5
                )
                assert r.code == ResponseCode.SUCCESS, r
                while True:
                    r = await c.invoke(p.slave_addr, _pull(TOPIC, len(got)), 5)
                    if r.code != ResponseCode.SUCCESS:
                        return got
                    got += [x.body for x in m.decode_messages(r.body)]

        assert asyncio.run(pulled()) == [f"paused-{i}".encode() * 50 for i in range(100)]


def test_dledger_commit_log_without_its_keys_is_refused(tmp_path):
    proc, _ = _broker(tmp_path, "dleger", free_port(), free_port_block((-2, 0)), enableDLegerCommitLog="true")
    deadline = time.monotonic() + 20
    while proc.alive():
        assert time.monotonic() < deadline, proc.tail()
        time.sleep(0.05)
    assert proc.proc.returncode == 1
    assert "enableDLegerCommitLog=true needs dLegerGroup, dLegerPeers and dLegerSelfId" in proc.log.read_text()


def test_ha_master_address_is_used_instead_of_the_name_servers(tmp_path):
    """Java BrokerController#initialize: a SLAVE with haMasterAddress (6 characters or more)
    connects there, and the master the name server names in its REGISTER_BROKER answer no longer
    replaces it (updateMasterHAServerAddrPeriodically is off). The master registers nowhere; the
    name server knows only a decoy brokerId 0 whose HA address holds and counts connections.
    - `slave` (haMasterAddress = the master) registers there and replicates from the master;
    - `follower` (no haMasterAddress) follows the name server's answer to the decoy: it does teach;
    - `cascade` (no name server, haMasterAddress = the slave's HA port) replicates from the slave:
      a slave's HA service serves its own commit log (Java DefaultHAService#start, both roles)."""
    ns, ns_port = _namesrv(tmp_path)
    procs = [ns]
    decoy = None
    try:
        decoy = DecoyMaster(f"127.0.0.1:{ns_port}", "HaCluster", "ha-broker")
        ports = {name: free_port_block((-2, 0, 1)) for name in ("master", "slave", "follower", "cascade")}
        configured, via_slave = (f"127.0.0.1:{ports[name] + 1}" for name in ("master", "slave"))
        confs: dict[str, dict[str, object]] = {
            "master": {"brokerId": 0, "namesrvAddr": ""},
            "slave": {"brokerId": 1, "brokerRole": "SLAVE", "haMasterAddress": configured},
            # holds the decoy's connection for the whole test
            "follower": {"brokerId": 2, "brokerRole": "SLAVE", "haHousekeepingInterval": 300_000},
            "cascade": {
                "brokerId": 3,
                "brokerRole": "SLAVE",
                "namesrvAddr": "",
                "haMasterAddress": via_slave,
            },
        }
        stores: dict[str, Path] = {}
        for name, conf in confs.items():
            proc, stores[name] = _broker(tmp_path, name, ns_port, ports[name], **conf)
            procs.append(proc)
        for proc in procs[1:]:
            proc.wait_line(f"The broker[ha-broker, 127.0.0.1:{ports[proc.name]}] boot success.")
        addr = {name: f"127.0.0.1:{port}" for name, port in ports.items()}

        async def scenario() -> None:
            async with RemotingClient() as c:

                async def ha_status(name: str) -> HARuntimeInfo:
                    r = await c.invoke(addr[name], RemotingCommand.request(RequestCode.GET_BROKER_HA_STATUS), 5)
                    assert r.code == ResponseCode.SUCCESS, r
                    return HARuntimeInfo.decode(r.body)

                create = CreateTopicRequestHeader(topic=TOPIC, read_queue_nums=1, write_queue_nums=1).to_ext_fields()
                r = await c.invoke(
                    addr["master"], RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, create), 5
                )
                assert r.code == ResponseCode.SUCCESS, r
                for i in range(50):
                    r = await c.invoke(addr["master"], _send(TOPIC, f"configured-{i}".encode() * 40), 5)
                    assert r.code == ResponseCode.SUCCESS, r
                # both registered slaves had the name server's answer, naming the decoy
                deadline = time.monotonic() + 20
                ns_addr = f"127.0.0.1:{ns_port}"
                while True:
                    r = await c.invoke(ns_addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 5)
                    table = ClusterInfo.decode(r.body).broker_addr_table or {}
                    ids = set(table["ha-broker"].broker_addrs) if "ha-broker" in table else set()
                    if ids == {0, 1, 2}:
                        break
                    assert time.monotonic() < deadline, ids
                    await asyncio.sleep(0.1)
                assert decoy is not None
                while decoy.connections() == 0:  # the follower took the name server's word
                    assert time.monotonic() < deadline, "the follower never connected to the decoy"
                    await asyncio.sleep(0.1)
                assert (await ha_status("follower")).ha_client_runtime_info.master_addr == decoy.ha_addr
                assert (await ha_status("slave")).ha_client_runtime_info.master_addr == configured
                assert (await ha_status("cascade")).ha_client_runtime_info.master_addr == via_slave
                _assert_identical(stores["master"], stores["slave"])
                _assert_identical(stores["master"], stores["cascade"])
                # the master serves the slave only (neither the follower nor the cascade), which acks all
                while True:
                    on_master = await ha_status("master")
                    (conn,) = on_master.ha_connection_info
                    if conn.slave_ack_offset == on_master.master_commit_log_max_offset > 0:
                        break
                    assert time.monotonic() < deadline + 30, conn
                    await asyncio.sleep(0.1)

        asyncio.run(scenario())
        assert decoy.connections() == 1, "the slave with haMasterAddress connected to the decoy too"
        assert all(p.alive() for p in procs)
    finally:
        if decoy is not None:
            decoy.close()
        for p in reversed(procs):
            p.stop(10)
