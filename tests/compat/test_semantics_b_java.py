"""Message semantics B with the official Java clients: transactions with check-back and SQL92
property filters (issue 5, "what must be shown" 4, 5 and 7).

JUnit cases in compat/java-tests/scenarios (TransactionTest, Sql92FilterTest), run once per
client (5.5.0, 4.9.8) against each broker kind: "pyrmq" (the acceptance test) and "java" (the
official 5.5.0 broker, configured the same way: proves each scenario states Java's behaviour).

Item 7 (test_java_broker_checks_back_pyrmq_half_messages): a half message left pending in
pyrmq's store is checked back by the Java broker started on that store, and committed.
"""

from __future__ import annotations

import uuid

import pytest
from support.clusters import cluster_of
from support.java import CLIENT_VERSIONS, run_junit
from support.servers import JavaBroker

pytestmark = [pytest.mark.compat, pytest.mark.java]

BROKER = "semantics-b-compat"
CASE_TIMEOUT = 120
#: short check-back timings, property filters on; file sizes equal to the Java harness broker's (item 7).
#: transactionTimeOut stays above Java 5.x's op-message batching (transactionOpBatchInterval, 3 s): with a
#: shorter one the Java broker checks already committed messages back (and a COMMIT answer commits twice)
CONF = {
    "transactionCheckInterval": 1000,
    "transactionTimeOut": 4000,
    "transactionCheckMax": 60,
    "enablePropertyFilter": "true",
    "mappedFileSizeCommitLog": 16 * 1024 * 1024,
    "mappedFileSizeConsumeQueue": 300000 * 20 // 100,
}


@pytest.fixture(scope="module", params=["pyrmq", "java"])
def broker_kind(request):
    return request.param


@pytest.fixture(scope="module")
def cluster(broker_kind, request, java_harness):
    return cluster_of(request, broker_kind, BROKER, **CONF)


def junit(client, cls, method, ns_addr, java_home, **props):
    props = {"namesrv": ns_addr, "topic": f"{cls[:-4]}_{uuid.uuid4().hex[:10]}", **props}
    r = run_junit(client, cls, method, props=props, home=java_home, timeout=CASE_TIMEOUT)
    print(r.stdout[-3000:])
    return r


clients = pytest.mark.parametrize("client", CLIENT_VERSIONS)


@clients
def test_commit_rollback_unknown(client, cluster, java_home):
    """4. commit -> delivered; rollback -> never; UNKNOW -> checked back, the check's commit/rollback applied."""
    ns, _ = cluster
    junit(client, "TransactionTest", "commitRollbackUnknown", ns.addr, java_home, timeoutSec=40)


@clients
def test_producer_restarted_between_send_and_check(client, cluster, java_home):
    """4. The half message's producer exits; a new producer of the same group gets the check and commits."""
    ns, _ = cluster
    props = {"topic": f"TxRestart_{uuid.uuid4().hex[:10]}", "group": f"compat_txr_{uuid.uuid4().hex[:10]}"}
    junit(client, "TransactionTest", "restartPhase1", ns.addr, java_home, **props)
    junit(client, "TransactionTest", "restartPhase2", ns.addr, java_home, timeoutSec=40, **props)


@clients
def test_sql92_between(client, cluster, java_home):
    """5. 'a BETWEEN 3 AND 5 AND b = 'x'' receives exactly the matching messages of a mixed stream."""
    ns, _ = cluster
    junit(client, "Sql92FilterTest", "sqlBetween", ns.addr, java_home, count=180, timeoutSec=40)


@clients
@pytest.mark.parametrize("sql", ["a BETWEEN 5 AND 3", "a >", "a > 'x'"])
def test_sql92_invalid_expression(client, sql, cluster, java_home):
    """5. An invalid selector fails the consumer's start with SUBSCRIPTION_PARSE_FAILED (23)."""
    ns, _ = cluster
    junit(client, "Sql92FilterTest", "invalidExpression", ns.addr, java_home, sql=sql)


def test_java_broker_checks_back_pyrmq_half_messages(
    pyrmq_namesrv, pyrmq_broker, java_harness, java_home, tmp_path_factory
):
    """7. Half message pending in pyrmq's store (RMQ_SYS_TRANS_HALF_TOPIC, op topic, CID_RMQ_SYS_TRANS offsets):
    the Java 5.5.0 broker started on that store checks it back; the new producer commits; it is delivered."""
    ns = pyrmq_namesrv
    slow = {**CONF, "transactionCheckInterval": 600000}  # pyrmq never checks before the hand-over
    own = pyrmq_broker(ns.addr, name="semantics-b-handover", fresh=True, **slow)
    props = {"topic": f"TxHand_{uuid.uuid4().hex[:8]}", "group": f"compat_txh_{uuid.uuid4().hex[:8]}"}
    junit("5.5.0", "TransactionTest", "restartPhase1", ns.addr, java_home, **props)
    own.stop()
    java = JavaBroker(
        ns.addr, tmp_path_factory.mktemp("java-on-pyrmq"), store_dir=own.store_dir, name="semantics-b-handover", **CONF
    )
    try:
        junit("5.5.0", "TransactionTest", "restartPhase2", ns.addr, java_home, timeoutSec=40, **props)
    except AssertionError:
        print(java.tail(80))
        tx_log = java.home / "logs" / "rocketmqlogs" / "transaction.log"
        if tx_log.exists():
            print(tx_log.read_text()[-6000:])
        raise
    finally:
        java.stop()
