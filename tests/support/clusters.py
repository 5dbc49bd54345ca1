"""The (name server, broker) pair a compat module runs its scenarios on: pyrmq's in the default run,
the Java 5.5.0 servers in a reference run (tests/compat/conftest.py deselects a "java" broker kind
unless PYRMQ_COMPAT_REFERENCE=1). A module parametrises its own `broker_kind` (or `cluster`) fixture
with ("pyrmq", "java") and builds the pair with `cluster_of`."""

from __future__ import annotations

from typing import Any

#: The Java broker as the reference under a scenario's bursts on a loaded 2-core machine: its
#: fast-failure guard answers SYSTEM_BUSY after 200 ms in the send queue, which the scenarios (and
#: the Go producer, which does not retry it) would measure as the machine's load, not the protocol.
JAVA_UNDER_LOAD = {
    "brokerFastFailureEnable": "false",
    "waitTimeMillsInSendQueue": 3000,
    "osPageCacheBusyTimeOutMills": 5000,
}


def cluster_of(request: Any, kind: str, name: str, *, java_conf: dict | None = None, **conf: Any) -> tuple[Any, Any]:
    """Name server and broker `name` of `kind` ("pyrmq" or "java"), from the module-scoped server
    fixtures; `conf` goes to either broker, `java_conf` to the Java one only."""
    if kind == "pyrmq":
        ns = request.getfixturevalue("pyrmq_namesrv")
        return ns, request.getfixturevalue("pyrmq_broker")(ns.addr, name=name, **conf)
    if kind != "java":
        raise ValueError(f"unknown broker kind {kind!r}")
    ns = request.getfixturevalue("java_namesrv")
    return ns, request.getfixturevalue("java_broker")(ns.addr, name=name, **conf, **(java_conf or {}))
