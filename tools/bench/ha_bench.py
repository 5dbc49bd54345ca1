"""Send throughput and latency of a master with one slave: pyrmq pair vs Java 5.5.0 pair.

Usage: tools/bench/ha_bench.py [--roles ASYNC_MASTER,SYNC_MASTER] [--threads 16] [--measure 20]
       [--warmup 5] [--repeats 2] [--python PY] [--java-heap 1g] [--json OUT] [--workdir DIR]

For each repeat, role and broker kind (alternating which kind goes first) a fresh group starts: a
name server, a master (brokerRole=<role>) and a slave (brokerId=1, same brokerName), all of one
kind, with broker_bench.py's store layout. SYNC_MASTER runs with inSyncReplicas=2: Java 5.5.0
waits for a replica only then (CommitLog#handleHA), so a SEND_OK means the slave holds the
message. Load: tools/bench/ha/LatencyProducer.java on the official 5.5.0 client (rocketmq-example's
classpath), `--threads` sync senders of 1 KiB messages; it reports throughput and p50/p99/max over
the measured window, and counts every non-SEND_OK answer. Broker CPU (utime+stime) of master and
slave over the measured window is recorded per message.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import broker_bench as bb  # noqa: E402
from broker_bench import pyrmq_proc, servers, sj  # noqa: E402

SRC = HERE / "ha" / "LatencyProducer.java"
RESULT = re.compile(
    r"HA_RESULT tps=(\d+) p50_ms=([\d.]+) p99_ms=([\d.]+) max_ms=([\d.]+) avg_ms=([\d.]+) "
    r"ok=(\d+) not_ok=(\d+) errors=(\d+)"
)
ROLES = ("ASYNC_MASTER", "SYNC_MASTER")


@dataclass
class Group:
    kind: str
    namesrv: object
    master: object
    slave: object

    @property
    def namesrv_addr(self) -> str:
        return self.namesrv.addr

    @property
    def broker(self) -> object:  # what broker_bench.create_topic talks to
        return self.master

    def stop(self) -> None:
        for s in (self.slave, self.master, self.namesrv):
            try:
                s.stop()
            except Exception as e:
                print(f"  !! stopping {s}: {e}", file=sys.stderr)


def role_conf(role: str) -> dict:
    conf = {**bb.STORE_CONF, "brokerRole": role}
    if role == "SYNC_MASTER":
        conf["inSyncReplicas"] = 2
    return conf


def start_group(kind: str, role: str, workdir: Path, python: str, heap: str) -> Group:
    name = f"ha-bench-{kind}"
    slave_conf = {**bb.STORE_CONF, "brokerRole": "SLAVE", "brokerId": 1}
    if kind == "pyrmq":
        pyrmq_proc.venv_python = lambda: python
        ns = servers.PyrmqNamesrv(workdir / "ns")
        master = pyrmq_proc.PyrmqBroker(ns.addr, workdir / "master", name=name, cluster="HaBench", **role_conf(role))
        slave = pyrmq_proc.PyrmqBroker(ns.addr, workdir / "slave", name=name, cluster="HaBench", **slave_conf)
        return Group(kind, ns, master, slave)
    sj.ensure_built()
    ns = servers.JavaNamesrv(workdir / "ns")
    saved = (sj.JVM_FLAGS, servers.SERVER_HEAP)
    sj.JVM_FLAGS = bb.JAVA_BROKER_FLAGS
    servers.SERVER_HEAP = [f"-Xms{heap}", f"-Xmx{heap}", f"-XX:MaxDirectMemorySize={heap}"]
    try:
        master = servers.JavaBroker(
            ns.addr, workdir / "master", name=name, cluster="HaBench", brokerIP2="127.0.0.1", **role_conf(role)
        )
        slave = servers.JavaBroker(ns.addr, workdir / "slave", name=name, cluster="HaBench", **slave_conf)
    finally:
        sj.JVM_FLAGS, servers.SERVER_HEAP = saved
    return Group(kind, ns, master, slave)


def wait_slave_connected(group: Group, timeout: float = 60) -> None:
    """Until the master's haStatus lists the slave (GET_BROKER_HA_STATUS, code 907)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = bb.probe.request(group.master.addr, 907, {})
        if r.code == bb.probe.SUCCESS and r.body and b'"addr"' in r.body:
            return
        time.sleep(0.5)
    raise RuntimeError(f"{group.kind}: the slave never connected to the master's HA port")


def compile_producer(cp: str, cache: Path) -> Path:
    out = cache / "ha-latency"
    if (
        not (out / "LatencyProducer.class").is_file()
        or (out / "LatencyProducer.class").stat().st_mtime < SRC.stat().st_mtime
    ):
        out.mkdir(parents=True, exist_ok=True)
        javac = shutil.which("javac")
        if javac is None:
            raise SystemExit("ha_bench: javac not found on PATH (a JDK 17 is needed)")
        subprocess.run([javac, "-d", str(out), "-cp", cp, str(SRC)], check=True, timeout=300)
    return out


@dataclass
class Result:
    role: str
    broker: str
    rep: int
    tps: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    max_ms: float = 0.0
    avg_ms: float = 0.0
    ok: int = 0
    not_ok: int = 0
    errors: int = 0
    master_cpu_us_per_msg: float = 0.0
    slave_cpu_us_per_msg: float = 0.0


