"""An hour of mixed traffic from the official example programs on pyrmq and the Java 5.5.0 broker
side by side, with a standard scenario measured between the rounds: do throughput, latency, CPU
per message or memory drift, on either broker?

Usage: tools/bench/soak_bench.py [--minutes 60] [--round-minutes 10] [--probe sync16]
       [--probe-seconds 25] [--topics 200] [--python PY] [--java-heap 1g] [--json OUT] [--png DIR]
       [--workdir DIR]

Both stacks are set up as broker_bench.py sets them up (same store settings, the official tools
from rocketmq-example 5.5.0). Each broker gets `--topics` topics of 8 queues and SoakMany, a topic
of 1,024 queues (the official benchmark's BenchmarkTest has as many). A round is `--round-minutes`
of mixed traffic on both brokers at once, each from its own clients:
- the benchmark Producer, 4 threads, 1 KiB bodies, on SoakMany;
- the benchmark Producer, 2 threads, keys and 8 tags (`-k true -c 8`), on one of the 8-queue topics
  (another one each round);
- the benchmark Consumer on SoakMany (one group for the whole run, so it reads on from where it was).
With --pin (the default) each stack, its broker, name server and clients, runs on a CPU of its
own. Between rounds the mixed clients stop and `--probe` (broker_bench's scenario, on SoakMany) runs
against one broker and then the other, alternating which goes first. A first probe runs before
the first round. Recorded per probe and broker: msgs/s, average and max RT, broker CPU us per
message, VmRSS and RssAnon; per round: the mixed clients' last send and consume rates and their
failures. The summary gives each broker's last probe against its first, and pyrmq/Java per probe.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import broker_bench as bb
import scale_bench as sb

MANY = "SoakMany"
MANY_QUEUES = 1024
FIGURES = (
    ("tps", "probe msgs/s"),
    ("avg_rt_ms", "probe avg RT ms"),
    ("broker_cpu_us_per_msg", "broker CPU us / msg"),
    ("rssanon_mib", "RssAnon MiB"),
)


def topic(i: int) -> str:
    return f"SoakT{i:04d}"


def setup_topics(stack: bb.Stack, n: int) -> None:
    bb.create_topic(stack, MANY, MANY_QUEUES)
    for i in range(n):
        bb.probe.create_topic(stack.broker.addr, topic(i), 8)


#: stack kind -> the CPUs its broker, name server and clients run on (--pin); empty: all
PINS: dict[str, set[int]] = {}


@contextlib.contextmanager
def pinned(kind: str) -> Iterator[None]:
    """Processes started inside inherit this stack's CPUs (sched_setaffinity on ourselves: a
    child's mask is its parent's at fork, for the JVM's threads too)."""
    cpus = PINS.get(kind)
    if not cpus:
        yield
        return
    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, saved)


def mixed_round(tools: bb.Tools, stacks: list[bb.Stack], rnd: int, seconds: float, logdir: Path, topics: int) -> dict:
    """One round of mixed traffic on every broker at once; the clients' last figures per broker."""
    procs = []
    logs: dict[str, dict[str, Path]] = {}
    try:
        for st in stacks:
            with pinned(st.kind):
                _start_mixed(tools, st, rnd, logdir, topics, procs, logs)
        time.sleep(seconds)
    finally:
        for p in procs:
            p.stop(10)
    out = {}
    for kind, paths in logs.items():
        many = bb.last_match(paths["many"], bb.SEND_LINE)
        keys = bb.last_match(paths["keys"], bb.SEND_LINE)
        cons = bb.last_match(paths["consumer"], bb.CONSUME_LINE)
        out[kind] = {
            "many_tps": int(many[0]) if many else None,
            "keys_tps": int(keys[0]) if keys else None,
            "consume_tps": int(cons[0]) if cons else None,
            "send_failed": sum(int(g[3]) + int(g[4]) for g in (many, keys) if g),
            "consume_failed": int(cons[5]) if cons else None,
        }
    return out


