"""The ready jobs: CLIs answer --help without starting Spark; topic statistics and the Parquet
export agree with what the store holds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pyrmq.spark import jobs

TOOLS = Path(__file__).resolve().parents[2] / "tools" / "spark"


@pytest.mark.parametrize("script", ["topic_stats.py", "find_messages.py", "export_parquet.py", "consumer_lag.py"])
def test_cli_help(script: str) -> None:
    r = subprocess.run([sys.executable, str(TOOLS / script), "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "--store" in r.stdout and "--master" in r.stdout


def test_topic_stats_and_export(spark, corrupt_log, pyrmq_store, tmp_path) -> None:
    root, sent = pyrmq_store
    by_queue, by_topic = jobs.topic_stats(spark, str(root))
    want: dict[str, int] = {}
    for v in sent.by_uniq.values():
        want[v["topic"]] = want.get(v["topic"], 0) + 1
    topics = {r.topic: r for r in by_topic.collect()}
    assert {t: r.messages for t, r in topics.items()} == want
    queues = by_queue.collect()
    assert sum(r.messages for r in queues) == len(sent.by_uniq)
    assert all(
        r.firstStoreTime <= r.lastStoreTime and r.maxQueueOffset - r.minQueueOffset + 1 == r.messages
        for r in queues
        if r.topic != "TopicC"
    )
    out = tmp_path / "export"
    n = jobs.export_parquet(spark, str(root), str(out), topic="TopicB", columns="topic,msgId,body")
    assert n == want["TopicB"]
    back = spark.read.parquet(str(out)).collect()
    assert sorted(r.msgId for r in back) == sorted(k for k, v in sent.by_uniq.items() if v["topic"] == "TopicB")
    assert all(bytes(r.body) == sent.by_uniq[r.msgId]["body"] for r in back)


def test_consumer_lag_on_a_pyrmq_store(spark, corrupt_log, pyrmq_store, tmp_path) -> None:
    import shutil

    from pyrmq.store import config as cfg

    root, sent = pyrmq_store
    copy = tmp_path / "store"
    shutil.copytree(root, copy)
    # TopicA queue 0 consumed up to 3, queue 1 fully; TopicB queue 2 not at all (no entry)
    maxes: dict[tuple[str, int], int] = {}
    for v in sent.by_uniq.values():
        k = (v["topic"], v["queue_id"])
        maxes[k] = max(maxes.get(k, 0), v["queue_offset"] + 1)
    cfg.persist_config(
        copy,
        cfg.ConsumerOffsetSerializeWrapper(
            offset_table={"TopicA@g": {0: 3, 1: maxes[("TopicA", 1)]}, "TopicB@g": {0: 1}}
        ),
    )
    rows = {(r.topic, r.queueId): r for r in jobs.consumer_lag(spark, str(copy), "g").collect()}
    want = {("TopicA", q): (maxes[("TopicA", q)], {0: 3, 1: maxes[("TopicA", 1)]}.get(q, 0)) for q in range(4)}
    want.update({("TopicB", q): (maxes[("TopicB", q)], {0: 1}.get(q, 0)) for q in range(4)})
    assert {k: (r.brokerOffset, r.consumerOffset) for k, r in rows.items()} == want
    assert all(r.lag == r.brokerOffset - r.consumerOffset for r in rows.values())
    assert rows[("TopicA", 2)].lastTimestamp is None and rows[("TopicA", 0)].lastTimestamp is not None


def test_progress_ends_with_a_summary_table(spark, corrupt_log, pyrmq_store) -> None:
    import io

    from pyrmq.spark.jobs import progress

    root, sent = pyrmq_store
    df = spark.read.format("rocketmq").option("columns", "topic").option("splitSize", "4000").load(str(root))
    out = io.StringIO()
    with progress(spark, "scan", every=0.05, out=out):
        assert df.count() == len(sent.by_uniq)
    text = out.getvalue()
    assert "scan: " in text and "stage" in text, text
    total = [line for line in text.splitlines() if line.strip().startswith("all")]
    assert total and "stage(s)" in total[0], text


def test_a_log_line_per_split_read(spark, corrupt_log, pyrmq_store, monkeypatch, capsys) -> None:
    from pyrmq.spark import commitlog_scan as scan
    from pyrmq.spark.sources import PROGRESS_ENV, CommitLogReader

    root, _ = pyrmq_store
    schema = spark.read.format("rocketmq").option("columns", "topic,queueId").load(str(root)).schema
    monkeypatch.setenv(PROGRESS_ENV, "1")
    reader = CommitLogReader({"path": str(root)}, schema)
    splits = scan.plan_splits(str(root))
    rows = sum(b.num_rows for sp in splits for b in reader.read(type("P", (), {"value": sp})()))
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("pyrmq.spark: ")]
    assert len(lines) == len(splits) and rows > 0
    assert sum(int(line.split(": ")[2].split(" ")[0]) for line in lines) == rows - 1  # one inner batch of 2
