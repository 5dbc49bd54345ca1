"""A small store against a large one: start, pulls from cold offsets and recovery after kill -9,
pyrmq against the Java 5.5.0 broker on the SAME store directory (the on-disk formats are the same).

Usage: .venv/bin/python tools/bench/store_size_bench.py [--gib 1,20] [--body 4096] [--pulls 64]
       [--workdir DIR] [--no-java] [--json OUT] [--png DIR]

Per size, a store is built once through the store API (kept in --workdir; restart_bench.py's
layout: BenchmarkTest with 1,024 queues and 80 small topics, keys on every message, Java's file
sizes) until its commit log holds that many GiB. Then, for each broker in turn, on that one
directory (no copies, so a 20 GiB store needs 20 GiB of disk, not 60):

1. page cache dropped (/proc/sys/vm/drop_caches), broker started: seconds to its port accepting
   and to the first SEND_OK, VmRSS then;
2. cold pulls: page cache dropped again, then one PULL_MESSAGE of 32 messages from queue offset 0
   (the oldest data, at the start of the commit log) on each of --pulls BenchmarkTest queues, one
   after the other: mean and max ms per pull; then the same pulls again, warm;
3. 200 sends, 2 s for the flush threads, kill -9; page cache dropped; the same broker started on
   the crashed store: seconds to listen and to the first SEND_OK (its recovery); stopped with
   SIGTERM, which leaves the store clean for the next broker.

Needs root for drop_caches (without it the figures are marked warm). Both brokers' processes
run on every core; nothing else should run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import restart_bench as rb
from support import java as sj
from support import probe
from support.servers import PyrmqNamesrv

PULL_MESSAGE = 11
FOUND = 0


def drop_caches() -> bool:
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def pull_fields(queue_id: int, offset: int) -> dict[str, str]:
    return {
        "consumerGroup": "StoreSizeBenchGroup",
        "topic": rb.BIG_TOPIC,
        "queueId": str(queue_id),
        "queueOffset": str(offset),
        "maxMsgNums": "32",
        "sysFlag": "4",  # FLAG_SUBSCRIPTION: the subscription travels with the pull
        "commitOffset": "0",
        "suspendTimeoutMillis": "0",
        "subscription": "*",
        "subVersion": "0",
        "expressionType": "TAG",
    }


def pulled_queues(n: int) -> list[int]:
    """BenchmarkTest queues that hold messages (build_store skips every 4th: those go to the
    small topics)."""
    return [q for q in range(rb.BIG_QUEUES) if q % 4][:n]


def pulls(port: int, queues: int) -> list[float]:
    """ms of each pull; every pull must return messages."""
    out = []
    for q in pulled_queues(queues):
        t = time.perf_counter()
        r = probe.request(f"127.0.0.1:{port}", PULL_MESSAGE, pull_fields(q, 0), timeout=30)
        out.append((time.perf_counter() - t) * 1000)
        if r.code != FOUND or not r.body:
            raise RuntimeError(f"pull of queue {q} from offset 0: code {r.code} {r.remark}")
    return out


def one_broker(kind: str, store: Path, namesrv: str, work: Path, pull_queues: int, timeout: float) -> dict:
    res: dict = {"cold": drop_caches()}
    t0 = time.monotonic()
    proc, port = rb.start_broker(kind, store, namesrv, work, None)
    try:
        res["start_listen_s"], res["start_send_ok_s"] = rb.wait_serving(kind, proc, port, t0, timeout)
        res["start_rss_mib"] = rb.rss_mib(proc.pid)
        drop_caches()
        cold = pulls(port, pull_queues)
        warm = pulls(port, pull_queues)
        res["cold_pull_ms_mean"], res["cold_pull_ms_max"] = statistics.mean(cold), max(cold)
        res["warm_pull_ms_mean"], res["warm_pull_ms_max"] = statistics.mean(warm), max(warm)
        sent = 0
        while sent < 200:
            sent += rb.send_frame(port, rb.BIG_TOPIC) == rb.SUCCESS
        time.sleep(2)
    finally:
        proc.kill9()
    if not (store / "abort").exists():
        raise RuntimeError(f"{kind}: no abort file after kill -9")
    drop_caches()
    t0 = time.monotonic()
    proc, port = rb.start_broker(kind, store, namesrv, work, None)
    try:
        res["recover_listen_s"], res["recover_send_ok_s"] = rb.wait_serving(kind, proc, port, t0, timeout)
        res["recover_rss_mib"] = rb.rss_mib(proc.pid)
    finally:
        proc.stop(120)
    return res


def chart(results: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted(results, key=float)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    panels = [
        ("start to first SEND_OK (s)", "start_send_ok_s"),
        ("recovery after kill -9 to first SEND_OK (s)", "recover_send_ok_s"),
        ("cold pull, mean ms per 32 messages", "cold_pull_ms_mean"),
    ]
    for ax, (title, key) in zip(axes, panels, strict=True):
        for kind, marker in (("pyrmq", "o"), ("java", "s")):
            ys = [results[s][kind][key] for s in sizes if kind in results[s]]
            if ys:
                ax.plot([float(s) for s in sizes[: len(ys)]], ys, marker=marker, label=kind)
        ax.set_xlabel("commit log GiB")
        ax.set_title(title, fontsize=9)
        ax.set_ylim(bottom=0)
        ax.legend()
    fig.tight_layout()
    fig.savefig(out / "store-size.png", dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gib", default="1,20", help="commit-log sizes, GiB, comma separated")
    ap.add_argument("--body", type=int, default=4096, help="body bytes of the built messages")
    ap.add_argument("--pulls", type=int, default=64, help="BenchmarkTest queues pulled from offset 0")
    ap.add_argument("--workdir", default="/tmp/pyrmq-store-size-bench")
    ap.add_argument("--no-java", action="store_true")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--json")
    ap.add_argument("--png")
    a = ap.parse_args()
    work = Path(a.workdir)
    work.mkdir(parents=True, exist_ok=True)
    kinds = ["pyrmq"] if a.no_java else ["pyrmq", "java"]
    if not a.no_java:
        sj.ensure_built()
    results: dict[str, dict[str, dict]] = {}
    namesrv = PyrmqNamesrv(work / "namesrv")
    try:
        for size in a.gib.split(","):
            store = work / f"store-{size}gib-{a.body}"
            if not (store / "built").exists():
                shutil.rmtree(store, ignore_errors=True)
                t = time.monotonic()
                n = rb.build_store(store, int(float(size) * 1024), a.body)
                (store / "built").write_text(str(n))
                print(f"built {store}: {n} messages in {time.monotonic() - t:.0f} s", flush=True)
            results[size] = {}
            for kind in kinds:
                r = one_broker(kind, store, namesrv.addr, work, a.pulls, a.timeout)
                results[size][kind] = r
                print(
                    f"{size:>5s} GiB {kind:5s} start {r['start_listen_s']:6.2f}/{r['start_send_ok_s']:6.2f} s "
                    f"RSS {r['start_rss_mib']:5.0f} MiB  cold pull {r['cold_pull_ms_mean']:7.2f} ms "
                    f"(max {r['cold_pull_ms_max']:7.1f})  warm {r['warm_pull_ms_mean']:5.2f} ms  "
                    f"recovery {r['recover_listen_s']:6.2f}/{r['recover_send_ok_s']:6.2f} s"
                    + ("" if r["cold"] else "  (page cache NOT dropped)"),
                    flush=True,
                )
    finally:
        namesrv.stop()
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    if a.png:
        chart(results, Path(a.png))


if __name__ == "__main__":
    main()
