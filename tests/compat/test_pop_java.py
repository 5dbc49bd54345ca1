"""POP consumption with the official Java 5.5.0 remoting client and mqadmin (issue 15).

The JUnit cases in compat/java-tests/scenarios5/PopTest (compiled for the 5.x client only) run
the example simple.PopConsumer's way: the admin API's setMessageRequestMode switches the group
to POP, then DefaultMQPushConsumer with setClientRebalance(false) pops through QUERY_ASSIGNMENT,
POP_MESSAGE, ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME, and the broker's revive brings back
what was not acked. Run against pyrmq by default and against the Java 5.5.0 broker with
PYRMQ_COMPAT_REFERENCE=1 (the scenario states Java's behaviour).

test_set_consume_mode_matches_java runs ``mqadmin setConsumeMode`` against a pyrmq and a Java
broker in the same test and compares what each persisted (config/messageRequestMode.json).
"""

from __future__ import annotations

import uuid

import pytest
from support.java import run_junit

pytestmark = [pytest.mark.compat, pytest.mark.java]

BROKER = "pop-compat"
CASE_TIMEOUT = 150
INVISIBLE_MS = 5000


@pytest.fixture(scope="module", params=["pyrmq", "java"])
def broker_kind(request):
    return request.param


@pytest.fixture(scope="module")
def cluster(broker_kind, request, java_harness):
    if broker_kind == "pyrmq":
        ns = request.getfixturevalue("pyrmq_namesrv")
        broker = request.getfixturevalue("pyrmq_broker")(ns.addr, name=BROKER)
    else:
        ns = request.getfixturevalue("java_namesrv")
        broker = request.getfixturevalue("java_broker")(ns.addr, name=BROKER)
    return ns, broker


@pytest.mark.parametrize("method", ["popExactlyOnce", "popRedelivery", "popNotAcked", "popOrderly"])
def test_pop_consumer(method, cluster, java_home):
    ns, _ = cluster
    props = {
        "namesrv": ns.addr,
        "topic": f"Pop_{method}_{uuid.uuid4().hex[:8]}",
        "count": 30,
        "invisibleMs": INVISIBLE_MS,
    }
    r = run_junit(
        "5.5.0", "io.pyrmq.compat.scenarios5.PopTest", method, props=props, home=java_home, timeout=CASE_TIMEOUT
    )
    print(r.stdout[-3000:])


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
