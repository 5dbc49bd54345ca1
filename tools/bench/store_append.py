"""Store append/decode throughput beside raw sequential write speed, measured in the same run.

Usage: .venv/bin/python tools/bench/store_append.py [--dir DIR] [--count N] [--sync-count N]
       [--file-mb 64] [--concurrency 16,64] [--only sequential|concurrent]

Sequential rows: one producer calling put_message (one put in flight: under SYNC_FLUSH every put
waits for its own msync). Concurrent rows: N asyncio tasks on one event loop each awaiting
put_message_async the way the broker's send processor does, so up to N puts are in flight and
SYNC_FLUSH group commit can serve many of them with one msync. "us CPU/msg" is process CPU time
(all threads) per put: steadier than msgs/s on a machine shared with other work.
"""

from __future__ import annotations

import argparse
import asyncio
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


def _open(root: str, flush: str, file_mb: int) -> MessageStore:
    cfg = MessageStoreConfig(
        store_path_root_dir=root,
        mapped_file_size_commit_log=file_mb * 1024 * 1024,
        flush_disk_type=flush,
        max_hash_slot_num=500_000,
        max_index_num=2_000_000,
    )
    s = MessageStore(cfg)
    s.load()
    s.start()
    return s


def _msg(i: int, body: bytes) -> m.MessageExtBrokerInner:
    return m.MessageExtBrokerInner(topic="Bench", queue_id=i & 7, body=body, properties={"UNIQ_KEY": f"U{i}"})


def append(root: str, size: int, count: int, flush: str, file_mb: int) -> tuple[float, float, float]:
    s = _open(root, flush, file_mb)
    body = os.urandom(size)
    c = time.process_time()
    t = time.perf_counter()
    nbytes = 0
    for i in range(count):
        r = s.put_message(_msg(i, body))
        assert r.is_ok(), r
        nbytes += r.append_message_result.wrote_bytes
    s.flush()
    dt = time.perf_counter() - t
    cpu = time.process_time() - c
    s.shutdown()
    return count / dt, nbytes / dt / 1e6, cpu / count * 1e6


def append_concurrent(
    root: str, size: int, count: int, flush: str, file_mb: int, inflight: int
) -> tuple[float, float, float]:
    """`inflight` asyncio tasks share `count` puts; each awaits its put like the broker does."""
    s = _open(root, flush, file_mb)
    body = os.urandom(size)
    nbytes = 0
    next_i = 0

    async def producer() -> None:
        nonlocal nbytes, next_i
        while next_i < count:
            i = next_i
            next_i += 1
            fut = s.put_message_async(_msg(i, body))
            r = fut.result() if fut.done() else await asyncio.wrap_future(fut)
            assert r.is_ok(), r
            nbytes += r.append_message_result.wrote_bytes

    async def run() -> None:
        await asyncio.gather(*(producer() for _ in range(inflight)))

    c = time.process_time()
    t = time.perf_counter()
    asyncio.run(run())
    s.flush()
    dt = time.perf_counter() - t
    cpu = time.process_time() - c
    s.shutdown()
    return count / dt, nbytes / dt / 1e6, cpu / count * 1e6


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
    ap.add_argument("--concurrency", default="16,64", help="comma-separated in-flight counts ('' = none)")
    ap.add_argument("--only", choices=("sequential", "concurrent"), default=None)
    a = ap.parse_args()
    levels = [int(x) for x in a.concurrency.split(",") if x.strip()]
    base = tempfile.mkdtemp(dir=a.dir, prefix="pyrmq-bench-")
    try:
        vol = 64 * 1024 * 1024
        if a.only is None:
            print(
                f"raw sequential write, 64 KiB chunks, fsync at end: {raw_write(os.path.join(base, 'raw'), vol, 65536, False):8.1f} MB/s"
            )
            print(
                f"raw write of 1 KiB chunks, fdatasync each (x{a.sync_count}): "
                f"{raw_write(os.path.join(base, 'raw'), a.sync_count * 1024, 1024, True):8.2f} MB/s"
            )
        for flush, count in (("ASYNC_FLUSH", a.count), ("SYNC_FLUSH", a.sync_count)):
            if a.only != "concurrent":
                for size in (128, 1024):
                    root = os.path.join(base, f"{flush}-{size}")
                    rate, mbs, cpu = append(root, size, count, flush, a.file_mb)
                    print(
                        f"append {flush:11s} body {size:5d} B x{count}: {rate:10.0f} msgs/s {mbs:8.1f} MB/s {cpu:7.1f} us CPU/msg"
                    )
                    if flush == "ASYNC_FLUSH" and size == 1024:
                        drate, dmbs, total = decode(root)
                        print(
                            f"decode commit log ({total / 1e6:.0f} MB, full decode incl. properties): {drate:10.0f} msgs/s {dmbs:8.1f} MB/s"
                        )
                    shutil.rmtree(root, ignore_errors=True)
            if a.only != "sequential":
                for n in levels:
                    root = os.path.join(base, f"{flush}-c{n}")
                    # SYNC_FLUSH with many in flight is not bounded by one msync per put: use the big count
                    rate, mbs, cpu = append_concurrent(root, 1024, a.count, flush, a.file_mb, n)
                    print(
                        f"append {flush:11s} body  1024 B x{a.count}, {n:3d} in flight (asyncio): "
                        f"{rate:10.0f} msgs/s {mbs:8.1f} MB/s {cpu:7.1f} us CPU/msg"
                    )
                    shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
