"""Classic HA between pyrmq and the official Java 5.5.0 broker, each direction in its own test:
a Java slave (brokerRole=SLAVE, brokerId=1, same brokerName) replicates from a pyrmq master, and
a pyrmq slave replicates from a Java master. Both learn the master's HA address from the (pyrmq)
name server's REGISTER_BROKER answer. Messages are sent to the master with pyrmq's raw remoting
client; the two commit logs must then be byte-identical file for file (the log rolls), and the
slave serves the messages through its own consume queue (slaveReadEnable). Topics and consumer
offsets reach the slave only through SlaveSynchronize (its first run is 10 s after the start); the
Java slave logs no SlaveSynchronize error against the pyrmq master."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from support.requests import pull, send_v2
from support.stores import commit_log_files, wait_identical_commit_logs

from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import (
    CreateTopicRequestHeader,
    QueryConsumerOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from pyrmq.remoting.client import RemotingClient
from pyrmq.store import message as m
from pyrmq.store.config import SubscriptionGroupConfig

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.slow]

CL_SIZE = 256 * 1024  # small commit-log files, so the replicated log rolls
TOPIC = "HaJavaT"
GROUP = "HaJavaG"
N = 300
COMMITTED = 123  # a consumer offset committed on the master
#: what Java's SlaveSynchronize logs when a master's answer fails (broker.log)
SYNC_ERRORS = (
    "SyncTopicConfig Exception",
    "SyncConsumerOffset Exception",
    "SyncDelayOffset Exception",
    "SyncSubscriptionGroup Exception",
    "SyncMessageRequestMode Exception",
    "syncTimerCheckPoint Exception",
    "SyncTimerMetrics Exception",
)


def _bodies() -> list[bytes]:
    return [f"ha-{i:04d}-".encode() * 3 * (1 + i % 200) for i in range(N)]  # ~720 KiB: three files


def _send(broker_name: str, body: bytes) -> RemotingCommand:
    return send_v2(TOPIC, broker_name, body, group="HaJavaPG", queues=1)


def _pull(offset: int) -> RemotingCommand:
    return pull(TOPIC, GROUP, offset)


async def _create_topic(c: RemotingClient, addr: str) -> None:
    header = CreateTopicRequestHeader(topic=TOPIC, read_queue_nums=1, write_queue_nums=1).to_ext_fields()
    r = await c.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header), 10)
    assert r.code == ResponseCode.SUCCESS, r


async def _commit_offset(c: RemotingClient, addr: str) -> None:
    """Creates the group (brokers refuse offsets of an unknown group), then commits COMMITTED."""
    body = SubscriptionGroupConfig(group_name=GROUP).encode()
    r = await c.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body), 10)
    assert r.code == ResponseCode.SUCCESS, r
    h = UpdateConsumerOffsetRequestHeader(consumer_group=GROUP, topic=TOPIC, queue_id=0, commit_offset=COMMITTED)
    r = await c.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, h.to_ext_fields()), 10)
    assert r.code == ResponseCode.SUCCESS, r


async def _wait_synced_offset(c: RemotingClient, addr: str, timeout: float = 40) -> None:
    """Until the slave answers the master's committed offset: SlaveSynchronize brought it. Before,
    it answers QUERY_NOT_FOUND, or 0 when its queue starts at 0 (Java's rule)."""
    h = QueryConsumerOffsetRequestHeader(consumer_group=GROUP, topic=TOPIC, queue_id=0)
    deadline = time.monotonic() + timeout
    while True:
        r = await c.invoke(addr, RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, h.to_ext_fields()), 10)
        if r.code == ResponseCode.SUCCESS and (r.ext_fields or {}).get("offset") == str(COMMITTED):
            return
        assert time.monotonic() < deadline, f"the slave never had offset {COMMITTED} after {timeout}s: {r}"
        await asyncio.sleep(0.5)


async def _send_all(
    c: RemotingClient, master_addr: str, broker_name: str, bodies: list[bytes], master_store: Path, slave_store: Path
) -> None:
    """The first message, then (once the slave holds it) the rest: a slave that connects with an
    empty store gets only the master's last file (Java's rule), so the log must not roll before."""
    for i, body in enumerate(bodies):
        r = await c.invoke(master_addr, _send(broker_name, body), 10)
        assert r.code == ResponseCode.SUCCESS, r
        if i == 0:
            wait_identical_commit_logs(master_store, slave_store)


