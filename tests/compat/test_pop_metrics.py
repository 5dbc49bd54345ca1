"""POP groups' metrics under the official Java 5.5.0 client's POP calls: lag, in-flight and ready
series (retry topic included, as is_retry="true") and the rocketmq_pop_* revive counters.

test_pop_push_consumer_series: the same series under the 5.5.0 remoting push consumer in POP mode
(scenarios5/PopPushMetricsLoad). Its heartbeat registers the group as a push group
(CONSUME_PASSIVELY), so while it is connected Java's ConsumerLagCalculator measures the group as a
push group: committed offset against the queue's end, no retry-topic series, whatever is un-acked.
Once it has shut down, the broker knows the group from its POP requests only (the compensation
table) and the POP series, retry topic included, appear.

compat/java-tests scenarios5/PopMetricsLoad pops COUNT messages of a one-queue topic, acks ACKED of
them and leaves the rest un-acked past the invisible time, so the broker's revive puts them into the
group's retry topic. The broker's metrics endpoint (metricsExporterType=PROM, a plain GET) is read
twice: while the un-acked messages are in flight, and once they are revived. The expected values are
the Java 5.5.0 broker's (ConsumerLagCalculator, PopMetricsManager): the reference run
(PYRMQ_COMPAT_REFERENCE=1) asserts the same numbers against it; the default run against pyrmq.
docs/operations.md ("POP groups") says why each number is what it is.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest
from support.clusters import JAVA_UNDER_LOAD, cluster_of
from support.java import run_junit
from support.ports import free_port
from support.prom import Scrape, parse, scrape

pytestmark = [pytest.mark.compat, pytest.mark.java]

BROKER = "pop-metrics"
COUNT, ACKED = 10, 6
#: long enough for the first scrape on a loaded machine, short for the default run's budget
INVISIBLE_MS = 5000
LAG_SERIES = (
    "rocketmq_consumer_lag_messages",
    "rocketmq_consumer_inflight_messages",
    "rocketmq_consumer_ready_messages",
)


@pytest.fixture(scope="module", params=["pyrmq", "java"])
def broker_kind(request):
    return request.param


@pytest.fixture(scope="module")
def metrics_cluster(broker_kind, request, java_harness):
    """(name server, metrics URL) of a broker exporting PROM on a free port."""
    port = free_port()
    prom = {"metricsExporterType": "PROM", "metricsPromExporterHost": "127.0.0.1", "metricsPromExporterPort": port}
    ns, _ = cluster_of(request, broker_kind, BROKER, java_conf=JAVA_UNDER_LOAD, **prom)
    return ns, f"http://127.0.0.1:{port}/metrics"


def pop_view(s: Scrape, group: str, topic: str) -> dict[tuple[str, ...], float]:
    """The POP series of `group` (on `topic`), keyed by name and the labels that tell them apart."""
    out: dict[tuple[str, ...], float] = {}
    for name in LAG_SERIES:
        for labels, v in s.series(name, consumer_group=group, topic=topic).items():
            out[(name, dict(labels)["is_retry"])] = v
    for name, keys in (
        ("rocketmq_pop_revive_in_message_total", ("revive_message_type", "put_status")),
        ("rocketmq_pop_revive_out_message_total", ("revive_message_type",)),
        ("rocketmq_pop_revive_retry_messages_total", ("put_status",)),
    ):
        for labels, v in s.series(name, consumer_group=group).items():
            d = dict(labels)
            k = (name, *(d[x] for x in keys))
            out[k] = out.get(k, 0) + v
    return out


def start_load(
    scenario: str, namesrv: str, java_home: Path, hold: Path | str
) -> tuple[threading.Thread, dict, str, str]:
    """compat/java-tests scenarios5/`scenario` (COUNT messages, ACKED acked, INVISIBLE_MS) on a new
    topic and group, started in a thread: (the thread, the dict its error lands in under "error",
    topic, group)."""
    tag = uuid.uuid4().hex[:8]
    topic, group = f"{scenario}T_{tag}", f"{scenario.lower()}_g_{tag}"
    props = {
        "namesrv": namesrv,
        "topic": topic,
        "group": group,
        "count": COUNT,
        "acked": ACKED,
        "invisibleMs": INVISIBLE_MS,
        "holdFile": hold,
    }
    box: dict[str, BaseException] = {}

    def run() -> None:
        try:
            run_junit("5.5.0", f"io.pyrmq.compat.scenarios5.{scenario}", props=props, home=java_home, timeout=240)
        except BaseException as e:  # re-raised in the test's thread
            box["error"] = e

    t = threading.Thread(target=run)
    t.start()
    return t, box, topic, group


def run_pop_load(namesrv: str, url: str, java_home: Path, hold: Path) -> tuple[int, Scrape, Scrape, str, str]:
    """(POP requests that returned messages, scrape with the un-acked in flight, scrape once revived,
    group, topic)."""
    t, box, topic, group = start_load("PopMetricsLoad", namesrv, java_home, hold)
    try:
        deadline = time.monotonic() + 120
        while not hold.exists() and t.is_alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert hold.exists(), box.get("error") or "the load never reached its hold point"
        popped_at = time.monotonic()
        pops = int(hold.read_text().split()[1])
        in_flight = parse(scrape(url)[1])
        assert time.monotonic() - popped_at < INVISIBLE_MS / 1000 - 1, "scraped too late to see the in-flight state"
        deadline = time.monotonic() + 90  # the invisible time, then the revive (reviveInterval 1 s)
        while True:
            revived = parse(scrape(url)[1])
            retried = revived.total("rocketmq_pop_revive_retry_messages_total", consumer_group=group)
            if retried >= COUNT - ACKED or time.monotonic() > deadline:
                break
            time.sleep(1)
        time.sleep(1)  # the revive's offset commit and the retry topic's dispatch after the last put
        revived = parse(scrape(url)[1])
    finally:
        Path(f"{hold}.done").write_text("go")
        t.join(240)
    if "error" in box:
        raise box["error"]
    return pops, in_flight, revived, group, topic


def test_pop_series_at_known_counts(metrics_cluster, broker_kind, java_home, tmp_path):
    ns, url = metrics_cluster
    pops, in_flight, revived, group, topic = run_pop_load(ns.addr, url, java_home, tmp_path / "hold")
    a, b = pop_view(in_flight, group, topic), pop_view(revived, group, topic)
    print(f"{broker_kind}: pops {pops}\nin flight: {sorted(a.items())}\nrevived: {sorted(b.items())}")
    unacked = COUNT - ACKED
    put = {
        ("rocketmq_pop_revive_in_message_total", "CK", "PUT_OK"): pops,
        ("rocketmq_pop_revive_in_message_total", "ACK", "PUT_OK"): ACKED,
    }
    # popped, some acked: the rest count as lag and in flight on the topic; nothing in the retry topic
    assert _exact(a) == {
        **_lag_series(False, lag=unacked, inflight=unacked, ready=0),
        **_lag_series(True, lag=0, inflight=0, ready=0),
        **put,
    }, a
    # revived: the un-acked moved to the retry topic, ready there (the revive set the group's
    # retry offset to 0, Java's initPopRetryOffset), none in flight
    assert _exact(b) == {
        **_lag_series(False, lag=0, inflight=0, ready=0),
        **_lag_series(True, lag=unacked, inflight=0, ready=unacked),
        **put,
        ("rocketmq_pop_revive_retry_messages_total", "PUT_OK"): unacked,
    }, b
    # revive records read back: each at least once; Java and pyrmq both read a record again in each
    # revive round until the check point is due, so the count depends on the rounds' timing
    assert b[("rocketmq_pop_revive_out_message_total", "CK")] >= pops
    assert b[("rocketmq_pop_revive_out_message_total", "ACK")] >= ACKED
    assert set(b) - set(_exact(b)) == {("rocketmq_pop_revive_out_message_total", t) for t in ("CK", "ACK")}


def push_view(s: Scrape, group: str) -> dict[tuple[str, ...], float]:
    """Every series of `group` that a POP push consumer moves, keyed by name and the labels that
    tell them apart (lag series of any topic, so that one more than Java's shows)."""
    out: dict[tuple[str, ...], float] = {}
    for name in LAG_SERIES:
        for labels, v in s.series(name, consumer_group=group).items():
            d = dict(labels)
            out[(name, d["topic"], d["is_retry"])] = v
    for name, keys in (
        ("rocketmq_pop_revive_in_message_total", ("revive_message_type", "put_status")),
        ("rocketmq_pop_revive_retry_messages_total", ("put_status",)),
        ("rocketmq_messages_out_total", ("topic", "is_retry")),
        ("rocketmq_consumer_connections", ("consume_mode",)),
    ):
        for labels, v in s.series(name, consumer_group=group).items():
            d = dict(labels)
            k = (name, *(d.get(x, "") for x in keys))
            out[k] = out.get(k, 0) + v
    return out


def run_push_load(namesrv: str, url: str, java_home: Path, hold: str) -> tuple[dict[str, tuple[int, Scrape]], str, str]:
    """({phase: (POP check points the client saw so far, the scrape)} for phases A, B and C of
    PopPushMetricsLoad (its docstring), group, topic)."""
    t, box, topic, group = start_load("PopPushMetricsLoad", namesrv, java_home, hold)

    def reached(phase: str, timeout: float) -> int:
        at = Path(f"{hold}.{phase}")
        deadline = time.monotonic() + timeout
        while not at.exists() and t.is_alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert at.exists(), box.get("error") or f"the load never reached its phase {phase}"
        time.sleep(0.05)  # the scenario writes a few bytes: let it finish
        return int(at.read_text().split()[1])

    def settled(want_acks: int) -> Scrape:
        """A scrape once the client's acks of the messages consumed so far have reached the
        broker (the client sends them just after the listener returns), or after 3 s."""
        deadline = time.monotonic() + 3
        while True:
            s = parse(scrape(url)[1])
            acks = s.total("rocketmq_pop_revive_in_message_total", consumer_group=group, revive_message_type="ACK")
            if acks >= want_acks or time.monotonic() > deadline:
                return s
            time.sleep(0.2)

    phases: dict[str, tuple[int, Scrape]] = {}
    try:
        cks = reached("A", 120)
        seen = time.monotonic()
        phases["A"] = (cks, settled(ACKED))
        assert time.monotonic() - seen < INVISIBLE_MS / 1000 - 1, "scraped too late to see the in-flight state"
        Path(f"{hold}.A.done").write_text("go")
        cks = reached("B", 120)
        phases["B"] = (cks, settled(COUNT))
        Path(f"{hold}.B.done").write_text("go")
        cks = reached("C", 60)
        phases["C"] = (cks, parse(scrape(url)[1]))
    finally:
        for phase in "ABC":
            Path(f"{hold}.{phase}.done").write_text("go")
        t.join(240)
    if "error" in box:
        raise box["error"]
    return phases, group, topic


def test_pop_push_consumer_series(metrics_cluster, broker_kind, java_home, tmp_path):
    """The series a POP push consumer moves, at the three phases of PopPushMetricsLoad; the same
    numbers on pyrmq and on Java 5.5.0 (the reference run)."""
    ns, url = metrics_cluster
    phases, group, topic = run_push_load(ns.addr, url, java_home, str(tmp_path / "hold"))
    views = {phase: (cks, push_view(s, group)) for phase, (cks, s) in phases.items()}
    print(f"{broker_kind}: {sorted((p, c, sorted(v.items())) for p, (c, v) in views.items())}")
    unacked = COUNT - ACKED
    # a push group to the lag calculator: its committed offset is at the end (the POP requests
    # moved it), so nothing counts as lag, in flight or ready, and it has no retry-topic series
    connected = {(name, topic, "false"): 0 for name in LAG_SERIES}
    cks_a, a = views["A"]
    assert a == {
        **connected,
        ("rocketmq_pop_revive_in_message_total", "CK", "PUT_OK"): cks_a,
        ("rocketmq_pop_revive_in_message_total", "ACK", "PUT_OK"): ACKED,
        ("rocketmq_messages_out_total", topic, "false"): COUNT,
        ("rocketmq_consumer_connections", "push"): 1,
    }, a
    # the un-acked came back through the retry topic and were acked: the retry puts, the second
    # deliveries (is_retry="true", under the topic the client asked for) and every ack
    cks_b, b = views["B"]
    moved = {
        ("rocketmq_pop_revive_in_message_total", "CK", "PUT_OK"): cks_b,
        ("rocketmq_pop_revive_in_message_total", "ACK", "PUT_OK"): COUNT,
        ("rocketmq_pop_revive_retry_messages_total", "PUT_OK"): unacked,
        ("rocketmq_messages_out_total", topic, "false"): COUNT,
        ("rocketmq_messages_out_total", topic, "true"): unacked,
    }
    assert b == {**connected, **moved, ("rocketmq_consumer_connections", "push"): 1}, b
    # shut down: a POP group (from its POP requests), its topic and its retry topic, all consumed
    cks_c, c = views["C"]
    assert cks_c == cks_b
    assert c == {
        **{(name, topic, flag): 0 for name in LAG_SERIES for flag in ("false", "true")},
        **moved,
    }, c


def _lag_series(is_retry: bool, *, lag: int, inflight: int, ready: int) -> dict[tuple[str, ...], float]:
    flag = "true" if is_retry else "false"
    return {(name, flag): v for name, v in zip(LAG_SERIES, (lag, inflight, ready), strict=True)}


def _exact(view: dict[tuple[str, ...], float]) -> dict[tuple[str, ...], float]:
    """The series whose values the load fixes (all but the revive read-backs)."""
    return {k: v for k, v in view.items() if k[0] != "rocketmq_pop_revive_out_message_total"}
