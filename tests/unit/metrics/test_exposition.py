"""The Prometheus text pyrmq writes has the shape of Java's OpenTelemetry exporter output."""

from __future__ import annotations

import pytest
from support.prom import parse

from pyrmq.metrics.exposition import prometheus_name, write_text
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


def test_text_matches_java_layout():
    m = Meter("broker-meter")
    c = m.counter("rocketmq_messages_in_total", "Total number of incoming messages")
    h = m.histogram("rocketmq_rpc_latency", "Rpc latency", (1, 3, 5), "milliseconds")
    m.gauge("rocketmq_storage_size", "size", lambda: [(16885997568, {"node_id": "b"})], "bytes")
    m.gauge("rocketmq_empty", "no series", lambda: [])
    c.add(2, {"topic": "T", "is_system": False, "cluster": "C"})
    for v in (0, 1, 3, 4, 9):
        h.record(v, {"request_code": "heart_beat"})
    text = write_text(m, {InstrumentType.COUNTER: "default view for counter."})
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
