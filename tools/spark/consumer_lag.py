#!/usr/bin/env python3
"""Consumer lag per group, topic and queue: committed offset (config/consumerOffset.json) vs
the consume queue's max offset, as `mqadmin consumerProgress` reports it (#Broker Offset,
#Consumer Offset, #Diff, #LastTime).

    python tools/spark/consumer_lag.py --store ~/store --group OrderConsumers
"""

from __future__ import annotations

import _common


def main(argv=None) -> int:
    p = _common.parser(__doc__)
    p.add_argument("--group", help="only this consumer group")
    p.add_argument("--format", choices=["table", "json"], default="table")
    args = p.parse_args(argv)
    spark, _corrupt = _common.session(args, "pyrmq-consumer-lag")
    from pyspark.sql import functions as F

    from pyrmq.spark.jobs import consumer_lag

    with _common.progress(spark, args, "consumer-lag"):
        lag = consumer_lag(spark, args.store, args.group).cache()
        _common.show(lag, args.format)
        for r in lag.groupBy("group").agg(F.sum("lag").alias("total")).orderBy("group").collect():
            print(f"group {r.group}: total lag {r.total}")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
