"""Read a Prometheus text exposition (0.0.4, or OpenMetrics 1.0.0) into series, for tests
comparing scrapes; and the protobuf exposition (length-delimited MetricFamily messages) into the
same series (`parse_protobuf`), decoded with pyrmq's schema of them.

Only what pyrmq's and Java's brokers write: `# HELP`/`# TYPE` (and OpenMetrics' `# UNIT`, `# EOF`)
lines, then `name{k="v",...} value` samples with no timestamps. A line that does not parse fails the test (AssertionError).
"""

from __future__ import annotations

import io
import re
import urllib.request
from dataclasses import dataclass, field

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)')


@dataclass
class Scrape:
    types: dict[str, str] = field(default_factory=dict)  # metric (TYPE name) -> type
    helps: dict[str, str] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)  # OpenMetrics `# UNIT` lines
    eof: bool = False  # OpenMetrics' closing `# EOF` seen
    #: (sample name, sorted label pairs) -> value
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = field(default_factory=dict)

    def series(self, name: str, **match: str) -> dict[tuple[tuple[str, str], ...], float]:
        """Samples of `name` whose labels include `match`."""
        return {
            k[1]: v
            for k, v in self.samples.items()
            if k[0] == name and all(dict(k[1]).get(a) == b for a, b in match.items())
        }

    def total(self, name: str, **match: str) -> float:
        return sum(self.series(name, **match).values())

    def names(self) -> set[str]:
        return {k[0] for k in self.samples}


def parse(text: str) -> Scrape:
    s = Scrape()
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("# TYPE "):
            name, kind = line[7:].split(" ", 1)
            s.types[name] = kind
            continue
        if line.startswith("# HELP "):
            name, _, doc = line[7:].partition(" ")
            s.helps[name] = doc
            continue
        if line.startswith("# UNIT "):
            name, _, unit = line[7:].partition(" ")
            s.units[name] = unit
            continue
        assert not s.eof, f"a line after # EOF: {line!r}"
        if line == "# EOF":
            s.eof = True
            continue
        assert not line.startswith("#"), line
        m = _SAMPLE.match(line)
        assert m is not None, f"unparsable sample line: {line!r}"
        labels: list[tuple[str, str]] = []
        body = m.group(3) or ""
        pos = 0
        while pos < len(body):
            lm = _LABEL.match(body, pos)
            assert lm is not None, f"unparsable labels: {line!r}"
            labels.append((lm.group(1), lm.group(2)))
            pos = lm.end()
        s.samples[(m.group(1), tuple(sorted(labels)))] = float(m.group(4))
    return s


def scrape(url: str, timeout: float = 30, accept: str | None = None) -> tuple[str, str]:
    """(content type, body) of one GET (with an Accept header when given)."""
    ctype, body = scrape_bytes(url, timeout, accept)
    return ctype, body.decode("utf-8")


def scrape_bytes(url: str, timeout: float = 30, accept: str | None = None) -> tuple[str, bytes]:
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.headers.get("Content-Type", ""), r.read()


def decode_families(body: bytes) -> list[dict]:
    """The MetricFamily messages of a protobuf exposition as dicts (proto field names; int64s as
    strings, infinities as "Infinity", as protobuf's JSON mapping has them). A field outside
    pyrmq's schema (one Java's writer would add and pyrmq's does not) fails the test."""
    from google.protobuf import json_format, proto
    from google.protobuf.unknown_fields import UnknownFieldSet

    from pyrmq.metrics.protobuf import message_classes

    stream, out = io.BytesIO(body), []
    while (fam := proto.parse_length_prefixed(message_classes()["MetricFamily"], stream)) is not None:
        for msg in (
            fam,
            *fam.metric,
            *(x for m in fam.metric for x in (*m.label, m.counter, m.gauge, m.histogram, *m.histogram.bucket)),
        ):
            assert len(UnknownFieldSet(msg)) == 0, f"a field pyrmq's schema lacks in {fam.name}: {msg}"
        out.append(json_format.MessageToDict(fam, preserving_proto_field_name=True))
    return out


def parse_protobuf(body: bytes) -> Scrape:
    """A protobuf exposition as the text format's series: a histogram's as _bucket (le as Java's
    Double.toString, +Inf), _count and _sum; types and helps under the text format's names."""
    from pyrmq.common.java_lang import double_to_string

    s = Scrape()
    for fam in decode_families(body):
        name, kind = fam["name"], fam["type"].lower()
        s.types[name] = kind
        if "help" in fam:
            s.helps[name] = fam["help"]
        for m in fam["metric"]:
            labels = tuple(sorted((p["name"], p["value"]) for p in m.get("label", [])))
            if kind == "histogram":
                h = m["histogram"]
                for b in h["bucket"]:
                    bound = float(b["upper_bound"])
                    le = "+Inf" if bound == float("inf") else double_to_string(bound)
                    s.samples[(f"{name}_bucket", tuple(sorted((*labels, ("le", le)))))] = float(b["cumulative_count"])
                s.samples[(f"{name}_count", labels)] = float(h.get("sample_count", 0))
                s.samples[(f"{name}_sum", labels)] = float(h.get("sample_sum", 0))
            else:
                s.samples[(name, labels)] = float(m[kind].get("value", 0))
    return s
