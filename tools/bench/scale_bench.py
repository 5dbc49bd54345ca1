"""How a broker's cost grows with its topics and its connected clients: pyrmq vs the Java 5.5.0 broker.

Usage: tools/bench/scale_bench.py [--topics 1,100,10000] [--clients 10,1000,5000] [--rate 2000]
       [--seconds 15] [--python PY] [--java-heap 1g] [--json OUT] [--png DIR] [--workdir DIR]

Both stacks (namesrv + broker each, set up as broker_bench.py does, Java's store file sizes) run
side by side; each step runs against one broker, then the other.

- Topics: the brokers get N topics of 8 queues (cumulative over the steps: UPDATE_AND_CREATE_TOPIC_LIST
  in batches of 500), then 10 s idle (the 30 s registration of the whole topic table to the name
  server falls in or out of it: its cost shows in the next step's figures too), then a fixed rate of
  1 KiB sends spread over every queue of every topic through 8 connections.
- Clients: N connections, each registered by a HEART_BEAT of its own producer client, then 10 s
  idle, then the same fixed rate spread over all N connections (a send on connection k % N).

A fixed rate that both brokers carry makes broker CPU time per message the comparable figure
(the load generator is one Python process, so it cannot measure a broker's ceiling: broker_bench.py
does that with the official tools). Reported per step and broker: the rate reached, broker CPU us
per message, send latency p50/p99 (ms, as the load generator sees it), VmRSS and RssAnon (MiB)
after the load, and the broker's CPU % while idle. --png draws the figures against N (matplotlib:
pip install -e '.[bench]').
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import broker_bench as bb
from support.requests import send_v2

from pyrmq.protocol.bodies.broker import HeartbeatData, ProducerData
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.remoting.client import RemotingClient

QUEUES = 8
BODY = b"x" * 1024
BATCH = 500
IN_FLIGHT = 256


def topic_name(i: int) -> str:
    return f"Scale_T{i}"


async def create_topics(addr: str, first: int, last: int) -> None:
    """Topics first..last-1 with 8 read and write queues, in batches of UPDATE_AND_CREATE_TOPIC_LIST."""
    async with RemotingClient() as c:
        for start in range(first, last, BATCH):
            configs = [
                {
                    "topicName": topic_name(i),
                    "readQueueNums": QUEUES,
                    "writeQueueNums": QUEUES,
                    "perm": 6,
                    "topicFilterType": "SINGLE_TAG",
                    "topicSysFlag": 0,
                    "order": False,
                    "attributes": {},
                }
                for i in range(start, min(last, start + BATCH))
            ]
            body = json.dumps({"topicConfigList": configs}).encode()
            r = await c.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, {}, body), 60)
            if r.code != ResponseCode.SUCCESS:
                raise RuntimeError(f"UPDATE_AND_CREATE_TOPIC_LIST at {addr}: {r.code} {r.remark}")


async def fixed_rate(
    clients: list[RemotingClient],
    addr: str,
    broker_name: str,
    topics: int,
    rate: float,
    seconds: float,
    queues_used: int = QUEUES,
) -> dict:
    """Sends at `rate` per second for `seconds`, message k to queue k // topics % queues_used of
    topic k % topics over connection k % len(clients); the latencies of the answered ones (ms)."""
    sem = asyncio.Semaphore(IN_FLIGHT)
    lat: list[float] = []
    failed: dict[str, int] = {}

    async def one(k: int) -> None:
        try:
            cmd = send_v2(topic_name(k % topics), broker_name, BODY, queues=QUEUES, queue_id=k // topics % queues_used)
            t0 = time.perf_counter()
            r = await clients[k % len(clients)].invoke(addr, cmd, 10)
            if r.code == ResponseCode.SUCCESS:
                lat.append((time.perf_counter() - t0) * 1000)
            else:
                why = f"code {r.code}"
                failed[why] = failed.get(why, 0) + 1
        except Exception as e:
            why = type(e).__name__
            failed[why] = failed.get(why, 0) + 1
        finally:
            sem.release()

    tasks = []
    start = time.perf_counter()
    k = 0
    while (now := time.perf_counter() - start) < seconds:
        due = int(now * rate)
        while k < due:
            await sem.acquire()
            tasks.append(asyncio.ensure_future(one(k)))
            k += 1
        await asyncio.sleep(0.002)
    await asyncio.gather(*tasks)
    wall = time.perf_counter() - start
    lat.sort()
    return {
        "sent": k,
        "ok": len(lat),
        "failed": failed,
        "rate": len(lat) / wall,
        "p50_ms": statistics.median(lat) if lat else None,
        "p99_ms": lat[int(len(lat) * 0.99) - 1] if len(lat) >= 100 else None,
    }


async def heartbeat(client: RemotingClient, addr: str, i: int) -> None:
    hb = HeartbeatData(client_id=f"127.0.0.1@scale-{i}", producer_data_set=[ProducerData(group_name=f"ScaleP{i}")])
    r = await client.invoke(addr, RemotingCommand.request(RequestCode.HEART_BEAT, {}, hb.encode()), 30)
    if r.code != ResponseCode.SUCCESS:
        raise RuntimeError(f"HEART_BEAT at {addr}: {r.code} {r.remark}")


async def step(
    stack: bb.Stack, clients: list[RemotingClient], topics: int, rate: float, seconds: float, queues_used: int = QUEUES
) -> dict:
    """10 s idle, then the fixed rate: the broker's figures for one step (clients already set up)."""
    pid = stack.broker.pid
    c0, t0 = bb.proc_cpu(pid), time.monotonic()
    await asyncio.sleep(10)
    idle = 100 * (bb.proc_cpu(pid) - c0) / (time.monotonic() - t0)
    c1 = bb.proc_cpu(pid)
    load = await fixed_rate(clients, stack.broker.addr, stack.broker.name, topics, rate, seconds, queues_used)
    cpu = bb.proc_cpu(pid) - c1
    st = bb.proc_status(pid)
    return {
        **load,
        "idle_cpu_pct": round(idle, 2),
        "cpu_us_per_msg": round(1e6 * cpu / max(1, load["ok"]), 1),
        "vmrss_mib": round(st.get("VmRSS", 0) / 1024, 1),
        "rssanon_mib": round(st.get("RssAnon", 0) / 1024, 1),
    }


