"""Shared CLI plumbing for the Spark jobs: common flags, the session, progress on stderr."""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", required=True, help="store root (with commitlog/, consumequeue/, index/, config/)")
    p.add_argument("--master", default=None, help="Spark master; default: spark-submit's --master, else local[*]")
    p.add_argument("--split-size", type=int, default=None, help="bytes of commit log per task (default 256 MiB)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return p


def session(args, app: str):
    from pyrmq.spark import register, spark_session
    from pyrmq.spark.sources import PROGRESS_ENV

    conf = {"spark.ui.showConsoleProgress": "false"}
    if not args.quiet:  # a line per commit-log split read: local workers inherit the environment
        os.environ[PROGRESS_ENV] = "1"
        conf[f"spark.executorEnv.{PROGRESS_ENV}"] = "1"
    spark = spark_session(app, args.master, conf)
    spark.sparkContext.setLogLevel("ERROR")
    corrupt = register(spark)
    return spark, corrupt


def progress(spark, args, label: str):
    from contextlib import nullcontext

    from pyrmq.spark.jobs import progress as _progress

    return nullcontext() if args.quiet else _progress(spark, label)


def show(df, fmt: str, limit: int = 1000) -> None:
    if fmt == "json":
        for row in df.limit(limit).toJSON().collect():
            print(row)
    else:
        df.show(limit, truncate=False)
