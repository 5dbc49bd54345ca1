"""Streaming queries for the tests in this directory (`from spark.streams import ...`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyrmq.spark.streaming import died_at_source_start


class RestartingQuery:
    """A streaming query started by `start`, started again from its checkpoint when it died of
    Spark's fixed 10 s wait for the source's Python process (streaming.died_at_source_start), at
    most `retries` times; any other failure fails the test. Such a restart is itself a restart
    from the checkpoint, which the tests assert loses and doubles nothing."""

    def __init__(self, start: Callable[[], Any], retries: int = 4) -> None:
        self._start, self.retries, self.restarts = start, retries, 0
        self.query = start()

    def alive(self) -> None:
        """Start the query again if (and only if) it died at its source's start."""
        if self.query.isActive or self.query.exception() is None:
            return
        assert died_at_source_start(self.query) and self.restarts < self.retries, self.query.exception()
        self.restarts += 1
        print(f"streaming query died at its source's start; restart {self.restarts} from the checkpoint")
        self.query = self._start()

    def finish(self, timeout: float) -> None:
        """Wait for a query with a finite trigger (availableNow) to end without error."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                self.query.awaitTermination(max(1.0, min(5.0, deadline - time.monotonic())))
            except Exception:  # the query's own exception is judged by alive()
                pass
            self.alive()
            if not self.query.isActive and self.query.exception() is None:
                return
        raise AssertionError(f"streaming query still running after {timeout}s")

    def wait_rows(self, spark: Any, out: Path, n: int, timeout: float = 180) -> None:
        """Wait until the Parquet sink at `out` holds at least n rows."""
        deadline = time.monotonic() + timeout
        got = 0
        while time.monotonic() < deadline:
            self.alive()
            meta = out / "_spark_metadata"
            if meta.is_dir() and any(p.name.isdigit() for p in meta.iterdir()):  # a batch committed
                got = spark.read.parquet(str(out)).count()
                if got >= n:
                    return
            time.sleep(0.5)
        raise AssertionError(f"{got} rows in the sink after {timeout}s, want {n}")

    def stop(self) -> None:
        self.query.stop()
        err = self.query.exception()
        assert err is None or died_at_source_start(self.query), err