async def warm_up(stack: bb.Stack, rate: float, seconds: float) -> None:
    """The first topic, and the fixed rate on it for a while (discarded): the JVM's JIT and both
    brokers' first commit-log pages are warm before the first step."""
    await create_topics(stack.broker.addr, 0, 1)
    clients = [RemotingClient() for _ in range(8)]
    try:
        await fixed_rate(clients, stack.broker.addr, stack.broker.name, 1, rate, seconds)
    finally:
        for c in clients:
            await c.close()


async def with_topics(stack: bb.Stack, have: int, n: int, rate: float, seconds: float, queues_used: int) -> dict:
    await create_topics(stack.broker.addr, have, n)
    clients = [RemotingClient() for _ in range(8)]
    try:
        return await step(stack, clients, n, rate, seconds, queues_used)
    finally:
        for c in clients:
            await c.close()


async def with_clients(stack: bb.Stack, n: int, rate: float, seconds: float) -> dict:
    """N connections, each registered by its own producer's heartbeat (200 at a time)."""
    clients = [RemotingClient(connect_timeout_s=30) for _ in range(n)]
    sem = asyncio.Semaphore(200)

    async def register(i: int) -> None:
        async with sem:
            await heartbeat(clients[i], stack.broker.addr, i)

    try:
        t0 = time.monotonic()
        outcomes = await asyncio.gather(*(register(i) for i in range(n)), return_exceptions=True)
        refused = [o for o in outcomes if isinstance(o, BaseException)]
        if refused:  # reported, not fatal: the step runs over the connections that registered
            print(f"  {stack.kind}: {len(refused)} of {n} HEART_BEATs failed, first: {refused[0]!r}", flush=True)
        took = time.monotonic() - t0
        live = [c for c, o in zip(clients, outcomes, strict=True) if not isinstance(o, BaseException)]
        if not live:
            raise RuntimeError(f"{stack.kind}: no connection registered")
        return {
            **await step(stack, live, 1, rate, seconds),
            "registered": len(live),
            "register_s": round(took, 1),
        }
    finally:
        for c in clients:
            await c.close()


FIGURES = (("cpu_us_per_msg", "broker CPU us / msg"), ("p99_ms", "send p99 ms"), ("rssanon_mib", "RssAnon MiB"))


