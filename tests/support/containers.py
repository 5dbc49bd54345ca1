"""pyrmq's NameServer and Broker as Docker containers, for the compat suites' --broker-mode=container.

Same shapes as support.servers.PyrmqNamesrv and support.pyrmq_proc.PyrmqBroker (.addr, .name,
.store_dir, .stop(), .kill9(), .restart(), .tail(), .alive()), so the compat tests run unchanged:
the container uses host networking and the same free loopback ports, reads the same Java-style
config file, and keeps its store in the same host directory (bind-mounted at the same path, the
container running as the test's uid), so tests that inspect the store still find it there.
The image comes from docker/build.sh (which starts an engine with tools/docker-up.sh if needed).
"""

from __future__ import annotations

import functools
import itertools
import os
import subprocess
import time
from pathlib import Path

from pyrmq.testing.probe import broker_registered, namesrv_ok
from support.ports import broker_port, free_port
from support.procs import ProcessFailed
from support.servers import write_properties

ROOT = Path(__file__).resolve().parents[2]
_seq = itertools.count(1)


@functools.cache
def image() -> str:
    r = subprocess.run([str(ROOT / "docker" / "build.sh")], cwd=ROOT, capture_output=True, text=True, timeout=1200)
    if r.returncode != 0:
        raise ProcessFailed(f"docker/build.sh failed (exit {r.returncode})\n{r.stderr[-6000:]}")
    return r.stdout.strip().splitlines()[-1]


@functools.cache
def _client():
    import docker

    return docker.from_env()


class _Container:
    name: str
    port: int

    def _run(self, command: list[str], mounts: list[Path], env: dict | None = None) -> None:
        self.container = _client().containers.run(
            image(),
            command,
            detach=True,
            network_mode="host",
            user=f"{os.getuid()}:{os.getgid()}",
            name=f"{self.name}-{self.port}",
            environment=env or {},
            volumes={str(m): {"bind": str(m), "mode": "rw"} for m in mounts},
        )

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def alive(self) -> bool:
        try:
            self.container.reload()
        except Exception:
            return False
        return self.container.status == "running"

    def tail(self, lines: int = 60) -> str:
        try:
            return self.container.logs(tail=lines).decode("utf-8", "replace")
        except Exception as e:
            return f"(no logs: {e})"

    def stop(self, timeout: float = 15.0) -> int | None:
        """docker stop (SIGTERM, then SIGKILL) and remove; returns the exit code."""
        try:
            self.container.stop(timeout=int(timeout))
            self.container.reload()
            code = self.container.attrs["State"]["ExitCode"]
            self.container.remove(v=True)
            return code
        except Exception:
            return None

    def kill9(self) -> None:
        try:
            self.container.kill()
            self.container.remove(v=True)
        except Exception:
            pass

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise ProcessFailed(f"{self.name} container exited before {what}\n{self.tail()}")
            if ready():
                return
            time.sleep(0.2)
        raise ProcessFailed(f"{self.name} not {what} after {timeout}s\n{self.tail()}")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self.addr} container={self.container.short_id}>"


class ContainerNamesrv(_Container):
    """`pyrmq namesrv` in the image; conf as PyrmqNamesrv's."""

    def __init__(self, workdir: Path, start_timeout: float = 60, **conf):
        self.workdir = workdir
        self.name = f"pyrmq-namesrv-c{next(_seq)}"
        self.port = free_port()
        props = {
            "listenPort": self.port,
            "bindAddress": "127.0.0.1",
            "scanNotActiveBrokerInterval": 1000,
            "kvConfigPath": workdir / "kvConfig.json",
            "configStorePath": workdir / "namesrv.properties.store",
            **conf,
        }
        cfg = write_properties(workdir / "namesrv.properties", props)
        self._run(["namesrv", "-c", str(cfg)], [workdir])
        self._wait(lambda: namesrv_ok(self.addr, timeout=1.0), start_timeout, "answering")


class ContainerBroker(_Container):
    """`pyrmq broker` in the image; conf and contract as support.pyrmq_proc.PyrmqBroker."""

    def __init__(
        self,
        namesrv_addr: str,
        workdir: Path,
        store_dir: Path | None = None,
        name: str | None = None,
        cluster: str = "DefaultCluster",
        start_timeout: float = 60,
        **conf,
    ):
        self.namesrv_addr = namesrv_addr
        self.workdir = workdir
        self.name = name or f"pyrmq-broker-c{os.getpid()}-{next(_seq)}"
        self.cluster = cluster
        self.store_dir = Path(store_dir) if store_dir else workdir / "store"
        self.store_dir.mkdir(parents=True, exist_ok=True)
        self.start_timeout = start_timeout
        self.port = broker_port()
        self.conf_file = write_properties(
            workdir / f"broker-{self.name}.conf",
            {
                "brokerClusterName": cluster,
                "brokerName": self.name,
                "brokerId": 0,
                "namesrvAddr": namesrv_addr,
                "listenPort": self.port,
                "brokerIP1": "127.0.0.1",
                "storePathRootDir": self.store_dir,
                "autoCreateTopicEnable": "true",
                "autoCreateSubscriptionGroup": "true",
                "flushDiskType": "ASYNC_FLUSH",
                **conf,
            },
        )
        self._launch()

    def _launch(self) -> None:
        self._run(["broker", "-c", str(self.conf_file)], sorted({self.workdir, self.store_dir}))
        self._wait(
            lambda: broker_registered(self.namesrv_addr, self.addr, timeout=1.0),
            self.start_timeout,
            f"registered at {self.namesrv_addr}",
        )

    def restart(self, timeout: float | None = None) -> None:
        """docker stop (SIGTERM), then a new container with the same conf, port and store."""
        self.stop()
        self._launch()


__all__ = ["ContainerBroker", "ContainerNamesrv", "image"]
