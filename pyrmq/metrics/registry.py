"""Instruments with OpenTelemetry's shape: counters, explicit-bucket histograms, gauges read at
collection time.

Java builds its broker metrics on the OpenTelemetry SDK (``BrokerMetricsManager``); pyrmq needs
the same names, types and labels on a Prometheus scrape, not the SDK, so this module keeps what
a scrape needs and nothing else: cumulative sums per label set, and gauge callbacks. Labels are
plain ``str -> str`` mappings (Java's ``Attributes``; booleans become "true"/"false" there too).
Not thread-safe on purpose: every caller runs on the broker's event loop.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

__all__ = ["Counter", "Gauge", "Histogram", "InstrumentType", "Labels", "Meter", "label_key"]

#: a series' labels, sorted by name (Java's exporter writes them sorted)
Labels = tuple[tuple[str, str], ...]


def label_key(labels: Mapping[str, object] | Labels) -> Labels:
    """Sorted (name, value) pairs; a bool is written as Java's Attributes write it. A tuple is
    taken as such a key already (a hot caller makes it once per label set and keeps it)."""
    if type(labels) is tuple:
        return labels
    return tuple(sorted((k, _label_value(v)) for k, v in labels.items()))  # type: ignore[union-attr]


def _label_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


class InstrumentType(Enum):
    COUNTER = "counter"
    HISTOGRAM = "histogram"
    GAUGE = "gauge"


@dataclass(slots=True)
class _Instrument:
    name: str
    description: str
    unit: str


@dataclass(slots=True)
class Counter(_Instrument):
    """A monotonic sum per label set (OpenTelemetry LongCounter, cumulative)."""

    values: dict[Labels, float] = field(default_factory=dict)
    type = InstrumentType.COUNTER

    def add(self, amount: float, labels: Mapping[str, object] | Labels) -> None:
        if amount < 0:
            return  # OpenTelemetry drops negative counter increments
        key = label_key(labels)
        self.values[key] = self.values.get(key, 0) + amount


@dataclass(slots=True)
class HistogramPoint:
    counts: list[int]  # one per bucket bound, then +Inf; not cumulative
    sum: float = 0.0
    count: int = 0


@dataclass(slots=True)
class Histogram(_Instrument):
    """Explicit bucket histogram (OpenTelemetry's View with explicitBucketHistogram).

    A value v falls in the first bucket whose bound is >= v, as the SDK counts it.
    """

    bounds: tuple[float, ...] = ()
    points: dict[Labels, HistogramPoint] = field(default_factory=dict)
    type = InstrumentType.HISTOGRAM

    def declare(self, labels: Mapping[str, object] | Labels) -> HistogramPoint:
        """The point of a label set, exported (count 0) before anything is recorded there."""
        key = label_key(labels)
        p = self.points.get(key)
        if p is None:
            p = self.points[key] = HistogramPoint([0] * (len(self.bounds) + 1))
        return p

    def record(self, value: float, labels: Mapping[str, object] | Labels) -> None:
        key = label_key(labels)  # declare()'s lookup inline: one call less per request (rpc latency)
        p = self.points.get(key)
        if p is None:
            p = self.points[key] = HistogramPoint([0] * (len(self.bounds) + 1))
        p.counts[bisect_left(self.bounds, value)] += 1
        p.sum += value
        p.count += 1


#: what a gauge callback yields: (value, labels) per series
Observation = tuple[float, Mapping[str, object]]


@dataclass(slots=True)
class Gauge(_Instrument):
    """An observable gauge: its callback is read at each collection (buildWithCallback)."""

    callback: Callable[[], Iterable[Observation]] = lambda: ()
    type = InstrumentType.GAUGE

    def observe(self) -> dict[Labels, float]:
        out: dict[Labels, float] = {}
        for value, labels in self.callback():
            out[label_key(labels)] = value  # the last observation of a label set wins, as in the SDK
        return out


Instrument = Counter | Histogram | Gauge


class Meter:
    """The instruments of one OpenTelemetry meter (Java's ``broker-meter``), by name."""

    def __init__(self, scope_name: str) -> None:
        self.scope_name = scope_name
        self.instruments: dict[str, Instrument] = {}

    def _add(self, inst: Instrument) -> Instrument:
        if inst.name in self.instruments:
            raise ValueError(f"instrument {inst.name} registered twice")
        self.instruments[inst.name] = inst
        return inst

    def counter(self, name: str, description: str, unit: str = "") -> Counter:
        c = Counter(name, description, unit)
        self._add(c)
        return c

    def histogram(self, name: str, description: str, bounds: Iterable[float], unit: str = "") -> Histogram:
        b = tuple(float(x) for x in bounds)
        if list(b) != sorted(set(b)):
            raise ValueError(f"histogram {name}: bucket bounds must be strictly increasing")
        h = Histogram(name, description, unit, b)
        self._add(h)
        return h

    def gauge(
        self, name: str, description: str, callback: Callable[[], Iterable[Observation]], unit: str = ""
    ) -> Gauge:
        g = Gauge(name, description, unit, callback)
        self._add(g)
        return g
