"""The Prometheus protobuf exposition: length-delimited ``io.prometheus.client.MetricFamily``
messages, as Java's broker answers a scraper whose Accept header asks for them.

Java's exporter (prometheus-metrics 1.3.3's ExpositionFormats, under OpenTelemetry's
PrometheusHttpServer) tries its PrometheusProtobufWriter first: an Accept header naming both
``application/vnd.google.protobuf`` and ``proto=io.prometheus.client.MetricFamily`` gets protobuf,
whatever else it names. What that writer puts in each family, and so what this one does:

- name: a counter's ends in ``_total``, a histogram's is the bare name (no ``_bucket``); help is
  the description (set even when empty); type COUNTER, GAUGE or HISTOGRAM; no unit, no timestamp,
  no created timestamp, no exemplar;
- each series' labels sorted by name, ``otel_scope_name`` among them; a histogram has one bucket
  per bound then +Inf, each with its cumulative count, and its sample count and sum;
- families in the order of the text formats; a metric with no series is left out; last, a
  ``target_info`` gauge of 1 with no help (Java's broker has an empty resource).

The message classes are built at first use from a schema written here (the field numbers of
client_model's metrics.proto, proto2; only the messages and fields the broker's metrics use), in
a descriptor pool of their own. protobuf (>= 5.28, for its length-prefixed writer) comes with
pyrmq's ``grpc`` extra; without it, ``available()`` is False and the endpoint answers such a
scraper with the text format.
"""

from __future__ import annotations

import io
import math
from functools import cache
from typing import Any

from pyrmq.metrics.exposition import families
from pyrmq.metrics.registry import InstrumentType, Meter

__all__ = ["CONTENT_TYPE", "available", "debug_text", "message_classes", "wants_protobuf", "write_protobuf"]

CONTENT_TYPE = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"

#: client_model's MetricType values
METRIC_TYPE = {InstrumentType.COUNTER: 0, InstrumentType.GAUGE: 1, InstrumentType.HISTOGRAM: 4}


def wants_protobuf(accept: str) -> bool:
    """PrometheusProtobufWriter#accepts: both names anywhere in the Accept header."""
    return "application/vnd.google.protobuf" in accept and "proto=io.prometheus.client.MetricFamily" in accept


def available() -> bool:
    try:
        message_classes()
    except ImportError:
        return False
    return True


# (field name, number, type, repeated, message or enum type) per message
_DOUBLE, _INT64, _UINT64, _STRING, _MESSAGE, _ENUM = 1, 3, 4, 9, 11, 14
_SCHEMA: dict[str, list[tuple[str, int, int, bool, str]]] = {
    "LabelPair": [("name", 1, _STRING, False, ""), ("value", 2, _STRING, False, "")],
    "Gauge": [("value", 1, _DOUBLE, False, "")],
    "Counter": [("value", 1, _DOUBLE, False, "")],
    "Bucket": [
        ("cumulative_count", 1, _UINT64, False, ""),
        ("upper_bound", 2, _DOUBLE, False, ""),
        ("cumulative_count_float", 4, _DOUBLE, False, ""),
    ],
    "Histogram": [
        ("sample_count", 1, _UINT64, False, ""),
        ("sample_sum", 2, _DOUBLE, False, ""),
        ("bucket", 3, _MESSAGE, True, "Bucket"),
        ("sample_count_float", 4, _DOUBLE, False, ""),
    ],
    "Metric": [
        ("label", 1, _MESSAGE, True, "LabelPair"),
        ("gauge", 2, _MESSAGE, False, "Gauge"),
        ("counter", 3, _MESSAGE, False, "Counter"),
        ("timestamp_ms", 6, _INT64, False, ""),
        ("histogram", 7, _MESSAGE, False, "Histogram"),
    ],
    "MetricFamily": [
        ("name", 1, _STRING, False, ""),
        ("help", 2, _STRING, False, ""),
        ("type", 3, _ENUM, False, "MetricType"),
        ("metric", 4, _MESSAGE, True, "Metric"),
        ("unit", 5, _STRING, False, ""),
    ],
}
_TYPES = ("COUNTER", "GAUGE", "SUMMARY", "UNTYPED", "HISTOGRAM", "GAUGE_HISTOGRAM")


@cache
def message_classes() -> dict[str, Any]:
    """{message name: class} of the schema above; ImportError without a usable protobuf."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, proto

    if not hasattr(proto, "serialize_length_prefixed"):
        raise ImportError("protobuf >= 5.28 is needed for the protobuf exposition")
    package = "io.prometheus.client"
    f = descriptor_pb2.FileDescriptorProto(name="pyrmq/metrics/client_model.proto", package=package, syntax="proto2")
    enum = f.enum_type.add(name="MetricType")
    for number, name in enumerate(_TYPES):
        enum.value.add(name=name, number=number)
    for message, fields in _SCHEMA.items():
        m = f.message_type.add(name=message)
        for name, number, kind, repeated, type_name in fields:
            fd = m.field.add(name=name, number=number, type=kind, label=3 if repeated else 1)
            if type_name:
                fd.type_name = f".{package}.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.{name}")) for name in _SCHEMA}


def write_protobuf(meter: Meter, help_by_type: dict[InstrumentType, str] | None = None) -> bytes:
    """One scrape of `meter` as Java's PrometheusProtobufWriter writes it."""
    from google.protobuf import proto

    c = message_classes()
    out = io.BytesIO()
    for f in families(meter, help_by_type):
        fam = c["MetricFamily"](name=f.name, help=f.help, type=METRIC_TYPE[f.type])
        for labels, value in f.samples:
            metric = fam.metric.add(label=[c["LabelPair"](name=k, value=v) for k, v in labels])
            if f.type is InstrumentType.COUNTER:
                metric.counter.value = float(value)
            else:
                metric.gauge.value = float(value)
        for labels, p in f.points:
            metric = fam.metric.add(label=[c["LabelPair"](name=k, value=v) for k, v in labels])
            running = 0
            for bound, n in zip((*f.bounds, math.inf), p.counts, strict=True):
                running += n
                metric.histogram.bucket.add(cumulative_count=running, upper_bound=bound)
            metric.histogram.sample_count = p.count
            metric.histogram.sample_sum = float(p.sum)
        proto.serialize_length_prefixed(fam, out)
    target = c["MetricFamily"](name="target_info", type=METRIC_TYPE[InstrumentType.GAUGE])
    target.metric.add().gauge.value = 1.0
    proto.serialize_length_prefixed(target, out)
    return out.getvalue()


def debug_text(body: bytes) -> str:
    """The families of a protobuf exposition in protobuf's text format, one after the other (what
    Java's ``?debug=prometheus-protobuf`` shows; number spellings are Python protobuf's)."""
    from google.protobuf import proto, text_format

    stream, out = io.BytesIO(body), []
    while (fam := proto.parse_length_prefixed(message_classes()["MetricFamily"], stream)) is not None:
        out.append(text_format.MessageToString(fam))
    return "".join(out)
