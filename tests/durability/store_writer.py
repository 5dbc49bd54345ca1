"""Writer process for the durability test: puts messages with ids 0,1,2,... and prints each id
to stdout (flushed) only after the store acknowledged it. Killed with SIGKILL at random points."""

from __future__ import annotations

import sys
import time

from pyrmq.store.message import MessageExtBrokerInner
from pyrmq.store.message_store import MessageStore
from pyrmq.store.store_config import MessageStoreConfig


def main() -> None:
    root, flush_type, start = sys.argv[1], sys.argv[2], int(sys.argv[3])
    cfg = MessageStoreConfig(
        store_path_root_dir=root,
        mapped_file_size_commit_log=64 * 1024,
        mapped_file_size_consume_queue=20 * 512,
        max_hash_slot_num=256,
        max_index_num=1024,
        flush_disk_type=flush_type,
    )
    store = MessageStore(cfg)
    store.load()
    store.start()
    out = sys.stdout
    out.write("READY\n")
    out.flush()
    i = start
    while True:
        body = (f"msg-{i}-" * (1 + i % 7)).encode()
        r = store.put_message(
            MessageExtBrokerInner(
                topic="Dur", queue_id=i % 3, body=body, properties={"KEYS": f"id{i}", "UNIQ_KEY": f"U{i}"}
            )
        )
        if not r.is_ok():
            out.write(f"FAIL {i} {r.put_message_status}\n")
        else:
            out.write(f"{i}\n")
        out.flush()
        i += 1
        if i % 20 == 0:
            # at most ~20,000 puts a second: an ASYNC_FLUSH writer would otherwise add ~100,000 a
            # round and each round's check re-reads the whole store (kills still land mid-put)
            time.sleep(0.001)


if __name__ == "__main__":
    main()
