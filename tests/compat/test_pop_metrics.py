"""POP groups' metrics under the official Java 5.5.0 client's POP calls: lag, in-flight and ready
series (retry topic included, as is_retry="true") and the rocketmq_pop_* revive counters.

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


def run_pop_load(namesrv: str, url: str, java_home: Path, hold: Path) -> tuple[int, Scrape, Scrape, str, str]:
    """(POP requests that returned messages, scrape with the un-acked in flight, scrape once revived,
    group, topic)."""
    topic, group = f"PopMetT_{uuid.uuid4().hex[:8]}", f"pop_met_g_{uuid.uuid4().hex[:8]}"
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
            run_junit("5.5.0", "io.pyrmq.compat.scenarios5.PopMetricsLoad", props=props, home=java_home, timeout=240)
        except BaseException as e:  # re-raised in the test's thread
            box["error"] = e

    t = threading.Thread(target=run)
    t.start()
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


def _lag_series(is_retry: bool, *, lag: int, inflight: int, ready: int) -> dict[tuple[str, ...], float]:
    flag = "true" if is_retry else "false"
    return {(name, flag): v for name, v in zip(LAG_SERIES, (lag, inflight, ready), strict=True)}


def _exact(view: dict[tuple[str, ...], float]) -> dict[tuple[str, ...], float]:
    """The series whose values the load fixes (all but the revive read-backs)."""
    return {k: v for k, v in view.items() if k[0] != "rocketmq_pop_revive_out_message_total"}
