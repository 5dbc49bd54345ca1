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

from pyrmq.common.java_lang import double_to_string
from pyrmq.metrics.registry import Counter, Gauge, Histogram, InstrumentType, Labels, Meter

__all__ = ["CONTENT_TYPE", "OPENMETRICS_CONTENT_TYPE", "prometheus_name", "wants_openmetrics", "write_text"]

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


def _labels(labels: Labels, scope: str, le: str | None = None) -> str:
    pairs = sorted((*labels, ("otel_scope_name", scope)))
    if le is not None:
        pairs.append(("le", le))
    return "{" + ",".join(f'{k}="{_escape_label(v)}"' for k, v in pairs) + "}"


def _num(v: float) -> str:
    return double_to_string(float(v))


def write_text(
    meter: Meter, help_by_type: dict[InstrumentType, str] | None = None, *, openmetrics: bool = False
) -> str:
    """One scrape of `meter`: gauges are read now. `help_by_type` replaces the description of
    every instrument of a type (Java's default views for counters and gauges do that).
    `openmetrics`: the OpenMetrics 1.0.0 text instead of 0.0.4."""
    help_by_type = help_by_type or {}
    blocks: list[tuple[str, list[str]]] = []
    scope = meter.scope_name
    for inst in meter.instruments.values():
        name = prometheus_name(inst.name, inst.unit, inst.type)
        lines: list[str] = []
        if isinstance(inst, Counter):
            for key, value in sorted(inst.values.items()):
                lines.append(f"{name}{_labels(key, scope)} {_num(value)}")
        elif isinstance(inst, Gauge):
            for key, value in sorted(inst.observe().items()):
                lines.append(f"{name}{_labels(key, scope)} {_num(value)}")
        elif isinstance(inst, Histogram):
            les = [_num(b) for b in inst.bounds] + ["+Inf"]
            for key, p in sorted(inst.points.items()):
                running = 0
                for le, n in zip(les, p.counts, strict=True):
                    running += n
                    lines.append(f"{name}_bucket{_labels(key, scope, le)} {running}")
                lines.append(f"{name}_count{_labels(key, scope)} {p.count}")
                lines.append(f"{name}_sum{_labels(key, scope)} {_num(p.sum)}")
        if not lines:
            continue
        description = help_by_type.get(inst.type, inst.description)
        if openmetrics:
            family = name.removesuffix("_total") if inst.type is InstrumentType.COUNTER else name
            head = [f"# TYPE {family} {inst.type.value}"]
            if _unit_suffix(inst.unit):
                head.append(f"# UNIT {family} {_unit_suffix(inst.unit)}")
            head.append(f"# HELP {family} {_escape_label(description)}")
            blocks.append((family, head + lines))
        else:
            head = [f"# HELP {name} {_escape_help(description)}", f"# TYPE {name} {inst.type.value}"]
            blocks.append((name, head + lines))
    out: list[str] = []
    for _, lines in sorted(blocks):
        out.extend(lines)
    if openmetrics:
        out += ["# TYPE target info", "target_info 1", "# EOF"]
    else:
        out += ["# TYPE target_info gauge", "target_info 1"]
    return "\n".join(out) + "\n"
