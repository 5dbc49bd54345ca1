"""Message semantics A with the official Java clients: delay levels, timer messages, consumer
retry + DLQ, request-reply (issue 5, "what must be shown" 1, 2, 3, 6 and 7).

JUnit cases in compat/java-tests/scenarios (DelayTest, TimerTest, RetryDlqTest,
RequestReplyTest), run once per client (5.5.0, 4.9.8) against each broker kind:
"pyrmq" (the acceptance test) and "java" (the official 5.5.0 broker: proves each
scenario states Java's behaviour). Both brokers run the same short custom delay
table, so the retry ladder (level 3 + reconsumeTimes) takes 3 s + 1 s.

Item 7 (test_java_broker_serves_pyrmq_store): pyrmq's store, with messages still
waiting in SCHEDULE_TOPIC_XXXX and rmq_sys_wheel_timer, is taken over by the Java
broker, which delivers them.
"""

from __future__ import annotations

import uuid

import pytest
from support.clusters import cluster_of
from support.java import CLIENT_VERSIONS, run_junit
from support.pyrmq_proc import restart_broker
from support.servers import JavaBroker

pytestmark = [pytest.mark.compat, pytest.mark.java]

BROKER = "semantics-a-compat"
CASE_TIMEOUT = 150
#: levels 1-3 for the delay case, 3 and 4 for the retry ladder, 6 for the restart cases
DELAY_LEVELS = "1s 2s 3s 1s 1s 10s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s"
DELAYS_MS = ",".join(str(int(x[:-1]) * 1000) for x in DELAY_LEVELS.split())
#: commit-log / consume-queue file sizes the Java harness broker uses (item 7 needs them equal)
STORE_CONF = {
    "mappedFileSizeCommitLog": 16 * 1024 * 1024,
    "mappedFileSizeConsumeQueue": 300000 * 20 // 100,
    "messageDelayLevel": DELAY_LEVELS,
}
#: the client rebalances every 20 s by default: the %RETRY% queue (routed only after the broker created
#: the topic at the first heartbeat) would be pulled late; both brokers get the same client setting
FAST_REBALANCE = {"rocketmq.client.rebalance.waitInterval": 1000}


@pytest.fixture(scope="module", params=["pyrmq", "java"])
def broker_kind(request):
    return request.param


@pytest.fixture(scope="module")
def cluster(broker_kind, request, java_harness):
    return cluster_of(request, broker_kind, BROKER, **STORE_CONF)


def junit(client, cls, method, ns_addr, java_home, **props):
    props = {"namesrv": ns_addr, "topic": f"{cls[:-4]}_{uuid.uuid4().hex[:10]}", "delaysMs": DELAYS_MS, **props}
    r = run_junit(client, cls, method, props=props, home=java_home, timeout=CASE_TIMEOUT)
    print(r.stdout[-3000:])
    return r


clients = pytest.mark.parametrize("client", CLIENT_VERSIONS)


@clients
def test_delay_levels(client, cluster, java_home):
    """1. Levels 1, 2, 3 (1 s, 2 s, 3 s): no earlier than the delay, within 1 s after; the broker reports the table."""
    ns, _ = cluster
    junit(
        client,
        "DelayTest",
        "delayLevels",
        ns.addr,
        java_home,
        levels="1,2,3",
        perLevel=3,
        lateMs=1000,
        expectDelayLevel=DELAY_LEVELS,
    )


def test_delay_survives_restart(cluster, java_home, tmp_path):
    """1. A broker restart while level-6 (10 s) messages wait loses none."""
    ns, broker = cluster
    props = {
        "topic": f"DelayRestart_{uuid.uuid4().hex[:10]}",
        "stateFile": tmp_path / "delay.properties",
        "level": 6,
        "count": 10,
    }
    junit("5.5.0", "DelayTest", "sendDelayed", ns.addr, java_home, **props)
    restart_broker(broker)
    junit("5.5.0", "DelayTest", "receiveDelayed", ns.addr, java_home, **props)


