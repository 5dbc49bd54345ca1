"""The pyrmq image: non-root, store volume, config by file and environment, health check, SIGTERM.

Containers run with host networking on free loopback ports; the official Java client 5.5.0
(compat/java-tests) drives them where messages are involved.
"""

from __future__ import annotations

import contextlib
import time
import uuid

import pytest
from support.java import run_junit

from pyrmq.testing.ports import free_broker_port, free_port
from pyrmq.testing.probe import broker_registered, namesrv_ok

pytestmark = [pytest.mark.container]


def _health(container, timeout: float = 40, want: str = "healthy") -> str:
    """Wait until Docker reports the `want` health status (or the container exits); returns the last status."""
    deadline = time.monotonic() + timeout
    status = "starting"
    while time.monotonic() < deadline:
        container.reload()
        status = container.attrs["State"].get("Health", {}).get("Status", "none")
        if status == want or container.status == "exited":
            return status
        time.sleep(0.5)
    return status


def _run(docker_client, image, *command, **kwargs):
    return docker_client.containers.run(
        image, list(command), detach=True, network_mode="host", name=f"pyrmq-test-{uuid.uuid4().hex[:8]}", **kwargs
    )


def _remove(*containers):
    for c in containers:
        with contextlib.suppress(Exception):
            c.remove(force=True, v=True)


def test_image_metadata(docker_client, pyrmq_image):
    """Non-root user, the store as a volume, a health check, dev as the default command, SIGTERM stop signal."""
    cfg = docker_client.images.get(pyrmq_image).attrs["Config"]
    assert cfg["User"] == "rocketmq"
    assert "/home/rocketmq/store" in cfg["Volumes"]
    assert cfg["Healthcheck"]["Test"][0] == "CMD"
    assert cfg["Cmd"] == ["dev"]
    assert cfg.get("StopSignal", "SIGTERM") == "SIGTERM"
    out = docker_client.containers.run(pyrmq_image, ["--version"], remove=True, network_mode="host")
    assert out.decode().startswith("pyrmq ")
    uid = docker_client.containers.run(pyrmq_image, [], entrypoint=["id", "-u"], remove=True, network_mode="host")
    assert uid.decode().strip() == "3000"


def test_namesrv_and_broker_configured_by_file_and_environment(docker_client, pyrmq_image, world_writable):
    """namesrv from RMQ_LISTEN_PORT; broker from a mounted broker.conf overridden by RMQ_* and NAMESRV_ADDR."""
    ns_port, b_port = free_port(), free_broker_port()
    conf_dir = world_writable("conf")
    (conf_dir / "broker.conf").write_text(
        "brokerClusterName=FileCluster\nbrokerName=from-file\nbrokerIP1=127.0.0.1\nlistenPort=1\n"
    )
    ns = _run(docker_client, pyrmq_image, "namesrv", environment={"RMQ_LISTEN_PORT": str(ns_port)})
    broker = None
    try:
        broker = _run(
            docker_client,
            pyrmq_image,
            "broker",
            environment={
                "RMQ_LISTEN_PORT": str(b_port),
                "RMQ_brokerName": "from-env",
                "NAMESRV_ADDR": f"127.0.0.1:{ns_port}",
                "RMQ_FLUSH_DISK_TYPE": "SYNC_FLUSH",
            },
            volumes={str(conf_dir): {"bind": "/home/rocketmq/conf", "mode": "ro"}},
        )
        assert _health(ns) == "healthy", ns.logs().decode()
        assert _health(broker) == "healthy", broker.logs().decode()
        assert broker_registered(f"127.0.0.1:{ns_port}", f"127.0.0.1:{b_port}")
        merged = broker.exec_run(["cat", "/tmp/pyrmq/broker.conf"]).output.decode()
        assert "brokerName=from-env" in merged and "brokerClusterName=FileCluster" in merged
        assert "flushDiskType=SYNC_FLUSH" in merged and f"listenPort={b_port}" in merged
        assert "boot success" in broker.logs().decode()
    finally:
        _remove(*(c for c in (broker, ns) if c is not None))


def test_health_check_turns_unhealthy_when_the_server_stops_answering(docker_client, pyrmq_image):
    """SIGSTOP the server inside: the health check's RemotingCommand times out -> unhealthy."""
    ns_port, b_port = free_port(), free_broker_port()
    c = _run(
        docker_client,
        pyrmq_image,
        "dev",
        "--namesrv-port",
        str(ns_port),
        "--broker-port",
        str(b_port),
        healthcheck={
            "test": ["CMD", "/opt/pyrmq/venv/bin/python", "/opt/pyrmq/bin/healthcheck.py"],
            "interval": 1_000_000_000,
            "timeout": 2_000_000_000,
            "retries": 2,
            "start_period": 0,
        },
    )
    try:
        assert _health(c) == "healthy", c.logs().decode()
        c.kill(signal="SIGSTOP")  # PID 1 is the server (exec'd by the entry point)
        assert _health(c, timeout=30, want="unhealthy") == "unhealthy"
    finally:
        _remove(c)


def test_sigterm_leaves_a_cleanly_shut_down_store(docker_client, pyrmq_image, world_writable, java_home, tmp_path):
    """docker stop -> exit 0, abort file gone, offsets flushed; a new container on the store resumes them."""
    store = world_writable("store")
    ns_port, b_port = free_port(), free_broker_port()
    cmd = ("dev", "--namesrv-port", str(ns_port), "--broker-port", str(b_port))
    mount = {str(store): {"bind": "/home/rocketmq/store", "mode": "rw"}}
    ns_addr = f"127.0.0.1:{ns_port}"
    props = {
        "namesrv": ns_addr,
        "topic": f"Offsets_{uuid.uuid4().hex[:10]}",
        "group": f"container_offsets_{uuid.uuid4().hex[:10]}",
        "stateFile": tmp_path / "offsets.properties",
        "count": 50,
        "more": 30,
        "timeoutSec": 30,
    }
    first = _run(docker_client, pyrmq_image, *cmd, volumes=mount)
    second = None
    try:
        assert _health(first) == "healthy", first.logs().decode()
        assert (store / "abort").exists(), "a running broker keeps an abort file"
        run_junit("5.5.0", "OffsetRestartTest", "phase1", props=props, home=java_home, timeout=150)
        first.stop(timeout=30)
        first.reload()
        assert first.attrs["State"]["ExitCode"] == 0, first.logs().decode()
        assert not (store / "abort").exists(), "SIGTERM must remove the abort file (normal shutdown)"
        offsets = (store / "config" / "consumerOffset.json").read_text()
        assert props["topic"] in offsets and props["group"] in offsets
        second = _run(docker_client, pyrmq_image, *cmd, volumes=mount)
        assert _health(second) == "healthy", second.logs().decode()
        assert namesrv_ok(ns_addr)
        run_junit("5.5.0", "OffsetRestartTest", "phase2", props=props, home=java_home, timeout=150)
    finally:
        _remove(*(c for c in (first, second) if c is not None))