def _start_mixed(tools: bb.Tools, st: bb.Stack, rnd: int, logdir: Path, topics: int, procs: list, logs: dict) -> None:
    """The mixed clients of one stack: a consumer and a producer on SoakMany, a keyed producer."""
    ns = st.namesrv_addr
    tag = f"round{rnd}-{st.kind}"
    logs[st.kind] = {
        "many": logdir / f"{tag}.many.log",
        "keys": logdir / f"{tag}.keys.log",
        "consumer": logdir / f"{tag}.consumer.log",
    }
    procs.append(
        tools.start("Consumer", ["-n", ns, "-t", MANY, "-g", "soak_cg", "-ri", "1000"], logs[st.kind]["consumer"])
    )
    procs.append(
        tools.start("Producer", ["-n", ns, "-t", MANY, "-s", "1024", "-w", "4", "-ri", "1000"], logs[st.kind]["many"])
    )
    keys_topic = topic(rnd % max(1, topics))
    procs.append(
        tools.start(
            "Producer",
            ["-n", ns, "-t", keys_topic, "-s", "512", "-w", "2", "-k", "true", "-c", "8", "-ri", "1000"],
            logs[st.kind]["keys"],
        )
    )


def probe_all(tools: bb.Tools, stacks: list[bb.Stack], scenario: str, n: int, seconds: float, logdir: Path, t0: float):
    rows = []
    order = stacks if n % 2 == 0 else list(reversed(stacks))
    for st in order:
        with pinned(st.kind):
            res = bb.run_scenario(tools, st, scenario, n, seconds, logdir, topic=MANY, queues=MANY_QUEUES)
        row = {
            "minute": round((time.monotonic() - t0) / 60, 1),
            "probe": n,
            **asdict(res),
            "rssanon_mib": round(res.rss_kib.get("RssAnon", 0) / 1024, 1),
            "vmrss_mib": round(res.rss_kib.get("VmRSS", 0) / 1024, 1),
        }
        rows.append(row)
        print(
            f"probe {n} min {row['minute']:5.1f} {st.kind:5s} {res.tps:7.0f} msgs/s avg {res.avg_rt_ms:6.2f} ms "
            f"max {res.max_rt_ms} ms cpu {res.broker_cpu_us_per_msg} us/msg RssAnon {row['rssanon_mib']} MiB "
            f"failed {res.failed}",
            flush=True,
        )
        time.sleep(2)
    return rows


