"""What TLS costs a broker: pyrmq's and the Java 5.5.0 broker's CPU per SEND_MESSAGE_V2, plain
and TLS on the same port (both servers in their default mode: permissive, test mode).

Usage: tools/bench/tls_send.py [--count 5000] [--inflight 16] [--repeats 2] [--workdir DIR]

Both stacks (namesrv + broker each, from tests/support) run side by side; a pyrmq
RemotingClient in this process sends 1 KiB messages to each broker, plain then TLS (a new
connection each), alternating which broker goes first. The figures are the broker process's
utime+stime per message over the timed part and the messages per second the client saw
(bounded by the Python client as much as by the broker).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
from support import pyrmq_proc, servers  # noqa: E402
from support.requests import send_v2  # noqa: E402

from pyrmq.protocol.codes import ResponseCode  # noqa: E402
from pyrmq.remoting.client import RemotingClient  # noqa: E402
from pyrmq.remoting.tls import TlsConfig  # noqa: E402


def proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def send(addr: str, broker: str, count: int, inflight: int, tls: bool) -> float:
    """Seconds to send ``count`` messages with ``inflight`` requests outstanding."""
    ctx = TlsConfig.from_properties({"tls.config.file": ""}).client_context() if tls else None
    async with RemotingClient(tls=ctx, connect_timeout_s=30) as client:
        await client.invoke(addr, send_v2("TlsBench", broker, b"w"), 10)  # route, topic, handshake
        todo = iter(range(count))
        start = time.perf_counter()

        async def worker() -> None:
            for _ in todo:
                for _attempt in range(50):  # a busy broker (flow control) is asked again
                    r = await client.invoke(addr, send_v2("TlsBench", broker, b"x" * 1024), 10)
                    if r.code != ResponseCode.SYSTEM_BUSY:
                        break
                    await asyncio.sleep(0.05)
                if r.code != ResponseCode.SUCCESS:
                    raise RuntimeError(f"send failed: {r.code} {r.remark}")

        await asyncio.gather(*(worker() for _ in range(inflight)))
        return time.perf_counter() - start


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--count", type=int, default=5000)
    p.add_argument("--inflight", type=int, default=16)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--workdir")
    args = p.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="tls-bench-"))
    # a loaded machine pauses the JVM: a longer queue wait than Java's 200 ms keeps it sending
    store = {
        "mappedFileSizeCommitLog": 64 * 1024 * 1024,
        "flushDiskType": "ASYNC_FLUSH",
        "waitTimeMillsInSendQueue": 3000,
    }
    stacks = {}
    try:
        ns = servers.PyrmqNamesrv(work / "py-ns")
        stacks["pyrmq"] = (ns, pyrmq_proc.PyrmqBroker(ns.addr, work / "py-broker", name="tls-bench-py", **store))
        jns = servers.JavaNamesrv(work / "java-ns")
        stacks["java"] = (jns, servers.JavaBroker(jns.addr, work / "java-broker", name="tls-bench-java", **store))
        rows: dict[tuple[str, bool], list[tuple[float, float]]] = {}
        for rep in range(args.repeats):
            order = ["pyrmq", "java"] if rep % 2 == 0 else ["java", "pyrmq"]
            for side in order:
                broker = stacks[side][1]
                for tls in (False, True):
                    before = proc_cpu(broker.pid)
                    secs = asyncio.run(send(broker.addr, broker.name, args.count, args.inflight, tls))
                    cpu_us = (proc_cpu(broker.pid) - before) / args.count * 1e6
                    rows.setdefault((side, tls), []).append((cpu_us, args.count / secs))
                    print(
                        f"{side:5} {'tls  ' if tls else 'plain'} {cpu_us:7.1f} us CPU/msg {args.count / secs:8.0f} msg/s"
                    )
        print(f"\n{'broker':6} {'conn':5} {'us CPU/msg':>14} {'msg/s':>14}")
        for (side, tls), vals in sorted(rows.items()):
            cpu = sorted(v[0] for v in vals)
            rate = sorted(v[1] for v in vals)
            print(
                f"{side:6} {'tls' if tls else 'plain':5} {cpu[0]:6.0f}-{cpu[-1]:<6.0f} {rate[0]:6.0f}-{rate[-1]:<6.0f}"
            )
        for side in stacks:
            plain = min(v[0] for v in rows[(side, False)])
            tls_ = min(v[0] for v in rows[(side, True)])
            print(f"{side}: TLS/plain CPU per message {tls_ / plain:.2f}")
        for tls in (False, True):
            ratio = min(v[0] for v in rows[("pyrmq", tls)]) / min(v[0] for v in rows[("java", tls)])
            print(f"pyrmq/java CPU per message, {'tls' if tls else 'plain'}: {ratio:.2f}")
    finally:
        for ns_, broker_ in stacks.values():
            broker_.stop()
            ns_.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
