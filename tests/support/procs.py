"""Server processes started by tests: output to a log file, readiness by port,
SIGTERM-then-SIGKILL at teardown, and the log tail for failure messages.

Every process runs in its own session so that stop() reaches the whole process
group, and an atexit hook kills whatever a crashed test run left behind.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from support.ports import port_open

_live: set[ManagedProcess] = set()


class ProcessFailed(RuntimeError):
    pass


class ManagedProcess:
    """One child process; `log` holds its stdout and stderr."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        log: Path,
        env: dict | None = None,
        cwd: Path | None = None,
        extra_logs: list[Path] | None = None,
    ):
        self.name = name
        self.argv = argv
        self.log = log
        self.extra_logs = extra_logs or []
        log.parent.mkdir(parents=True, exist_ok=True)
        self._out = open(log, "ab")
        self.proc = subprocess.Popen(
            argv,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        self.pid = self.proc.pid
        _live.add(self)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait_port(self, port: int, timeout: float, host: str = "127.0.0.1") -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise ProcessFailed(
                    f"{self.name} exited with {self.proc.returncode} before listening on {host}:{port}\n{self.tail()}"
                )
            if port_open(host, port):
                return
            time.sleep(0.2)
        raise ProcessFailed(f"{self.name} not listening on {host}:{port} after {timeout}s\n{self.tail()}")

    def _signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, sig)

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM (graceful shutdown hooks run), then SIGKILL after `timeout`."""
        if self.alive():
            self._signal_group(signal.SIGCONT)  # a stopped process cannot act on SIGTERM
            self._signal_group(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self.proc.wait(10)
        self._close()
        return self.proc.returncode

    def wait_line(self, text: str, timeout: float = 20) -> None:
        """Until ``text`` appears in the process's output; fails at once if the process died."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log.read_text(errors="replace"):
                return
            assert self.alive(), self.tail()
            time.sleep(0.05)
        raise AssertionError(f"{text!r} not printed in {timeout}s\n{self.tail()}")

    def kill9(self) -> None:
        """SIGKILL: the process dies without closing anything itself (the kernel resets its sockets)."""
        self._signal_group(signal.SIGKILL)
        self.proc.wait(10)
        self._close()

    def pause(self) -> None:
        """SIGSTOP: alive, sockets open, but silent (no heartbeats)."""
        self._signal_group(signal.SIGSTOP)

    def resume(self) -> None:
        self._signal_group(signal.SIGCONT)

    def _close(self) -> None:
        _live.discard(self)
        if not self._out.closed:
            self._out.close()

    def tail(self, lines: int = 60) -> str:
        parts = []
        for path in [self.log, *self.extra_logs]:
            parts.append(f"--- {self.name}: tail of {path} ---\n{tail_file(path, lines)}")
        return "\n".join(parts)


def tail_file(path: Path, lines: int = 60) -> str:
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        return f"({e})"
    return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])


@atexit.register
def kill_all() -> None:
    """SIGKILL to every server still running (a crashed or abandoned test run)."""
    for p in list(_live):
        with contextlib.suppress(Exception):
            p.kill9()
