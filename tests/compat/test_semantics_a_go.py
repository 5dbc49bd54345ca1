"""Delay levels and consumer retry with the official Go client v2.1.2 (issue 5; the Go client has
no timer API, there is no DLQ case; transactions, SQL92 and request-reply are in
test_semantics_b_go.py). Cases of compat/go-tests/bin/compat.test (semantics_a_test.go) against
pyrmq (acceptance) and the Java 5.5.0 pair (the case is right). A missing Go toolchain fails
loudly."""

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
BROKER = "semantics-a-go"
DELAY_LEVELS = "1s 2s 3s 1s 1s 10s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s"
DELAYS_MS = ",".join(str(int(x[:-1]) * 1000) for x in DELAY_LEVELS.split())


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
    return cluster_of(request, request.param, BROKER, java_conf=JAVA_UNDER_LOAD, messageDelayLevel=DELAY_LEVELS)


def run_case(binary: Path, case: str, cluster) -> str:
    ns, broker = cluster
    run = uuid.uuid4().hex[:12]
    env = {
        **os.environ,
        "NAMESRV_ADDR": ns.addr,
        "TOPIC": f"GoSemA_{case}_{run}",
        "RUN_ID": run,
        "CREATE_TOPIC_BROKER_ADDR": broker.addr,
        "CREATE_TOPIC_QUEUES": "4",
        "ROUTE_WAIT_SECONDS": "15",
        "DELAYS_MS": DELAYS_MS,
        "LATE_MS": "1000",
        "CASE_TIMEOUT_SECONDS": "90",
    }
    env.setdefault("ROCKETMQ_GO_LOG_LEVEL", "warn")
    try:
        p = subprocess.run(
            [str(binary), "-test.run", f"^{case}$", "-test.v", "-test.count=1", "-test.timeout=110s"],
            cwd=GO_TESTS,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=130,
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"Go case {case} did not finish in 130 s:\n{e.stdout}", pytrace=False)
    if p.returncode != 0 or f"--- PASS: {case}" not in p.stdout:
        pytest.fail(f"Go case {case} exited {p.returncode}:\n{p.stdout[-20000:]}", pytrace=False)
    print(p.stdout)
    return p.stdout


def test_go_delay_level(go_binary, cluster):
    """WithDelayTimeLevel(1..3): no earlier than the delay, within 1 s after it."""
    run_case(go_binary, "TestDelayLevel", cluster)


def test_go_retry_later(go_binary, cluster):
    """ConsumeRetryLater twice then success: reconsumeTimes 0, 1, 2 (broker retry ladder, level 3 + n)."""
    run_case(go_binary, "TestRetryLater", cluster)
