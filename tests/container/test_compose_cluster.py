"""docker/compose.yaml: NameServer + broker-a + broker-b, driven by the official Java client 5.5.0.

A topic on both brokers; sends spread over both; `compose kill broker-b` (SIGKILL) and every send
still succeeds within the producer's retries; `compose start broker-b` and a new consumer group gets
every acknowledged message (SYNC_FLUSH: nothing acked is lost by the kill). Ports are free ones
given through the compose file's variables; the project name is unique, and `down -v` removes it all.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
import uuid

import pytest
from support.java import run_junit

from pyrmq.testing.ports import free_broker_port, free_port
from pyrmq.testing.probe import broker_registered

pytestmark = [pytest.mark.container, pytest.mark.java]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMPOSE_FILE = os.path.join(ROOT, "docker", "compose.yaml")


@pytest.fixture
def cluster(compose_cmd, pyrmq_image):
    project = f"pyrmq-t-{uuid.uuid4().hex[:8]}"
    env = dict(
        os.environ,
        PYRMQ_IMAGE=pyrmq_image,
        NAMESRV_PORT=str(free_port()),
        BROKER_A_PORT=str(free_broker_port()),
        BROKER_B_PORT=str(free_broker_port()),
        PYRMQ_CLUSTER=f"Cluster{uuid.uuid4().hex[:6]}",
    )
    base = [*compose_cmd, "-f", COMPOSE_FILE, "-p", project]

    def compose(*args, timeout=180):
        return subprocess.run([*base, *args], env=env, capture_output=True, text=True, timeout=timeout)

    r = compose("up", "-d")
    try:
        assert r.returncode == 0, r.stderr
        ns = f"127.0.0.1:{env['NAMESRV_PORT']}"
        deadline = time.monotonic() + 60
        for port in (env["BROKER_A_PORT"], env["BROKER_B_PORT"]):
            while not broker_registered(ns, f"127.0.0.1:{port}", timeout=1.0):
                assert time.monotonic() < deadline, compose("logs", "--no-color").stdout[-5000:]
                time.sleep(0.3)
        yield ns, " ".join(shlex.quote(a) for a in base), env
    finally:
        logs = compose("logs", "--no-color").stdout
        print(logs[-4000:])
        compose("down", "-v", "--timeout", "30")


def test_two_broker_failover_loses_nothing(cluster, java_home, tmp_path):
    ns, compose, env = cluster
    env_prefix = " ".join(
        f"{k}={shlex.quote(env[k])}"
        for k in ("PYRMQ_IMAGE", "NAMESRV_PORT", "BROKER_A_PORT", "BROKER_B_PORT", "PYRMQ_CLUSTER")
    )
    props = {
        "namesrv": ns,
        "topic": f"Failover_{uuid.uuid4().hex[:8]}",
        "count": 300,
        "timeoutSec": 90,
        "killCmd": f"{env_prefix} {compose} kill broker-b",
        "startCmd": f"{env_prefix} {compose} start broker-b",
    }
    r = run_junit(
        "container",
        "io.pyrmq.compat.container.ClusterFailoverTest",
        "failover",
        props=props,
        home=java_home,
        timeout=300,
    )
    out = r.stdout
    print(out[-3000:])
    assert "failover: received" in out and "of 300" in out
