"""The Prometheus text pyrmq writes has the shape of Java's OpenTelemetry exporter output."""

from __future__ import annotations

import pytest
from support.prom import decode_families, parse, parse_protobuf

from pyrmq.metrics.exposition import (
    CONTENT_TYPE,
    OPENMETRICS_CONTENT_TYPE,
    prometheus_name,
    wants_openmetrics,
    write_text,
)
from pyrmq.metrics.http import MetricsHttpServer
from pyrmq.metrics.protobuf import CONTENT_TYPE as PROTOBUF_CONTENT_TYPE
from pyrmq.metrics.protobuf import message_classes, wants_protobuf, write_protobuf
from pyrmq.metrics.registry import InstrumentType, Meter, label_key


@pytest.mark.parametrize(
    ("name", "unit", "itype", "want"),
    [
        ("rocketmq_messages_in_total", "", InstrumentType.COUNTER, "rocketmq_messages_in_total"),
        ("rocketmq_rpc_latency", "milliseconds", InstrumentType.HISTOGRAM, "rocketmq_rpc_latency_milliseconds"),
        (
            "rocketmq_finish_message_latency",
            "ms",
            InstrumentType.HISTOGRAM,
            "rocketmq_finish_message_latency_milliseconds",
        ),
        ("rocketmq_storage_size", "bytes", InstrumentType.GAUGE, "rocketmq_storage_size_bytes"),
        ("rocketmq_storage_flush_behind_bytes", "bytes", InstrumentType.GAUGE, "rocketmq_storage_flush_behind_bytes"),
        ("rocketmq_some", "", InstrumentType.COUNTER, "rocketmq_some_total"),
    ],
)
def test_prometheus_names_follow_the_otel_exporter(name, unit, itype, want):
    assert prometheus_name(name, unit, itype) == want


SCOPE = ("otel_scope_name", "broker-meter")


def _java_like_meter() -> Meter:
    m = Meter("broker-meter")
    c = m.counter("rocketmq_messages_in_total", "Total number of incoming messages")
    h = m.histogram("rocketmq_rpc_latency", "Rpc latency", (1, 3, 5), "milliseconds")
    m.gauge("rocketmq_storage_size", "size", lambda: [(16885997568, {"node_id": "b"})], "bytes")
    m.gauge("rocketmq_empty", "no series", lambda: [])
    c.add(2, {"topic": "T", "is_system": False, "cluster": "C"})
    for v in (0, 1, 3, 4, 9):
        h.record(v, {"request_code": "heart_beat"})
    return m


def test_text_matches_java_layout():
    text = write_text(_java_like_meter(), {InstrumentType.COUNTER: "default view for counter."})
    assert text == (
        "# HELP rocketmq_messages_in_total default view for counter.\n"
        "# TYPE rocketmq_messages_in_total counter\n"
        'rocketmq_messages_in_total{cluster="C",is_system="false",otel_scope_name="broker-meter",topic="T"} 2.0\n'
        "# HELP rocketmq_rpc_latency_milliseconds Rpc latency\n"
        "# TYPE rocketmq_rpc_latency_milliseconds histogram\n"
        'rocketmq_rpc_latency_milliseconds_bucket{otel_scope_name="broker-meter",request_code="heart_beat",le="1.0"} 2\n'
        'rocketmq_rpc_latency_milliseconds_bucket{otel_scope_name="broker-meter",request_code="heart_beat",le="3.0"} 3\n'
        'rocketmq_rpc_latency_milliseconds_bucket{otel_scope_name="broker-meter",request_code="heart_beat",le="5.0"} 4\n'
        'rocketmq_rpc_latency_milliseconds_bucket{otel_scope_name="broker-meter",request_code="heart_beat",le="+Inf"} 5\n'
        'rocketmq_rpc_latency_milliseconds_count{otel_scope_name="broker-meter",request_code="heart_beat"} 5\n'
        'rocketmq_rpc_latency_milliseconds_sum{otel_scope_name="broker-meter",request_code="heart_beat"} 17.0\n'
        "# HELP rocketmq_storage_size_bytes size\n"
        "# TYPE rocketmq_storage_size_bytes gauge\n"
        'rocketmq_storage_size_bytes{node_id="b",otel_scope_name="broker-meter"} 1.6885997568E10\n'
        "# TYPE target_info gauge\n"
        "target_info 1\n"
    )


def test_label_values_are_escaped_and_parse_back():
    m = Meter("broker-meter")
    c = m.counter("rocketmq_x_total", "x")
    odd = 'a"b\\c\nd'
    c.add(1, {"topic": odd})
    s = parse(write_text(m))
    assert s.series("rocketmq_x_total") == {(("otel_scope_name", "broker-meter"), ("topic", 'a\\"b\\\\c\\nd')): 1.0}


