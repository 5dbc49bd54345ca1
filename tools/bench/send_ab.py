"""Broker CPU per SEND_MESSAGE_V2 for two source trees, alternating (an A/B of a change).

Usage: tools/bench/send_ab.py TREE_A TREE_B [--count N] [--repeats R]
       tools/bench/send_ab.py --profile TREE [--count N] [--inflight 16]

Each tree runs `python -m pyrmq dev` (its own code, via cwd and PYTHONPATH) with a fresh store;
a raw-socket client in this process sends pre-encoded SEND_MESSAGE_V2 frames (1 KiB bodies,
ROCKETMQ headers) with 1 and 16 requests in flight, and the broker's utime+stime over the timed
part, divided by the count, is the figure. The client is cheap next to the official JVM tools,
so the broker's own cost shows with less noise than in broker_bench.py.

--profile runs one tree once with `py-spy record` (next to this interpreter or on PATH) attached
to the broker for the timed part, and prints the top functions as broker_bench.py --profile does.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pyrmq.protocol.codes import SerializeType
from pyrmq.protocol.command import RemotingCommand, encode
from pyrmq.protocol.framing import FrameDecoder


def cpu(pid):
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def frame(i):
    ext = {
        "a": "PG",
        "b": "BenchT",
        "c": "TBW102",
        "d": "4",
        "e": str(i % 4),
        "f": "0",
        "g": str(int(time.time() * 1000)),
        "h": "0",
        "i": "UNIQ_KEY\x01%032X\x02WAIT\x01true\x02" % i,
        "j": "0",
        "k": "false",
        "m": "false",
    }
    cmd = RemotingCommand.request(310, ext, b"x" * 1024)
    cmd.serialize_type = SerializeType.ROCKETMQ
    return encode(cmd)


def run(tree, n, inflight, port, on_timed=None):
    """(broker CPU us/msg, msgs/s) over `n` sends with `inflight` in flight; `on_timed(pid)` is
    called when the timed part starts and its result (a process) is stopped with SIGINT after."""
    store = tempfile.mkdtemp()
    env = dict(os.environ, PYTHONPATH=tree)
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pyrmq",
            "dev",
            "--namesrv-port",
            str(port),
            "--broker-port",
            str(port + 1),
            "--store",
            store,
        ],
        cwd=tree,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                s = socket.create_connection(("127.0.0.1", port + 1))
                break
            except OSError:
                time.sleep(0.1)
        frames = [frame(i) for i in range(2000)]
        decoder = FrameDecoder()
        ready: list[object] = []

        def recv_one():
            while not ready:
                ready.extend(decoder.feed(s.recv(1 << 16)))
            ready.pop()

        # warm-up (auto-create topic)
        s.sendall(frames[0])
        recv_one()
        time.sleep(1.5)
        for i in range(3000):
            s.sendall(frames[i % 2000])
            recv_one()
        spy = on_timed(p.pid) if on_timed is not None else None
        c0, t0 = cpu(p.pid), time.perf_counter()
        sent = 0
        for i in range(inflight):
            s.sendall(frames[i % 2000])
            sent += 1
        for _ in range(n):
            recv_one()
            if sent < n:
                s.sendall(frames[sent % 2000])
                sent += 1
        c1, t1 = cpu(p.pid), time.perf_counter()
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(60)
        return (c1 - c0) / n * 1e6, n / (t1 - t0)
    finally:
        p.terminate()
        p.wait()


def profile(tree: str, n: int, inflight: int, port: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from broker_bench import top_functions

    spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if spy is None:
        raise SystemExit("send_ab: py-spy not found (pip install py-spy next to this interpreter)")
    out = Path(tempfile.mkdtemp()) / "send_ab-profile.txt"

    def attach(pid):
        cmd = [spy, "record", "--pid", str(pid), "--rate", "250", "--threads", "--format", "raw", "-o", str(out)]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # py-spy attaches
        return proc

    us, rate = run(tree, n, inflight, port, on_timed=attach)
    print(f"{tree} inflight={inflight} under py-spy: broker CPU {us:.1f} us/msg, {rate:.0f} msgs/s")
    print(f"collapsed stacks: {out}")
    print(top_functions(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trees", nargs="*")
    ap.add_argument("--count", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--port", type=int, default=19876)
    ap.add_argument("--profile", metavar="TREE", help="profile this tree under py-spy instead of an A/B")
    ap.add_argument("--inflight", type=int, default=16, help="requests in flight for --profile")
    args = ap.parse_args()
    n, port = args.count, args.port
    if args.profile:
        profile(args.profile, n, args.inflight, port)
        return
    if len(args.trees) != 2:
        ap.error("two trees to compare (or --profile TREE)")
    for _rep in range(args.repeats):
        for name, tree in ((args.trees[0], args.trees[0]), (args.trees[1], args.trees[1])):
            for inflight in (1, 16):
                us, rate = run(tree, n, inflight, port)
                port += 2
                print(f"{name} inflight={inflight}: broker CPU {us:.1f} us/msg, {rate:.0f} msgs/s", flush=True)


if __name__ == "__main__":
    main()
