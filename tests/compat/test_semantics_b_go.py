"""Transactions with check-back, SQL92 property filters and request-reply with the official Go
client v2.1.2 (issue 5, items 4, 5 and 6). Cases of compat/go-tests/bin/compat.test (semantics_b_test.go) against
pyrmq (acceptance) and the Java 5.5.0 pair (the case states Java's behaviour). Both brokers run with
the check-back timings and property filters of test_semantics_b_java.py. A missing Go toolchain
fails loudly.

Not covered with Go v2.1.2: an invalid SQL92 expression (the client ignores the heartbeat's response
code and has no check-client-in-broker step, so the application cannot observe
SUBSCRIPTION_PARSE_FAILED), and PostSubscriptionWhenPull with SQL92 (the client then sends the
expression with expressionType TAG, which no broker can filter by SQL).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from support.clusters import JAVA_UNDER_LOAD, cluster_of

pytestmark = [pytest.mark.compat, pytest.mark.go]

GO_TESTS = Path(__file__).resolve().parents[2] / "compat" / "go-tests"
BINARY = GO_TESTS / "bin" / "compat.test"
BROKER = "semantics-b-go"
CASE_TIMEOUT_S = 60
#: as test_semantics_b_java.py: checks every second for half messages older than 4 s (above Java 5.x's
#: 3 s op-message batching, so committed messages are not checked back), property filters on
CONF = {
    "transactionCheckInterval": 1000,
    "transactionTimeOut": 4000,
    "transactionCheckMax": 60,
    "enablePropertyFilter": "true",
}


@pytest.fixture(scope="session")
def go_binary() -> Path:
    if shutil.which("go") is None:
        pytest.fail("Go toolchain not found on PATH: the Go compat suite needs `go` (a failure, not a skip)")
    r = subprocess.run([str(GO_TESTS / "build.sh")], capture_output=True, text=True, timeout=900)
    if r.returncode != 0 or not os.access(BINARY, os.X_OK):
        pytest.fail(f"compat/go-tests/build.sh exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return BINARY


@pytest.fixture(scope="module", params=["pyrmq", "java"])
def cluster(request):
    return cluster_of(request, request.param, BROKER, java_conf=JAVA_UNDER_LOAD, **CONF)


def run_case(binary: Path, case: str, cluster, **extra: str) -> str:
    ns, broker = cluster
    run = uuid.uuid4().hex[:12]
    env = {
        **os.environ,
        "NAMESRV_ADDR": ns.addr,
        "TOPIC": f"GoSemB_{case}_{run}",
        "RUN_ID": run,
        "CREATE_TOPIC_BROKER_ADDR": broker.addr,
        "CREATE_TOPIC_QUEUES": "4",
        "ROUTE_WAIT_SECONDS": "15",
        "CASE_TIMEOUT_SECONDS": str(CASE_TIMEOUT_S),
        **extra,
    }
    env.setdefault("ROCKETMQ_GO_LOG_LEVEL", "warn")
    cmd = [str(binary), "-test.run", f"^{case}$", "-test.v", "-test.count=1", f"-test.timeout={CASE_TIMEOUT_S + 20}s"]
    try:
        p = subprocess.run(
            cmd,
            cwd=GO_TESTS,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=CASE_TIMEOUT_S + 40,
        )
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        pytest.fail(f"Go case {case} did not finish in {CASE_TIMEOUT_S + 40} s:\n{out[-20000:]}", pytrace=False)
    if p.returncode != 0 or f"--- PASS: {case}" not in p.stdout:
        pytest.fail(f"Go case {case} exited {p.returncode}:\n{p.stdout[-20000:]}", pytrace=False)
    print(p.stdout[-4000:])
    return p.stdout


def test_go_transaction_commit_rollback_unknown(go_binary, cluster):
    """4. commit -> delivered; rollback -> never; UNKNOW -> checked back, the listener's commit/rollback applied."""
    run_case(go_binary, "TestTransaction", cluster, TX_WAIT_SECONDS="40")


def test_go_transaction_producer_restart(go_binary, cluster):
    """4. The half message's producer shuts down; a new producer of the group gets the check and commits."""
    run_case(go_binary, "TestTransactionProducerRestart", cluster, TX_WAIT_SECONDS="40")


def test_go_sql92_between(go_binary, cluster):
    """5. SQL92 "a BETWEEN 3 AND 5 AND b = 'x'" receives exactly the matching messages; TRUE receives all."""
    run_case(go_binary, "TestSQL92Filter", cluster, MESSAGE_COUNT="180", SQL_WAIT_SECONDS="40")


def test_go_request_reply(go_binary, cluster):
    """6. Request() with a 3 s timeout gets the consumer's reply; an unanswered request times out cleanly."""
    run_case(go_binary, "TestRequestReply", cluster, REQUEST_TIMEOUT_MS="3000")