def draw(
    rows: list[dict], key: str, out: Path, figures: tuple[tuple[str, str], ...] = FIGURES, log_x: bool = True
) -> None:
    """One PNG per dimension: each figure's field against `key`, one line per broker."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(figures), figsize=(13, 3.8))
    for ax, (field, label) in zip(axes, figures, strict=True):
        for kind in ("pyrmq", "java"):
            pts = [(r[key], r[field]) for r in rows if r["broker"] == kind and r.get(field) is not None]
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", label=kind)
        if log_x:
            ax.set_xscale("log")
        ax.set_xlabel(key)
        ax.set_title(label)
        ax.grid(True, alpha=0.3)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    print(f"wrote {out}")


def table(rows: list[dict], key: str) -> str:
    lines = [
        f"| {key} | broker | msgs/s | CPU us/msg | p50 ms | p99 ms | idle CPU % | VmRSS MiB | RssAnon MiB | failed |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        p50 = f"{r['p50_ms']:.2f}" if r["p50_ms"] is not None else "-"
        p99 = f"{r['p99_ms']:.2f}" if r["p99_ms"] is not None else "-"
        failed = ", ".join(f"{k}: {v}" for k, v in sorted(r["failed"].items()))
        lines.append(
            f"| {r[key]} | {r['broker']} | {r['rate']:.0f} | {r['cpu_us_per_msg']} | {p50} | {p99} "
            f"| {r['idle_cpu_pct']} | {r['vmrss_mib']} | {r['rssanon_mib']} | {failed or 0} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--topics", default="1,100,10000")
    ap.add_argument("--clients", default="10,1000,5000")
    ap.add_argument("--rate", type=float, default=2000, help="sends per second in each load step")
    ap.add_argument("--seconds", type=float, default=15, help="length of each load step")
    ap.add_argument("--python", default=sys.executable, help="interpreter for the pyrmq broker")
    ap.add_argument("--warmup", type=float, default=20, help="seconds of discarded load per broker first")
    ap.add_argument("--java-heap", default="1g")
    ap.add_argument("--brokers", default="pyrmq,java")
    ap.add_argument(
        "--queues-used",
        type=int,
        default=QUEUES,
        help="the topics steps send to this many of each topic's 8 queues (each one used is a consume-queue "
        "file: an open file and a mapping on both brokers, so the open-file limit bounds it)",
    )
    ap.add_argument("--json", type=Path)
    ap.add_argument("--png", type=Path, help="write scale-topics.png and scale-clients.png here")
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args()
    topic_steps = sorted(int(x) for x in args.topics.split(",") if x)
    client_steps = sorted(int(x) for x in args.clients.split(",") if x)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="pyrmq-scale-"))
    stacks: list[bb.Stack] = []
    try:
        for kind in args.brokers.split(","):
            stacks.append(
                bb.start_pyrmq(workdir, args.python) if kind == "pyrmq" else bb.start_java(workdir, args.java_heap)
            )
        for st in stacks:
            asyncio.run(warm_up(st, args.rate, args.warmup))
        by_topics: list[dict] = []
        have = {st.kind: 1 for st in stacks}
        for n in topic_steps:
            for st in stacks:
                row = {
                    "broker": st.kind,
                    "topics": n,
                    **asyncio.run(with_topics(st, have[st.kind], n, args.rate, args.seconds, args.queues_used)),
                }
                have[st.kind] = n
                by_topics.append(row)
                print(json.dumps(row), flush=True)
        by_clients: list[dict] = []
        for n in client_steps:
            for st in stacks:
                row = {"broker": st.kind, "clients": n, **asyncio.run(with_clients(st, n, args.rate, args.seconds))}
                by_clients.append(row)
                print(json.dumps(row), flush=True)
    finally:
        for st in stacks:
            st.stop()
    print(table(by_topics, "topics"))
    print()
    print(table(by_clients, "clients"))
    if args.json:
        args.json.write_text(json.dumps({"topics": by_topics, "clients": by_clients}, indent=1))
    if args.png:
        args.png.mkdir(parents=True, exist_ok=True)
        draw(by_topics, "topics", args.png / "scale-topics.png")
        draw(by_clients, "clients", args.png / "scale-clients.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
