#!/usr/bin/env python3
"""Find messages by business key (KEYS) or message id (UNIQ_KEY or offsetMsgId).

With --topic and an index directory the index narrows the scan to the candidate offsets (pass
the broker's --max-hash-slot-num/--max-index-num when they are not the defaults); without, the
whole commit log is scanned.

    python tools/spark/find_messages.py --store ~/store --key order-42 --topic Orders
    python tools/spark/find_messages.py --store ~/store --msg-id 7F00000100002A9F0000000000000000
"""

from __future__ import annotations

import _common


def main(argv=None) -> int:
    p = _common.parser(__doc__)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--key", help="a KEYS token or a UNIQ_KEY")
    g.add_argument("--msg-id", help="UNIQ_KEY (client msgId) or offsetMsgId")
    p.add_argument("--topic", help="restrict to a topic (enables the index lookup for --key)")
    p.add_argument("--no-index", action="store_true", help="scan the commit log even with --topic")
    p.add_argument("--max-hash-slot-num", type=int, help="broker maxHashSlotNum (default 5000000)")
    p.add_argument("--max-index-num", type=int, help="broker maxIndexNum (default 20000000)")
    p.add_argument("--body", action="store_true", help="include bodies (decompressed)")
    p.add_argument("--format", choices=["table", "json"], default="table")
    args = p.parse_args(argv)
    spark, _corrupt = _common.session(args, "pyrmq-find-messages")
    from pyrmq.spark.jobs import find_messages

    idx = {}
    if args.max_hash_slot_num:
        idx["maxHashSlotNum"] = str(args.max_hash_slot_num)
    if args.max_index_num:
        idx["maxIndexNum"] = str(args.max_index_num)
    with _common.progress(spark, args, "find-messages"):
        df = find_messages(
            spark,
            args.store,
            key=args.key,
            msg_id=args.msg_id,
            topic=args.topic,
            with_body=args.body,
            use_index=not args.no_index,
            index_options=idx,
        )
        rows = df.cache()
        n = rows.count()
        _common.show(rows, args.format)
    print(f"{n} message(s)")
    spark.stop()
    return 0 if n else 1


if __name__ == "__main__":
    raise SystemExit(main())