def test_counters_ignore_negative_increments_and_sum_per_label_set():
    m = Meter("s")
    c = m.counter("rocketmq_y_total", "y")
    c.add(3, {"a": "1"})
    c.add(-5, {"a": "1"})
    c.add(4, {"a": "1"})
    c.add(1, {"a": "2"})
    assert c.values == {label_key({"a": "1"}): 7, label_key({"a": "2"}): 1}


def test_instrument_names_are_unique_and_bounds_increasing():
    m = Meter("s")
    m.counter("rocketmq_z_total", "z")
    with pytest.raises(ValueError):
        m.counter("rocketmq_z_total", "again")
    with pytest.raises(ValueError):
        m.histogram("rocketmq_h", "h", (5, 1))


#: the buckets, count and sum lines of _java_like_meter's histogram, the same in both formats
_RPC_SAMPLES = (
    'rocketmq_rpc_latency_milliseconds_bucket{otel_scope_name="broker-meter",request_code="heart_beat",le="1.0"} 2\n'
    'rocketmq_rpc_latency_milliseconds_bucket{otel_scope_name="broker-meter",request_code="heart_beat",le="3.0"} 3\n'
    'rocketmq_rpc_latency_milliseconds_bucket{otel_scope_name="broker-meter",request_code="heart_beat",le="5.0"} 4\n'
    'rocketmq_rpc_latency_milliseconds_bucket{otel_scope_name="broker-meter",request_code="heart_beat",le="+Inf"} 5\n'
    'rocketmq_rpc_latency_milliseconds_count{otel_scope_name="broker-meter",request_code="heart_beat"} 5\n'
    'rocketmq_rpc_latency_milliseconds_sum{otel_scope_name="broker-meter",request_code="heart_beat"} 17.0\n'
)


def test_openmetrics_matches_java_layout():
    """prometheus-metrics 1.3's OpenMetricsTextFormatWriter as Java's broker runs it: the family
    name without a counter's _total, TYPE, UNIT, HELP (escaped as a label value), the samples as
    in 0.0.4, target_info as an info metric, and # EOF."""
    m = _java_like_meter()
    m.counter("rocketmq_quoted_total", 'say "hi"\\now').add(1, {})
    text = write_text(m, {InstrumentType.GAUGE: "default view for gauge."}, openmetrics=True)
    assert text == (
        "# TYPE rocketmq_messages_in counter\n"
        "# HELP rocketmq_messages_in Total number of incoming messages\n"
        'rocketmq_messages_in_total{cluster="C",is_system="false",otel_scope_name="broker-meter",topic="T"} 2.0\n'
        "# TYPE rocketmq_quoted counter\n"
        '# HELP rocketmq_quoted say \\"hi\\"\\\\now\n'
        'rocketmq_quoted_total{otel_scope_name="broker-meter"} 1.0\n'
        "# TYPE rocketmq_rpc_latency_milliseconds histogram\n"
        "# UNIT rocketmq_rpc_latency_milliseconds milliseconds\n"
        "# HELP rocketmq_rpc_latency_milliseconds Rpc latency\n"
        + _RPC_SAMPLES
        + "# TYPE rocketmq_storage_size_bytes gauge\n"
        "# UNIT rocketmq_storage_size_bytes bytes\n"
        "# HELP rocketmq_storage_size_bytes default view for gauge.\n"
        'rocketmq_storage_size_bytes{node_id="b",otel_scope_name="broker-meter"} 1.6885997568E10\n'
        "# TYPE target info\n"
        "target_info 1\n"
        "# EOF\n"
    )


def test_both_formats_carry_the_same_samples():
    m = _java_like_meter()
    text, om = parse(write_text(m)), parse(write_text(m, openmetrics=True))
    assert om.samples == text.samples and om.eof and not text.eof
    assert {n.removesuffix("_total"): t for n, t in text.types.items() if n != "target_info"} == {
        n: t for n, t in om.types.items() if n != "target"
    }
    assert om.units == {"rocketmq_rpc_latency_milliseconds": "milliseconds", "rocketmq_storage_size_bytes": "bytes"}


