"""The flood of issue 19: the official Java benchmark producer against pyrmq and the Java broker.

Usage: tools/bench/flood.py [--duration 30] [--scenarios big,small] [--python PY] [--java-heap 1g]
       [--workdir DIR]

Scenarios (org.apache.rocketmq.example.benchmark.Producer 5.5.0, sync sends):
  big    256 KiB messages from 64 producer threads
  small  1 KiB messages from 256 producer threads
Both stacks (pyrmq namesrv + broker, Java 5.5.0 namesrv + broker) run side by side, set up as in
broker_bench.py (whose helpers this reuses); each scenario runs against each broker in turn.
Reported per run: the tool's last send TPS and max RT, its cumulative "Send Failed" (remoting
errors: timeouts, refused connections) and "Response Failed" (broker answers such as SYSTEM_BUSY
after the client's retries), the broker's anonymous memory (RssAnon) peak during the run and 5 s
after the producer stopped, and the counts of busy remarks and client timeouts that the client's log
files gained during the run (each failed attempt is logged, retries included).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import broker_bench as bb

SCENARIOS = {"big": (256 * 1024, 64), "small": (1024, 256)}
PATTERNS = {
    "timeout": re.compile(r"RemotingTimeoutException"),
    "TIMEOUT_CLEAN_QUEUE": re.compile(r"\[TIMEOUT_CLEAN_QUEUE\]"),
    "OVERLOAD": re.compile(r"\[OVERLOAD\]"),
    "PCBUSY_CLEAN_QUEUE": re.compile(r"\[PCBUSY_CLEAN_QUEUE\]"),
    "REJECTREQUEST": re.compile(r"\[REJECTREQUEST\]"),
}


def log_sizes(home: Path) -> dict[Path, int]:
    return {f: f.stat().st_size for f in home.rglob("*.log")}


def count_in_logs(home: Path, before: dict[Path, int]) -> dict[str, int]:
    """Occurrences in what the client's log files gained since `before` (the client logs each
    failed attempt with its exception)."""
    out = dict.fromkeys(PATTERNS, 0)
    for f in home.rglob("*.log"):
        with f.open("rb") as fh:
            fh.seek(before.get(f, 0))
            text = fh.read().decode(errors="replace")
        for k, p in PATTERNS.items():
            out[k] += len(p.findall(text))
    return out


def anon_mib(pid: int) -> float:
    return bb.proc_status(pid).get("RssAnon", 0) / 1024


def run(tools: bb.Tools, stack: bb.Stack, name: str, duration: float, logdir: Path) -> dict:
    size, threads = SCENARIOS[name]
    topic = f"Flood_{name}"
    bb.create_topic(stack, topic)
    pid = stack.broker.pid
    idle = anon_mib(pid)
    log = logdir / f"{name}-{stack.kind}.producer.log"
    before = log_sizes(tools.home)
    proc = tools.start(
        "Producer", ["-n", stack.namesrv_addr, "-t", topic, "-s", str(size), "-w", str(threads), "-ri", "1000"], log
    )
    peak = idle
    try:
        end = time.monotonic() + duration
        while time.monotonic() < end:
            peak = max(peak, anon_mib(pid))
            time.sleep(0.5)
    finally:
        proc.stop(10)
    time.sleep(5)
    after = anon_mib(pid)
    g = bb.last_match(log, bb.SEND_LINE)
    res = {
        "scenario": name,
        "broker": stack.kind,
        "tps": int(g[0]) if g else None,
        "max_rt_ms": int(g[1]) if g else None,
        "send_failed": int(g[3]) if g else None,
        "response_failed": int(g[4]) if g else None,
        "anon_idle_mib": round(idle),
        "anon_peak_mib": round(peak),
        "anon_after_mib": round(after),
        **count_in_logs(tools.home, before),
    }
    print(res, flush=True)
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=30)
    ap.add_argument("--scenarios", default="big,small")
    ap.add_argument("--python", default=str(bb.ROOT / ".venv" / "bin" / "python"))
    ap.add_argument("--java-heap", default="1g")
    ap.add_argument("--workdir")
    args = ap.parse_args()
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="pyrmq-flood-"))
    cache = Path(tempfile.gettempdir()) / "pyrmq-broker-bench-cp"
    cp = bb.bench_classpath(cache)
    tools = bb.Tools(cp, workdir / "client-home", bb.async_producer_classes(cp, cache))
    stacks = {}
    try:
        stacks["pyrmq"] = bb.start_pyrmq(workdir, args.python)
        stacks["java"] = bb.start_java(workdir, args.java_heap)
        (workdir / "logs").mkdir(exist_ok=True)
        for name in args.scenarios.split(","):
            for kind in ("pyrmq", "java"):
                run(tools, stacks[kind], name, args.duration, workdir / "logs")
    finally:
        for s in stacks.values():
            s.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
