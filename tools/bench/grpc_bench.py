"""gRPC (MessagingService v2) send and receive with the official 5.x Java SDK: pyrmq's built-in
endpoint vs the Java proxy 5.5.0 in local mode with its Java broker, in the same run.

Usage: tools/bench/grpc_bench.py [--count 5000] [--threads 8] [--repeats 2] [--ssl] [--json OUT]

Both stacks (a name server + a broker serving gRPC in its own process: `pyrmq broker` with
grpcServerPort; ProxyStartup -pm local, support.servers.JavaLocalProxy) run side by side. For each
repeat and stack (order alternating), a new 4-queue topic and group, then one JVM of
compat/java-tests/grpcclient's GrpcBench: a Producer sends 200 warm-up messages, then --count
1 KiB messages from --threads threads (synchronous send), and a SimpleConsumer receives (32 at a
time) and acks them all from --threads threads. Reported per phase: msgs/s over the phase and the
SDK call latencies (send; receive calls that returned messages; ack). The client is the same JVM
class for both; plaintext unless --ssl.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from broker_bench import CLIENT_JVM, STORE_CONF, Stack, create_topic, proc_cpu  # noqa: E402
from support import java as sj  # noqa: E402
from support import probe, pyrmq_proc, servers  # noqa: E402

from pyrmq.protocol.codes import RequestCode  # noqa: E402

MAIN = "io.pyrmq.compat.grpc.GrpcBench"


def start_pyrmq(workdir: Path) -> Stack:
    ns = servers.PyrmqNamesrv(workdir / "pyrmq-ns")
    try:
        br = pyrmq_proc.PyrmqBroker(
            ns.addr, workdir / "pyrmq-broker", name="grpc-bench-pyrmq", cluster="PyrmqBench", grpc_port=0, **STORE_CONF
        )
    except BaseException:
        ns.stop()
        raise
    return Stack("pyrmq", ns, br)


def start_java(workdir: Path) -> Stack:
    sj.ensure_built()
    ns = servers.JavaNamesrv(workdir / "java-ns")
    try:
        br = servers.JavaLocalProxy(
            ns.addr, workdir / "java-proxy", name="grpc-bench-java", cluster="JavaBench", **STORE_CONF
        )
    except BaseException:
        ns.stop()
        raise
    return Stack("java", ns, br)


def create_group(stack: Stack, group: str) -> None:
    """The Java proxy refuses a SimpleConsumer of a group its broker lacks (autoCreateSubscriptionGroup
    does not reach gRPC clients), so both get the group first."""
    body = json.dumps({"groupName": group}).encode()
    r = probe.request(stack.broker.addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, timeout=15, body=body)
    if r.code != probe.SUCCESS:
        raise RuntimeError(f"create group {group} on {stack.kind}: {r.code} {r.remark}")


def run_one(stack: Stack, workdir: Path, count: int, threads: int, ssl: bool) -> dict:
    name = f"GrpcBench{uuid.uuid4().hex[:8]}"
    create_topic(stack, name, 4)
    create_group(stack, name + "G")
    home = sj.prepare_home(workdir / f"client-{name}")
    argv = sj.java_argv(
        "grpcclient",
        MAIN,
        [stack.broker.grpc_addr, name, name + "G", str(count), str(threads)],
        home,
        {"ssl": str(ssl).lower()},
        heap=CLIENT_JVM,
    )
    cpu0 = proc_cpu(stack.broker.pid)
    t0 = time.monotonic()
    r = subprocess.run(
        argv, capture_output=True, text=True, timeout=900, env=sj.java_env(home), stdin=subprocess.DEVNULL
    )
    wall = time.monotonic() - t0
    cpu = proc_cpu(stack.broker.pid) - cpu0
    phases = {}
    for line in r.stdout.splitlines():
        if line.startswith("@@ "):
            event = json.loads(line[3:])
            phases[event.pop("phase")] = event
    if r.returncode != 0 or set(phases) != {"send", "receive"}:
        raise RuntimeError(f"GrpcBench on {stack.kind} exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    messages = phases["receive"]["messages"]
    return {
        "stack": stack.kind,
        **{f"send_{k}": v for k, v in phases["send"].items()},
        **{f"receive_{k}": v for k, v in phases["receive"].items()},
        "broker_cpu_us_per_msg": round(cpu * 1e6 / (count + messages), 1),
        "client_wall_s": round(wall, 1),
    }


def ratios(results: list[dict]) -> list[dict]:
    """pyrmq/Java per repeat: throughput (higher is better for pyrmq) and latency (lower is)."""
    out = []
    for rep in sorted({r["repeat"] for r in results}):
        by = {r["stack"]: r for r in results if r["repeat"] == rep}
        p, j = by["pyrmq"], by["java"]
        row = {"repeat": rep}
        for key in (
            "send_msgs_per_s",
            "send_mean_ms",
            "send_p99_ms",
            "receive_msgs_per_s",
            "receive_mean_ms",
            "receive_ack_mean_ms",
            "broker_cpu_us_per_msg",
        ):
            if p.get(key) and j.get(key):
                row[key] = round(p[key] / j[key], 2)
        out.append(row)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=5000)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--ssl", action="store_true", help="TLS (the SDK's default); plaintext otherwise")
    ap.add_argument("--json")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="grpc-bench-"))
    stacks = []
    results = []
    try:
        stacks = [start_pyrmq(work), start_java(work)]
        for rep in range(args.repeats):
            for stack in stacks if rep % 2 == 0 else stacks[::-1]:
                res = run_one(stack, work, args.count, args.threads, args.ssl)
                res["repeat"] = rep
                print(json.dumps(res), flush=True)
                results.append(res)
    finally:
        for s in stacks:
            s.stop()
    summary = ratios(results)
    for row in summary:
        print("pyrmq/java", json.dumps(row), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "ratios": summary}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
