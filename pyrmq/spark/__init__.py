"""PySpark data sources over RocketMQ store directories (ours or the Java broker's).

    from pyrmq.spark import register, spark_session
    spark = spark_session("audit")            # local[*] unless spark-submit set a master
    corrupt = register(spark)                 # rocketmq, rocketmq_consumequeue, rocketmq_index, rocketmq_offsets
    spark.read.format("rocketmq").load("/data/store").groupBy("topic").count().show()

Submodules commitlog_scan, other_scans and columns need no Spark (pyarrow only); importing this
package does not import pyspark either.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from pyrmq.store.index import build_key
from pyrmq.store.index import index_key_hash as _index_key_hash

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SOURCE_NAMES = ("rocketmq", "rocketmq_consumequeue", "rocketmq_index", "rocketmq_offsets")


def index_key_hash(topic: str, key: str) -> int:
    """The keyHash the index stores for `key` (a KEYS token or a UNIQ_KEY) of `topic`."""
    return _index_key_hash(build_key(topic, key))


def spark_session(
    app_name: str = "pyrmq", master: str | None = None, conf: dict[str, str] | None = None
) -> SparkSession:
    """A SparkSession: `master` if given, else spark-submit's, else local[*]. Workers run this
    interpreter unless PYSPARK_PYTHON says otherwise (they must import pyrmq and pyarrow)."""
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        # under spark-submit the master is a system property of the JVM that started us: connect
        # to it first, or SparkConf sees no master and the job runs in local mode beside the
        # cluster (elsewhere the JVM is launched by getOrCreate, with the builder's options)
        SparkContext._ensure_initialized()
    base = SparkConf()
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    elif not base.contains("spark.master"):
        builder = builder.master("local[*]")
    for k, v in (conf or {}).items():
        builder = builder.config(k, v)
    return builder.getOrCreate()


class CorruptRecords:
    """What `corrupt=skip` scans skipped: [(file, file position, commit-log offset, reason)],
    collected from the executors through an accumulator (counts every skipped record once per
    successful task)."""

    def __init__(self, acc: Any) -> None:
        self._acc = acc

    @property
    def records(self) -> list[tuple[str, int, int, str]]:
        return sorted(set(map(tuple, self._acc.value)))

    def __len__(self) -> int:
        return len(self.records)


def register(spark: SparkSession) -> CorruptRecords:
    """Register the four sources on `spark` and enable Python filter pushdown, which the
    `rocketmq` and `rocketmq_consumequeue` readers use by default where Spark plans every scan
    afresh (sources.read_info_per_scan), else with option pushdown=true. Returns the
    skipped corrupt-record log for `rocketmq` reads made through this registration."""
    from pyspark.accumulators import AccumulatorParam

    from pyrmq.spark import sources

    Rows = list[tuple[str, int, int, str]]

    class _ListParam(AccumulatorParam[Rows]):
        def zero(self, value: Rows) -> Rows:
            return []

        def addInPlace(self, a: Rows, b: Rows) -> Rows:
            a.extend(b)
            return a

    acc = spark.sparkContext.accumulator([], _ListParam())

    # a class made here is pickled by value, so the accumulator travels with it to the workers
    per_scan = sources.read_info_per_scan(spark)

    class RocketMQ(sources.RocketMQDataSource):
        corrupt_accumulator = acc
        pushdown_default = per_scan

    class ConsumeQueue(sources.ConsumeQueueDataSource):
        pushdown_default = per_scan

    spark.conf.set(sources.PUSHDOWN_CONF, "true")
    spark.dataSource.register(RocketMQ)
    spark.dataSource.register(ConsumeQueue)
    spark.dataSource.register(sources.IndexDataSource)
    spark.dataSource.register(sources.OffsetsDataSource)
    return CorruptRecords(acc)
