"""Recalling a timer message with the official Java 5.5.0 remoting client (issue 15).

compat/java-tests/scenarios5/RecallTest: SendResult#getRecallHandle of a timer message, then
DefaultMQProducer#recallMessage (RECALL_MESSAGE 370); the push consumer gets the other timer message
and a plain one, never the recalled one; a recall after the slot passed is ILLEGAL_OPERATION. Both
brokers run with recallMessageEnable=true (off by default, as in Java). Against pyrmq by default, the
Java 5.5.0 broker with PYRMQ_COMPAT_REFERENCE=1.
"""

from __future__ import annotations

import pytest
from support.clusters import cluster_of
from support.java import run_junit

pytestmark = [pytest.mark.compat, pytest.mark.java]

BROKER = "recall-compat"
CASE_TIMEOUT = 120


@pytest.fixture(scope="module", params=["pyrmq", "java"])
def broker_kind(request):
    return request.param


@pytest.fixture(scope="module")
def cluster(broker_kind, request, java_harness):
    return cluster_of(request, broker_kind, BROKER, recallMessageEnable="true")


def test_recall_timer_message(cluster, java_home):
    ns, _ = cluster
    r = run_junit(
        "5.5.0",
        "io.pyrmq.compat.scenarios5.RecallTest",
        props={"namesrv": ns.addr},
        home=java_home,
        timeout=CASE_TIMEOUT,
    )
    print(r.stdout[-3000:])
    assert "recallTimerMessage()" in r.stdout and "too late: recall failed, timestamp invalid" in r.stdout, r.stdout