async def _pull_all(c: RemotingClient, slave_addr: str, n: int, timeout: float = 60) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    last = None
    while len(got) < n:
        assert time.monotonic() < deadline, f"the slave served {len(got)} of {n}; last answer {last}"
        last = await c.invoke(slave_addr, _pull(len(got)), 10)
        if last.code == ResponseCode.SUCCESS:
            got += [x.body for x in m.decode_messages(last.body)]
        else:
            await asyncio.sleep(0.2)
    return got


def test_java_slave_replicates_from_pyrmq_master(pyrmq_namesrv, pyrmq_broker, java_broker):
    name = "ha-pyrmq-master"
    master = pyrmq_broker(
        pyrmq_namesrv.addr, name=name, brokerRole="ASYNC_MASTER", mappedFileSizeCommitLog=CL_SIZE, fresh=True
    )
    slave = java_broker(
        pyrmq_namesrv.addr,
        name=name,
        brokerId=1,
        brokerRole="SLAVE",
        slaveReadEnable="true",
        mappedFileSizeCommitLog=CL_SIZE,
        fresh=True,
    )
    bodies = _bodies()

    async def scenario() -> None:
        async with RemotingClient() as c:
            await _create_topic(c, master.addr)
            await _commit_offset(c, master.addr)
            await _send_all(c, master.addr, name, bodies, master.store_dir, slave.store_dir)
            wait_identical_commit_logs(master.store_dir, slave.store_dir)
            # the topic comes from the master (SlaveSynchronize), not from us. The Java slave's
            # first full sync runs 10 s after its initialize, often before its first registration
            # told it the master's address; the next one comes 60 s later
            assert await _pull_all(c, slave.addr, N, timeout=100) == bodies
            await _wait_synced_offset(c, slave.addr)
        # one SlaveSynchronize round logs these in order; the offset seen above may come mid-round
        wanted = (
            "Update slave consumer offset from master",
            "Update slave delay offset from master",
            "Update slave Message Request Mode from master",
        )
        deadline = time.monotonic() + 30
        while True:
            log = (slave.home / "logs/rocketmqlogs/broker.log").read_text(errors="replace")
            missing = [w for w in wanted if w not in log]
            if not missing:
                break
            assert time.monotonic() < deadline, f"the Java slave never logged {missing}"
            await asyncio.sleep(0.5)
        errors = [line for line in log.splitlines() if any(e in line for e in SYNC_ERRORS)]
        assert not errors, errors[:5]

    asyncio.run(scenario())
    files = commit_log_files(slave.store_dir)
    assert sum(1 for b in files.values() if b.count(0) != len(b)) >= 3, sorted(files)  # the log rolled


def test_pyrmq_slave_replicates_from_java_master(pyrmq_namesrv, pyrmq_broker, java_broker):
    name = "ha-java-master"
    master = java_broker(
        pyrmq_namesrv.addr,
        name=name,
        brokerRole="ASYNC_MASTER",
        brokerIP2="127.0.0.1",  # its haServerAddr (brokerIP2 defaults to the host's first address)
        mappedFileSizeCommitLog=CL_SIZE,
        fresh=True,
    )
    slave = pyrmq_broker(
        pyrmq_namesrv.addr,
        name=name,
        brokerId=1,
        brokerRole="SLAVE",
        slaveReadEnable="true",
        mappedFileSizeCommitLog=CL_SIZE,
        fresh=True,
    )
    bodies = _bodies()

    async def scenario() -> None:
        async with RemotingClient() as c:
            await _create_topic(c, master.addr)
            await _commit_offset(c, master.addr)
            await _send_all(c, master.addr, name, bodies, master.store_dir, slave.store_dir)
            wait_identical_commit_logs(master.store_dir, slave.store_dir)
            # the topic and the offset come from the Java master (SlaveSynchronize), not from us
            assert await _pull_all(c, slave.addr, N) == bodies
            await _wait_synced_offset(c, slave.addr)
            # the pyrmq slave refuses sends as the Java one does
            r = await c.invoke(slave.addr, _send(name, b"to the slave"), 10)
            assert r.code == ResponseCode.SYSTEM_BUSY, r

    asyncio.run(scenario())
    files = commit_log_files(slave.store_dir)
    assert sum(1 for b in files.values() if b.count(0) != len(b)) >= 3, sorted(files)  # the log rolled
