"""``RocketMQContainer``: pyrmq (``pyrmq dev``: NameServer + Broker) in Docker via testcontainers-python.

Java counterpart: Testcontainers' ``org.testcontainers.containers.RocketMQContainer``. A RocketMQ broker
advertises its own address in topic routes, so a client must reach the broker at exactly the address
the broker registers. Hence no random port mapping: ports are picked free on the host and used on both
sides (bridge: published 1:1 and advertised as the Docker host's address; ``network_mode="host"``: the
servers bind 127.0.0.1 directly, which needs no bridge or iptables at all).

Needs the ``container`` extra (``pip install 'pyrmq[container]'``) and an image built from
``docker/Dockerfile`` (``docker/build.sh`` tags it ``pyrmq:local``).
"""

from __future__ import annotations

import os
import time
from typing import Any, Self

from testcontainers.core.container import DockerContainer

from pyrmq.testing.ports import free_broker_port, free_port
from pyrmq.testing.probe import broker_registered

DEFAULT_IMAGE = os.environ.get("PYRMQ_IMAGE", "pyrmq:local")


class RocketMQContainer(DockerContainer):
    """``with RocketMQContainer() as rmq: producer.setNamesrvAddr(rmq.get_namesrv_addr())``.

    network_mode: ``"bridge"`` (default, or ``$PYRMQ_DOCKER_NETWORK``) or ``"host"``.
    """

    def __init__(
        self,
        image: str = DEFAULT_IMAGE,
        network_mode: str | None = None,
        namesrv_port: int | None = None,
        broker_port: int | None = None,
        start_timeout: float = 60.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(image, **kwargs)
        self.network_mode = network_mode or os.environ.get("PYRMQ_DOCKER_NETWORK", "bridge")
        self.namesrv_port = namesrv_port or free_port()
        self.broker_port = broker_port or free_broker_port()
        self.start_timeout = start_timeout
        self.advertised_host = "127.0.0.1"

    def _configure(self) -> None:
        args = ["dev", "--namesrv-port", str(self.namesrv_port), "--broker-port", str(self.broker_port)]
        if self.network_mode == "host":
            self.with_kwargs(network_mode="host")
            args += ["--host", "127.0.0.1"]
        else:
            host = self.get_docker_client().host()
            self.advertised_host = "127.0.0.1" if host in ("localhost", "0.0.0.0") else host
            for port in (self.namesrv_port, self.broker_port, self.broker_port - 2):
                self.with_bind_ports(port, port)
            args += ["--host", "0.0.0.0", "--advertise", self.advertised_host]
        self.with_command(args)
        super()._configure()

    def start(self) -> Self:
        super().start()
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            wrapped = self.get_wrapped_container()
            wrapped.reload()
            if wrapped.status in ("exited", "dead"):
                raise RuntimeError(f"pyrmq container exited during startup:\n{self.logs_text()}")
            if broker_registered(self.get_namesrv_addr(), self.broker_addr, timeout=1.0):
                return
            time.sleep(0.2)
        raise TimeoutError(f"pyrmq container not ready after {self.start_timeout}s:\n{self.logs_text()}")

    def logs_text(self) -> str:
        out, err = self.get_logs()
        return (out or b"").decode("utf-8", "replace") + (err or b"").decode("utf-8", "replace")

    @property
    def broker_addr(self) -> str:
        return f"{self.advertised_host}:{self.broker_port}"

    def get_namesrv_addr(self) -> str:
        """``host:port`` of the name server, for ``setNamesrvAddr`` / ``NAMESRV_ADDR``."""
        return f"{self.advertised_host}:{self.namesrv_port}"

    @property
    def namesrv_addr(self) -> str:
        return self.get_namesrv_addr()

    def stop_gracefully(self, timeout: int = 30) -> int:
        """``docker stop`` (SIGTERM, SIGKILL after `timeout` s); returns the exit code. The container stays."""
        wrapped = self.get_wrapped_container()
        wrapped.stop(timeout=timeout)
        wrapped.reload()
        return int(wrapped.attrs["State"]["ExitCode"])


__all__ = ["DEFAULT_IMAGE", "RocketMQContainer"]
