"""Connection storms against a pyrmq name server process: idle, half-open and churning peers.

2,000 idle connections and 500 half-open ones (a partial frame, then nothing) are held while
20,000 connect/close cycles run; a client that sends real requests meanwhile is answered in time.
Half-open connections are dropped after PYRMQ_HALF_OPEN_SECONDS, idle ones after
serverChannelMaxIdleTimeSeconds (Java's IdleStateHandler), and PYRMQ_MAX_CONNECTIONS closes
connections past the limit at once while the ones inside it keep working.
"""

from __future__ import annotations

import select
import socket
import struct
import threading
import time

import pytest
from support.probe import request
from support.servers import PyrmqNamesrv

from pyrmq.protocol.codes import RequestCode, ResponseCode

pytestmark = pytest.mark.timeout(120)

IDLE_S = 10
HALF_OPEN_S = 2


def _connect(addr: str) -> socket.socket:
    host, port = addr.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=5)


def _closed_by_peer(s: socket.socket) -> bool:
    poller = select.poll()
    poller.register(s, select.POLLIN)
    if not poller.poll(0):
        return False
    try:
        return s.recv(1) == b""
    except OSError:
        return True


class Prober(threading.Thread):
    """Sends a real request every 50 ms and records each answer's latency."""

    def __init__(self, addr: str) -> None:
        super().__init__(daemon=True)
        self.addr = addr
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            t0 = time.monotonic()
            try:
                reply = request(self.addr, RequestCode.GET_NAMESRV_CONFIG, timeout=3)
                if reply.code != ResponseCode.SUCCESS:
                    self.failures.append(f"code {reply.code}")
            except OSError as e:
                self.failures.append(repr(e))
            self.latencies.append(time.monotonic() - t0)
            self.stop.wait(0.05)


def test_idle_half_open_and_churn_do_not_disturb_other_clients(tmp_path, monkeypatch):
    monkeypatch.setenv("PYRMQ_HALF_OPEN_SECONDS", str(HALF_OPEN_S))
    ns = PyrmqNamesrv(tmp_path / "ns", serverChannelMaxIdleTimeSeconds=IDLE_S)
    prober = Prober(ns.addr)
    socks: list[socket.socket] = []
    try:
        prober.start()
        t0 = time.monotonic()
        idle = [_connect(ns.addr) for _ in range(2000)]
        socks += idle
        half = []
        for _ in range(500):
            s = _connect(ns.addr)
            s.sendall(struct.pack(">i", 200) + b"\x00\x00\x00\x10{partial")  # 200 bytes announced
            half.append(s)
        socks += half
        # half-open ones go first, idle ones stay until their own timeout
        deadline = time.monotonic() + HALF_OPEN_S + 5
        while time.monotonic() < deadline and not all(_closed_by_peer(s) for s in half):
            time.sleep(0.2)
        assert all(_closed_by_peer(s) for s in half)
        assert time.monotonic() - t0 < IDLE_S - 1, "too slow to tell half-open from idle"
        assert sum(_closed_by_peer(s) for s in idle) == 0

        def churn(n: int) -> None:
            for _ in range(n):
                _connect(ns.addr).close()

        t1 = time.monotonic()
        threads = [threading.Thread(target=churn, args=(5000,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(f"20,000 connect/close cycles in {time.monotonic() - t1:.1f} s")
        deadline = t0 + IDLE_S + 10
        while time.monotonic() < deadline and not all(_closed_by_peer(s) for s in idle):
            time.sleep(0.2)
        assert all(_closed_by_peer(s) for s in idle)
        prober.stop.set()
        prober.join(5)
        print(f"{len(prober.latencies)} probes, the slowest {max(prober.latencies) * 1000:.0f} ms")
        assert prober.failures == []
        assert len(prober.latencies) > 20 and max(prober.latencies) < 2.0
        assert ns.alive()
    finally:
        prober.stop.set()
        for s in socks:
            s.close()
        ns.stop()


def test_connection_limit_closes_the_excess_and_serves_the_rest(tmp_path, monkeypatch):
    monkeypatch.setenv("PYRMQ_MAX_CONNECTIONS", "50")
    ns = PyrmqNamesrv(tmp_path / "ns")
    socks: list[socket.socket] = []
    try:
        socks = [_connect(ns.addr) for _ in range(49)]  # the name server's own start probe may hold one
        time.sleep(0.5)
        extra = [_connect(ns.addr) for _ in range(20)]
        time.sleep(0.5)
        assert sum(_closed_by_peer(s) for s in extra) >= 19
        assert sum(_closed_by_peer(s) for s in socks) == 0
        for s in extra:
            s.close()
        time.sleep(0.3)
        assert request(ns.addr, RequestCode.GET_NAMESRV_CONFIG).code == ResponseCode.SUCCESS
    finally:
        for s in socks:
            s.close()
        ns.stop()