def run_one(args, cp: str, classes: Path, kind: str, role: str, rep: int, workdir: Path) -> Result:
    group = start_group(kind, role, workdir / f"{kind}-{role}-{rep}", args.python, args.java_heap)
    res = Result(role, kind, rep)
    try:
        wait_slave_connected(group)
        topic = f"HaBench_{rep}"
        bb.create_topic(group, topic)
        home = sj.prepare_home(workdir / "client-home")
        argv = [
            sj.java_exe(),
            *bb.CLIENT_JVM,
            f"-Duser.home={home}",
            f"-Drocketmq.home.dir={home}",
            "-cp",
            f"{classes}:{cp}",
            "LatencyProducer",
            group.namesrv_addr,
            topic,
            str(bb.MSG_SIZE),
            str(args.threads),
            str(args.warmup),
            str(args.measure),
        ]
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=sj.java_env(home)
        )
        time.sleep(args.warmup + 2)  # past JVM start and the warm-up
        cpu0 = (bb.proc_cpu(group.master.pid), bb.proc_cpu(group.slave.pid))
        t0 = time.monotonic()
        out, _ = proc.communicate(timeout=args.warmup + args.measure + 120)
        elapsed = time.monotonic() - t0
        cpu1 = (bb.proc_cpu(group.master.pid), bb.proc_cpu(group.slave.pid))
        m = RESULT.search(out)
        if m is None:
            raise RuntimeError(f"{kind} {role}: no HA_RESULT line\n{out[-4000:]}")
        g = m.groups()
        res.tps, res.p50_ms, res.p99_ms, res.max_ms, res.avg_ms = (float(x) for x in g[:5])
        res.ok, res.not_ok, res.errors = (int(x) for x in g[5:])
        if res.tps:
            # the CPU window is a little wider than the measured one: per message over that window's sends
            msgs = res.tps * elapsed
            res.master_cpu_us_per_msg = round((cpu1[0] - cpu0[0]) / msgs * 1e6, 1)
            res.slave_cpu_us_per_msg = round((cpu1[1] - cpu0[1]) / msgs * 1e6, 1)
    finally:
        group.stop()
    return res


def summarize(results: list[Result]) -> str:
    rows = [
        "| role | broker | msgs/s | p50 ms | p99 ms | max ms | not SEND_OK | master / slave CPU us/msg |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(results, key=lambda r: (r.role, r.broker, r.rep)):
        rows.append(
            f"| {r.role} | {r.broker} (rep {r.rep}) | {r.tps:.0f} | {r.p50_ms:.2f} | {r.p99_ms:.2f} | {r.max_ms:.1f} "
            f"| {r.not_ok + r.errors} | {r.master_cpu_us_per_msg} / {r.slave_cpu_us_per_msg} |"
        )
    rows += ["", "| role | pyrmq/Java msgs/s (per rep) | pyrmq/Java p99 (per rep) |", "|---|---|---|"]
    for role in ROLES:
        pairs = []
        for rep in sorted({r.rep for r in results}):
            p = next((r for r in results if (r.role, r.broker, r.rep) == (role, "pyrmq", rep)), None)
            j = next((r for r in results if (r.role, r.broker, r.rep) == (role, "java", rep)), None)
            if p and j and j.tps and j.p99_ms:
                pairs.append((f"{p.tps / j.tps:.2f}", f"{p.p99_ms / j.p99_ms:.2f}"))
        if pairs:
            rows.append(f"| {role} | {', '.join(a for a, _ in pairs)} | {', '.join(b for _, b in pairs)} |")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--roles", default=",".join(ROLES))
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--measure", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--python", default=str(bb.ROOT / ".venv" / "bin" / "python"))
    ap.add_argument("--java-heap", default="1g")
    ap.add_argument("--json")
    ap.add_argument("--workdir")
    args = ap.parse_args()
    roles = [r for r in args.roles.split(",") if r]
    for r in roles:
        if r not in ROLES:
            raise SystemExit(f"unknown role {r}; known: {', '.join(ROLES)}")
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="pyrmq-ha-bench-"))
    cache = Path(tempfile.gettempdir()) / "pyrmq-broker-bench-cp"
    cp = bb.bench_classpath(cache)
    classes = compile_producer(cp, cache)
    results: list[Result] = []
    try:
        for rep in range(args.repeats):
            for i, role in enumerate(roles):
                order = ["pyrmq", "java"] if (rep + i) % 2 == 0 else ["java", "pyrmq"]
                for kind in order:
                    r = run_one(args, cp, classes, kind, role, rep, workdir)
                    results.append(r)
                    print(
                        f"rep {rep} {role:12s} {kind:5s} {r.tps:7.0f} msgs/s p50 {r.p50_ms:6.2f} p99 {r.p99_ms:7.2f} "
                        f"max {r.max_ms:7.1f} ms not-ok {r.not_ok} errors {r.errors} cpu master/slave "
                        f"{r.master_cpu_us_per_msg}/{r.slave_cpu_us_per_msg} us/msg",
                        flush=True,
                    )
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    print()
    print(summarize(results))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