@clients
def test_timer_on_time(client, cluster, java_home):
    """2. Delivery time 3 s ahead: arrives in [deliver - 1 s precision, deliver + 1 s]."""
    ns, _ = cluster
    junit(client, "TimerTest", "timerOnTime", ns.addr, java_home, count=5, aheadMs=3000, lateMs=1000)


def test_timer_survives_restart(cluster, java_home, tmp_path):
    """2. Timer messages 12 s ahead survive a broker restart and arrive, not early."""
    ns, broker = cluster
    props = {
        "topic": f"TimerRestart_{uuid.uuid4().hex[:10]}",
        "stateFile": tmp_path / "timer.properties",
        "count": 5,
        "aheadMs": 12000,
    }
    junit("5.5.0", "TimerTest", "timerSend", ns.addr, java_home, **props)
    restart_broker(broker)
    junit("5.5.0", "TimerTest", "timerReceive", ns.addr, java_home, timeoutSec=60, **props)


@clients
def test_retry_then_succeed(client, cluster, java_home):
    """3. RECONSUME_LATER twice, then success: 3 deliveries with reconsumeTimes 0, 1, 2."""
    ns, _ = cluster
    junit(client, "RetryDlqTest", "retryThenSucceed", ns.addr, java_home, timeoutSec=40, **FAST_REBALANCE)


@clients
def test_dead_letter(client, cluster, java_home):
    """3. maxReconsumeTimes=2, always failing: in %DLQ%<group>, consumable with its original properties."""
    ns, _ = cluster
    junit(client, "RetryDlqTest", "deadLetter", ns.addr, java_home, timeoutSec=40, **FAST_REBALANCE)


@clients
@pytest.mark.parametrize("method", ["requestReply", "requestTimeout"])
def test_request_reply(client, method, cluster, java_home):
    """6. request() with a 3 s timeout gets the consumer's reply; without a replier it times out cleanly."""
    ns, _ = cluster
    junit(client, "RequestReplyTest", method, ns.addr, java_home, count=3)


def test_java_broker_serves_pyrmq_store(pyrmq_namesrv, pyrmq_broker, java_harness, java_home, tmp_path_factory):
    """7. Delayed and timer messages still waiting in pyrmq's store are delivered by the Java 5.5.0
    broker started on that store (SCHEDULE_TOPIC_XXXX + delayOffset.json, rmq_sys_wheel_timer +
    timercheck). Runs once (not per broker kind)."""
    ns = pyrmq_namesrv
    own = pyrmq_broker(ns.addr, name="semantics-a-handover", fresh=True, **STORE_CONF)
    d = tmp_path_factory.mktemp("handover")
    delay = {"topic": f"HandDelay_{uuid.uuid4().hex[:8]}", "stateFile": d / "delay.properties", "level": 6, "count": 5}
    timer = {
        "topic": f"HandTimer_{uuid.uuid4().hex[:8]}",
        "stateFile": d / "timer.properties",
        "count": 5,
        "aheadMs": 12000,
    }
    junit("5.5.0", "DelayTest", "sendDelayed", ns.addr, java_home, **delay)
    junit("5.5.0", "TimerTest", "timerSend", ns.addr, java_home, **timer)
    own.stop()
    java = JavaBroker(
        ns.addr,
        tmp_path_factory.mktemp("java-on-pyrmq"),
        store_dir=own.store_dir,
        name="semantics-a-handover",
        **STORE_CONF,
    )
    try:
        junit("5.5.0", "DelayTest", "receiveDelayed", ns.addr, java_home, **delay)
        junit("5.5.0", "TimerTest", "timerReceive", ns.addr, java_home, timeoutSec=60, **timer)
    except AssertionError:
        print(java.tail(80))
        raise
    finally:
        java.stop()
