"""POP consumption with the official Java 5.5.0 remoting client and mqadmin (issue 15).

The JUnit cases in compat/java-tests/scenarios5/PopTest (compiled for the 5.x client only) run
the example simple.PopConsumer's way: the admin API's setMessageRequestMode switches the group
to POP, then DefaultMQPushConsumer with setClientRebalance(false) pops through QUERY_ASSIGNMENT,
POP_MESSAGE, ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME, and the broker's revive brings back
what was not acked. Run against pyrmq by default and against the Java 5.5.0 broker with
PYRMQ_COMPAT_REFERENCE=1 (the scenario states Java's behaviour).

test_set_consume_mode_matches_java runs ``mqadmin setConsumeMode`` against a pyrmq and a Java
broker in the same test and compares what each persisted (config/messageRequestMode.json). It
starts a Java broker and sixteen mqadmin JVMs (minutes on a busy machine), so it is a reference
run (PYRMQ_COMPAT_REFERENCE=1); the default run checks the same file against bytes the 5.5.0
classes wrote (tests/unit/broker/test_query_assignment.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.clusters import cluster_of
from support.java import run_junit

pytestmark = [pytest.mark.compat, pytest.mark.java]

ROOT = Path(__file__).resolve().parents[2]
BROKER = "pop-compat"
CASE_TIMEOUT = 150
INVISIBLE_MS = 5000


@pytest.fixture(scope="module", params=["pyrmq", "java"])
def broker_kind(request):
    return request.param


@pytest.fixture(scope="module")
def cluster(broker_kind, request, java_harness):
    return cluster_of(request, broker_kind, BROKER)


def test_pop_consumer(cluster, java_home):
    """The four PopTest cases in one JVM, run concurrently (each has its own topic and group):
    the run takes as long as the slowest case (the 10 s redelivery), not their sum."""
    ns, _ = cluster
    props = {
        "namesrv": ns.addr,
        "count": 30,
        "invisibleMs": INVISIBLE_MS,
        "junit.jupiter.execution.parallel.enabled": "true",
        "junit.jupiter.execution.parallel.mode.default": "concurrent",
    }
    r = run_junit("5.5.0", "io.pyrmq.compat.scenarios5.PopTest", props=props, home=java_home, timeout=CASE_TIMEOUT)
    print(r.stdout[-3000:])
    for case in ("popExactlyOnce", "popRedelivery", "popNotAcked", "popOrderly"):
        assert f"{case}()" in r.stdout, r.stdout[-3000:]


@pytest.mark.reference
def test_set_consume_mode_matches_java(request, java_harness, mqadmin):
    """mqadmin setConsumeMode (POP, then PULL for a second group) on both brokers: the same
    answer, and the same messageRequestMode.json, byte for byte."""
    pns = request.getfixturevalue("pyrmq_namesrv")
    jns = request.getfixturevalue("java_namesrv")
    sides = {
        "pyrmq": (pns, request.getfixturevalue("pyrmq_broker")(pns.addr, name="pop-mode")),
        "java": (jns, request.getfixturevalue("java_broker")(jns.addr, name="pop-mode")),
    }
    files = {}
    for label, (ns, broker) in sides.items():
        r = mqadmin("5.5.0", "updateTopic", "-b", broker.addr, "-t", "PopModeT", "-r", "4", "-w", "4", namesrv=ns.addr)
        assert r.returncode == 0, r.stdout + r.stderr
        for group, mode, share in (("pop_mode_g", "POP", "2"), ("pull_mode_g", "PULL", "0")):
            r = mqadmin("5.5.0", "updateSubGroup", "-b", broker.addr, "-g", group, namesrv=ns.addr)
            assert r.returncode == 0, r.stdout + r.stderr
            r = mqadmin(
                "5.5.0",
                "setConsumeMode",
                "-b",
                broker.addr,
                "-t",
                "PopModeT",
                "-g",
                group,
                "-m",
                mode,
                "-q",
                share,
                namesrv=ns.addr,
            )
            assert f"set consume mode to {broker.addr} success." in r.stdout, (label, r.stdout, r.stderr)
        r = mqadmin(
            "5.5.0",
            "setConsumeMode",
            "-b",
            broker.addr,
            "-t",
            "%RETRY%pop_mode_g",
            "-g",
            "pop_mode_g",
            "-m",
            "POP",
            namesrv=ns.addr,
        )
        assert "NO_PERMISSION" in r.stdout + r.stderr or "retry topic is not allowed" in r.stdout + r.stderr, (
            label,
            r.stdout,
            r.stderr,
        )
        files[label] = (broker.store_dir / "config" / "messageRequestMode.json").read_text()
    assert files["pyrmq"] == files["java"], files
    assert '"mode":"POP"' in files["pyrmq"].replace("\t", "").replace("\n", "")


def test_pyrmq_admin_set_consume_mode(cluster):
    """`pyrmq admin setConsumeMode` prints what mqadmin prints and the broker keeps the mode
    (config/messageRequestMode.json); a retry topic is refused with Java's code and remark."""
    ns, broker = cluster

    def admin(*args):
        return subprocess.run(
            [sys.executable, "-m", "pyrmq", "admin", *args, "-n", ns.addr],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )

    r = admin("updateTopic", "-b", broker.addr, "-t", "PopAdminT", "-r", "2", "-w", "2")
    assert r.returncode == 0, r.stderr
    r = admin("setConsumeMode", "-b", broker.addr, "-t", "PopAdminT", "-g", "pop_admin_g", "-m", "POP", "-q", "1")
    assert r.returncode == 0, r.stderr
    assert r.stdout == (
        f"set consume mode to {broker.addr} success.\n"
        "topic[PopAdminT] group[pop_admin_g] consume mode[POP] popShareQueueNum[1]"
    )
    saved = (broker.store_dir / "config" / "messageRequestMode.json").read_text()
    assert '"consumerGroup":"pop_admin_g"' in saved.replace("\t", "").replace("\n", "")
    r = admin("setConsumeMode", "-b", broker.addr, "-t", "%RETRY%pop_admin_g", "-g", "pop_admin_g", "-m", "POP")
    assert r.returncode == 1
    assert "CODE: 16  DESC: retry topic is not allowed to set mode" in r.stderr
    r = admin("setConsumeMode", "-b", broker.addr, "-t", "PopAdminT", "-g", "pop_admin_g", "-m", "PUSH")
    assert r.returncode == 1 and "MessageRequestMode.PUSH" in r.stderr
