"""Metrics parity: the Java 5.5.0 broker and pyrmq's, both with metricsExporterType=PROM, under
the same official-client load (rocketmq-client 5.5.0, compat/java-tests MetricsLoadTest).

Compared after the load, in the text format, OpenMetrics and protobuf: the set of series names,
their types and label names; the values of the counters the load fixes (messages and bytes in and out per topic and group, sends to the
DLQ, message sizes) and the request codes that the rpc histogram saw. What pyrmq does not export,
and why, is listed in docs/operations.md; NOT_IN_PYRMQ below must stay in step with it.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest
from support.java import run_junit
from support.ports import free_port
from support.prom import Scrape, decode_families, parse, parse_protobuf, scrape, scrape_bytes
from support.prometheus import SCRAPE_INTERVAL_S, SCRAPE_TIMEOUT_S, Prometheus

#: opt-in (PYRMQ_COMPAT_REFERENCE=1): a Java broker, Prometheus and two client runs take about
#: 3 min on the shared machine, more than the default run's budget allows (docs/compat.md)
pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.reference]

#: series Java exports and pyrmq does not (docs/operations.md, "What differs from Java 5.5.0")
NOT_IN_PYRMQ: tuple[str, ...] = ()
#: the Java broker is the reference: its fast-failure guard would measure this machine's load
JAVA_BROKER_CONF = {"brokerFastFailureEnable": "false", "waitTimeMillsInSendQueue": 3000}
LOAD = {"normal": 20, "dlq": 3, "delayed": 2}
BROKER = "metrics-b"
#: the Accept header Prometheus 2.42 scrapes with
PROMETHEUS_ACCEPT = (
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
    "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"
#: the Accept header Prometheus scrapes with when its scrape_protocols put protobuf first
PROTOBUF_ACCEPT = (
    "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.6,"
    "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.1"
)
PROTOBUF = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"
#: how far back a Prometheus query looks for a target's latest sample (several failed scrapes)
RECENT_S = 12


def _prom_conf(port: int) -> dict:
    return {"metricsExporterType": "PROM", "metricsPromExporterHost": "127.0.0.1", "metricsPromExporterPort": port}


def _shape(s: Scrape) -> dict[str, set[tuple[str, ...]]]:
    """sample name -> the label-name sets of its series."""
    out: dict[str, set[tuple[str, ...]]] = {}
    for (name, labels), _ in s.samples.items():
        if not name.startswith(NOT_IN_PYRMQ):
            out.setdefault(name, set()).add(tuple(k for k, _ in labels))
    return out


def _by(s: Scrape, name: str, *keys: str) -> dict[tuple[str, ...], float]:
    """Sum of `name` by the values of `keys`."""
    out: dict[tuple[str, ...], float] = {}
    for labels, v in s.series(name).items():
        d = dict(labels)
        k = tuple(d.get(x, "") for x in keys)
        out[k] = out.get(k, 0) + v
    return out


@pytest.fixture
def brokers(java_namesrv, java_broker, pyrmq_namesrv, pyrmq_broker):
    """{kind: (namesrv addr, metrics url)}: both brokers named alike, so node_id matches."""
    jport, pport = free_port(), free_port()
    java_broker(java_namesrv.addr, name=BROKER, **JAVA_BROKER_CONF, **_prom_conf(jport))
    pyrmq_broker(pyrmq_namesrv.addr, name=BROKER, **_prom_conf(pport))
    return {
        "java": (java_namesrv.addr, f"http://127.0.0.1:{jport}/metrics"),
        "pyrmq": (pyrmq_namesrv.addr, f"http://127.0.0.1:{pport}/metrics"),
    }


@pytest.fixture
def prometheus(brokers, tmp_path):
    """Debian's Prometheus scraping both brokers every SCRAPE_INTERVAL_S (2 s), jobs named "java" and "pyrmq"."""
    prom = Prometheus(tmp_path / "prometheus", {kind: url.split("/")[2] for kind, (_, url) in brokers.items()})
    prom.wait_up()
    yield prom
    prom.stop()


