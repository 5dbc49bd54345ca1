"""The official Go client (rocketmq-client-go v2.1.2) against pyrmq.

Each test runs one case of the prebuilt compat/go-tests binary
(`bin/compat.test -test.run '^TestX$' -test.v`) with the environment that
points it at the servers under test, and asserts exit code 0; on failure the
Go output is the assertion message. A missing Go toolchain or a failed build
fails the test loudly: this suite never skips.

Setup per case: a real Java broker 5.5.0 registers with the name server under
test; the Go case creates its topic on that broker through the Go admin API
(UPDATE_AND_CREATE_TOPIC), then reads the route from the name server
(GET_ROUTEINFO_BY_TOPIC, parsed by the client's brokerAddrs string surgery)
and sends/consumes through it. Harness self-check: with
PYRMQ_COMPAT_NAMESRV=java the `pyrmq_namesrv` fixture is the Java NameServer,
and every case here must pass that way too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

pytestmark = [pytest.mark.compat, pytest.mark.go]

GO_TESTS = Path(__file__).resolve().parents[2] / "compat" / "go-tests"
BINARY = GO_TESTS / "bin" / "compat.test"

#: Queues per test topic; the route the Go client sees must have exactly these.
QUEUES = 4
#: Per-case deadline inside Go; the subprocess gets a margin on top.
CASE_TIMEOUT_S = 90
#: Output shown on failure (tail), enough for the Go test log and a panic trace.
MAX_OUTPUT_CHARS = 20_000


@pytest.fixture(scope="session")
def go_compat_binary() -> Path:
    """Build (or confirm up to date) compat/go-tests/bin/compat.test once."""
    if shutil.which("go") is None:
        pytest.fail("Go toolchain not found on PATH: the Go compat suite needs `go` (>= 1.22)")
    proc = subprocess.run(
        [str(GO_TESTS / "build.sh")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if proc.returncode != 0:
        pytest.fail(f"compat/go-tests/build.sh exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    if not os.access(BINARY, os.X_OK):
        pytest.fail(f"{BINARY} missing after build.sh")
    return BINARY


def run_go_case(binary: Path, case: str, env: dict[str, str]) -> str:
    """Run one Go test case; fail with its output unless it passed."""
    full_env = {**os.environ, **env}
    full_env.setdefault("ROCKETMQ_GO_LOG_LEVEL", "warn")
    cmd = [
        str(binary),
        "-test.run",
        f"^{case}$",
        "-test.v",
        "-test.count=1",
        f"-test.timeout={CASE_TIMEOUT_S + 20}s",
    ]
    try:
        proc = subprocess.run(
            cmd,
            cwd=GO_TESTS,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=CASE_TIMEOUT_S + 40,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or ""
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        pytest.fail(
            f"Go case {case} did not finish in {CASE_TIMEOUT_S + 40}s; output:\n{out[-MAX_OUTPUT_CHARS:]}",
            pytrace=False,
        )
    out = proc.stdout
    if proc.returncode != 0 or f"--- PASS: {case}" not in out:
        shown = "\n".join(f"{k}={v}" for k, v in sorted(env.items()))
        pytest.fail(
            f"Go case {case} exited {proc.returncode}\n--- env\n{shown}\n"
            f"--- output (last {MAX_OUTPUT_CHARS} chars)\n{out[-MAX_OUTPUT_CHARS:]}",
            pytrace=False,
        )
    print(out)  # shown with -rP
    return out


#: The Java broker is only the backend here. On a loaded two-core machine its
#: fast-failure guard answers SYSTEM_BUSY ([TIMEOUT_CLEAN_QUEUE], 200 ms in
#: the send queue; [PC_SYNCHRONIZED], 1 s in the commit log lock), which the Go
#: producer does not retry; relax both (BrokerConfig, MessageStoreConfig).
BROKER_CONF = {
    "brokerFastFailureEnable": "false",
    "waitTimeMillsInSendQueue": 3000,
    "osPageCacheBusyTimeOutMills": 5000,
}


def case_env(namesrv_addr: str, broker, case: str, *, create_topic: bool = True) -> dict[str, str]:
    """Environment for one case: a fresh topic, created on `broker` unless told not to."""
    run = uuid.uuid4().hex[:12]
    env = {
        "NAMESRV_ADDR": namesrv_addr,
        "TOPIC": f"GoCompat_{case}_{run}",
        "RUN_ID": run,
        "EXPECT_WRITE_QUEUES": str(QUEUES),
        "EXPECT_BROKER_NAME": broker.name,
        "EXPECT_BROKER_ADDR": broker.addr,
        "MESSAGE_COUNT": "16",
        "ROUTE_WAIT_SECONDS": "15",
        "CASE_TIMEOUT_SECONDS": str(CASE_TIMEOUT_S),
    }
    if create_topic:
        env["CREATE_TOPIC_BROKER_ADDR"] = broker.addr
        env["CREATE_TOPIC_QUEUES"] = str(QUEUES)
    return env


def test_route_and_send(go_compat_binary, pyrmq_namesrv, java_broker):
    """Go producer: route from pyrmq's name server, sync sends to the Java broker."""
    broker = java_broker(pyrmq_namesrv.addr, **BROKER_CONF)
    run_go_case(go_compat_binary, "TestRouteAndSend", case_env(pyrmq_namesrv.addr, broker, "RouteAndSend"))


def test_push_consume(go_compat_binary, pyrmq_namesrv, java_broker):
    """Go push consumer via pyrmq's name server: receives every message a Go producer sent, intact."""
    broker = java_broker(pyrmq_namesrv.addr, **BROKER_CONF)
    run_go_case(go_compat_binary, "TestPushConsume", case_env(pyrmq_namesrv.addr, broker, "PushConsume"))


def test_send_auto_create_topic(go_compat_binary, pyrmq_namesrv, java_broker):
    """Unknown topic: TOPIC_NOT_EXIST, then sends through TBW102's route, then the topic's own route.

    The Go producer asks for 4 queues (defaultTopicQueueNums) and the Java
    broker's TBW102 has 8, so the auto-created topic has 4.
    """
    broker = java_broker(pyrmq_namesrv.addr, **BROKER_CONF)
    env = case_env(pyrmq_namesrv.addr, broker, "AutoCreate", create_topic=False)
    env["MESSAGE_COUNT"] = "8"
    run_go_case(go_compat_binary, "TestSendAutoCreateTopic", env)


def test_admin_topic_lifecycle(go_compat_binary, pyrmq_namesrv, java_broker):
    """Go admin API: topic list from the name server, DeleteTopic removes the route."""
    broker = java_broker(pyrmq_namesrv.addr, **BROKER_CONF)
    run_go_case(go_compat_binary, "TestAdminTopicLifecycle", case_env(pyrmq_namesrv.addr, broker, "Admin"))
