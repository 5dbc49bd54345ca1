"""Free loopback ports for servers started by tests (name server, broker + its VIP port)."""

from __future__ import annotations

import random
import socket


def _bindable(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A port the kernel just handed out (may be taken again by the time it is used: callers retry)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def free_broker_port() -> int:
    """A port P with P-2 free too: a Broker listens on listenPort and its VIP channel on listenPort-2."""
    for _ in range(200):
        port = random.randint(20000, 60000)
        if _bindable(port) and _bindable(port - 2):
            return port
    raise OSError("no free port pair (P, P-2) found")


__all__ = ["free_broker_port", "free_port"]
