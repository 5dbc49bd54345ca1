"""Start and restart time of a broker on a used store: pyrmq against the Java 5.5.0 broker, both
started on copies of the SAME store directory (the on-disk formats are the same).

Usage: .venv/bin/python tools/bench/restart_bench.py [--mb 80] [--repeats 2] [--workdir DIR]
       [--pyrmq LABEL=PYTHONPATH ...] [--no-java]

1. Builds the store once (kept in --workdir for later runs) through the store API with Java's
   default file sizes (1 GiB commit-log files, 300,000-entry consume-queue files): a topic
   BenchmarkTest with 1,024 queues and 80 small topics of 1-8 queues, 1 KiB bodies with a key,
   until the commit log holds --mb MiB; closed cleanly. A second store is made from it the
   way kill -9 leaves one: a pyrmq broker started on a copy, 200 more messages sent, 2 s for
   its flush threads, then SIGKILL (abort file present, checkpoint a little behind).
2. For each broker and each store (clean, kill9), a fresh copy of the store, then the broker
   process is started and timed from its spawn to (a) the listen port accepting a connection,
   (b) the first SEND_OK of a plain SEND_MESSAGE request sent directly to the broker (retried
   until it is accepted), and its VmRSS then. The broker is stopped with SIGTERM afterwards.
   The median of --repeats runs is printed, with pyrmq/Java ratios.

--pyrmq LABEL=DIR runs pyrmq from another source tree (PYTHONPATH=DIR: DIR/pyrmq is imported),
for before/after tables; the default is this checkout. Byte code is compiled first
(compileall), as a pip install does: the timings are not about compiling sources.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import itertools
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from support import java as sj  # noqa: E402
from support import probe  # noqa: E402
from support.ports import broker_port  # noqa: E402
from support.procs import ManagedProcess  # noqa: E402
from support.servers import PyrmqNamesrv, write_properties  # noqa: E402

COMMIT_LOG_FILE = 1024 * 1024 * 1024  # Java's defaults: the store is read by both brokers
CONSUME_QUEUE_FILE = 300000 * 20
BIG_TOPIC, BIG_QUEUES = "BenchmarkTest", 1024
SMALL_TOPICS = 80
SEND_MESSAGE = 10
SUCCESS = 0
_opaque = itertools.count(1)


# --- the store ----------------------------------------------------------------------------------
def build_store(root: Path, mb: int, body_size: int = 1024) -> int:
    """The used store, through the store API; returns the number of messages."""
    from pyrmq.store import message as m
    from pyrmq.store.message_store import MessageStore
    from pyrmq.store.store_config import MessageStoreConfig

    cfg = MessageStoreConfig(
        store_path_root_dir=str(root),
        mapped_file_size_commit_log=COMMIT_LOG_FILE,
        mapped_file_size_consume_queue=CONSUME_QUEUE_FILE,
    )
    s = MessageStore(cfg)
    s.load()
    s.start()
    body = os.urandom(body_size)
    small = [(f"BenchTopic{i:02d}", 1 + i % 8) for i in range(SMALL_TOPICS)]
    n = 0
    try:
        while s.get_max_phy_offset() < mb * 1024 * 1024:
            if n % 4:
                topic, queue_id = BIG_TOPIC, n % BIG_QUEUES
            else:
                topic, queues = small[(n // 4) % SMALL_TOPICS]
                queue_id = (n // (4 * SMALL_TOPICS)) % queues
            props = {"UNIQ_KEY": f"RESTARTBENCH{n:012d}", "KEYS": f"key{n}", "TAGS": "TagA"}
            r = s.put_message(m.MessageExtBrokerInner(topic=topic, queue_id=queue_id, body=body, properties=props))
            if not r.is_ok():
                raise RuntimeError(f"put {n} failed: {r}")
            n += 1
    finally:
        s.shutdown()
    return n


def copy_store(src: Path, dst: Path) -> None:
    shutil.rmtree(dst, ignore_errors=True)
    subprocess.run(["cp", "-a", "--sparse=always", str(src), str(dst)], check=True)


# --- the brokers --------------------------------------------------------------------------------
def broker_conf(store: Path, port: int, namesrv: str, name: str) -> dict:
    return {
        "brokerClusterName": "RestartBench",
        "brokerName": name,
        "brokerId": 0,
        "namesrvAddr": namesrv,
        "listenPort": port,
        "bindAddress": "127.0.0.1",
        "brokerIP1": "127.0.0.1",
        "storePathRootDir": store,
        "storePathCommitLog": store / "commitlog",
        "autoCreateTopicEnable": "true",
        "flushDiskType": "ASYNC_FLUSH",
        "mappedFileSizeCommitLog": COMMIT_LOG_FILE,
        "mappedFileSizeConsumeQueue": CONSUME_QUEUE_FILE,
    }


def pyrmq_argv(cfg: Path) -> list[str]:
    venv = ROOT / ".venv" / "bin" / "python"
    return [str(venv if venv.exists() else sys.executable), "-m", "pyrmq", "broker", "-c", str(cfg)]


def start_broker(
    kind: str, store: Path, namesrv: str, workdir: Path, pythonpath: str | None
) -> tuple[ManagedProcess, int]:
    port = broker_port()
    name = f"{kind}-{port}"
    cfg = write_properties(workdir / f"{name}.conf", broker_conf(store, port, namesrv, name))
    log = workdir / f"{name}.out"
    if kind == "java":
        home = sj.prepare_home(workdir / "java-home")
        argv = sj.java_argv(
            "servers",
            "org.apache.rocketmq.broker.BrokerStartup",
            ["-c", str(cfg)],
            home,
            {"rmq.logback.configurationFile": "rmq.broker.logback.xml"},
            heap=sj.SERVER_HEAP,
        )
        return ManagedProcess(name, argv, log, env=sj.java_env(home), cwd=workdir), port
    env = dict(os.environ, HOME=str(workdir / "pyrmq-home"), PYTHONUNBUFFERED="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return ManagedProcess(name, pyrmq_argv(cfg), log, env=env, cwd=workdir), port


def send_frame(port: int, topic: str, timeout: float = 5.0) -> int:
    """One SEND_MESSAGE (v1 header) straight to the broker; the response code."""
    opaque = next(_opaque)
    ext_fields = {
        "producerGroup": "RestartBenchGroup",
        "topic": topic,
        "defaultTopic": "TBW102",
        "defaultTopicQueueNums": "4",
        "queueId": "0",
        "sysFlag": "0",
        "bornTimestamp": str(int(time.time() * 1000)),
        "flag": "0",
        "properties": f"UNIQ_KEY\x01RESTARTFIRST{opaque:08d}\x02WAIT\x01true\x02",
        "reconsumeTimes": "0",
        "unitMode": "false",
        "batch": "false",
    }
    reply = probe.request(f"127.0.0.1:{port}", SEND_MESSAGE, ext_fields, timeout, body=b"first message after a restart")
    return int(reply.code)


def accepting(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def rss_mib(pid: int) -> float:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """utime + stime of the process (all its threads) so far."""
    with contextlib.suppress(OSError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return float("nan")


def wait_serving(kind: str, proc: ManagedProcess, port: int, t0: float, timeout: float) -> tuple[float, float]:
    """Seconds from ``t0`` to the port accepting and to the first SEND_OK."""
    while not accepting(port):
        if not proc.alive() or time.monotonic() - t0 > timeout:
            raise RuntimeError(f"{kind} broker did not listen on {port}\n{proc.tail()}")
        time.sleep(0.02)
    t_listen = time.monotonic() - t0
    while True:
        with contextlib.suppress(OSError):
            if send_frame(port, BIG_TOPIC) == SUCCESS:
                break
        if not proc.alive() or time.monotonic() - t0 > timeout:
            raise RuntimeError(f"{kind} broker gave no SEND_OK\n{proc.tail()}")
        time.sleep(0.02)
    return t_listen, time.monotonic() - t0


def time_start(
    kind: str, store: Path, namesrv: str, workdir: Path, pythonpath: str | None, timeout: float
) -> tuple[float, float, float, float]:
    """(s to the port accepting, s to the first SEND_OK, VmRSS MiB and CPU s then); the broker
    is stopped afterwards."""
    t0 = time.monotonic()
    proc, port = start_broker(kind, store, namesrv, workdir, pythonpath)
    try:
        t_listen, t_send = wait_serving(kind, proc, port, t0, timeout)
        return t_listen, t_send, rss_mib(proc.pid), cpu_seconds(proc.pid)
    finally:
        proc.stop(60)


def make_kill9_store(clean: Path, dst: Path, namesrv: str, workdir: Path) -> None:
    """`clean` as a pyrmq broker leaves it on kill -9 after some traffic."""
    copy_store(clean, dst)
    proc, port = start_broker("pyrmq", dst, namesrv, workdir, None)
    try:
        deadline = time.monotonic() + 600
        sent = 0
        while sent < 200:
            if not proc.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"pyrmq broker for the kill -9 store failed\n{proc.tail()}")
            try:
                sent += send_frame(port, BIG_TOPIC) == SUCCESS
            except OSError:
                time.sleep(0.05)
        time.sleep(2)
    finally:
        proc.kill9()
    if not (dst / "abort").exists():
        raise RuntimeError("no abort file after kill -9")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=80, help="commit-log size of the used store (MiB)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--workdir", default="/tmp/pyrmq-restart-bench")
    ap.add_argument("--pyrmq", action="append", default=[], metavar="LABEL=DIR", help="another pyrmq source tree")
    ap.add_argument("--no-java", action="store_true")
    ap.add_argument("--timeout", type=float, default=300)
    a = ap.parse_args()
    work = Path(a.workdir)
    work.mkdir(parents=True, exist_ok=True)
    variants: list[tuple[str, str, str | None]] = [("pyrmq", "pyrmq", None)]
    for spec in a.pyrmq:
        label, _, path = spec.partition("=")
        variants.append((f"pyrmq-{label}", "pyrmq", path))
    for _, _, path in variants:
        compileall.compile_dir(str(Path(path or ROOT) / "pyrmq"), quiet=1)
    if not a.no_java:
        variants.append(("java", "java", None))
        sj.ensure_built()

    template = work / f"store-{a.mb}mb"
    if not (template / "built").exists():
        shutil.rmtree(template, ignore_errors=True)
        t = time.monotonic()
        n = build_store(template, a.mb)
        (template / "built").write_text(str(n))
        print(f"built {template}: {n} messages in {time.monotonic() - t:.0f} s", flush=True)
    n_msgs = int((template / "built").read_text())
    queues = sum(1 for _ in (template / "consumequeue").glob("*/*"))
    print(f"store: {n_msgs} messages, {queues} consume queues, commit log {a.mb} MiB", flush=True)

    namesrv = PyrmqNamesrv(work / "namesrv")
    try:
        crashed = work / f"store-{a.mb}mb-kill9"
        make_kill9_store(template, crashed, namesrv.addr, work)
        results: dict[tuple[str, str], list[tuple[float, float, float, float]]] = {}
        for rep in range(a.repeats):
            for mode, src in (("clean", template), ("kill9", crashed)):
                order = variants if rep % 2 == 0 else list(reversed(variants))
                for label, kind, path in order:
                    run = work / "run"
                    copy_store(src, run)
                    with contextlib.suppress(FileNotFoundError):
                        (run / "built").unlink()
                    r = time_start(kind, run, namesrv.addr, work, path, a.timeout)
                    results.setdefault((label, mode), []).append(r)
                    print(
                        f"  {label:14s} {mode:5s} listen {r[0]:6.2f} s  first SEND_OK {r[1]:6.2f} s  "
                        f"RSS {r[2]:6.0f} MiB  CPU {r[3]:6.2f} s",
                        flush=True,
                    )
    finally:
        namesrv.stop()
    print()
    print(f"median of {a.repeats}; store: {a.mb} MiB commit log, {queues} consume queues, {n_msgs} messages")
    print(
        f"{'broker':14s} {'store':6s} {'listen s':>9s} {'SEND_OK s':>10s} {'CPU s':>6s} {'RSS MiB':>8s} "
        f"{'listen/Java':>12s} {'SEND_OK/Java':>13s} {'CPU/Java':>9s}"
    )
    for mode in ("clean", "kill9"):
        java = results.get(("java", mode))
        for label, _, _ in variants:
            med = [statistics.median(r[i] for r in results[(label, mode)]) for i in range(4)]
            ratios = ["", "", ""]
            if java:
                jmed = [statistics.median(r[i] for r in java) for i in range(4)]
                ratios = [f"{med[i] / jmed[i]:.2f}" for i in (0, 1, 3)]
            print(
                f"{label:14s} {mode:6s} {med[0]:9.2f} {med[1]:10.2f} {med[3]:6.2f} {med[2]:8.0f} "
                f"{ratios[0]:>12s} {ratios[1]:>13s} {ratios[2]:>9s}"
            )


if __name__ == "__main__":
    main()