def _load(namesrv: str, url: str, props: dict, java_home: Path, hold: Path) -> tuple[Scrape, Scrape]:
    """Run the load; scrape once while its clients are connected (hold file) and once after."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            run_junit(
                "client5", "MetricsLoadTest", "load", props={**props, "holdFile": hold}, home=java_home, timeout=150
            )
        except BaseException as e:  # re-raised in the test's thread
            box["error"] = e

    t = threading.Thread(target=run)
    t.start()
    try:
        deadline = time.monotonic() + 150
        while not hold.exists() and t.is_alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert hold.exists(), box.get("error") or "the load never reached its hold point"
        during = _scrape_patiently(url)
    finally:
        Path(f"{hold}.done").write_text("go")
        t.join(180)
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    time.sleep(1)  # the consumers' last offset commits (oneway UPDATE_CONSUMER_OFFSET at shutdown)
    return during, _scrape_patiently(url)


def _scrape_patiently(url: str, attempts: int = 3) -> Scrape:
    """One scrape, asked again when the exporter does not answer within prom.scrape's 30 s (Java's,
    at a load average of 20 on this 2-core machine); what it answers is the same state either way."""
    for attempt in range(attempts):
        try:
            return parse(scrape(url)[1])
        except TimeoutError:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def test_same_series_moving_the_same_way_as_java(brokers, prometheus, java_home, tmp_path):
    topic, group = f"MetricsT_{uuid.uuid4().hex[:8]}", f"metrics_g_{uuid.uuid4().hex[:8]}"
    during: dict[str, Scrape] = {}
    after: dict[str, Scrape] = {}
    total = LOAD["normal"] + LOAD["dlq"] + LOAD["delayed"]
    in_topic = _latest(f'rocketmq_messages_in_total{{topic="{topic}"}}')
    seen: list[dict[str, float]] = [{}]  # what Prometheus had before any load, after each broker's
    marks = [time.time()]
    for kind, (namesrv, url) in brokers.items():
        ctype, _ = scrape(url)
        assert ctype.startswith("text/plain; version=0.0.4"), (kind, ctype)
        props = {"namesrv": namesrv, "topic": topic, "group": group, **LOAD}
        during[kind], after[kind] = _load(namesrv, url, props, java_home, tmp_path / f"hold-{kind}")
        seen.append({**seen[-1], kind: total})
        marks.append(prometheus.wait_value(in_topic, seen[-1]))
    loaded = time.time()  # both loads over, their clients gone
    java, py = after["java"], after["pyrmq"]

    # while the clients are connected: the same series (lag gauges, connections), same connections
    assert _shape(during["pyrmq"]) == _shape(during["java"])
    for s in during.values():
        lagging = set(_by(s, "rocketmq_consumer_lag_messages", "consumer_group", "topic"))
        assert {(group, topic), (group + "_dlq", topic)} <= lagging
    for name in ("rocketmq_producer_connections", "rocketmq_consumer_connections"):
        assert during["pyrmq"].series(name) == during["java"].series(name), name

    # the same series names, label names and types
    assert _shape(py) == _shape(java)
    types = {n: t for n, t in java.types.items() if not n.startswith(NOT_IN_PYRMQ)}
    assert py.types == types
    assert {n: h for n, h in py.helps.items()} == {n: h for n, h in java.helps.items() if n in py.helps}

    # the counters the load fixes, value for value
    for name, keys in (
        ("rocketmq_messages_in_total", ("topic", "message_type", "is_system")),
        ("rocketmq_throughput_in_total", ("topic", "message_type", "is_system")),
        ("rocketmq_message_size_count", ("topic", "message_type")),
        ("rocketmq_message_size_bucket", ("topic", "message_type", "le")),
        ("rocketmq_send_to_dlq_messages_total", ("consumer_group", "topic", "is_system")),
    ):
        assert _by(py, name, *keys) == _by(java, name, *keys), name
    user = LOAD["normal"] + LOAD["dlq"] + LOAD["delayed"]
    for s in (java, py):
        assert _by(s, "rocketmq_messages_out_total", "topic", "consumer_group")[(topic, group)] == user
        assert _by(s, "rocketmq_messages_out_total", "topic", "consumer_group")[(topic, group + "_dlq")] == LOAD["dlq"]
        assert _by(s, "rocketmq_send_to_dlq_messages_total", "consumer_group")[(group + "_dlq",)] == LOAD["dlq"]
    assert _by(py, "rocketmq_throughput_out_total", "topic", "consumer_group") == _by(
        java, "rocketmq_throughput_out_total", "topic", "consumer_group"
    )

    # the requests the clients made, by request and response code
    codes = ("send_message_v2", "consumer_send_msg_back", "update_and_create_topic")
    for code in codes:
        assert _by(py, "rocketmq_rpc_latency_milliseconds_count", "request_code", "response_code", "result").get(
            (code, "success", "success")
        ) == _by(java, "rocketmq_rpc_latency_milliseconds_count", "request_code", "response_code", "result").get(
            (code, "success", "success")
        ), code
    assert {k for k in _by(py, "rocketmq_rpc_latency_milliseconds_count", "request_code")} >= {
        ("pull_message",),
        ("heart_beat",),
        ("send_message_v2",),
    }

    # asked for OpenMetrics as Prometheus asks: the same format back, parsing to the same metadata
    # and series (values left out: the scrapes are not simultaneous)
    answers = {kind: scrape(url, accept=PROMETHEUS_ACCEPT) for kind, (_, url) in brokers.items()}
    assert answers["pyrmq"][0] == answers["java"][0] == OPENMETRICS, answers["java"][0]
    om = {kind: parse(body) for kind, (_, body) in answers.items()}
    assert om["pyrmq"].eof and om["java"].eof
    assert _shape(om["pyrmq"]) == _shape(om["java"])
    assert om["pyrmq"].types == {n: t for n, t in om["java"].types.items() if not n.startswith(NOT_IN_PYRMQ)}
    assert om["pyrmq"].units == {n: u for n, u in om["java"].units.items() if not n.startswith(NOT_IN_PYRMQ)}
    assert om["pyrmq"].helps == {n: h for n, h in om["java"].helps.items() if n in om["pyrmq"].helps}

    # asked for protobuf first: both answer length-delimited MetricFamily messages with only the
    # fields pyrmq writes (decode_families fails on any other), in the same order, decoding to the
    # same metadata and series, and the counters the load fixed at the same values
    raw = {kind: scrape_bytes(url, accept=PROTOBUF_ACCEPT) for kind, (_, url) in brokers.items()}
    assert raw["pyrmq"][0] == raw["java"][0] == PROTOBUF, raw["java"][0]
    fams = {kind: decode_families(body) for kind, (_, body) in raw.items()}
    order = {kind: [f["name"] for f in fs if not f["name"].startswith(NOT_IN_PYRMQ)] for kind, fs in fams.items()}
    assert order["pyrmq"] == order["java"]
    assert not [f["name"] for fs in fams.values() for f in fs if "unit" in f]
    pb = {kind: parse_protobuf(body) for kind, (_, body) in raw.items()}
    assert _shape(pb["pyrmq"]) == _shape(pb["java"])
    assert pb["pyrmq"].types == {n: t for n, t in pb["java"].types.items() if not n.startswith(NOT_IN_PYRMQ)}
    assert pb["pyrmq"].helps == {n: h for n, h in pb["java"].helps.items() if not n.startswith(NOT_IN_PYRMQ)}
    assert pb["pyrmq"].types == py.types and pb["java"].types == java.types
    for name, keys in (
        ("rocketmq_messages_in_total", ("topic", "message_type", "is_system")),
        ("rocketmq_message_size_bucket", ("topic", "message_type", "le")),
        ("rocketmq_send_to_dlq_messages_total", ("consumer_group", "topic", "is_system")),
        ("rocketmq_messages_out_total", ("topic", "consumer_group")),
    ):
        assert _by(pb["pyrmq"], name, *keys) == _by(pb["java"], name, *keys) == _by(java, name, *keys), name

    assert py.total("rocketmq_topic_number") == java.total("rocketmq_topic_number")
    assert py.total("rocketmq_consumer_group_number") == java.total("rocketmq_consumer_group_number")

    # what a real Prometheus scraped from both: the same metric names, the counters at the same values
    names = prometheus.query('count by (__name__, job) ({__name__=~"rocketmq_.+"})', _settled(prometheus, loaded))
    by_job: dict[str, set[str]] = {"java": set(), "pyrmq": set()}
    for labels, _ in names.items():
        d = dict(labels)
        if not d["__name__"].startswith(NOT_IN_PYRMQ):
            by_job[d["job"]].add(d["__name__"])
    assert by_job["pyrmq"] == by_job["java"]
    for selector in (
        f'rocketmq_messages_in_total{{topic="{topic}"}}',
        f'rocketmq_messages_out_total{{topic="{topic}"}}',
        f'rocketmq_throughput_in_total{{topic="{topic}"}}',
        "rocketmq_send_to_dlq_messages_total",
        'rocketmq_rpc_latency_milliseconds_count{request_code="send_message_v2"}',
    ):
        got = {dict(k)["job"]: v for k, v in prometheus.query(_latest(selector)).items()}
        assert set(got) == {"java", "pyrmq"} and got["pyrmq"] == got["java"], (selector, got)
    # the counter moved with each broker's own load: nothing before, Java's after its run, then both
    end = time.time()
    gaps = _gaps(prometheus, marks[0], end)
    history = [{dict(k)["job"]: v for k, v in prometheus.query(in_topic, at).items()} for at in marks]
    assert history == seen == [{}, {"java": total}, {"java": total, "pyrmq": total}], (history, gaps)
    # and in between: each counter only rose, and pyrmq's appeared after Java's had reached its total
    moves = {dict(k)["job"]: pts for k, pts in prometheus.query_range(in_topic, marks[0], end).items()}
    assert set(moves) == {"java", "pyrmq"}, (moves, gaps)
    for job, pts in moves.items():
        values = [v for _, v in pts]
        assert values == sorted(values) and values[-1] == total, (job, pts, gaps)
    java_done = min(t for t, v in moves["java"] if v == total)
    assert java_done < marks[1] + SCRAPE_INTERVAL_S + 1 and marks[1] < min(t for t, _ in moves["pyrmq"]), (
        moves,
        marks,
        gaps,
    )


def _latest(selector: str) -> str:
    """`selector`'s latest sample within RECENT_S, summed by job.

    Not the plain instant selector: when a scrape of a target fails (Java's exporter past the
    2 s scrape timeout on a loaded machine: `_gaps`), Prometheus writes a staleness marker at
    that scrape's start, and an instant query from then until the next good scrape is empty for
    that job. The marks above are taken right after the value was seen, often while the next
    (failing) scrape was under way, so the old instant query there read `{}` for Java.
    """
    return f"sum by (job) (last_over_time({selector}[{RECENT_S}s]))"


def _settled(prometheus: Prometheus, since: float) -> float:
    """A time after `since` whose instant view is final and whole: every scrape started before it
    has ended (SCRAPE_TIMEOUT_S), and each target's last scrape before it succeeded (no staleness
    marker hides its series, see `_latest`)."""
    deadline = time.time() + 30
    while True:
        now = time.time()
        at = now - 2 - SCRAPE_TIMEOUT_S
        while at > since:
            up = {dict(k)["job"]: v for k, v in prometheus.query("up", at).items()}
            if up == {"java": 1, "pyrmq": 1}:
                return at
            at -= SCRAPE_INTERVAL_S
        assert now < deadline, f"no successful scrape of both targets since {since}: {_gaps(prometheus, since, now)}"
        time.sleep(SCRAPE_INTERVAL_S)


def _gaps(prometheus: Prometheus, start: float, end: float) -> dict[str, list[float]]:
    """job -> the step times at which its target was down (failed or timed-out scrapes)."""
    ups = prometheus.query_range("up", start, end)
    return {dict(k)["job"]: [t for t, v in pts if v == 0] for k, pts in ups.items()}
