"""pyrmq's broker against the Java 5.5.0 broker, driven by the official benchmark tools.

Usage: tools/bench/broker_bench.py [--duration 25] [--repeats 2] [--scenarios sync1,sync16,...]
       [--flush ASYNC_FLUSH|SYNC_FLUSH] [--msg-size 1024]
       [--python PY] [--java-heap 1g] [--json OUT] [--workdir DIR]
       tools/bench/broker_bench.py --profile sync16 [--duration 25] [--python PY]

Load comes from org.apache.rocketmq:rocketmq-example:5.5.0 (benchmark Producer, BatchProducer,
Consumer; classpath from tools/bench/broker_pom.xml via `mvn dependency:build-classpath`). Both
stacks (pyrmq namesrv + broker, Java namesrv + broker from tests/support) run side by side for
the whole run, each in its own cluster; every scenario runs once against each broker per repeat,
alternating which goes first. The tools print a 10-second sliding window every second
(`-ri 1000`); the last line of a run is the steady-state figure. Max RT is the tools' own:
since the start of the run for the producers, per report for the consumer.

Scenarios: sync1/sync16/sync64 (benchmark Producer, that many threads), async (128 in flight),
batch (16 x --msg-size), consume (benchmark Consumer + a 16-thread Producer); and, not run by
default, large64k/large1m/large4m (4 producer threads sending 64 KiB / 1 MiB / 4 MiB bodies,
uncompressed as the tool sends them; both brokers take records up to 8 MiB for it). --flush sets
both brokers' flushDiskType (SYNC_FLUSH: group commit, each send answered once flushed).

Besides the tools' figures, broker CPU time (utime+stime from /proc/<pid>/stat) per message and
VmRSS / RssAnon / VmHWM of each broker process are recorded after each scenario.

--profile runs one scenario against pyrmq only, with `py-spy record` attached to the broker, and
prints the top functions (self and inclusive % of samples) from the collapsed stacks.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from support import java as sj  # noqa: E402
from support import probe, pyrmq_proc, servers  # noqa: E402
from support.procs import ManagedProcess  # noqa: E402

POM = Path(__file__).with_name("broker_pom.xml")
ASYNC_SRC = Path(__file__).with_name("broker_async") / "AsyncProducer.java"
BENCH_PKG = "org.apache.rocketmq.example.benchmark"
SCENARIOS = ("sync1", "sync16", "sync64", "async", "batch", "consume", "large64k", "large1m", "large4m")
DEFAULT_SCENARIOS = SCENARIOS[:6]
MSG_SIZE = 1024  # --msg-size
#: large-message scenarios: body bytes, sent by LARGE_THREADS synchronous producer threads
LARGE = {"large64k": 64 * 1024, "large1m": 1024 * 1024, "large4m": 4 * 1024 * 1024}
LARGE_THREADS = 4
BATCH_SIZE = 16
BATCH_THREADS = 16
ASYNC_IN_FLIGHT = 128
CONSUME_PRODUCER_THREADS = 16
WINDOW = 9.0  # the tools report over their last 10 one-second snapshots
# Clients: same JVM for both brokers; C2 JIT on (unlike the test harness's C1-only flags).
CLIENT_JVM = ["-Xms256m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true"]
# The Java broker: a fair heap and the JVM's default collector (G1) and JIT.
JAVA_BROKER_FLAGS = ["-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true"]
# Same store layout on both brokers (Java's defaults; the harness shrinks them for tests).
STORE_CONF = {
    "flushDiskType": "ASYNC_FLUSH",
    "mappedFileSizeCommitLog": 1024 * 1024 * 1024,
    "mappedFileSizeConsumeQueue": 300000 * 20,
    # a 4 MiB body makes a record over Java's default 4 MiB limit (the client allows the body)
    "maxMessageSize": 8 * 1024 * 1024,
}

SEND_LINE = re.compile(
    r"Send TPS: (\d+) \| Max RT\(ms\): (\d+) \| Average RT\(ms\):\s*([\d.]+|NaN) \| "
    r"Send Failed: (\d+) \| Response Failed: (\d+)"
)
BATCH_LINE = re.compile(
    r"Send TPS: (\d+) \| Send MPS: (\d+) \| Max RT\(ms\): (\d+) \| Average RT\(ms\):\s*([\d.]+|NaN) \| "
    r"Average Message RT\(ms\):\s*([\d.]+|NaN) \| Send Failed: (\d+) \| Send Message Failed: (\d+)"
)
#: AsyncProducer.java's addition to the stats line (the official tools print no percentile)
P99_FIELD = re.compile(r"P99 RT\(ms\):\s*([\d.]+|NaN)")
CONSUME_LINE = re.compile(
    r"Consume TPS: (\d+) \| AVG\(B2C\) RT\(ms\):\s*([\d.]+|NaN) \| AVG\(S2C\) RT\(ms\):\s*([\d.]+|NaN) \| "
    r"MAX\(B2C\) RT\(ms\): (\d+) \| MAX\(S2C\) RT\(ms\): (\d+) \| Consume Fail: (\d+)"
)


def bench_classpath(cache: Path) -> str:
    """The rocketmq-example 5.5.0 classpath, resolved once per pom content."""
    key = hashlib.sha256(POM.read_bytes()).hexdigest()[:16]
    out = cache / f"classpath-{key}.txt"
    if not out.is_file() or any(not Path(j).exists() for j in out.read_text().strip().split(os.pathsep)):
        if shutil.which("mvn") is None:
            raise SystemExit("broker_bench: mvn not found on PATH (needed once to resolve rocketmq-example)")
        cache.mkdir(parents=True, exist_ok=True)
        r = subprocess.run(
            ["mvn", "-B", "-q", "-f", str(POM), "dependency:build-classpath", f"-Dmdep.outputFile={out}"],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if r.returncode != 0 or not out.is_file():
            raise SystemExit(f"broker_bench: mvn dependency:build-classpath failed\n{r.stdout}\n{r.stderr}")
    return out.read_text().strip()


def async_producer_classes(cp: str, cache: Path) -> Path:
    """tools/bench/broker_async/AsyncProducer.java compiled against the same classpath."""
    key = hashlib.sha256(ASYNC_SRC.read_bytes() + cp.encode()).hexdigest()[:16]
    out = cache / f"async-{key}"
    if not (out / "AsyncProducer.class").is_file():
        out.mkdir(parents=True, exist_ok=True)
        javac = shutil.which("javac")
        if javac is None:
            raise SystemExit("broker_bench: javac not found on PATH (a JDK 17 is needed)")
        subprocess.run([javac, "-d", str(out), "-cp", cp, str(ASYNC_SRC)], check=True, timeout=300)
    return out


# ---------------------------------------------------------------- process figures


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS, RssAnon, RssFile, VmHWM in KiB from /proc/<pid>/status."""
    res = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        if k in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            res[k] = int(v.split()[0])
    return res


