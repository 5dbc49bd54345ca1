"""The official Java clients (rocketmq-client 5.5.0 and 4.9.8) routed through pyrmq's NameServer.

A real Java broker 5.5.0 registers with the name server under test; each JUnit
case in compat/java-tests (shared by modules client5 and client4) runs in its
own JVM with -Dnamesrv=<that name server> and nothing else to find brokers by.
The `java_namesrv` variants run the same cases against the official Java
NameServer: the reference that shows the harness itself works.
"""

from __future__ import annotations

import uuid

import pytest
from support import probe
from support.java import CLIENT_VERSIONS, run_junit

pytestmark = [pytest.mark.compat, pytest.mark.java]

BROKER = "broker-java-clients"


@pytest.fixture(params=["pyrmq", "java"], ids=["pyrmq_namesrv", "java_namesrv"])
def namesrv(request):
    """The name server under test (pyrmq), or the Java one as the reference."""
    return request.getfixturevalue(f"{request.param}_namesrv")


def test_java_broker_registers(namesrv, java_broker):
    broker = java_broker(namesrv.addr, name=BROKER)
    assert probe.broker_registered(namesrv.addr, BROKER, broker.addr)
    route = probe.topic_route(namesrv.addr, BROKER)  # the broker registers a topic named after itself
    assert route.code == probe.SUCCESS, route
    assert broker.addr in route.text


@pytest.mark.parametrize("client", CLIENT_VERSIONS)
def test_route_only(client, namesrv, java_broker, java_home):
    broker = java_broker(namesrv.addr, name=BROKER)
    run_junit(
        client,
        "RouteOnlyTest",
        "route",
        home=java_home,
        timeout=120,
        props={
            "namesrv": namesrv.addr,
            "topic": f"RouteOnly_{uuid.uuid4().hex[:10]}",
            "queues": 4,
            "expectBroker": broker.name,
            "expectBrokerAddr": broker.addr,
        },
    )


@pytest.mark.parametrize("client", CLIENT_VERSIONS)
def test_quickstart(client, namesrv, java_broker, java_home):
    """1,000 sync sends, then a push consumer receives exactly those 1,000, intact."""
    java_broker(namesrv.addr, name=BROKER)
    run_junit(
        client,
        "QuickstartTest",
        "quickstart",
        home=java_home,
        timeout=240,
        props={
            "namesrv": namesrv.addr,
            "topic": f"Quickstart_{uuid.uuid4().hex[:10]}",
            "count": 1000,
            "timeoutSec": 120,
        },
    )