def table(probes: list[dict], rounds: list[dict]) -> str:
    lines = [
        "| probe | minute | broker | msgs/s | avg RT ms | max RT ms | CPU us/msg | RssAnon MiB | VmRSS MiB | failed |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in probes:
        lines.append(
            f"| {r['probe']} | {r['minute']} | {r['broker']} | {r['tps']:.0f} | {r['avg_rt_ms']:.2f} | {r['max_rt_ms']} "
            f"| {r['broker_cpu_us_per_msg']} | {r['rssanon_mib']} | {r['vmrss_mib']} | {r['failed']} |"
        )
    lines += ["", "| round | broker | SoakMany send/s | keys send/s | consume/s | send failed | consume failed |"]
    lines.append("|---|---|---|---|---|---|---|")
    for r in rounds:
        lines.append(
            f"| {r['round']} | {r['broker']} | {r['many_tps']} | {r['keys_tps']} | {r['consume_tps']} "
            f"| {r['send_failed']} | {r['consume_failed']} |"
        )
    by = {k: [r for r in probes if r["broker"] == k] for k in ("pyrmq", "java")}
    lines.append("")
    for kind, rows in by.items():
        if len(rows) >= 2 and rows[0]["tps"]:
            first, last = rows[0], rows[-1]
            lines.append(
                f"{kind}: last probe / first: msgs/s {last['tps'] / first['tps']:.2f}, avg RT "
                f"{first['avg_rt_ms']:.2f} -> {last['avg_rt_ms']:.2f} ms, CPU {first['broker_cpu_us_per_msg']} -> "
                f"{last['broker_cpu_us_per_msg']} us/msg, RssAnon {first['rssanon_mib']} -> {last['rssanon_mib']} MiB"
            )
    pairs = zip(by["pyrmq"], by["java"], strict=False)
    ratios = [f"{p['tps'] / j['tps']:.2f}" for p, j in pairs if j["tps"]]
    lines.append(f"pyrmq/Java msgs/s per probe: {', '.join(ratios)}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60, help="total minutes of mixed traffic")
    ap.add_argument("--round-minutes", type=float, default=10)
    ap.add_argument("--probe", default="sync16", choices=[s for s in bb.SCENARIOS if s.startswith("sync")])
    ap.add_argument("--probe-seconds", type=float, default=25)
    ap.add_argument("--topics", type=int, default=200, help="8-queue topics on each broker besides SoakMany")
    ap.add_argument("--python", default=str(bb.ROOT / ".venv" / "bin" / "python"))
    ap.add_argument("--java-heap", default="1g")
    ap.add_argument("--brokers", default="pyrmq,java")
    ap.add_argument(
        "--pin",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="each stack (broker, name server, its clients) on a CPU of its own: side by side on shared "
        "CPUs the scheduler shares time per thread, so a one-thread broker got a fraction of what the "
        "JVM's threads got (the measure was the scheduler's, not the broker's)",
    )
    ap.add_argument("--json", type=Path)
    ap.add_argument("--png", type=Path, help="write soak.png here (matplotlib: pip install -e '.[bench]')")
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args()

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="pyrmq-soak-"))
    workdir.mkdir(parents=True, exist_ok=True)
    logdir = workdir / "logs"
    logdir.mkdir(exist_ok=True)
    cache = Path(tempfile.gettempdir()) / "pyrmq-broker-bench-cp"
    cp = bb.bench_classpath(cache)
    tools = bb.Tools(cp, workdir / "client-home", bb.async_producer_classes(cp, cache))
    stacks: list[bb.Stack] = []
    probes: list[dict] = []
    rounds: list[dict] = []
    try:
        kinds = args.brokers.split(",")
        if args.pin:
            cpus = sorted(os.sched_getaffinity(0))
            if len(cpus) < len(kinds):
                raise SystemExit(f"--pin needs a CPU per broker; {len(cpus)} available")
            PINS.update({kind: {cpus[i]} for i, kind in enumerate(kinds)})
            print(f"pinned: {PINS}", flush=True)
        for kind in kinds:
            with pinned(kind):
                stacks.append(
                    bb.start_pyrmq(workdir, args.python) if kind == "pyrmq" else bb.start_java(workdir, args.java_heap)
                )
        for st in stacks:
            setup_topics(st, args.topics)
        t0 = time.monotonic()
        probes += probe_all(tools, stacks, args.probe, 0, args.probe_seconds, logdir, t0)
        n_rounds = max(1, round(args.minutes / args.round_minutes))
        for rnd in range(1, n_rounds + 1):
            figures = mixed_round(tools, stacks, rnd, args.round_minutes * 60, logdir, args.topics)
            for kind, f in figures.items():
                rounds.append({"round": rnd, "broker": kind, **f})
                print(f"round {rnd} {kind:5s} {f}", flush=True)
            probes += probe_all(tools, stacks, args.probe, rnd, args.probe_seconds, logdir, t0)
    finally:
        for st in stacks:
            st.stop()
        report = table(probes, rounds)
        print()
        print(report)
        if args.json:
            args.json.write_text(json.dumps({"probes": probes, "rounds": rounds}, indent=1))
        if args.png and probes:
            args.png.mkdir(parents=True, exist_ok=True)
            sb.draw(probes, "minute", args.png / "soak.png", FIGURES, log_x=False)
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