def proc_cpu(pid: int) -> float:
    """utime+stime of the process (all threads) in seconds."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- stacks


@dataclass
class Stack:
    kind: str  # "pyrmq" | "java"
    namesrv: object
    broker: object

    @property
    def namesrv_addr(self) -> str:
        return self.namesrv.addr

    def stop(self) -> None:
        for s in (self.broker, self.namesrv):
            with contextlib.suppress(Exception):
                s.stop()


def start_pyrmq(workdir: Path, python: str) -> Stack:
    pyrmq_proc.venv_python = lambda: python  # the broker's interpreter (must have uvloop)
    ns = servers.PyrmqNamesrv(workdir / "pyrmq-ns")
    try:
        br = pyrmq_proc.PyrmqBroker(
            ns.addr, workdir / "pyrmq-broker", name="bench-pyrmq", cluster="PyrmqBench", **STORE_CONF
        )
    except BaseException:
        ns.stop()
        raise
    return Stack("pyrmq", ns, br)


def start_java(workdir: Path, heap: str) -> Stack:
    sj.ensure_built()
    ns = servers.JavaNamesrv(workdir / "java-ns")
    saved = (sj.JVM_FLAGS, servers.SERVER_HEAP)
    sj.JVM_FLAGS = JAVA_BROKER_FLAGS
    servers.SERVER_HEAP = [f"-Xms{heap}", f"-Xmx{heap}", f"-XX:MaxDirectMemorySize={heap}"]
    try:
        br = servers.JavaBroker(ns.addr, workdir / "java-broker", name="bench-java", cluster="JavaBench", **STORE_CONF)
    except BaseException:
        ns.stop()
        raise
    finally:
        sj.JVM_FLAGS, servers.SERVER_HEAP = saved
    return Stack("java", ns, br)


# ---------------------------------------------------------------- tools


def create_topic(stack: Stack, topic: str, queues: int = 4) -> None:
    """UPDATE_AND_CREATE_TOPIC on the broker, then wait for the route: the async producer does
    not fall back to auto-creation through TBW102 the way the sync one does."""
    probe.create_topic(stack.broker.addr, topic, queues)
    deadline = time.monotonic() + 30
    while probe.topic_route(stack.namesrv_addr, topic).code != probe.SUCCESS:
        if time.monotonic() > deadline:
            raise RuntimeError(f"no route for {topic} at the {stack.kind} name server")
        time.sleep(0.2)


class Tools:
    def __init__(self, cp: str, home: Path, async_classes: Path):
        self.cp = cp
        self.async_classes = async_classes
        self.home = sj.prepare_home(home)

    def start(self, cls: str, args: list[str], log: Path) -> ManagedProcess:
        cp, main = self.cp, f"{BENCH_PKG}.{cls}"
        if cls == "AsyncProducer":
            cp, main = f"{self.async_classes}{os.pathsep}{cp}", cls
        argv = [
            sj.java_exe(),
            *CLIENT_JVM,
            f"-Duser.home={self.home}",
            f"-Drocketmq.home.dir={self.home}",
            "-cp",
            cp,
            main,
            *args,
        ]
        return ManagedProcess(log.stem, argv, log, env=sj.java_env(self.home), cwd=self.home)


def last_match(log: Path, pattern: re.Pattern) -> tuple | None:
    found = None
    for line in log.read_text(errors="replace").splitlines():
        m = pattern.search(line)
        if m:
            found = m.groups()
    return found


@dataclass
class Result:
    scenario: str
    broker: str
    rep: int
    tps: float = 0.0  # messages per second (batch: MPS)
    avg_rt_ms: float = 0.0  # per request (batch: per batch); consume: born-to-consume
    max_rt_ms: int = 0
    p99_rt_ms: float | None = None  # async only: from AsyncProducer.java, over the same window
    failed: int = 0
    extra: dict = field(default_factory=dict)
    broker_cpu_us_per_msg: float = 0.0
    rss_kib: dict = field(default_factory=dict)


def run_scenario(
    tools: Tools,
    stack: Stack,
    scenario: str,
    rep: int,
    duration: float,
    logdir: Path,
    on_load=None,
    topic: str | None = None,
    queues: int = 4,
) -> Result:
    """One scenario against one broker, on a new topic of `queues` queues (or `topic`);
    `on_load(stack)` runs once the load is on (profiling)."""
    topic = topic or f"Bench_{scenario}_{rep}"
    ns = stack.namesrv_addr
    tag = f"{scenario}-{stack.kind}-{rep}"
    common = ["-n", ns, "-t", topic, "-s", str(MSG_SIZE), "-ri", "1000"]
    pid = stack.broker.pid
    procs: list[ManagedProcess] = []
    res = Result(scenario, stack.kind, rep)
    create_topic(stack, topic, queues)
    try:
        if scenario in LARGE:
            log = logdir / f"{tag}.producer.log"
            args = ["-n", ns, "-t", topic, "-s", str(LARGE[scenario]), "-ri", "1000", "-w", str(LARGE_THREADS)]
            procs.append(tools.start("Producer", args, log))
        elif scenario.startswith("sync"):
            log = logdir / f"{tag}.producer.log"
            procs.append(tools.start("Producer", [*common, "-w", scenario[4:]], log))
        elif scenario == "async":
            log = logdir / f"{tag}.producer.log"
            # not the benchmark Producer's -y true: see AsyncProducer.java
            procs.append(tools.start("AsyncProducer", [ns, topic, str(MSG_SIZE), str(ASYNC_IN_FLIGHT)], log))
        elif scenario == "batch":
            log = logdir / f"{tag}.batch.log"
            procs.append(tools.start("BatchProducer", [*common, "-w", str(BATCH_THREADS), "-b", str(BATCH_SIZE)], log))
        elif scenario == "consume":
            log = logdir / f"{tag}.consumer.log"
            procs.append(tools.start("Consumer", ["-n", ns, "-t", topic, "-g", f"bench_cg_{rep}", "-ri", "1000"], log))
            time.sleep(4)  # subscribed and rebalanced before the first message
            plog = logdir / f"{tag}.producer.log"
            procs.append(tools.start("Producer", [*common, "-w", str(CONSUME_PRODUCER_THREADS)], plog))
        else:
            raise ValueError(scenario)
        t_start = time.monotonic()
        if on_load is not None:
            on_load(stack)
        # broker CPU over the tools' last report window (about the last WINDOW seconds)
        time.sleep(max(0.0, duration - WINDOW - (time.monotonic() - t_start)))
        cpu0, t0 = proc_cpu(pid), time.monotonic()
        time.sleep(WINDOW)
        cpu1, elapsed = proc_cpu(pid), time.monotonic() - t0
        res.rss_kib = proc_status(pid)
    finally:
        for p in procs:
            p.stop(10)
    if scenario == "batch":
        g = last_match(log, BATCH_LINE)
        if g:
            res.tps, res.max_rt_ms, res.avg_rt_ms = float(g[1]), int(g[2]), float(g[3])
            res.failed = int(g[5]) + int(g[6])
            res.extra = {"batches_per_s": int(g[0]), "avg_msg_rt_ms": float(g[4])}
    elif scenario == "consume":
        g = last_match(log, CONSUME_LINE)
        s = last_match(plog, SEND_LINE)
        if g:
            res.tps, res.avg_rt_ms, res.max_rt_ms, res.failed = float(g[0]), float(g[1]), int(g[3]), int(g[5])
            res.extra = {"avg_s2c_ms": float(g[2]), "max_s2c_ms": int(g[4]), "send_tps": int(s[0]) if s else None}
    else:
        g = last_match(log, SEND_LINE)
        if g:
            res.tps, res.max_rt_ms, res.avg_rt_ms = float(g[0]), int(g[1]), float(g[2])
            res.failed = int(g[3]) + int(g[4])
            p99 = last_match(log, P99_FIELD) if scenario == "async" else None
            if p99:
                res.p99_rt_ms = float(p99[0])
    if not g:
        print(f"  !! no stats line in {log}", file=sys.stderr)
    # broker CPU per message over the tools' window, with the tool's rate as the message count
    # (for consume: messages both stored and delivered, so it is per message produced+consumed)
    if res.tps:
        res.broker_cpu_us_per_msg = round((cpu1 - cpu0) / (res.tps * elapsed) * 1e6, 1)
    return res


# ---------------------------------------------------------------- report


def summarize(results: list[Result]) -> str:
    rows = [
        "| scenario | pyrmq msgs/s | Java msgs/s | ratio pyrmq/Java (per rep) | pyrmq avg RT ms | Java avg RT ms "
        "| pyrmq max RT ms | Java max RT ms | broker CPU us/msg pyrmq / Java |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    by = collections.defaultdict(dict)
    for r in results:
        by[r.scenario][(r.broker, r.rep)] = r
    for sc in SCENARIOS:
        if sc not in by:
            continue
        d = by[sc]
        reps = sorted({rep for _, rep in d})

        def rng(kind, attr, fmt="{:.0f}", d=d, reps=reps):
            vals = [getattr(d[(kind, rep)], attr) for rep in reps if (kind, rep) in d]
            if not vals:
                return "-"
            lo, hi = min(vals), max(vals)
            return fmt.format(lo) if lo == hi else f"{fmt.format(lo)}–{fmt.format(hi)}"

        ratios = []
        for rep in reps:
            p, j = d.get(("pyrmq", rep)), d.get(("java", rep))
            if p and j and j.tps:
                ratios.append(f"{p.tps / j.tps:.2f}")
        rows.append(
            f"| {sc} | {rng('pyrmq', 'tps')} | {rng('java', 'tps')} | {', '.join(ratios)} "
            f"| {rng('pyrmq', 'avg_rt_ms', '{:.2f}')} | {rng('java', 'avg_rt_ms', '{:.2f}')} "
            f"| {rng('pyrmq', 'max_rt_ms')} | {rng('java', 'max_rt_ms')} "
            f"| {rng('pyrmq', 'broker_cpu_us_per_msg')} / {rng('java', 'broker_cpu_us_per_msg')} |"
        )
    if "async" in by:
        d = by["async"]
        rows.append("")
        rows.append(
            "p99 RT ms, async (AsyncProducer.java; the official tools print avg and max only): "
            + ", ".join(
                f"{kind} rep {rep} {r.p99_rt_ms}" for (kind, rep), r in sorted(d.items()) if r.p99_rt_ms is not None
            )
        )
    rss = {}
    for r in results:
        cur = rss.setdefault(r.broker, {"VmRSS": 0, "RssAnon": 0, "VmHWM": 0})
        for k in cur:
            cur[k] = max(cur[k], r.rss_kib.get(k, 0))
    rows.append("")
    for kind, v in rss.items():
        rows.append(
            f"RSS {kind}: max VmRSS {v['VmRSS'] // 1024} MiB, max RssAnon {v['RssAnon'] // 1024} MiB, "
            f"VmHWM {v['VmHWM'] // 1024} MiB"
        )
    return "\n".join(rows)


# ---------------------------------------------------------------- profiling

IDLE_FRAMES = ("Condition.wait (threading", "Event.wait (threading", "sleep (")


def top_functions(collapsed: Path, n: int = 25) -> str:
    """Per-thread sample counts, then self and inclusive % per function over the event-loop
    thread (MainThread) and over all threads, from py-spy's raw (collapsed) output. Samples whose
    leaf is a lock/event wait are idle background threads py-spy still counts; they are left out."""
    per_thread: collections.Counter = collections.Counter()
    idle = 0
    tables = {
        "MainThread": (collections.Counter(), collections.Counter()),
        "all threads": (collections.Counter(), collections.Counter()),
    }
    totals: collections.Counter = collections.Counter()
    for line in collapsed.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        c = int(count)
        frames = stack.split(";")
        thread = frames[0].split(": ", 1)[-1] if frames[0].startswith("thread (") else "?"
        frames = [re.sub(r":\d+\)$", ")", f) for f in frames if not f.startswith(("thread (", "process "))]
        if frames and frames[-1].startswith(IDLE_FRAMES):
            idle += c
            continue
        per_thread[thread] += c
        for name in ("MainThread", "all threads"):
            if name == "MainThread" and thread != "MainThread":
                continue
            self_c, incl_c = tables[name]
            totals[name] += c
            if frames:
                self_c[frames[-1]] += c
            for f in set(frames):
                incl_c[f] += c
    out = [
        f"busy samples per thread (idle waits left out: {idle}): "
        + ", ".join(f"{t} {c}" for t, c in per_thread.most_common())
    ]
    for name, (self_c, incl_c) in tables.items():
        total = totals[name] or 1
        out += [
            "",
            f"== {name}: {totals[name]} samples",
            "self %  function",
            *(f"{100 * c / total:5.1f}  {f}" for f, c in self_c.most_common(n)),
            "",
            "incl %  function",
            *(f"{100 * c / total:5.1f}  {f}" for f, c in incl_c.most_common(n)),
        ]
    return "\n".join(out)


def profile(args, tools: Tools, workdir: Path) -> None:
    spy = shutil.which("py-spy", path=str(Path(args.python).parent)) or shutil.which("py-spy")
    if spy is None:
        raise SystemExit("broker_bench: py-spy not found (pip install py-spy next to --python)")
    stack = start_pyrmq(workdir, args.python)
    out_raw = workdir / f"profile-{args.profile}.txt"
    spies = []

    def attach(st: Stack) -> None:
        time.sleep(5)  # past client start-up and topic creation
        base = [
            spy,
            "record",
            "--pid",
            str(st.broker.pid),
            "--rate",
            "100",
            "--duration",
            str(int(args.duration - 7)),
            "--threads",
        ]
        spies.append(
            subprocess.Popen(
                [*base, "--format", "raw", "-o", str(out_raw)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
        )

    try:
        res = run_scenario(tools, stack, args.profile, 0, args.duration, workdir, on_load=attach)
        for s in spies:
            s.wait(60)
    finally:
        for s in spies:
            if s.poll() is None:
                s.kill()
        stack.stop()
    print(f"pyrmq {args.profile} under py-spy: {res.tps:.0f} msgs/s, avg RT {res.avg_rt_ms:.2f} ms")
    print(f"collapsed stacks: {out_raw}")
    print(top_functions(out_raw))


# ---------------------------------------------------------------- main


def main() -> int:
    global MSG_SIZE
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=25.0, help="seconds of load per scenario and broker")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--scenarios", default=",".join(DEFAULT_SCENARIOS), help=f"any of {','.join(SCENARIOS)}")
    ap.add_argument(
        "--flush", choices=("ASYNC_FLUSH", "SYNC_FLUSH"), default="ASYNC_FLUSH", help="both brokers' flushDiskType"
    )
    ap.add_argument(
        "--msg-size", type=int, default=MSG_SIZE, help="body bytes of the sync, async, batch, consume scenarios"
    )
    ap.add_argument(
        "--python",
        default=str(ROOT / ".venv" / "bin" / "python"),
        help="interpreter for the pyrmq broker (needs uvloop: pip install -e '.[fast]')",
    )
    ap.add_argument("--java-heap", default="1g", help="Java broker -Xms/-Xmx/MaxDirectMemorySize")
    ap.add_argument("--json", help="write all results here")
    ap.add_argument("--workdir", help="keep stores and logs here (default: a temp dir, removed)")
    ap.add_argument("--profile", choices=SCENARIOS, help="profile pyrmq under this scenario with py-spy instead")
    args = ap.parse_args()

    r = subprocess.run([args.python, "-c", "import uvloop"], capture_output=True)
    if r.returncode != 0:
        raise SystemExit(f"broker_bench: {args.python} cannot import uvloop; install the [fast] extra")
    MSG_SIZE = args.msg_size
    STORE_CONF["flushDiskType"] = args.flush
    scenarios = [s for s in args.scenarios.split(",") if s]
    for s in scenarios:
        if s not in SCENARIOS:
            raise SystemExit(f"unknown scenario {s}; known: {', '.join(SCENARIOS)}")

    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="pyrmq-broker-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    cache = Path(tempfile.gettempdir()) / "pyrmq-broker-bench-cp"
    cp = bench_classpath(cache)
    tools = Tools(cp, workdir / "client-home", async_producer_classes(cp, cache))
    try:
        if args.profile:
            profile(args, tools, workdir)
            return 0
        stacks = {}
        try:
            stacks["pyrmq"] = start_pyrmq(workdir, args.python)
            stacks["java"] = start_java(workdir, args.java_heap)
            print(
                f"pyrmq broker pid {stacks['pyrmq'].broker.pid} ({args.python}), "
                f"java broker pid {stacks['java'].broker.pid} (-Xmx{args.java_heap})",
                flush=True,
            )
            results: list[Result] = []
            for rep in range(args.repeats):
                for i, sc in enumerate(scenarios):
                    order = ["pyrmq", "java"] if (rep + i) % 2 == 0 else ["java", "pyrmq"]
                    for kind in order:
                        res = run_scenario(tools, stacks[kind], sc, rep, args.duration, workdir / "logs")
                        results.append(res)
                        print(
                            f"rep {rep} {sc:8s} {kind:5s} {res.tps:8.0f} msgs/s avg {res.avg_rt_ms:7.2f} ms "
                            f"max {res.max_rt_ms:5d} ms "
                            + (f"p99 {res.p99_rt_ms} ms " if res.p99_rt_ms is not None else "")
                            + f"failed {res.failed} cpu {res.broker_cpu_us_per_msg} us/msg "
                            f"rss {res.rss_kib.get('VmRSS', 0) // 1024} MiB {res.extra or ''}",
                            flush=True,
                        )
                        time.sleep(2)
        finally:
            for st in stacks.values():
                st.stop()
        print()
        print(summarize(results))
        if args.json:
            Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=1))
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
