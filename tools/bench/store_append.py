"""Store append/decode throughput beside raw sequential write speed, measured in the same run.

Usage: .venv/bin/python tools/bench/store_append.py [--dir DIR] [--count N] [--file-mb 64]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

from pyrmq.store import message as m
from pyrmq.store.message_store import MessageStore
from pyrmq.store.store_config import MessageStoreConfig


def raw_write(path: str, total: int, chunk: int, fsync_each: bool) -> float:
    buf = os.urandom(chunk)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    t = time.perf_counter()
    written = 0
    while written < total:
        os.write(fd, buf)
        written += chunk
        if fsync_each:
            os.fdatasync(fd)
    os.fsync(fd)
    dt = time.perf_counter() - t
    os.close(fd)
    os.unlink(path)
    return written / dt / 1e6


def append(root: str, size: int, count: int, flush: str, file_mb: int) -> tuple[float, float]:
    cfg = MessageStoreConfig(
        store_path_root_dir=root, mapped_file_size_commit_log=file_mb * 1024 * 1024, flush_disk_type=flush,
        max_hash_slot_num=500_000, max_index_num=2_000_000,
    )
    s = MessageStore(cfg)
    s.load()
    s.start()
    body = os.urandom(size)
    t = time.perf_counter()
    nbytes = 0
    for i in range(count):
        r = s.put_message(m.MessageExtBrokerInner(topic="Bench", queue_id=i & 7, body=body, properties={"UNIQ_KEY": f"U{i}"}))
        nbytes += r.append_message_result.wrote_bytes
    s.commit_log.flush_until(s.get_max_phy_offset())
    dt = time.perf_counter() - t
    s.shutdown()
    return count / dt, nbytes / dt / 1e6


def decode(root: str) -> tuple[float, float, int]:
    files = sorted(os.listdir(os.path.join(root, "commitlog")))
    t = time.perf_counter()
    n = nbytes = 0
    for f in files:
        with open(os.path.join(root, "commitlog", f), "rb") as fh:
            data = fh.read()
        for rec in m.decode_messages(data):
            n += 1
            nbytes += rec.store_size
    dt = time.perf_counter() - t
    return n / dt, nbytes / dt / 1e6, nbytes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=None)
    ap.add_argument("--count", type=int, default=50_000)
    ap.add_argument("--sync-count", type=int, default=3_000)
    ap.add_argument("--file-mb", type=int, default=64)
    a = ap.parse_args()
    base = tempfile.mkdtemp(dir=a.dir, prefix="pyrmq-bench-")
    try:
        vol = 64 * 1024 * 1024
        print(f"raw sequential write, 64 KiB chunks, fsync at end: {raw_write(os.path.join(base, 'raw'), vol, 65536, False):8.1f} MB/s")
        print(f"raw write of 1 KiB chunks, fdatasync each (x{a.sync_count}): "
              f"{raw_write(os.path.join(base, 'raw'), a.sync_count * 1024, 1024, True):8.2f} MB/s")
        for flush, count in (("ASYNC_FLUSH", a.count), ("SYNC_FLUSH", a.sync_count)):
            for size in (128, 1024):
                root = os.path.join(base, f"{flush}-{size}")
                rate, mbs = append(root, size, count, flush, a.file_mb)
                print(f"append {flush:11s} body {size:5d} B x{count}: {rate:10.0f} msgs/s {mbs:8.1f} MB/s")
                if flush == "ASYNC_FLUSH" and size == 1024:
                    drate, dmbs, total = decode(root)
                    print(f"decode commit log ({total / 1e6:.0f} MB, full decode incl. properties): {drate:10.0f} msgs/s {dmbs:8.1f} MB/s")
                shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
