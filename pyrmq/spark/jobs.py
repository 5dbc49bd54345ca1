"""The ready jobs behind tools/spark/*.py, as functions over a SparkSession (testable in-process).

Each builds DataFrames from the sources registered by pyrmq.spark.register and returns a
DataFrame (or rows); the CLIs only parse arguments, print and write.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pyrmq.spark import index_key_hash
from pyrmq.store.message import decode_message_id


def messages(spark: SparkSession, store: str, **options: str | int | None) -> DataFrame:
    """The `rocketmq` source with the given options (None values dropped)."""
    r = spark.read.format("rocketmq")
    for k, v in options.items():
        if v is not None:
            r = r.option(k, str(v))
    return r.load(store)


# --- topic statistics ------------------------------------------------------------------------------
def topic_stats(
    spark: SparkSession, store: str, topic: str | None = None, split_size: int | None = None
) -> tuple[DataFrame, DataFrame]:
    """(per topic and queue, per topic): messages, storeBytes (whole records), bodyBytes (as
    stored), firstStoreTime, lastStoreTime, minQueueOffset, maxQueueOffset. Header-only scan."""
    cols = "topic,queueId,queueOffset,storeSize,bodySize,storeTimestamp"
    df = messages(spark, store, columns=cols, topic=topic, splitSize=split_size)
    aggs = [
        F.count(F.lit(1)).alias("messages"),
        F.sum("storeSize").alias("storeBytes"),
        F.sum("bodySize").alias("bodyBytes"),
        F.min("storeTimestamp").alias("firstStoreTime"),
        F.max("storeTimestamp").alias("lastStoreTime"),
    ]
    by_queue = (
        df.groupBy("topic", "queueId")
        .agg(*aggs, F.min("queueOffset").alias("minQueueOffset"), F.max("queueOffset").alias("maxQueueOffset"))
        .orderBy("topic", "queueId")
    )
    by_topic = (
        by_queue.groupBy("topic")
        .agg(
            F.sum("messages").alias("messages"),
            F.sum("storeBytes").alias("storeBytes"),
            F.sum("bodyBytes").alias("bodyBytes"),
            F.min("firstStoreTime").alias("firstStoreTime"),
            F.max("lastStoreTime").alias("lastStoreTime"),
            F.count(F.lit(1)).alias("queues"),
        )
        .orderBy("topic")
    )
    return by_queue, by_topic


# --- find messages -----------------------------------------------------------------------------
def find_messages(
    spark: SparkSession,
    store: str,
    *,
    key: str | None = None,
    msg_id: str | None = None,
    topic: str | None = None,
    with_body: bool = False,
    use_index: bool = True,
    index_options: dict[str, str] | None = None,
) -> DataFrame:
    """Records whose KEYS contain `key` or whose UNIQ_KEY is `key`, or with message id `msg_id`
    (a UNIQ_KEY, or an offsetMsgId: then one record is read at its offset). With a topic and an
    index, candidates come from the index (keyHash), and are checked against the record."""
    cols = None if with_body else ",".join(c for c in _MESSAGE_COLUMNS_NO_BODY)
    if msg_id is not None:
        # 32/56 hex chars is an offsetMsgId or a UNIQ_KEY alike: look both ways
        by_uniq = find_messages(
            spark, store, key=msg_id, topic=topic, with_body=with_body, use_index=use_index, index_options=index_options
        ).where(F.col("msgId") == msg_id)
        try:
            offset = decode_message_id(msg_id).offset
        except ValueError:
            return by_uniq
        by_offset = messages(spark, store, columns=cols, offsets=str(offset)).where(F.col("offsetMsgId") == msg_id)
        return by_offset.unionByName(by_uniq).dropDuplicates(["commitLogOffset", "queueOffset"])
    if key is None:
        raise ValueError("give a key or a message id")
    match = F.array_contains(F.col("keys"), key) | (F.col("msgId") == key)
    if topic is not None and use_index:
        reader = spark.read.format("rocketmq_index")
        for k, v in (index_options or {}).items():
            reader = reader.option(k, v)
        offsets = [
            r.phyOffset
            for r in reader.load(store)
            .where(F.col("keyHash") == index_key_hash(topic, key))
            .select("phyOffset")
            .distinct()
            .collect()
        ]
        if not offsets:
            return messages(spark, store, columns=cols, offsets="-1").where(F.lit(False))
        df = messages(spark, store, columns=cols, offsets=",".join(map(str, sorted(offsets))), topic=topic)
        return df.where(match)
    return messages(spark, store, columns=cols, topic=topic).where(match)


_MESSAGE_COLUMNS_NO_BODY = (
    "topic",
    "queueId",
    "queueOffset",
    "commitLogOffset",
    "storeSize",
    "offsetMsgId",
    "msgId",
    "keys",
    "tags",
    "properties",
    "bodySize",
    "flag",
    "sysFlag",
    "bodyCRC",
    "reconsumeTimes",
    "preparedTransactionOffset",
    "bornHost",
    "storeHost",
    "bornTimestamp",
    "storeTimestamp",
    "version",
    "file",
)


# --- export ------------------------------------------------------------------------------------
def export_parquet(
    spark: SparkSession,
    store: str,
    out: str,
    *,
    topic: str | None = None,
    start_time: str | None = None,
    end_time: str | None = None,
    columns: str | None = None,
    corrupt: str = "fail",
    partition_by_topic: bool = True,
) -> int:
    """Write the selected records to Parquet (overwrite); returns the number of rows written."""
    df = messages(spark, store, topic=topic, startTime=start_time, endTime=end_time, columns=columns, corrupt=corrupt)
    df = df.cache()
    try:
        n = df.count()
        w = df.write.mode("overwrite")
        if partition_by_topic and "topic" in df.columns:
            w = w.partitionBy("topic")
        w.parquet(out)
    finally:
        df.unpersist()
    return n


# --- consumer lag ------------------------------------------------------------------------------
def consumer_lag(spark: SparkSession, store: str, group: str | None = None) -> DataFrame:
    """Per group, topic and queue: brokerOffset (consume-queue max), consumerOffset (committed,
    0 when absent), lag = brokerOffset - consumerOffset, lastTimestamp (store time of the last
    consumed message). The queues are those of topics.json's readQueueNums when the topic is
    configured, else those with entries or offsets. Java: AdminBrokerProcessor#getConsumeStats,
    i.e. what `mqadmin consumerProgress` prints."""
    offsets = spark.read.format("rocketmq_offsets").load(store)
    if group is not None:
        offsets = offsets.where(F.col("group") == group)
    offsets = offsets.select("group", "topic", "queueId", F.col("offset").alias("consumerOffset"))
    pairs = offsets.select("group", "topic").distinct()
    topics = [r.topic for r in pairs.select("topic").distinct().collect()]
    cq = spark.read.format("rocketmq_consumequeue").option("topic", ",".join(topics) or "\x00").load(store)
    cq_max = cq.groupBy("topic", "queueId").agg((F.max("queueOffset") + 1).alias("brokerOffset"))
    # queues per topic: configured read queues, else what the files show
    configured = _read_queue_nums(store)
    conf_rows = [(t, q) for t in topics if t in configured for q in range(configured[t])]
    conf_df = spark.createDataFrame(conf_rows, "topic string, queueId int")
    seen = cq_max.select("topic", "queueId").unionByName(offsets.select("topic", "queueId")).distinct()
    unconfigured = seen.where(~F.col("topic").isin(list(configured) or ["\x00"]))
    queues = pairs.join(conf_df.unionByName(unconfigured).distinct(), "topic")
    lag = (
        queues.join(offsets, ["group", "topic", "queueId"], "left")
        .join(cq_max, ["topic", "queueId"], "left")
        .select(
            "group",
            "topic",
            "queueId",
            F.coalesce("brokerOffset", F.lit(0)).cast("bigint").alias("brokerOffset"),
            F.greatest(F.coalesce("consumerOffset", F.lit(0)), F.lit(0)).cast("bigint").alias("consumerOffset"),
        )
    )
    lag = lag.withColumn("lag", F.col("brokerOffset") - F.col("consumerOffset"))
    # store time of the message at consumerOffset - 1 (ConsumeQueue entry -> commit-log record)
    last = cq.select(
        F.col("topic").alias("_t"), F.col("queueId").alias("_q"), F.col("queueOffset").alias("_o"), "commitLogOffset"
    )
    lag = lag.join(
        last, (lag.topic == last["_t"]) & (lag.queueId == last["_q"]) & (last["_o"] == lag.consumerOffset - 1), "left"
    ).drop("_t", "_q", "_o")
    offs = [
        r.commitLogOffset
        for r in lag.where(F.col("commitLogOffset").isNotNull()).select("commitLogOffset").distinct().collect()
    ]
    if offs:
        times = messages(
            spark, store, columns="commitLogOffset,storeTimestamp", offsets=",".join(map(str, sorted(offs)))
        )
        lag = lag.join(times, "commitLogOffset", "left")
    else:
        lag = lag.withColumn("storeTimestamp", F.lit(None).cast("timestamp"))
    return lag.select(
        "group",
        "topic",
        "queueId",
        "brokerOffset",
        "consumerOffset",
        "lag",
        F.col("storeTimestamp").alias("lastTimestamp"),
    ).orderBy("group", "topic", "queueId")


def _read_queue_nums(store: str) -> dict[str, int]:
    """readQueueNums per topic from the store's topics.json (store.reader: .bak fallback)."""
    from pyrmq.store import config as cfg
    from pyrmq.store import reader

    got = reader.read_config(cfg.config_path(store, cfg.TopicConfigSerializeWrapper), cfg.TopicConfigSerializeWrapper)
    if got is None:
        return {}
    return {t: c.read_queue_nums for t, c in got[0].topic_config_table.items()}


