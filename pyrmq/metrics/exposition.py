"""The Prometheus text format (0.0.4) and OpenMetrics 1.0.0, as Java's broker serves them with
metricsExporterType=PROM.

Java registers OpenTelemetry's ``PrometheusHttpServer`` (opentelemetry-exporter-prometheus over
prometheus-metrics 1.3); what a scraper sees from it, and so what this writer reproduces:

- the name gains the unit (``milliseconds``, ``bytes``, ``seconds``; OpenTelemetry's ``ms`` and
  ``s`` are spelled out) unless it already ends with it; a counter's name ends in ``_total``;
- every series carries ``otel_scope_name`` (the meter's name) besides its own labels, sorted by
  name, histogram ``le`` last; metrics come sorted by name, each with ``# HELP`` then ``# TYPE``;
- numbers as Java's ``Double.toString`` (``2.0``, ``1.6885997568E10``), bucket counts and
  ``_count`` as integers; a metric with no series is left out;
- a closing ``target_info 1`` (Java's broker builds its meter provider with an empty resource).

Asked with ``Accept: application/openmetrics-text`` (Prometheus asks so first), Java answers
OpenMetrics (prometheus-metrics 1.3's OpenMetricsTextFormatWriter, created timestamps and
exemplars off): the same samples; each metric's block names it without a counter's ``_total``
and reads ``# TYPE``, then ``# UNIT`` when it has a unit, then ``# HELP`` (escaped as a label
value); ``target_info`` is of type ``info``; the answer ends with ``# EOF``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyrmq.common.java_lang import double_to_string
from pyrmq.metrics.registry import Counter, Gauge, Histogram, HistogramPoint, InstrumentType, Labels, Meter

__all__ = [
    "CONTENT_TYPE",
    "OPENMETRICS_CONTENT_TYPE",
    "Family",
    "families",
    "prometheus_name",
    "wants_openmetrics",
    "write_text",
]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
OPENMETRICS_CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"

#: OpenTelemetry unit -> Prometheus suffix (PrometheusUnitsHelper, the units RocketMQ uses)
_UNIT_SUFFIX = {
    "ms": "milliseconds",
    "milliseconds": "milliseconds",
    "s": "seconds",
    "seconds": "seconds",
    "By": "bytes",
    "bytes": "bytes",
}


def prometheus_name(name: str, unit: str, itype: InstrumentType) -> str:
    """The series name base a scraper sees (without a histogram's _bucket/_sum/_count)."""
    base = name.removesuffix("_total") if itype is InstrumentType.COUNTER else name
    suffix = _unit_suffix(unit)
    if suffix and not base.endswith("_" + suffix):
        base = f"{base}_{suffix}"
    return base + "_total" if itype is InstrumentType.COUNTER else base


def wants_openmetrics(accept: str) -> bool:
    """ExpositionFormats#findWriter: OpenMetrics when the Accept header names it at all (its
    q-values are not weighed), else the text format."""
    return "application/openmetrics-text" in accept


def _unit_suffix(unit: str) -> str:
    return _UNIT_SUFFIX.get(unit, unit.lower())


def _escape_label(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n")


def _labels(pairs: Labels, le: str | None = None) -> str:
    if le is not None:
        pairs = (*pairs, ("le", le))
    return "{" + ",".join(f'{k}="{_escape_label(v)}"' for k, v in pairs) + "}"


def _num(v: float) -> str:
    return double_to_string(float(v))


@dataclass(slots=True)
class Family:
    """One metric of a scrape as Java's exporter shapes it, whatever the format."""

    name: str  #: the series' name (a counter's ends in _total; a histogram's gains _bucket, ...)
    family: str  #: Java's MetricMetadata#getPrometheusName: a counter's without _total; the sort key
    type: InstrumentType
    unit: str  #: the Prometheus unit suffix, "" for none
    help: str
    #: counters and gauges: (labels, value); labels sorted by name, otel_scope_name among them
    samples: list[tuple[Labels, float]] = field(default_factory=list)
    bounds: tuple[float, ...] = ()  #: a histogram's bucket bounds, +Inf left out
    points: list[tuple[Labels, HistogramPoint]] = field(default_factory=list)


def families(meter: Meter, help_by_type: dict[InstrumentType, str] | None = None) -> list[Family]:
    """One scrape of `meter` (gauges are read now), sorted as Java's MetricSnapshots sorts, metrics
    with no series left out. `help_by_type` replaces the description of every instrument of a type
    (Java's default views for counters and gauges do that)."""
    help_by_type = help_by_type or {}
    scope = ("otel_scope_name", meter.scope_name)
    out: list[Family] = []
    for inst in meter.instruments.values():
        name = prometheus_name(inst.name, inst.unit, inst.type)
        f = Family(
            name,
            name.removesuffix("_total") if inst.type is InstrumentType.COUNTER else name,
            inst.type,
            _unit_suffix(inst.unit),
            help_by_type.get(inst.type, inst.description),
        )
        if isinstance(inst, Counter):
            f.samples = [(tuple(sorted((*k, scope))), v) for k, v in sorted(inst.values.items())]
        elif isinstance(inst, Gauge):
            f.samples = [(tuple(sorted((*k, scope))), v) for k, v in sorted(inst.observe().items())]
        elif isinstance(inst, Histogram):
            f.bounds = inst.bounds
            f.points = [(tuple(sorted((*k, scope))), p) for k, p in sorted(inst.points.items())]
        if f.samples or f.points:
            out.append(f)
    out.sort(key=lambda f: f.family)
    return out


def write_text(
    meter: Meter, help_by_type: dict[InstrumentType, str] | None = None, *, openmetrics: bool = False
) -> str:
    """One scrape of `meter` in the text format 0.0.4, or OpenMetrics 1.0.0 (`openmetrics`)."""
    out: list[str] = []
    for f in families(meter, help_by_type):
        if openmetrics:
            out.append(f"# TYPE {f.family} {f.type.value}")
            if f.unit:
                out.append(f"# UNIT {f.family} {f.unit}")
            out.append(f"# HELP {f.family} {_escape_label(f.help)}")
        else:
            out += [f"# HELP {f.name} {_escape_help(f.help)}", f"# TYPE {f.name} {f.type.value}"]
        for labels, value in f.samples:
            out.append(f"{f.name}{_labels(labels)} {_num(value)}")
        les = [_num(b) for b in f.bounds] + ["+Inf"]
        for labels, p in f.points:
            running = 0
            for le, n in zip(les, p.counts, strict=True):
                running += n
                out.append(f"{f.name}_bucket{_labels(labels, le)} {running}")
            out.append(f"{f.name}_count{_labels(labels)} {p.count}")
            out.append(f"{f.name}_sum{_labels(labels)} {_num(p.sum)}")
    if openmetrics:
        out += ["# TYPE target info", "target_info 1", "# EOF"]
    else:
        out += ["# TYPE target_info gauge", "target_info 1"]
    return "\n".join(out) + "\n"
