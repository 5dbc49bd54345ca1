"""Broker core with the official Java clients (rocketmq-client 5.5.0 and 4.9.8).

Every scenario of the "Broker core" issue is one JUnit case in
compat/java-tests/scenarios (shared by modules client5 and client4), run in
its own JVM with -Dnamesrv=<name server under test>. `broker_kind`:

- "pyrmq": pyrmq's Broker registered at pyrmq's NameServer: the acceptance test;
- "java": the official 5.5.0 Broker and NameServer: proves the scenario itself
  is right (every case must pass this way).

One broker per kind serves the whole module; the offsets case restarts it.
"""

from __future__ import annotations

import uuid

import pytest
from support import probe
from support.clusters import JAVA_UNDER_LOAD, cluster_of
from support.java import CLIENT_VERSIONS, run_junit
from support.procs import tail_file
from support.pyrmq_proc import restart_broker

pytestmark = [pytest.mark.compat, pytest.mark.java]

BROKER = "broker-core-compat"
#: Subprocess deadline per JUnit case: the cases bound themselves well below it.
CASE_TIMEOUT = 150


@pytest.fixture(scope="module", params=["pyrmq", "java"])
def broker_kind(request):
    return request.param


@pytest.fixture
def cluster(broker_kind, request, java_harness):
    """(namesrv, broker) of the kind under test: one per module and kind, replaced if it died."""
    return cluster_of(request, broker_kind, BROKER, java_conf=JAVA_UNDER_LOAD)


def junit(client, cls, method, cluster, java_home, **props):
    ns, _ = cluster
    props = {"namesrv": ns.addr, "topic": f"{cls[:-4]}_{uuid.uuid4().hex[:10]}", **props}
    r = run_junit(client, cls, method, props=props, home=java_home, timeout=CASE_TIMEOUT)
    print(r.stdout[-4000:])  # shown with -rP: what the case measured
    return r


clients = pytest.mark.parametrize("client", CLIENT_VERSIONS)


def test_boot_line_and_registration(cluster):
    """Ready means what the Java broker prints: "The broker[<name>, <ip:port>] boot success." and registered."""
    ns, broker = cluster
    assert probe.broker_registered(ns.addr, broker.name, broker.addr)
    assert f"The broker[{broker.name}, {broker.addr}] boot success" in tail_file(broker.managed.log, 2000), (
        broker.tail()
    )


@clients
def test_quickstart(client, cluster, java_home):
    """1. 1,000 sync sends; a push consumer receives exactly those (body, tags, keys, property, msgId)."""
    junit(client, "QuickstartTest", "quickstart", cluster, java_home, count=1000, timeoutSec=60)


@clients
@pytest.mark.parametrize("method", ["asyncSend", "onewaySend", "batchSend", "batchOverLimit"])
def test_send_modes(client, method, cluster, java_home):
    """2. Async with callbacks, oneway, batch (consumed back); a 5 MiB batch gets MESSAGE_ILLEGAL (13)."""
    junit(client, "SendModesTest", method, cluster, java_home, count=200, timeoutSec=40)


@clients
def test_ordered(client, cluster, java_home):
    """3. Selector by order id, MessageListenerOrderly x3 in one group: per-order steps in order, once."""
    junit(client, "OrderedTest", "orderly", cluster, java_home, orders=20, steps=20, queues=6, timeoutSec=45)


@clients
def test_rebalance(client, cluster, java_home):
    """4. One group 1 -> 3 -> 1 consumers over 5,000 messages: averaging allocation at each step, none lost."""
    junit(
        client, "RebalanceTest", "growAndShrink", cluster, java_home, count=5000, queues=8, settleSec=30, timeoutSec=40
    )


@clients
def test_broadcasting(client, cluster, java_home):
    """5. Two BROADCASTING consumers of one group each receive every message."""
    junit(client, "BroadcastTest", "broadcasting", cluster, java_home, count=100, timeoutSec=30)


@clients
@pytest.mark.parametrize("method", ["litePullSubscribe", "litePullAssignSeek", "pullConsumer"])
def test_pull_consumers(client, method, cluster, java_home):
    """6. DefaultLitePullConsumer subscribe / assign+seek; DefaultMQPullConsumer by offset."""
    junit(client, "PullConsumersTest", method, cluster, java_home, count=120, timeoutSec=30)


@clients
def test_tag_filter(client, cluster, java_home):
    """7. 'TagA || TagC' receives exactly those; '*' receives all."""
    junit(client, "TagFilterTest", "tagFilter", cluster, java_home, count=120, timeoutSec=30)


@clients
def test_query(client, cluster, java_home):
    """8a. viewMessage by msgId and offsetMsgId, queryMessage by key (DefaultMQAdminExt)."""
    junit(client, "QueryTest", "viewAndQuery", cluster, java_home, count=20, timeoutSec=20)


@clients
def test_offsets_survive_restart(client, cluster, java_home, tmp_path):
    """8b. A group's committed offsets survive a broker restart: it resumes with exactly the unconsumed tail."""
    _, broker = cluster
    props = {
        "topic": f"Offsets_{uuid.uuid4().hex[:10]}",
        "group": f"compat_offsets_{uuid.uuid4().hex[:10]}",
        "stateFile": tmp_path / "offsets.properties",
        "count": 50,
        "more": 30,
        "timeoutSec": 30,
    }
    junit(client, "OffsetRestartTest", "phase1", cluster, java_home, **props)
    restart_broker(broker)
    junit(client, "OffsetRestartTest", "phase2", cluster, java_home, **props)


@clients
@pytest.mark.parametrize("method", ["illegalTopicName", "oversizeBody", "oversizeProperties", "pullMissingQueue"])
def test_bad_input(client, method, cluster, java_home):
    """9. Illegal topic, 5 MiB body, >32 KiB properties, missing queue: Java code + remark; broker keeps serving."""
    junit(client, "BadInputTest", method, cluster, java_home)
