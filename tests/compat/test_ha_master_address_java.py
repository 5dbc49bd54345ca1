"""haMasterAddress between pyrmq and the official Java 5.5.0 broker: a slave whose broker.conf sets
haMasterAddress connects there (Java BrokerController#initialize), and the master its name server
names no longer replaces it (updateMasterHAServerAddrPeriodically off). Each direction in its own
test:
- a Java slave with haMasterAddress = a pyrmq master's HA port;
- a pyrmq slave with haMasterAddress = a Java master's HA port.
The master registers at one name server; the slave at a second one, where a decoy brokerId 0 of the
same broker name is registered with an HA address that holds and counts connections (the name
server's answer to a slave names the decoy: checked). The slave must replicate from the configured
master, byte-identical file for file while the log rolls, serve the messages by pull, show the
configured address in haStatus and never connect to the decoy.

Opt-in (`soak`, PYRMQ_SOAK=1): a JVM broker per test, about a minute each on the shared machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from compat.test_ha_java import CL_SIZE, N, _bodies, _create_topic, _pull_all, _send_all
from support.decoy_master import DecoyMaster
from support.servers import namesrv_under_test
from support.stores import commit_log_files, wait_identical_commit_logs

from pyrmq.protocol.bodies.admin import HARuntimeInfo
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.remoting.client import RemotingClient

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.slow, pytest.mark.soak]

CLUSTER = "DefaultCluster"  # the cluster java_broker and pyrmq_broker register in
#: the slave's broker.conf, haMasterAddress aside
SLAVE = {"brokerId": 1, "brokerRole": "SLAVE", "slaveReadEnable": "true", "mappedFileSizeCommitLog": CL_SIZE}


@contextlib.contextmanager
def _decoy_namesrv(workdir: Path, broker_name: str) -> Iterator[DecoyMaster]:
    """A second name server whose brokerId 0 of `broker_name` is a decoy."""
    ns = namesrv_under_test(workdir, scanNotActiveBrokerInterval=1000)
    decoy = None
    try:
        decoy = DecoyMaster(ns.addr, CLUSTER, broker_name)
        answer = decoy.answer_to_a_slave()
        assert (answer.ha_server_addr, answer.master_addr) == (decoy.ha_addr, decoy.broker_addr), answer
        yield decoy
    finally:
        if decoy is not None:
            decoy.close()
        ns.stop()


def _replicates_from_the_configured_master(master, slave, decoy: DecoyMaster, configured: str) -> None:
    bodies = _bodies()

    async def scenario() -> None:
        async with RemotingClient() as c:
            for addr in (master.addr, slave.addr):  # the slave's SlaveSynchronize asks the decoy
                await _create_topic(c, addr)
            await _send_all(c, master.addr, master.name, bodies, master.store_dir, slave.store_dir)
            wait_identical_commit_logs(master.store_dir, slave.store_dir)
            assert await _pull_all(c, slave.addr, N) == bodies
            r = await c.invoke(slave.addr, RemotingCommand.request(RequestCode.GET_BROKER_HA_STATUS), 10)
            assert r.code == ResponseCode.SUCCESS, r
            on_slave = HARuntimeInfo.decode(r.body)
            assert not on_slave.master and on_slave.ha_client_runtime_info.master_addr == configured

    asyncio.run(scenario())
    files = commit_log_files(slave.store_dir)
    assert sum(1 for b in files.values() if b.count(0) != len(b)) >= 3, sorted(files)  # the log rolled
    assert decoy.connections() == 0, "the slave connected to the master its name server named"


def test_java_slave_follows_ha_master_address_to_a_pyrmq_master(pyrmq_namesrv, pyrmq_broker, java_broker, tmp_path):
    name = "ha-addr-pyrmq-master"
    master = pyrmq_broker(
        pyrmq_namesrv.addr, name=name, brokerRole="ASYNC_MASTER", mappedFileSizeCommitLog=CL_SIZE, fresh=True
    )
    configured = f"127.0.0.1:{master.port + 1}"
    with _decoy_namesrv(tmp_path / "ns-decoy", name) as decoy:
        slave = java_broker(decoy.namesrv_addr, name=name, haMasterAddress=configured, fresh=True, **SLAVE)
        _replicates_from_the_configured_master(master, slave, decoy, configured)
        # DefaultHAClient logs (store.log, written asynchronously) each address it is given and each connect
        store_log = slave.home / "logs/rocketmqlogs/store.log"
        deadline = time.monotonic() + 20
        while f"HAClient connect to master {configured}" not in store_log.read_text(errors="replace"):
            assert time.monotonic() < deadline, f"no connect to {configured} in {store_log}"
            time.sleep(0.5)
        lines = store_log.read_text(errors="replace").splitlines()
        given = [line for line in lines if "update master ha address" in line]
        assert given and all(decoy.ha_addr not in line for line in given), given


def test_pyrmq_slave_follows_ha_master_address_to_a_java_master(pyrmq_namesrv, pyrmq_broker, java_broker, tmp_path):
    name = "ha-addr-java-master"
    master = java_broker(
        pyrmq_namesrv.addr,
        name=name,
        brokerRole="ASYNC_MASTER",
        brokerIP2="127.0.0.1",
        mappedFileSizeCommitLog=CL_SIZE,
        fresh=True,
    )
    configured = f"127.0.0.1:{master.port + 1}"
    with _decoy_namesrv(tmp_path / "ns-decoy", name) as decoy:
        slave = pyrmq_broker(decoy.namesrv_addr, name=name, haMasterAddress=configured, fresh=True, **SLAVE)
        _replicates_from_the_configured_master(master, slave, decoy, configured)
