#!/usr/bin/env python3
"""Spark scan speed over a commit log, set against the raw read speed of the same file.

Generates (once, with pyrmq.store) a commit log of --size bytes of --body-size messages, then
times, in the same run:
  raw        reading every file start to end (64 MiB reads, cold-ish: page cache not dropped)
  walk       pyrmq.spark.commitlog_scan over all splits, header decode + BODYCRC (no Spark)
  header     spark.read.format("rocketmq") with header columns only, count() after a full scan
  nocrc      header columns with checkCRC=false (body bytes are not even read for the CRC)
  bodies     the same with the body column (sum of body lengths)
Prints one JSON line per measurement (records/s, MB/s). The store is not committed anywhere.

    .venv/bin/python tools/bench/spark_scan.py --store /tmp/bench-store --size 1073741824
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))


def generate(root: str, size: int, body_size: int, file_size: int) -> None:
    from pyrmq.store.message_store import MessageStore
    from pyrmq.store.store_config import MessageStoreConfig

    cfg = MessageStoreConfig(
        store_path_root_dir=root, mapped_file_size_commit_log=file_size, message_index_enable=False
    )
    s = MessageStore(cfg)
    s.load()
    s.start()
    from pyrmq.store.commitlog import MessageExtBatch
    from pyrmq.store.message import BatchElement, encode_batch_body

    body = os.urandom(body_size)
    i = 0
    t0 = time.monotonic()
    try:
        while s.get_max_phy_offset() < size:
            # batches of 32: each element becomes a full, independent record (spec 2.7)
            elements = [
                BatchElement(body, f"TAGS\x01t\x02KEYS\x01k{i + j}\x02UNIQ_KEY\x01U{i + j:012d}\x02") for j in range(32)
            ]
            r = s.put_messages(MessageExtBatch(topic=f"Bench{i % 4}", body=encode_batch_body(elements), queue_id=i % 8))
            assert r.is_ok(), r
            i += 32
            if i % 102_400 == 0:
                print(
                    f"generated {s.get_max_phy_offset() / 2**20:.0f} MiB ({i} messages, {time.monotonic() - t0:.0f}s)",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        s.shutdown()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", required=True, help="store root (generated when it has no commit log)")
    p.add_argument("--size", type=int, default=1 << 30, help="commit-log bytes to generate (default 1 GiB)")
    p.add_argument("--body-size", type=int, default=1024)
    p.add_argument("--file-size", type=int, default=1 << 30, help="mappedFileSizeCommitLog (default 1 GiB)")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--split-size", type=int, default=64 * 1024 * 1024)
    p.add_argument("--skip", default="", help="comma list of measurements to skip")
    args = p.parse_args(argv)
    skip = set(args.skip.split(","))

    from pyrmq.spark import commitlog_scan as scan

    if not (os.path.isdir(os.path.join(args.store, "commitlog")) and scan.list_commit_log(args.store)):
        generate(args.store, args.size, args.body_size, args.file_size)
    files = scan.list_commit_log(args.store)
    splits = scan.plan_splits(args.store, scan.PlanOptions(split_size=args.split_size))
    data = sum(sp.stop - sp.start for sp in splits)

    def report(name: str, seconds: float, records: int | None, extra: dict | None = None) -> None:
        row = {"measure": name, "seconds": round(seconds, 3), "bytes": data, "MBps": round(data / 1e6 / seconds, 1)}
        if records is not None:
            row.update(records=records, records_per_s=round(records / seconds))
        row.update(extra or {})
        print(json.dumps(row), flush=True)

    if "raw" not in skip:
        t0 = time.perf_counter()
        for f in files:
            with open(f.path, "rb", buffering=0) as fh:
                while fh.read(64 << 20):
                    pass
        report("raw", time.perf_counter() - t0, None, {"note": "whole files incl. preallocated tail"})
    n = None
    if "walk" not in skip:
        t0 = time.perf_counter()
        n = sum(1 for sp in splits for _ in scan.iter_split(sp))
        report("walk (1 core, no Spark)", time.perf_counter() - t0, n)

    from pyspark.sql import functions as F

    from pyrmq.spark import register, spark_session

    spark = spark_session(
        "pyrmq-bench",
        args.master,
        {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.ui.showConsoleProgress": "false"},
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    # warm-up: JVM, Python workers, imports (not timed)
    spark.read.format("rocketmq").option("offsets", str(files[0].start)).load(args.store).count()
    header_cols = "topic,queueId,queueOffset,commitLogOffset,storeSize,bodySize,storeTimestamp"
    if "header" not in skip:
        df = (
            spark.read.format("rocketmq")
            .option("splitSize", args.split_size)
            .option("columns", header_cols)
            .load(args.store)
        )
        t0 = time.perf_counter()
        r = df.agg(F.count(F.lit(1)).alias("n"), F.sum("storeSize").alias("b")).collect()[0]
        report(
            f"spark header columns ({args.master})",
            time.perf_counter() - t0,
            r.n,
            {"partitions": df.rdd.getNumPartitions()},
        )
    if "nocrc" not in skip:
        df = (
            spark.read.format("rocketmq")
            .option("splitSize", args.split_size)
            .option("columns", header_cols)
            .option("checkCRC", "false")
            .load(args.store)
        )
        t0 = time.perf_counter()
        r = df.agg(F.count(F.lit(1)).alias("n"), F.sum("storeSize").alias("b")).collect()[0]
        report(f"spark header columns, checkCRC=false ({args.master})", time.perf_counter() - t0, r.n)
    if "bodies" not in skip:
        df = (
            spark.read.format("rocketmq")
            .option("splitSize", args.split_size)
            .option("columns", header_cols + ",body")
            .load(args.store)
        )
        t0 = time.perf_counter()
        r = df.agg(F.count(F.lit(1)).alias("n"), F.sum(F.length("body")).alias("b")).collect()[0]
        report(f"spark with bodies ({args.master})", time.perf_counter() - t0, r.n, {"body_bytes": r.b})
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