@pytest.mark.parametrize(
    ("accept", "want"),
    [
        (None, CONTENT_TYPE),
        ("text/plain", CONTENT_TYPE),
        ("*/*", CONTENT_TYPE),
        # Prometheus 2.42's scrape header: OpenMetrics first
        (
            "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
            "text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
            OPENMETRICS_CONTENT_TYPE,
        ),
        # Java does not weigh q-values: named at all is enough
        ("text/plain;version=0.0.4,application/openmetrics-text;q=0.1", OPENMETRICS_CONTENT_TYPE),
    ],
)
def test_endpoint_picks_the_format_from_accept_as_java_does(accept, want):
    server = MetricsHttpServer("127.0.0.1", 0, lambda: "text\n", lambda: "om\n# EOF\n")
    head = b"GET /metrics HTTP/1.1\r\nHost: x\r\n"
    if accept is not None:
        head += b"ACCEPT: " + accept.encode() + b"\r\n"
    status, ctype, body = server._answer(head + b"\r\n")
    assert (status, ctype) == ("200 OK", want)
    assert body == (b"om\n# EOF\n" if want == OPENMETRICS_CONTENT_TYPE else b"text\n")
    assert wants_openmetrics(accept or "") is (want == OPENMETRICS_CONTENT_TYPE)
    # an endpoint with no OpenMetrics writer always answers the text format
    assert MetricsHttpServer("127.0.0.1", 0, lambda: "text\n")._answer(head + b"\r\n")[1] == CONTENT_TYPE


PROTOBUF_ACCEPT = (
    "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.6,"
    "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.1"
)


def test_protobuf_families_match_java_writer():
    """prometheus-metrics 1.3.3's PrometheusProtobufWriter as Java's broker runs it: one
    length-delimited MetricFamily per metric in the text formats' order, a counter named with
    _total, labels sorted with otel_scope_name, cumulative buckets ending at +Inf, no unit, then
    target_info with no help."""
    m = _java_like_meter()
    fams = decode_families(write_protobuf(m, {InstrumentType.COUNTER: "default view for counter."}))
    assert [(f["name"], f["type"], f.get("help")) for f in fams] == [
        ("rocketmq_messages_in_total", "COUNTER", "default view for counter."),
        ("rocketmq_rpc_latency_milliseconds", "HISTOGRAM", "Rpc latency"),
        ("rocketmq_storage_size_bytes", "GAUGE", "size"),
        ("target_info", "GAUGE", None),
    ]
    scope = {"name": "otel_scope_name", "value": "broker-meter"}
    assert fams[0]["metric"] == [
        {
            "label": [
                {"name": "cluster", "value": "C"},
                {"name": "is_system", "value": "false"},
                scope,
                {"name": "topic", "value": "T"},
            ],
            "counter": {"value": 2.0},
        }
    ]
    assert fams[1]["metric"] == [
        {
            "label": [scope, {"name": "request_code", "value": "heart_beat"}],
            "histogram": {
                "sample_count": "5",
                "sample_sum": 17.0,
                "bucket": [
                    {"cumulative_count": "2", "upper_bound": 1.0},
                    {"cumulative_count": "3", "upper_bound": 3.0},
                    {"cumulative_count": "4", "upper_bound": 5.0},
                    {"cumulative_count": "5", "upper_bound": "Infinity"},
                ],
            },
        }
    ]
    assert fams[2]["metric"] == [
        {"label": [{"name": "node_id", "value": "b"}, scope], "gauge": {"value": 16885997568.0}}
    ]
    assert fams[3]["metric"] == [{"gauge": {"value": 1.0}}]


def test_protobuf_carries_the_text_formats_samples():
    m = _java_like_meter()
    m.counter("rocketmq_zero_total", "").add(0, {"a": "1"})  # a value 0 and an empty help are still written
    pb, text = parse_protobuf(write_protobuf(m)), parse(write_text(m))
    assert pb.samples == text.samples and pb.types == text.types and pb.helps == text.helps
    assert pb.helps["rocketmq_zero_total"] == "" and pb.samples[("rocketmq_zero_total", (("a", "1"), SCOPE))] == 0


def test_protobuf_bytes_are_length_delimited_messages():
    """The length prefix is a varint per message; the first message starts right after it."""
    m = Meter("s")
    m.counter("rocketmq_one_total", "one").add(1, {})
    body = write_protobuf(m)
    classes = message_classes()
    first = classes["MetricFamily"]()
    first.ParseFromString(body[1 : 1 + body[0]])
    assert first.name == "rocketmq_one_total" and first.metric[0].counter.value == 1.0
    assert body[1 + body[0] :] == write_protobuf(Meter("s"))  # then target_info, as with no metric at all


