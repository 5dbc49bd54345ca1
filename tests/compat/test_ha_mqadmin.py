"""The official mqadmin 5.5.0 on a master/slave group: a pyrmq pair at the pyrmq name server and a
Java 5.5.0 pair at the Java name server, same cluster and broker names. clusterList shows both
roles alike (BID 0 and 1, ACTIVATED true on the master only), brokerStatus of a slave has the
Java slave's keys, and haStatus reads alike on master and slave (numbers and addresses aside)."""

from __future__ import annotations

import re
import time

import pytest
from support import probe
from support.java import mqadmin
from support.requests import send_v2

from pyrmq.protocol.codes import RequestCode, ResponseCode

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.slow]

CLUSTER = "HaAdminCluster"
NAME = "ha-admin"


def _pair(namesrv, make, **master_conf):
    master = make(namesrv.addr, name=NAME, cluster=CLUSTER, fresh=True, **master_conf)
    slave = make(namesrv.addr, name=NAME, cluster=CLUSTER, brokerId=1, brokerRole="SLAVE", fresh=True)
    return master, slave


def _run(java_home, *args: str) -> str:
    out = mqadmin("5.5.0", *args, home=java_home)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def _cluster_rows(text: str, master_addr: str, slave_addr: str) -> list[str]:
    """Cluster, broker name, BID, role by address, version, ACTIVATED; TPS, hours and space move."""
    rows = []
    for line in text.splitlines():
        cols = line.split()
        if len(cols) < 6 or cols[0] != CLUSTER:
            continue
        who = {master_addr: "<master>", slave_addr: "<slave>"}.get(cols[3], cols[3])
        rows.append(" ".join([cols[0], cols[1], cols[2], who, cols[4], cols[-1]]))
    return sorted(rows)


NUMBER = re.compile(r"-?\d+(\.\d+)?")
ADDR = re.compile(r"\d+\.\d+\.\d+\.\d+:\d+")
TIME = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}")


def _shape(text: str) -> str:
    return NUMBER.sub("<n>", ADDR.sub("<addr>", TIME.sub("<time>", text))).strip()


def _wait_in_sync(master_addr: str, java_home, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while True:
        text = _run(java_home, "haStatus", "-b", master_addr)
        if "#InSyncSlaveNum\t1" in text:
            return text
        assert time.monotonic() < deadline, text
        time.sleep(1)


def _send_burst(master_addr: str, n: int = 200) -> None:
    """``n`` messages to the master, on a topic made for them (the slave replicates them)."""
    topic = "HaAdminTps"
    probe.create_topic(master_addr, topic)
    for i in range(n):
        req = send_v2(topic, NAME, b"tps-%d" % i, queue_id=i % 4)
        r = probe.request(master_addr, RequestCode.SEND_MESSAGE_V2, req.ext_fields, timeout=10, body=req.body)
        assert r.code == ResponseCode.SUCCESS, r


def _in_tps(text: str, addr: str) -> float:
    """clusterList's InTPS of the broker at ``addr`` (the figure before "(load)")."""
    for line in text.splitlines():
        cols = line.split()
        if len(cols) >= 6 and cols[0] == CLUSTER and cols[3] == addr:
            return float(cols[5].split("(")[0])
    raise AssertionError(f"{addr} not in clusterList:\n{text}")


def _slave_in_tps(ns_addr: str, master_addr: str, slave_addr: str, java_home, timeout: float = 30) -> float:
    """A slave counts the records it replicates as puts (Java's ReputMessageService on a SLAVE),
    so its InTPS follows the master's while messages flow; the figure is a 10 s window."""
    _send_burst(master_addr)
    deadline = time.monotonic() + timeout
    while True:
        tps = _in_tps(_run(java_home, "clusterList", "-n", ns_addr), slave_addr)
        if tps > 0 or time.monotonic() > deadline:
            return tps
        _send_burst(master_addr, 50)


def test_mqadmin_sees_a_pyrmq_pair_as_a_java_pair(pyrmq_namesrv, pyrmq_broker, java_namesrv, java_broker, java_home):
    sides = {
        "pyrmq": (pyrmq_namesrv, *_pair(pyrmq_namesrv, pyrmq_broker)),
        "java": (java_namesrv, *_pair(java_namesrv, java_broker, brokerIP2="127.0.0.1")),
    }
    seen: dict[str, dict[str, object]] = {}
    for kind, (ns, master, slave) in sides.items():
        master_ha = _wait_in_sync(master.addr, java_home)
        deadline = time.monotonic() + 60
        while True:  # a Java broker's runtime figures come with its first stats round
            rows = _cluster_rows(_run(java_home, "clusterList", "-n", ns.addr), master.addr, slave.addr)
            if len(rows) == 2 or time.monotonic() > deadline:
                break
            time.sleep(1)
        status = _run(java_home, "brokerStatus", "-b", slave.addr)
        seen[kind] = {
            "clusterList": rows,
            "slave InTPS above 0 while messages flow": _slave_in_tps(ns.addr, master.addr, slave.addr, java_home) > 0,
            "slave brokerStatus keys": sorted(
                re.sub(r"_/.*", "_<path>", ln.split(":")[0].strip()) for ln in status.splitlines() if ":" in ln
            ),
            "haStatus master": _shape(master_ha),
            "haStatus slave": _shape(_run(java_home, "haStatus", "-b", slave.addr)),
        }
    for what in seen["java"]:
        if what == "slave brokerStatus keys":
            missing = set(seen["java"][what]) - set(seen["pyrmq"][what])  # type: ignore[arg-type]
            assert not missing, f"{what}: pyrmq lacks {sorted(missing)}"
        else:
            assert seen["pyrmq"][what] == seen["java"][what], what
