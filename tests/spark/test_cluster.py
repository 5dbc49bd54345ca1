"""A real Spark standalone cluster: a master and two workers started from pyspark's own
`spark-class` as separate processes on 127.0.0.1, a tools/spark job submitted to it with
`spark-submit --master spark://...` over a store directory; the result equals local mode and
both workers' executors read commit-log splits. Costs well over 30 s (five JVMs): soak."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from support.ports import free_port
from support.procs import ManagedProcess, ProcessFailed

from pyrmq.spark import jobs

pytestmark = [pytest.mark.soak, pytest.mark.timeout(1800)]  # five JVMs; minutes on a busy machine

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".venv" / "bin"
PYTHON = str(BIN / "python")
MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"


def _env(tmp: Path) -> dict[str, str]:
    return dict(
        os.environ,
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_DAEMON_MEMORY="256m",  # master and worker JVMs
        SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",  # else a fixed port, 6066
        SPARK_LOG_DIR=str(tmp / "logs"),
        SPARK_PID_DIR=str(tmp / "pids"),
        PYSPARK_PYTHON=PYTHON,
        PYSPARK_DRIVER_PYTHON=PYTHON,
    )


def _wait_log(p: ManagedProcess, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in p.log.read_text(errors="replace"):
            return
        if not p.alive():
            break
        time.sleep(0.3)
    raise ProcessFailed(f"{p.name}: no {text!r} after {timeout}s\n{p.tail()}")


@pytest.fixture
def cluster(tmp_path):
    """(master URL, [worker work dirs]); every process is stopped at the end."""
    env = _env(tmp_path)
    procs: list[ManagedProcess] = []
    try:
        port = free_port()
        master = ManagedProcess(
            "spark-master",
            [
                str(BIN / "spark-class"),
                MASTER,
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(free_port()),
            ],
            tmp_path / "master.log",
            env=env,
            cwd=tmp_path,
        )
        procs.append(master)
        master.wait_port(port, 120)
        url = f"spark://127.0.0.1:{port}"
        work_dirs = []
        for i in range(2):
            wd = tmp_path / f"worker{i}"
            wd.mkdir()
            w = ManagedProcess(
                f"spark-worker{i}",
                [
                    str(BIN / "spark-class"),
                    WORKER,
                    url,
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(free_port()),
                    "--webui-port",
                    str(free_port()),
                    "--cores",
                    "1",
                    "--memory",
                    "768m",
                    "--work-dir",
                    str(wd),
                ],
                tmp_path / f"worker{i}.log",
                env=env,
                cwd=tmp_path,
            )
            procs.append(w)
            work_dirs.append(wd)
        for w in procs[1:]:
            _wait_log(w, "Successfully registered with master", 120)
        yield url, work_dirs
    finally:
        for p in reversed(procs):
            p.stop()


def _json_rows(text: str, header: str, next_header: str | None) -> list[dict]:
    lines = text.splitlines()
    start = lines.index(header) + 1
    stop = lines.index(next_header) if next_header else len(lines)
    return [json.loads(x) for x in lines[start:stop] if x.startswith("{")]


def _canon(rows: list[dict]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True) for r in rows)


def test_topic_stats_on_a_standalone_cluster(cluster, spark, corrupt_log, pyrmq_store, tmp_path) -> None:
    url, work_dirs = cluster
    root, sent = pyrmq_store
    started = time.monotonic()
    r = subprocess.run(
        [
            str(BIN / "spark-submit"),
            "--master",
            url,
            "--driver-memory",
            "512m",
            "--conf",
            "spark.executor.memory=512m",
            "--conf",
            "spark.executor.cores=1",
            "--conf",
            f"spark.pyspark.python={PYTHON}",
            "--conf",
            "spark.sql.session.timeZone=UTC",
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            "spark.sql.shuffle.partitions=2",
            str(ROOT / "tools" / "spark" / "topic_stats.py"),
            "--store",
            str(root),
            "--split-size",
            "4096",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=_env(tmp_path),
        cwd=tmp_path,
    )
    took = time.monotonic() - started
    assert r.returncode == 0, r.stderr[-4000:]
    cluster_topics = _json_rows(r.stdout, "per topic", "per queue")
    cluster_queues = _json_rows(r.stdout, "per queue", None)
    # the same job in local mode (the suite's local[2] session)
    by_queue, by_topic = jobs.topic_stats(spark, str(root), split_size=4096)
    assert _canon(cluster_topics) == _canon([json.loads(x) for x in by_topic.toJSON().collect()])
    assert _canon(cluster_queues) == _canon([json.loads(x) for x in by_queue.toJSON().collect()])
    assert sum(t["messages"] for t in cluster_topics) == len(sent.by_uniq)
    # both workers ran executors that read commit-log splits (PYRMQ_SPARK_PROGRESS lines)
    for wd in work_dirs:
        logs = list(wd.glob("app-*/*/stderr"))
        assert logs, f"no executor ran on {wd}"
        assert any("pyrmq.spark: 0000" in p.read_text(errors="replace") for p in logs), wd
    print(f"spark-submit on the standalone cluster: {took:.1f}s")
