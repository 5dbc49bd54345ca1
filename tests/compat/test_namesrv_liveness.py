"""Broker liveness at pyrmq's NameServer, observed with a real Java broker 5.5.0.

- kill -9: the broker's connection is reset, and the name server must drop its
  route at once (Java: BrokerHousekeepingService#onChannelClose), long before
  any expiry.
- kill -STOP: the connection stays open but heartbeats stop; the broker must
  be expired after brokerChannelExpiredTime (Java: a fixed 120 s in
  RouteInfoManager#scanNotActiveBroker; pyrmq takes it from its config).

The expiry used here is 15 s, not less: a Java broker re-registers every 10 s at
best (BrokerController clamps registerNameServerPeriod to 10..60 s), so any
shorter expiry would drop healthy brokers between two registrations.
"""

from __future__ import annotations

import os
import time

import pytest
from support import probe
from support.servers import namesrv_under_test

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.slow]

EXPIRY_MS = 15_000
SCAN_MS = 1_000


@pytest.fixture(scope="module")
def liveness_namesrv(tmp_path_factory, request):
    """A name server under test with a short broker expiry (its own, not the shared one)."""
    ns = namesrv_under_test(
        tmp_path_factory.mktemp("liveness-namesrv"),
        scanNotActiveBrokerInterval=SCAN_MS,
        brokerChannelExpiredTime=EXPIRY_MS,
    )
    yield ns
    if getattr(request.module, "_compat_failed", False):
        print(f"\n{ns!r}\n{ns.tail(80)}")
    ns.stop()


def _broker_conf():
    conf = {"registerNameServerPeriod": 10_000}
    if os.environ.get("PYRMQ_COMPAT_NAMESRV") == "java":
        # Self-check against the Java name server, whose own expiry is a fixed 120 s: make the
        # broker announce the same timeout in its registration (acting-master mode sends
        # heartbeatTimeoutMillis and a BROKER_HEARTBEAT every second).
        conf.update(enableSlaveActingMaster="true", brokerNotActiveTimeoutMillis=EXPIRY_MS)
    return conf


def _gone(ns, broker) -> bool:
    return (
        not probe.broker_registered(ns.addr, broker.name)
        and probe.topic_route(ns.addr, broker.name).code == probe.TOPIC_NOT_EXIST
    )


def _wait_gone(ns, broker, timeout: float) -> float:
    """Seconds until the name server forgot the broker (cluster info and route); fails after timeout."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if _gone(ns, broker):
            return time.monotonic() - t0
        time.sleep(0.1)
    raise AssertionError(
        f"{broker.name} still known to {ns.addr} {timeout}s later:\n"
        f"{probe.cluster_info(ns.addr).text}\n{probe.topic_route(ns.addr, broker.name)}"
    )


def test_kill9_broker_route_disappears_at_once(liveness_namesrv, java_broker):
    ns = liveness_namesrv
    broker = java_broker(ns.addr, fresh=True, **_broker_conf())
    route = probe.topic_route(ns.addr, broker.name)  # the broker's own topic, registered with it
    assert route.code == probe.SUCCESS and broker.addr in route.text, route
    broker.kill9()
    took = _wait_gone(ns, broker, timeout=5.0)
    assert took < 5.0  # far below the 15 s expiry: the closed connection did it
    print(f"route gone {took:.2f}s after kill -9")


def test_silent_broker_expires(liveness_namesrv, java_broker):
    ns = liveness_namesrv
    broker = java_broker(ns.addr, fresh=True, **_broker_conf())
    # The broker registered at most one period (10 s) ago, so with a 15 s expiry it must
    # still be listed 2 s into the pause, and gone within expiry + scan (+ margin) after it.
    broker.pause()
    try:
        paused_at = time.monotonic()
        assert probe.broker_registered(ns.addr, broker.name, broker.addr), "broker dropped before the pause"
        time.sleep(2)
        assert probe.broker_registered(ns.addr, broker.name, broker.addr), "expired too early"
        _wait_gone(ns, broker, timeout=EXPIRY_MS / 1000 + SCAN_MS / 1000 + 5)
        print(f"expired {time.monotonic() - paused_at:.1f}s after SIGSTOP (expiry {EXPIRY_MS} ms)")
    finally:
        broker.resume()