# --- progress ----------------------------------------------------------------------------------
@contextmanager
def progress(spark: SparkSession, label: str, every: float = 2.0, out: TextIO = sys.stderr) -> Iterator[None]:
    """Print finished/total tasks of the running stages every `every` seconds while the block
    runs, then a summary table of the stages it saw (summary_table)."""
    stop = threading.Event()
    tracker = spark.sparkContext.statusTracker()
    seen: dict[int, tuple[int, int, int, str]] = {}  # stage id -> (done, total, failed, name)
    t0 = time.monotonic()

    def poll() -> list[str]:
        parts = []
        for sid in tracker.getActiveStageIds():
            info = tracker.getStageInfo(sid)
            if info is not None:
                seen[sid] = (info.numCompletedTasks, info.numTasks, info.numFailedTasks, info.name)
                parts.append(f"stage {sid}: {info.numCompletedTasks}/{info.numTasks} tasks")
        return parts

    def run() -> None:
        while not stop.wait(every):
            parts = poll()
            if parts:
                print(f"[{label} {time.monotonic() - t0:6.1f}s] " + ", ".join(parts), file=out, flush=True)

    th = threading.Thread(target=run, name="pyrmq-progress", daemon=True)
    th.start()
    try:
        yield
    finally:
        stop.set()
        th.join(timeout=every + 1)
        for sid in list(seen):  # the final counts of the stages seen running
            info = tracker.getStageInfo(sid)
            if info is not None:
                seen[sid] = (info.numCompletedTasks, info.numTasks, info.numFailedTasks, info.name)
        print(summary_table(label, time.monotonic() - t0, seen), file=out, flush=True)


def summary_table(label: str, seconds: float, stages: dict[int, tuple[int, int, int, str]]) -> str:
    """What a job did: one line per stage (tasks done/total, failed), then the totals."""
    lines = [f"{label}: {seconds:.1f}s", f"{'stage':>6}  {'tasks':>11}  {'failed':>6}  name"]
    for sid in sorted(stages):
        done, total, failed, name = stages[sid]
        lines.append(f"{sid:>6}  {f'{done}/{total}':>11}  {failed:>6}  {name}")
    done = sum(v[0] for v in stages.values())
    total = sum(v[1] for v in stages.values())
    failed = sum(v[2] for v in stages.values())
    lines.append(f"{'all':>6}  {f'{done}/{total}':>11}  {failed:>6}  {len(stages)} stage(s)")
    return "\n".join(lines)
