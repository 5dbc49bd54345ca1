"""Broker CPU per SEND_MESSAGE_V2 for two source trees, alternating (an A/B of a change).

Usage: tools/bench/send_ab.py TREE_A TREE_B [--count N] [--repeats R]

Each tree runs `python -m pyrmq dev` (its own code, via cwd and PYTHONPATH) with a fresh store;
a raw-socket client in this process sends pre-encoded SEND_MESSAGE_V2 frames (1 KiB bodies,
ROCKETMQ headers) with 1 and 16 requests in flight, and the broker's utime+stime over the timed
part, divided by the count, is the figure. The client is cheap next to the official JVM tools,
so the broker's own cost shows with less noise than in broker_bench.py.
"""

from __future__ import annotations

import argparse
import os
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


def run(tree, n, inflight, port):
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
        return (c1 - c0) / n * 1e6, n / (t1 - t0)
    finally:
        p.terminate()
        p.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trees", nargs=2)
    ap.add_argument("--count", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--port", type=int, default=19876)
    args = ap.parse_args()
    n, port = args.count, args.port
    for _rep in range(args.repeats):
        for name, tree in ((args.trees[0], args.trees[0]), (args.trees[1], args.trees[1])):
            for inflight in (1, 16):
                us, rate = run(tree, n, inflight, port)
                port += 2
                print(f"{name} inflight={inflight}: broker CPU {us:.1f} us/msg, {rate:.0f} msgs/s", flush=True)


if __name__ == "__main__":
    main()
