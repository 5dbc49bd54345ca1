"""``pyrmq dev`` for tests without Docker: as a subprocess or embedded in this process.

Both start a NameServer and a Broker on free loopback ports with a throw-away store
and expose ``namesrv_addr`` once the broker is registered (what a client needs).
Java counterpart: none (the Java world uses RocketMQContainer or a mini-cluster);
shaped like ``pyrmq.testing.container.RocketMQContainer`` so fixtures can swap them.
"""

from __future__ import annotations

import abc
import argparse
import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

from pyrmq.testing.ports import free_broker_port, free_port
from pyrmq.testing.probe import broker_registered


class StartupError(RuntimeError):
    """The server did not come up (the message carries its log)."""


class _DevBase(abc.ABC):
    """Ports, store directory and readiness wait shared by both flavours."""

    def __init__(
        self,
        store_dir: str | os.PathLike[str] | None = None,
        namesrv_port: int | None = None,
        broker_port: int | None = None,
        start_timeout: float = 30.0,
        grpc_port: int | None = None,
    ) -> None:
        self._own_store = store_dir is None
        self.grpc_port = grpc_port  # None: no gRPC endpoint; 0: a free port picked at start
        self.store_dir = Path(store_dir) if store_dir else None
        self.namesrv_port = namesrv_port
        self.broker_port = broker_port
        self.start_timeout = start_timeout

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self.namesrv_port}"

    @property
    def broker_addr(self) -> str:
        return f"127.0.0.1:{self.broker_port}"

    def get_namesrv_addr(self) -> str:
        """Same name as RocketMQContainer's accessor."""
        return self.namesrv_addr

    @abc.abstractmethod
    def start(self) -> Self:
        """Start and wait until the broker is registered at the name server."""

    @abc.abstractmethod
    def stop(self, timeout: float = 15.0) -> int | None:
        """Shut down cleanly; returns the exit code."""

    def _pick(self) -> Path:
        """Choose the store directory (returned) and the ports not given."""
        if self.store_dir is None:
            self.store_dir = Path(tempfile.mkdtemp(prefix="pyrmq-dev-")) / "store"
        self._fixed_ports = (self.namesrv_port, self.broker_port)
        self.namesrv_port = self._fixed_ports[0] or free_port()
        self.broker_port = self._fixed_ports[1] or free_broker_port()
        if self.grpc_port == 0:
            self.grpc_port = free_port()
        return self.store_dir

    def _wait_ready(self, alive: Callable[[], bool], log: Callable[[], str]) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if not alive():
                raise StartupError(f"pyrmq dev exited during startup\n{log()}")
            if broker_registered(self.namesrv_addr, self.broker_addr, timeout=1.0):
                return
            time.sleep(0.1)
        raise StartupError(f"pyrmq dev not ready after {self.start_timeout}s\n{log()}")

    def _cleanup_store(self) -> None:
        if self._own_store and self.store_dir is not None:
            shutil.rmtree(self.store_dir.parent, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class PyrmqDevProcess(_DevBase):
    """``python -m pyrmq dev`` as a child process; stop() sends SIGTERM (clean shutdown), then SIGKILL."""

    def __init__(self, *args: Any, python: str | None = None, log_level: str = "WARNING", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.python = python or sys.executable
        self.log_level = log_level
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None

    def start(self) -> Self:
        for attempt in range(3):  # a picked port can be taken by someone else before we bind it
            store_dir = self._pick()
            self.log_path = store_dir.parent / f"pyrmq-dev-{self.namesrv_port}.log"
            store_dir.parent.mkdir(parents=True, exist_ok=True)
            argv = [
                self.python,
                "-m",
                "pyrmq",
                "dev",
                "--namesrv-port",
                str(self.namesrv_port),
                "--broker-port",
                str(self.broker_port),
                "--store",
                str(store_dir),
                "--log-level",
                self.log_level,
                "--grpc-port",
                str(-1 if self.grpc_port is None else self.grpc_port),
            ]
            with open(self.log_path, "ab") as out:
                self.proc = subprocess.Popen(
                    argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
                )
            try:
                self._wait_ready(self.alive, self.tail)
                return self
            except StartupError:
                self._terminate()
                if attempt == 2 or "in use" not in self.tail():
                    raise
                self.namesrv_port, self.broker_port = self._fixed_ports
        raise AssertionError("unreachable")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, lines: int = 60) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def _terminate(self, timeout: float = 15.0) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(5)

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM and wait (SIGKILL after `timeout`); returns the exit code."""
        rc = self._terminate(timeout)
        self._cleanup_store()
        return rc


class EmbeddedPyrmqDev(_DevBase):
    """``pyrmq dev`` on its own event loop in a daemon thread of this process (no subprocess, no Docker)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._result: list[int | BaseException] = []

    def _run(self, args: argparse.Namespace, ready: threading.Event) -> None:
        from pyrmq.broker.dev import serve

        async def main() -> int:
            self._loop = asyncio.get_running_loop()
            stop = self._stop = asyncio.Event()
            ready.set()
            return await serve(args, stop)

        try:
            self._result.append(asyncio.run(main()))
        except BaseException as e:  # reported by start()/stop(), never lost in the thread
            self._result.append(e)
        finally:
            ready.set()

    def start(self) -> Self:
        store_dir = self._pick()
        args = argparse.Namespace(
            namesrv_port=self.namesrv_port,
            broker_port=self.broker_port,
            store=str(store_dir),
            host="127.0.0.1",
            advertise=None,
            cluster="DefaultCluster",
            broker_name="broker-a",
            log_level="WARNING",
            grpc_port=-1 if self.grpc_port is None else self.grpc_port,
        )
        ready = threading.Event()
        thread = self._thread = threading.Thread(target=self._run, args=(args, ready), name="pyrmq-dev", daemon=True)
        thread.start()
        ready.wait(10)
        self._wait_ready(thread.is_alive, lambda: f"result: {self._result!r}")
        return self

    def stop(self, timeout: float = 15.0) -> int | None:
        """Set the stop event on the server's loop and join the thread (the same clean shutdown as SIGTERM)."""
        if self._thread is not None and self._thread.is_alive() and self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout)
        self._cleanup_store()
        result = self._result[0] if self._result else None
        if isinstance(result, BaseException):
            raise result
        return result


__all__ = ["EmbeddedPyrmqDev", "PyrmqDevProcess", "StartupError"]
