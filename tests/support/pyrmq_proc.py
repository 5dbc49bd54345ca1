"""pyrmq's Broker as a test process, and broker restarts on the same store.

PyrmqBroker runs `<venv python> -m pyrmq broker -c <broker.conf>` with the
Java broker.conf keys (brokerClusterName, brokerName, brokerId, namesrvAddr,
listenPort, brokerIP1, storePathRootDir, ...). It has the same shape as
support.servers.JavaBroker (.addr, .name, .cluster, .store_dir, .stop(),
.kill9(), .tail()) plus .restart(): stop, then start again on the same port
and store. The gRPC endpoint stays off unless `grpc_port=` is given (0: a free
port), then `.grpc_port`/`.grpc_addr` name it. restart_broker() gives a JavaBroker the same restart, so one test
body can drive either kind.
"""

from __future__ import annotations

import itertools
import os
import sys
import time
from pathlib import Path

from support import probe
from support.java import java_env
from support.ports import broker_port, free_port
from support.procs import ManagedProcess, ProcessFailed, tail_file
from support.servers import JavaBroker, write_properties

ROOT = Path(__file__).resolve().parents[2]
_seq = itertools.count(1)
BOOT_LINE = "boot success"


def venv_python() -> str:
    p = ROOT / ".venv" / "bin" / "python"
    return str(p) if p.exists() else sys.executable


def _wait_registered(server, namesrv_addr: str, timeout: float) -> None:
    """Until the name server lists `server` at its address; fails early if the process died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not server.alive():
            raise ProcessFailed(
                f"{server.name} exited ({server.proc.returncode}) before registering at {namesrv_addr}\n{server.tail()}"
            )
        if probe.broker_registered(namesrv_addr, server.name, server.addr):
            return
        time.sleep(0.2)
    raise ProcessFailed(
        f"{server.name} ({server.addr}) not registered at {namesrv_addr} after {timeout}s\n{server.tail()}"
    )


class PyrmqBroker:
    """pyrmq's Broker on listenPort (and listenPort-2), registered at `namesrv_addr` when constructed."""

    def __init__(
        self,
        namesrv_addr: str,
        workdir: Path,
        store_dir: Path | None = None,
        name: str | None = None,
        cluster: str = "DefaultCluster",
        start_timeout: float = 30,
        system_props: dict | None = None,
        grpc_port: int | None = None,
        host: str = "127.0.0.1",
        **conf,
    ):
        self.grpc_port = (grpc_port or free_port()) if grpc_port is not None else None
        if self.grpc_port is not None:
            conf = {"grpcServerPort": self.grpc_port, **conf}
        self.host = host  # brokerIP1 and bindAddress (another loopback address: brokers sharing ports)
        if host != "127.0.0.1":
            conf = {"bindAddress": host, **conf}
        self.namesrv_addr = namesrv_addr
        self.system_props = system_props or {}  # -D options (tls.*)
        self.workdir = workdir
        self.home = workdir / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.name = name or f"pyrmq-broker-{os.getpid()}-{next(_seq)}"
        self.cluster = cluster
        self.store_dir = Path(store_dir) if store_dir else workdir / "store"
        self.start_timeout = start_timeout
        self.extra_conf = conf
        for attempt in range(3):
            self.port = broker_port()
            self.conf_file = write_properties(
                workdir / f"broker-{self.name}.conf",
                {
                    "brokerClusterName": cluster,
                    "brokerName": self.name,
                    "brokerId": 0,
                    "namesrvAddr": namesrv_addr,
                    "listenPort": self.port,
                    "brokerIP1": host,
                    "storePathRootDir": self.store_dir,
                    "autoCreateTopicEnable": "true",
                    "autoCreateSubscriptionGroup": "true",
                    "flushDiskType": "ASYNC_FLUSH",
                    **conf,
                },
            )
            try:
                self._launch()
                break
            except ProcessFailed:
                self.managed.kill9()
                if attempt == 2 or "Address already in use" not in tail_file(self.managed.log, 200):
                    raise
        try:
            _wait_registered(self, namesrv_addr, start_timeout)
        except ProcessFailed:
            self.managed.kill9()
            raise

    def _launch(self) -> None:
        env = dict(os.environ, HOME=str(self.home), PYTHONUNBUFFERED="1")
        env.pop("NAMESRV_ADDR", None)
        self.managed = ManagedProcess(
            self.name,
            [
                venv_python(),
                "-m",
                "pyrmq",
                "broker",
                "-c",
                str(self.conf_file),
                *(f"-D{k}={v}" for k, v in self.system_props.items()),
            ],
            self.workdir / f"broker-{self.name}-{self.port}.out",
            env=env,
            cwd=ROOT,
        )
        self.managed.wait_port(self.port, self.start_timeout, self.host)
        if self.grpc_port is not None:
            self.managed.wait_port(self.grpc_port, self.start_timeout, self.host)

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def grpc_addr(self) -> str:
        if self.grpc_port is None:
            raise AttributeError("this broker was started without grpc_port=")
        return f"{self.host}:{self.grpc_port}"

    @property
    def proc(self):
        return self.managed.proc

    @property
    def pid(self) -> int:
        return self.managed.pid

    def alive(self) -> bool:
        return self.managed.alive()

    def booted(self) -> bool:
        """The Java-style "The broker[name, ip:port] boot success." line was printed."""
        return BOOT_LINE in tail_file(self.managed.log, 400)

    def stop(self, timeout: float = 15.0) -> int | None:
        return self.managed.stop(timeout)

    def kill9(self) -> None:
        self.managed.kill9()

    def restart(self, timeout: float | None = None) -> None:
        """SIGTERM, then the same command line again: same port, same store; waits for registration."""
        self.stop()
        self._launch()
        _wait_registered(self, self.namesrv_addr, timeout or self.start_timeout)

    def tail(self, lines: int = 60) -> str:
        return self.managed.tail(lines)

    def __repr__(self) -> str:
        return f"<PyrmqBroker {self.name} {self.addr} pid={self.managed.pid}>"


def restart_broker(broker, timeout: float = 90) -> None:
    """Restart either kind of broker on its own port and store (graceful SIGTERM first).

    JavaBroker has no restart of its own: its broker.conf (with listenPort) is
    still on disk, so the same command line brings it back at the same address.
    """
    if hasattr(broker, "restart"):
        broker.restart()
        return
    if not isinstance(broker, JavaBroker):
        raise TypeError(f"cannot restart {broker!r}")
    old = broker.managed
    old.stop()
    broker.managed = ManagedProcess(
        old.name, old.argv, old.log, env=java_env(broker.home), cwd=broker.workdir, extra_logs=old.extra_logs
    )
    broker.managed.wait_port(broker.port, timeout)
    _wait_registered(broker, broker.namesrv_addr, timeout)
