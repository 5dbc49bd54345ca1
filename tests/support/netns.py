"""A private network namespace for tests that must use fixed, well-known ports.

Some official programs (the rocketmq-example classes) hard-code 127.0.0.1:9876 and
127.0.0.1:10911 and offer no way to point them elsewhere. Inside `private_loopback()` the
calling thread, and every process it starts, sees its own loopback interface: those ports
are free there whatever runs on the machine, and nothing started inside is reachable from
outside. Needs CAP_SYS_ADMIN (root, as in the test container); without it the test fails
with the kernel's error, never skips.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import socket
import struct
from collections.abc import Iterator

CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1

_libc = ctypes.CDLL(None, use_errno=True)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)} (a private network namespace needs CAP_SYS_ADMIN)")


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, req))[1]
        fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))


@contextlib.contextmanager
def private_loopback() -> Iterator[None]:
    """Run the body (this thread and the processes and threads it starts) in a new network namespace.

    The namespace goes away once the body's processes have exited; stop them inside the body.
    """
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        _check(_libc.unshare(CLONE_NEWNET), "unshare(CLONE_NEWNET)")
        try:
            _loopback_up()
            yield
        finally:
            _check(_libc.setns(home, CLONE_NEWNET), "setns back to the test's network namespace")
    finally:
        os.close(home)
