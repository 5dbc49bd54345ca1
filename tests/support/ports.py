"""Free TCP ports on 127.0.0.1 for servers started by tests.

The Java broker binds listenPort, listenPort-2 (VIP/"fast" port) and
listenPort+1 (HA, on all interfaces), so a broker needs a block of ports that
are all free. Ports are picked at random below the Linux ephemeral range
(32768+) so outgoing connections never take them, and never handed out twice
in one process. Other processes may still race us; the server fixtures retry
on "Address already in use".
"""

from __future__ import annotations

import random
import socket
import threading

_LOW, _HIGH = 12000, 32000
_given: set[int] = set()
_lock = threading.Lock()


def _bindable(port: int) -> bool:
    for host in ("127.0.0.1", "0.0.0.0"):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                return False
    return True


def free_port_block(offsets: tuple[int, ...] = (0,)) -> int:
    """A base port p such that p+o is free for every o in offsets."""
    with _lock:
        for _ in range(2000):
            base = random.randint(_LOW - min(offsets), _HIGH - max(offsets))
            ports = [base + o for o in offsets]
            if any(p in _given for p in ports):
                continue
            if all(_bindable(p) for p in ports):
                _given.update(ports)
                return base
    raise RuntimeError(f"no free port block {offsets} in {_LOW}..{_HIGH}")


def free_port() -> int:
    return free_port_block((0,))


def broker_port() -> int:
    """listenPort for a Java broker: listenPort-2, listenPort and listenPort+1 free."""
    return free_port_block((-2, 0, 1))


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
