"""Election time of a DLedger group of three after its leader is SIGKILLed: pyrmq members
(``python -m pyrmq.dledger.server``) and official Java members (dledger 0.3.2 through
compat/dledger/DLedgerMemberMain.java) in the same run, same timers, same machine.

First, once the group has a leader: ``--appends`` appends of ``--body`` bytes through the APPEND
RPC with ``--in-flight`` outstanding (acknowledged = on a majority), timed. Then each round: wait
for one leader known to both others (METADATA polled every 20 ms), append 20 entries through it
(APPEND, 50001), SIGKILL it, time until both survivors name the same new leader, append one more
entry through it (time to the first acknowledged write), restart the killed member.

    .venv/bin/python tools/bench/dledger_election.py --rounds 5 [--heartbeat-ms 2000] [--appends 2000]

Needs compat/java-tests/build.sh to have run (the servers classpath) and a JDK.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pyrmq.dledger import protocol as p
from pyrmq.remoting.client import RemotingClient

ROOT = Path(__file__).resolve().parents[2]
GROUP = "bench"
IDS = ("n0", "n1", "n2")
JVM = ["-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true"]


def free_ports(n: int) -> list[int]:
    import socket

    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def java_classpath(work: Path) -> str:
    cp = (ROOT / "compat/java-tests/servers/target/classpath.txt").read_text().strip()
    out = work / "classes"
    out.mkdir(exist_ok=True)
    subprocess.run(
        ["javac", "-nowarn", "-d", str(out), "-cp", cp, str(ROOT / "compat/dledger/DLedgerMemberMain.java")], check=True
    )
    return f"{cp}:{out}"


class Group:
    def __init__(self, kind: str, work: Path, heartbeat_ms: int, java_cp: str | None) -> None:
        self.kind = kind
        self.work = work / kind
        self.work.mkdir()
        self.heartbeat_ms = heartbeat_ms
        self.java_cp = java_cp
        self.ports = dict(zip(IDS, free_ports(3), strict=True))
        self.peers = ";".join(f"{i}-127.0.0.1:{port}" for i, port in self.ports.items())
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def addr(self, member_id: str) -> str:
        return f"127.0.0.1:{self.ports[member_id]}"

    def start(self, member_id: str) -> None:
        log = open(self.work / f"{member_id}.log", "ab")
        if self.kind == "pyrmq":
            argv = [sys.executable, "-m", "pyrmq.dledger.server", "--group", GROUP, "--self-id", member_id]
            argv += [
                "--peers",
                self.peers,
                "--store-base-dir",
                str(self.work),
                "--heartbeat-ms",
                str(self.heartbeat_ms),
            ]
        else:
            assert self.java_cp is not None
            argv = ["java", *JVM, "-cp", self.java_cp, "DLedgerMemberMain", GROUP, member_id, self.peers]
            argv += [str(self.work), str(1024 * 1024 * 1024), str(32 * 5 * 1024 * 1024), str(self.heartbeat_ms)]
            argv += ["300", "1000"]
        self.procs[member_id] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def kill(self, member_id: str) -> None:
        proc = self.procs.pop(member_id)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def stop_all(self) -> None:
        for member_id in list(self.procs):
            self.kill(member_id)


async def leader_seen_by(client: RemotingClient, group: Group, member_id: str) -> str | None:
    req = p.MetadataRequest(group=GROUP, remote_id=member_id)
    try:
        cmd = await client.invoke(group.addr(member_id), p.request_command(req), 0.5)
    except Exception:
        client.close_channel(group.addr(member_id))
        return None
    return p.MetadataResponse.decode(cmd.body).leader_id


async def agreed_leader(client: RemotingClient, group: Group, ids: list[str], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = {await leader_seen_by(client, group, i) for i in ids}
        if len(seen) == 1 and (leader := seen.pop()) is not None and leader in ids:
            return leader
        await asyncio.sleep(0.02)
    raise TimeoutError(f"{group.kind}: no leader agreed by {ids} within {timeout} s")


async def append(client: RemotingClient, group: Group, leader: str, body: bytes) -> None:
    req = p.AppendEntryRequest(group=GROUP, remote_id=leader, body=body)
    resp = p.AppendEntryResponse.decode((await client.invoke(group.addr(leader), p.request_command(req), 5)).body)
    if resp.code != p.DLedgerResponseCode.SUCCESS:
        raise RuntimeError(f"{group.kind}: append on {leader} answered {resp.code}")


async def throughput(client: RemotingClient, group: Group, leader: str, n: int, size: int, in_flight: int) -> float:
    """Acknowledged appends per second."""
    body = b"x" * size
    todo = iter(range(n))

    async def worker() -> None:
        for _ in todo:
            await append(client, group, leader, body)

    start = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    return n / (time.monotonic() - start)


async def bench(group: Group, rounds: int, appends: tuple[int, int, int]) -> tuple[float, list[tuple[float, float]]]:
    for i in IDS:
        group.start(i)
    results: list[tuple[float, float]] = []
    async with RemotingClient() as client:
        try:
            leader = await agreed_leader(client, group, list(IDS), 120)
            rate = await throughput(client, group, leader, *appends)
            print(f"{group.kind}: {rate:.0f} acknowledged appends/s")
            for r in range(rounds):
                for k in range(20):
                    await append(client, group, leader, f"round {r} entry {k}".encode())
                killed_at = time.monotonic()
                group.kill(leader)
                survivors = [i for i in IDS if i != leader]
                new = await agreed_leader(client, group, survivors, 60)
                elected = time.monotonic() - killed_at
                await append(client, group, new, f"round {r} after".encode())
                written = time.monotonic() - killed_at
                results.append((elected, written))
                print(f"{group.kind} round {r}: new leader {new} after {elected:.2f} s, first write {written:.2f} s")
                group.start(leader)
                await agreed_leader(client, group, list(IDS), 120)
                leader = new
        finally:
            group.stop_all()
    return rate, results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--heartbeat-ms", type=int, default=2000)
    ap.add_argument("--appends", type=int, default=2000)
    ap.add_argument("--body", type=int, default=1024)
    ap.add_argument("--in-flight", type=int, default=16)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="dledger-bench-") as tmp:
        work = Path(tmp)
        java_cp = java_classpath(work)
        summary = {}
        rates = {}
        for kind in ("pyrmq", "java"):
            group = Group(kind, work, args.heartbeat_ms, java_cp)
            rates[kind], summary[kind] = asyncio.run(
                bench(group, args.rounds, (args.appends, args.body, args.in_flight))
            )
        print(f"\n{args.appends} appends of {args.body} B, {args.in_flight} in flight: acknowledged appends/s")
        for kind, rate in rates.items():
            print(f"{kind:6} {rate:.0f}")
        print(f"pyrmq/java append rate ratio: {rates['pyrmq'] / rates['java']:.2f}")
        print(f"\nheartbeat {args.heartbeat_ms} ms, {args.rounds} rounds; median (min-max) seconds")
        for kind, res in summary.items():
            el = [e for e, _ in res]
            wr = [w for _, w in res]
            print(
                f"{kind:6} elected {statistics.median(el):.2f} ({min(el):.2f}-{max(el):.2f})"
                f"  first write {statistics.median(wr):.2f} ({min(wr):.2f}-{max(wr):.2f})"
            )
        ratio = statistics.median(e for e, _ in summary["pyrmq"]) / statistics.median(e for e, _ in summary["java"])
        print(f"pyrmq/java election time ratio (medians): {ratio:.2f}")


if __name__ == "__main__":
    main()
