"""Broker core with the official Go client (rocketmq-client-go v2.1.2).

Each test runs one case of compat/go-tests/bin/compat.test against a name
server + broker of `broker_kind`: "pyrmq" (pyrmq's Broker at pyrmq's
NameServer, the acceptance test) or "java" (the official 5.5.0 pair, which
proves the case itself is right). Cases: route + sync send, push consume,
tag filter ("TagA || TagC" vs "*"), orderly consume (hash selector on the
sharding key, three orderly consumers in one group). A missing Go toolchain
fails loudly.
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
BROKER = "broker-core-go"
CASE_TIMEOUT_S = 90


@pytest.fixture(scope="session")
def go_binary() -> Path:
    if shutil.which("go") is None:
        pytest.fail("Go toolchain not found on PATH: the Go compat suite needs `go` (this is a failure, not a skip)")
    r = subprocess.run([str(GO_TESTS / "build.sh")], capture_output=True, text=True, timeout=900)
    if r.returncode != 0 or not os.access(BINARY, os.X_OK):
        pytest.fail(f"compat/go-tests/build.sh exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return BINARY


@pytest.fixture(scope="module", params=["pyrmq", "java"])
def broker_kind(request):
    return request.param


@pytest.fixture
def cluster(broker_kind, request):
    return cluster_of(request, broker_kind, BROKER, java_conf=JAVA_UNDER_LOAD)


def run_case(binary: Path, case: str, cluster, **extra: str) -> str:
    ns, broker = cluster
    run = uuid.uuid4().hex[:12]
    env = {
        **os.environ,
        "ROCKETMQ_GO_LOG_LEVEL": "warn",
        "NAMESRV_ADDR": ns.addr,
        "TOPIC": f"GoCore_{case}_{run}",
        "RUN_ID": run,
        "CREATE_TOPIC_BROKER_ADDR": broker.addr,
        "CREATE_TOPIC_QUEUES": "4",
        "EXPECT_WRITE_QUEUES": "4",
        "EXPECT_BROKER_NAME": broker.name,
        "EXPECT_BROKER_ADDR": broker.addr,
        "ROUTE_WAIT_SECONDS": "15",
        "CASE_TIMEOUT_SECONDS": str(CASE_TIMEOUT_S),
        **extra,
    }
    cmd = [str(binary), "-test.run", f"^{case}$", "-test.v", "-test.count=1", f"-test.timeout={CASE_TIMEOUT_S + 20}s"]
    try:
        r = subprocess.run(
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
        pytest.fail(f"Go case {case} did not finish in {CASE_TIMEOUT_S + 40}s:\n{out[-20000:]}", pytrace=False)
    if r.returncode != 0 or f"--- PASS: {case}" not in r.stdout:
        pytest.fail(f"Go case {case} exited {r.returncode}:\n{r.stdout[-20000:]}", pytrace=False)
    print(r.stdout[-4000:])
    return r.stdout


def test_route_and_send(go_binary, cluster):
    """Route from the name server, sync sends land on the broker (SEND_OK, msgId, offsets, store host)."""
    run_case(go_binary, "TestRouteAndSend", cluster, MESSAGE_COUNT="16")


def test_push_consume(go_binary, cluster):
    """A push consumer receives every message a Go producer sent, intact."""
    run_case(go_binary, "TestPushConsume", cluster, MESSAGE_COUNT="32")


def test_tag_filter(go_binary, cluster):
    """'TagA || TagC' receives exactly those; '*' receives all."""
    run_case(go_binary, "TestTagFilter", cluster, MESSAGE_COUNT="40")


def test_orderly_consume(go_binary, cluster):
    """Sharding-key hash selector + three orderly consumers: no step before its predecessor, none lost."""
    run_case(go_binary, "TestOrderlyConsume", cluster, ORDERS="10", STEPS="10")
