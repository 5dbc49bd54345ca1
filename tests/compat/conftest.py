"""Fixtures for the compat suites (Java and Go): name servers, Java brokers, mqadmin.

Names are relied on by tests/compat/test_go_*.py too: pyrmq_namesrv,
java_namesrv, java_broker, mqadmin. The logic lives in tests/support/ so other
suites can reuse it; these fixtures only give it a directory and a lifetime.

Scopes: name servers and the broker factory are module-scoped, so the tests in
one module share one name server and (when they ask for the same thing) one
Java broker; everything is stopped at module teardown.
"""

from __future__ import annotations

import pytest
from support import java
from support.servers import JavaBroker, JavaNamesrv, namesrv_under_test
from support.suites import mark_suite


@pytest.fixture(scope="session")
def java_harness():
    """Built compat/java-tests (build.sh); a missing JDK or Maven fails here, loudly."""
    java.ensure_built()
    return java


@pytest.fixture(scope="session")
def java_home(tmp_path_factory):
    """user.home / ROCKETMQ_HOME for client-side Java processes (JUnit, mqadmin)."""
    return java.prepare_home(tmp_path_factory.mktemp("java-home"))


#: Parametrisations that run a scenario against the Java broker / NameServer instead of pyrmq.
REFERENCE_PARAMS = ("broker_kind", "cluster", "namesrv")
REFERENCE_ENV = "PYRMQ_COMPAT_REFERENCE"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Every test here is marked `compat` (tests/support/suites.py).

    Reference runs of the client scenarios against the Java servers are opt-in: the
    parametrisations named in REFERENCE_PARAMS set to "java", and tests marked `reference`
    (a scenario run on Java servers only, e.g. the all-Java failover group).

    Each scenario was written against the real Java broker first (that run proves the
    scenario, not pyrmq); `PYRMQ_COMPAT_REFERENCE=1 tools/test tests/compat` repeats it.
    The default run keeps every pyrmq parametrisation and every test that compares pyrmq
    with the Java servers in one test (mqadmin outputs, stores handed from one to the other),
    so the whole suite stays well under CI's time budget. Deselected, never skipped.
    """
    import os

    mark_suite(items, __file__)
    if os.environ.get(REFERENCE_ENV) == "1":
        return
    keep, reference = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        is_ref = "tests/compat/" in item.nodeid and (
            any(params.get(p) == "java" for p in REFERENCE_PARAMS) or item.get_closest_marker("reference") is not None
        )
        (reference if is_ref else keep).append(item)
    if reference:
        config.hook.pytest_deselected(items=reference)
        items[:] = keep


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        # Module-scoped fixtures print their server logs at teardown when any test failed.
        item.module._compat_failed = True  # type: ignore[attr-defined]


def _container_mode(request) -> bool:
    """--broker-mode=container (pyrmq.testing's pytest plugin) or PYRMQ_BROKER_MODE=container."""
    from pyrmq.testing.pytest_plugin import broker_mode

    return broker_mode(request.config) == "container"


@pytest.fixture(scope="module")
def pyrmq_namesrv(tmp_path_factory, request):
    """pyrmq's NameServer on a free loopback port, scanning for dead brokers every second.

    Broker expiry stays at Java's 120 s: a Java broker re-registers only every
    10 s at best (BrokerController clamps registerNameServerPeriod to 10..60 s),
    so a shorter expiry would drop healthy brokers. test_namesrv_liveness.py
    starts its own name server with a short expiry.
    """
    if _container_mode(request):
        from support.containers import ContainerNamesrv

        ns = ContainerNamesrv(tmp_path_factory.mktemp("pyrmq-namesrv"), scanNotActiveBrokerInterval=1000)
    else:
        ns = namesrv_under_test(tmp_path_factory.mktemp("pyrmq-namesrv"), scanNotActiveBrokerInterval=1000)
    yield ns
    if getattr(request.module, "_compat_failed", False):
        print(f"\n{ns!r}\n{ns.tail(80)}")
    ns.stop()


@pytest.fixture(scope="module")
def java_namesrv(java_harness, tmp_path_factory, request):
    """The official Java NameServer 5.5.0 on a free loopback port."""
    ns = JavaNamesrv(tmp_path_factory.mktemp("java-namesrv"))
    yield ns
    if getattr(request.module, "_compat_failed", False):
        print(f"\n{ns!r}\n{ns.tail(40)}")
    ns.stop()


@pytest.fixture(scope="module")
def java_broker(java_harness, tmp_path_factory, request):
    """Factory: java_broker(namesrv_addr, store_dir=None, fresh=False, **broker_conf) -> JavaBroker.

    Returns once the broker is registered at that name server. A call with the
    same arguments as an earlier one in this module returns the same broker
    while it is alive (one JVM per module, not per test); fresh=True always
    starts a new one. All are stopped (SIGTERM, then SIGKILL) at teardown.
    """
    started: dict[tuple, JavaBroker] = {}
    all_brokers: list[JavaBroker] = []

    def factory(namesrv_addr: str, store_dir=None, fresh: bool = False, **broker_conf) -> JavaBroker:
        key = (namesrv_addr, str(store_dir), tuple(sorted((k, str(v)) for k, v in broker_conf.items())))
        b = started.get(key)
        if b is not None and b.alive() and not fresh:
            return b
        b = JavaBroker(namesrv_addr, tmp_path_factory.mktemp("java-broker"), store_dir=store_dir, **broker_conf)
        all_brokers.append(b)
        if not fresh:
            started[key] = b
        return b

    yield factory
    failed = getattr(request.module, "_compat_failed", False)
    for b in all_brokers:
        if failed:
            print(f"\n{b!r}\n{b.tail(40)}")
        b.stop()


@pytest.fixture(scope="session")
def mqadmin(java_harness, java_home):
    """mqadmin(version, *args, namesrv=..., timeout=60) -> CompletedProcess (text)."""

    def run(version: str, *args: str, namesrv: str | None = None, timeout: float = 60):
        return java.mqadmin(version, *args, namesrv=namesrv, home=java_home, timeout=timeout)

    return run


@pytest.fixture(scope="module")
def pyrmq_broker(tmp_path_factory, request):
    """Factory: pyrmq_broker(namesrv_addr, store_dir=None, fresh=False, **broker_conf) -> PyrmqBroker.

    pyrmq's Broker (`python -m pyrmq broker -c broker.conf`), same contract as
    java_broker: returns once registered at that name server, one process per
    distinct argument set per module unless fresh=True, all stopped at
    teardown. The result also has .restart() (same port, same store).
    """
    from support.pyrmq_proc import PyrmqBroker

    if _container_mode(request):  # --broker-mode=container: the same broker in the pyrmq image
        from support.containers import ContainerBroker as PyrmqBroker

    started: dict[tuple, PyrmqBroker] = {}
    all_brokers: list[PyrmqBroker] = []

    def factory(namesrv_addr: str, store_dir=None, fresh: bool = False, **broker_conf) -> PyrmqBroker:
        key = (namesrv_addr, str(store_dir), tuple(sorted((k, str(v)) for k, v in broker_conf.items())))
        b = started.get(key)
        if b is not None and b.alive() and not fresh:
            return b
        b = PyrmqBroker(namesrv_addr, tmp_path_factory.mktemp("pyrmq-broker"), store_dir=store_dir, **broker_conf)
        all_brokers.append(b)
        if not fresh:
            started[key] = b
        return b

    yield factory
    failed = getattr(request.module, "_compat_failed", False)
    for b in all_brokers:
        if failed:
            print(f"\n{b!r}\n{b.tail(80)}")
        b.stop()
