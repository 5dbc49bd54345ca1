"""Filter pushdown through Spark: a reused DataFrame returns the right rows by default, pushed
filters are applied while reading, and the cause of stale pushdown (the planned read kept on the
provider of Spark <= 4.3) is what sources.read_info_per_scan detects. Plus both decoders through
Spark."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from pyrmq.spark.sources import read_info_per_scan


def _load(spark, root, **opts):
    r = spark.read.format("rocketmq").option("columns", "topic,queueId,tags,msgId,commitLogOffset")
    for k, v in opts.items():
        r = r.option(k, v)
    return r.load(str(root))


def test_reused_dataframe_returns_the_right_rows_by_default(spark, corrupt_log, pyrmq_store) -> None:
    root, sent = pyrmq_store
    total = len(sent.by_uniq)
    n_a = sum(1 for v in sent.by_uniq.values() if v["topic"] == "TopicA")
    tag1 = sorted(k for k, v in sent.by_uniq.items() if v["props"].get("TAGS") == "tag1")
    df = _load(spark, root)
    assert df.where(F.col("topic") == "TopicA").count() == n_a
    assert df.count() == total
    assert sorted(r.msgId for r in df.where(F.col("tags") == "tag1").select("msgId").collect()) == tag1
    assert len(df.collect()) == total
    assert df.where(F.col("queueId").isin(1, 3)).count() == sum(
        1 for v in sent.by_uniq.values() if v["queue_id"] in (1, 3)
    )


def test_pushed_filters_are_applied_while_reading(spark, corrupt_log, pyrmq_store) -> None:
    root, _sent = pyrmq_store
    q = _load(spark, root, pushdown="true").where((F.col("topic") == "TopicB") & (F.col("tags") == "bt"))
    plan = q._jdf.queryExecution().executedPlan().toString()
    # the reader took both equalities: Spark's own Filter keeps only the null checks
    assert "BatchScan rocketmq" in plan and "TopicB" not in plan and "bt)" not in plan, plan
    assert sorted(r.msgId for r in q.collect()) == [f"BATCH{j:04d}" for j in range(3)]


def test_stale_pushdown_is_the_provider_scoped_read_of_old_spark(spark, corrupt_log, pyrmq_store) -> None:
    """With pushdown forced on, an unfiltered query after a filtered one on the same DataFrame
    returns all rows exactly where read_info_per_scan says Spark plans each scan afresh; on Spark
    <= 4.3 it returns the filtered rows, which is why pushdown is not the default there."""
    root, sent = pyrmq_store
    n_a = sum(1 for v in sent.by_uniq.values() if v["topic"] == "TopicA")
    df = _load(spark, root, pushdown="true")
    assert df.where(F.col("topic") == "TopicA").count() == n_a
    after = df.count()
    assert after == (len(sent.by_uniq) if read_info_per_scan(spark) else n_a)


@pytest.mark.parametrize("cols", ["*", "topic,queueOffset,commitLogOffset,storeTimestamp"])
def test_both_decoders_give_the_same_rows_through_spark(spark, corrupt_log, pyrmq_store, cols) -> None:
    root, _ = pyrmq_store
    opts = {} if cols == "*" else {"columns": cols}

    def rows(decoder: str) -> list:
        r = spark.read.format("rocketmq").option("decoder", decoder).option("splitSize", "5000")
        for k, v in opts.items():
            r = r.option(k, v)
        return [x.asDict(recursive=True) for x in r.load(str(root)).collect()]

    bulk = rows("bulk")
    assert bulk and bulk == rows("reference")
