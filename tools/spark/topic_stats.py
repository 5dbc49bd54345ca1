#!/usr/bin/env python3
"""Messages, bytes and first/last store time per topic and per queue, from the commit log
(header-only scan: bodies are never read into rows).

    python tools/spark/topic_stats.py --store ~/store
    spark-submit --master spark://host:7077 tools/spark/topic_stats.py --store /shared/store
"""

from __future__ import annotations

import _common


def main(argv=None) -> int:
    p = _common.parser(__doc__)
    p.add_argument("--topic", help="only this topic (comma list allowed)")
    p.add_argument("--format", choices=["table", "json"], default="table")
    args = p.parse_args(argv)
    spark, _corrupt = _common.session(args, "pyrmq-topic-stats")
    from pyrmq.spark.jobs import topic_stats

    by_queue, by_topic = topic_stats(spark, args.store, topic=args.topic, split_size=args.split_size)
    with _common.progress(spark, args, "topic-stats"):
        by_queue = by_queue.cache()
        by_queue.count()
        print("per topic")
        _common.show(by_topic, args.format)
        print("per queue")
        _common.show(by_queue, args.format)
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
