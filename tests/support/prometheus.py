"""A real Prometheus (Debian's `prometheus` package) scraping test endpoints, queried over its API.

A missing binary is a failure, never a skip: tools/prometheus-up.sh installs it (tools/test runs it).
"""

from __future__ import annotations

import json
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from support.ports import free_port
from support.procs import ManagedProcess

SCRAPE_INTERVAL_S = 2
#: Java's exporter can take seconds to answer on a loaded machine; a timed-out scrape is only retried
#: (Prometheus wants the timeout within the interval)
SCRAPE_TIMEOUT_S = 2


def prometheus_exe() -> str:
    exe = shutil.which("prometheus")
    if exe is None:
        raise RuntimeError(
            "prometheus not found on PATH: the metrics compat test needs Debian's prometheus "
            "(tools/prometheus-up.sh installs it; this is a failure, not a skip)"
        )
    return exe


class Prometheus:
    """Scrapes `targets` (job name -> "host:port") every SCRAPE_INTERVAL_S; `query` runs PromQL."""

    def __init__(self, workdir: Path, targets: dict[str, str]) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        jobs = "".join(
            f"  - job_name: {job}\n    static_configs:\n      - targets: ['{addr}']\n" for job, addr in targets.items()
        )
        conf = workdir / "prometheus.yml"
        conf.write_text(
            f"global:\n  scrape_interval: {SCRAPE_INTERVAL_S}s\n  scrape_timeout: {SCRAPE_TIMEOUT_S}s\n"
            f"scrape_configs:\n{jobs}"
        )
        self.port = free_port()
        self.managed = ManagedProcess(
            "prometheus",
            [
                prometheus_exe(),
                f"--config.file={conf}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],
            workdir / "prometheus.out",
        )
        self.managed.wait_port(self.port, 30)

    def _get(self, path: str, **params: str) -> dict:
        url = f"http://127.0.0.1:{self.port}{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as r:
            doc = json.loads(r.read())
        assert doc.get("status") == "success", doc
        return doc["data"]

    def query(self, expr: str, at: float | None = None) -> dict[tuple[tuple[str, str], ...], float]:
        """Instant vector (now, or at epoch seconds `at`): sorted label pairs -> value."""
        params = {"query": expr} if at is None else {"query": expr, "time": f"{at:.3f}"}
        data = self._get("/api/v1/query", **params)
        assert data["resultType"] == "vector", data
        return {tuple(sorted(r["metric"].items())): float(r["value"][1]) for r in data["result"]}

    def query_range(
        self, expr: str, start: float, end: float, step: float = SCRAPE_INTERVAL_S
    ) -> dict[tuple[tuple[str, str], ...], list[tuple[float, float]]]:
        """Range vector: sorted label pairs -> [(epoch s, value)] at each step that had a sample."""
        params = {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step}"}
        data = self._get("/api/v1/query_range", **params)
        assert data["resultType"] == "matrix", data
        return {
            tuple(sorted(r["metric"].items())): [(float(t), float(v)) for t, v in r["values"]] for r in data["result"]
        }

    def targets_up(self) -> dict[str, str]:
        """job -> health of its target ("up" once scraped)."""
        data = self._get("/api/v1/targets")
        return {t["labels"]["job"]: t["health"] for t in data["activeTargets"]}

    def scrape_errors(self) -> dict[str, str]:
        """job -> the last scrape error Prometheus recorded for its target ("" when none)."""
        data = self._get("/api/v1/targets")
        return {t["labels"]["job"]: t.get("lastError", "") for t in data["activeTargets"]}

    def wait_up(self, timeout: float = 120) -> None:
        """Until every target was scraped successfully once."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                health = self.targets_up()
            except urllib.error.HTTPError as e:  # 503 until its storage is open (slow on a busy machine)
                if e.code != 503:
                    raise
                health = {"(prometheus)": "not ready"}
            if health and all(h == "up" for h in health.values()):
                return
            assert time.monotonic() < deadline, f"targets not up: {health}, {self.scrape_errors()}"
            time.sleep(0.5)

    def wait_value(self, expr: str, want: dict[str, float], timeout: float = 60) -> float:
        """Until `expr` (summed by job) is `want` ({job: value}); the time it was seen (epoch s)."""
        deadline = time.monotonic() + timeout
        while True:
            got = {dict(k).get("job", ""): v for k, v in self.query(expr).items()}
            if got == want:
                return time.time()
            assert time.monotonic() < deadline, f"{expr}: {got}, want {want}"
            time.sleep(SCRAPE_INTERVAL_S)

    def stop(self) -> None:
        self.managed.stop(10)