@pytest.mark.parametrize(
    ("accept", "want"),
    [
        (PROTOBUF_ACCEPT, PROTOBUF_CONTENT_TYPE),
        # Java's check: both names anywhere, whatever comes first or however weighed
        (
            "application/openmetrics-text;version=1.0.0,"
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;q=0.1",
            PROTOBUF_CONTENT_TYPE,
        ),
        ("application/vnd.google.protobuf", CONTENT_TYPE),
        ("application/vnd.google.protobuf,application/openmetrics-text", OPENMETRICS_CONTENT_TYPE),
    ],
)
def test_endpoint_answers_protobuf_first_as_java_does(accept, want):
    server = MetricsHttpServer("127.0.0.1", 0, lambda: "text\n", lambda: "om\n# EOF\n", lambda: b"\x00pb")
    status, ctype, body = server._answer(f"GET /metrics HTTP/1.1\r\nAccept: {accept}\r\n\r\n".encode())
    assert (status, ctype) == ("200 OK", want)
    assert body == {PROTOBUF_CONTENT_TYPE: b"\x00pb", OPENMETRICS_CONTENT_TYPE: b"om\n# EOF\n"}.get(want, b"text\n")
    assert wants_protobuf(accept) is (want == PROTOBUF_CONTENT_TYPE)
    # without a protobuf writer (no protobuf library) the same scraper gets the other formats
    plain = MetricsHttpServer("127.0.0.1", 0, lambda: "text\n")
    assert plain._answer(f"GET /metrics HTTP/1.1\r\nAccept: {accept}\r\n\r\n".encode())[1] == CONTENT_TYPE


def _endpoint() -> MetricsHttpServer:
    return MetricsHttpServer("127.0.0.1", 0, lambda: "text\n", lambda: "om\n# EOF\n", _java_like_protobuf)


def _java_like_protobuf() -> bytes:
    return write_protobuf(_java_like_meter())


@pytest.mark.parametrize(
    ("request_line", "want"),
    [
        # com.sun.net.httpserver: the longest context path that starts the request path, any method
        (b"GET /metrics", CONTENT_TYPE),
        (b"GET /metrics/more", CONTENT_TYPE),
        (b"POST /metrics", CONTENT_TYPE),
        (b"GET /-/healthy", "text/plain; charset=utf-8"),
        (b"GET /", "text/html; charset=utf-8"),
        (b"GET /nope", "text/html; charset=utf-8"),
    ],
)
def test_endpoint_routes_paths_as_javas_http_server(request_line, want):
    status, ctype, body = _endpoint()._answer(request_line + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert (status, ctype) == ("200 OK", want)
    assert body == {
        CONTENT_TYPE: b"text\n",
        "text/plain; charset=utf-8": b"Exporter is healthy.\n",
    }.get(want, body)
    if want.startswith("text/html"):
        assert b'<a href="metrics">' in body
    head = request_line.replace(b"GET", b"HEAD").replace(b"POST", b"HEAD")
    assert _endpoint()._answer(head + b" HTTP/1.1\r\n\r\n") == (status, ctype, b"")


@pytest.mark.parametrize(
    ("debug", "status", "want"),
    [
        ("text", "200 OK", "text\n"),
        ("openmetrics", "200 OK", "om\n# EOF\n"),
        ("prometheus-protobuf", "200 OK", 'name: "rocketmq_messages_in_total"\nhelp: "Total number'),
        (
            "json",
            "500 Internal Server Error",
            "debug=json: Unsupported query parameter. Valid values are 'openmetrics', 'text', and "
            "'prometheus-protobuf'.",
        ),
    ],
)
def test_debug_parameter_shows_a_format_as_plain_text(debug, status, want):
    """PrometheusScrapeHandler#writeDebugResponse: whatever the Accept header, never gzipped."""
    req = f"GET /metrics?debug={debug} HTTP/1.1\r\nAccept: {PROTOBUF_ACCEPT}\r\nAccept-Encoding: gzip\r\n\r\n"
    got, headers, body = _endpoint()._respond(req.encode())
    assert (got, headers) == (status, [("Content-Type", "text/plain; charset=utf-8")])
    assert body.decode().startswith(want)


@pytest.mark.parametrize(
    ("encoding", "gzipped"),
    [("gzip", True), ("deflate, GZIP", True), ("gzip;q=1.0", False), ("", False), ("identity", False)],
)
def test_scrapes_are_gzipped_when_accept_encoding_names_gzip(encoding, gzipped):
    """shouldUseCompression: a coding that is exactly gzip once trimmed (Prometheus sends
    "gzip"); the health and landing pages are never compressed."""
    import gzip

    for accept, body in (("text/plain", b"text\n"), (PROTOBUF_ACCEPT, _java_like_protobuf())):
        req = f"GET /metrics HTTP/1.1\r\nAccept: {accept}\r\nAccept-Encoding: {encoding}\r\n\r\n".encode()
        status, headers, got = _endpoint()._respond(req)
        assert status == "200 OK"
        assert (("Content-Encoding", "gzip") in headers) is gzipped
        assert (gzip.decompress(got) if gzipped else got) == body
    for path in ("/-/healthy", "/"):
        _, headers, _ = _endpoint()._respond(f"GET {path} HTTP/1.1\r\nAccept-Encoding: gzip\r\n\r\n".encode())
        assert ("Content-Encoding", "gzip") not in headers
