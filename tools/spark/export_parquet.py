#!/usr/bin/env python3
"""Export a topic (or all) and a store-time range to Parquet, partitioned by topic.

Times are epoch ms or ISO-8601 (UTC unless an offset is given); --end is exclusive.

    python tools/spark/export_parquet.py --store ~/store --out /tmp/orders.parquet \\
        --topic Orders --start 2024-05-01T00:00:00 --end 2024-05-02T00:00:00
"""

from __future__ import annotations

import _common


def main(argv=None) -> int:
    p = _common.parser(__doc__)
    p.add_argument("--out", required=True, help="output directory (overwritten)")
    p.add_argument("--topic", help="topic (comma list allowed); default all")
    p.add_argument("--start", help="first store time (inclusive)")
    p.add_argument("--end", help="last store time (exclusive)")
    p.add_argument("--columns", help="comma list of columns (default all)")
    p.add_argument(
        "--corrupt",
        choices=["fail", "skip"],
        default="fail",
        help="on a corrupt record: stop (default) or skip it and report it",
    )
    args = p.parse_args(argv)
    spark, corrupt = _common.session(args, "pyrmq-export-parquet")
    from pyrmq.spark.jobs import export_parquet

    with _common.progress(spark, args, "export"):
        n = export_parquet(
            spark,
            args.store,
            args.out,
            topic=args.topic,
            start_time=args.start,
            end_time=args.end,
            columns=args.columns,
            corrupt=args.corrupt,
        )
    print(f"exported {n} message(s) to {args.out}")
    bad = corrupt.records
    for path, pos, offset, why in bad:
        print(f"skipped corrupt record: {path} position {pos} (offset {offset}): {why}")
    if bad:
        print(f"{len(bad)} corrupt record(s) skipped")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
