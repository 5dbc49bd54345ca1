"""The official 5.5.0 producer against a pyrmq SYNC_MASTER with inSyncReplicas=2 (Java 5.5.0 waits
for a replica only then), with a pyrmq slave and with a Java 5.5.0 slave: SEND_OK while the slave
replicates; with the slave SIGSTOPped, SendStatus FLUSH_SLAVE_TIMEOUT after slaveTimeout (the
message is on the master, not acknowledged by a replica: never a false SEND_OK); resumed, the slave
catches up and sends are SEND_OK again."""

from __future__ import annotations

import time

import pytest
from support.java import run_junit

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.slow]

TOPIC = "SyncMasterT"
SLAVE_TIMEOUT_MS = 1500


def _send(namesrv: str, topic: str, java_home, tmp_path, expect: str, count: int, prefix: str) -> float:
    props = {
        "namesrv": namesrv,
        "topic": topic,
        "count": count,
        "expect": expect,
        "prefix": prefix,
        "ids": tmp_path / f"{prefix}.ids",
    }
    t0 = time.monotonic()
    run_junit("5.5.0", "SyncMasterTest", "send", props=props, home=java_home, timeout=180)
    return time.monotonic() - t0


def _scenario(pyrmq_namesrv, master, slave, java_home, tmp_path) -> None:
    """The group is the only one at the name server: the producer's topic (auto-created through
    TBW102) must live on this master alone, or its SEND_OKs could come from another group."""
    topic = f"{TOPIC}_{master.name}"
    try:
        # the slave connects after its first registration; the first sends may wait for it
        deadline = time.monotonic() + 90
        while True:
            try:
                _send(pyrmq_namesrv.addr, topic, java_home, tmp_path, "SEND_OK", 20, "ok")
                break
            except AssertionError:
                assert time.monotonic() < deadline, "sends never became SEND_OK"
                time.sleep(2)
        slave.managed.pause()
        try:
            took = _send(pyrmq_namesrv.addr, topic, java_home, tmp_path, "FLUSH_SLAVE_TIMEOUT", 3, "stopped")
        finally:
            slave.managed.resume()
        assert took > 3 * SLAVE_TIMEOUT_MS / 1000, f"3 FLUSH_SLAVE_TIMEOUT answers came in {took:.1f} s"
        _send(pyrmq_namesrv.addr, topic, java_home, tmp_path, "SEND_OK", 5, "again")
    finally:
        slave.stop()
        master.stop()


def test_official_producer_on_a_pyrmq_sync_master_with_a_pyrmq_slave(pyrmq_namesrv, pyrmq_broker, java_home, tmp_path):
    name = "sync-master-py"
    conf = {"brokerRole": "SYNC_MASTER", "inSyncReplicas": 2, "slaveTimeout": SLAVE_TIMEOUT_MS}
    master = pyrmq_broker(pyrmq_namesrv.addr, name=name, fresh=True, **conf)
    slave = pyrmq_broker(pyrmq_namesrv.addr, name=name, brokerId=1, brokerRole="SLAVE", fresh=True)
    _scenario(pyrmq_namesrv, master, slave, java_home, tmp_path)


def test_official_producer_on_a_pyrmq_sync_master_with_a_java_slave(
    pyrmq_namesrv, pyrmq_broker, java_broker, java_home, tmp_path
):
    name = "sync-master-java-slave"
    conf = {"brokerRole": "SYNC_MASTER", "inSyncReplicas": 2, "slaveTimeout": SLAVE_TIMEOUT_MS}
    master = pyrmq_broker(pyrmq_namesrv.addr, name=name, fresh=True, **conf)
    slave = java_broker(pyrmq_namesrv.addr, name=name, brokerId=1, brokerRole="SLAVE", fresh=True)
    _scenario(pyrmq_namesrv, master, slave, java_home, tmp_path)
