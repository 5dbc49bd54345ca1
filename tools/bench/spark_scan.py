#!/usr/bin/env python3
"""Spark scan speed over a commit log, set against the raw read speed of the same file.

Generates (once) a commit log of --size bytes of --body-size messages, then times, in one run:
  raw              reading every file start to end (64 MiB reads, page cache not dropped)
  raw-readinto     the same into one reused buffer (no allocation per read)
  walk             the reference decoder over all splits, header decode + BODYCRC, 1 core, no Spark
  bulk-pure        the bulk decoder with its numpy references (what PYRMQ_PURE=1 runs), 1 core
  bulk-compiled    the bulk decoder with the compiled walk / gather / copy (pyrmq._speedups), 1 core
                   (both bulk measures for header columns, then header columns + body)
  header           spark.read.format("rocketmq"), header columns, count + sum (bulk decoder)
  header-<n>m      the same with n MiB splits (--split-sizes, default 64: 16 tasks)
  header-rows<n>   the same with 256 MiB splits and batchRows=n (--batch-rows)
  header-ref       the same with decoder=reference
  nocrc            header columns with checkCRC=false
  bodies           header columns + body (sum of body lengths), bulk decoder
  bodies-ref       the same with decoder=reference
  bodies-batch<n>m header columns + body with batchBytes = n MiB (--body-batch-mib)
  baseline-<m>     measure m (header, bodies, bodies-batch<n>m) with the Python workers importing
                   pyrmq from another checkout (--baseline DIR), in a Spark session of its own, first
  uds-<m>          measure m in a session whose JVM talks to its Python workers over Unix domain
                   sockets (spark.python.unix.domain.socket.enabled, Spark >= 4.1; --uds), last
  bodies-profiled  one more body scan under py-spy (Python daemon and workers) and Java Flight
                   Recorder (JVM), files in --profile DIR; its times are not measures
Each Spark measure reports the JVM's and the Python workers' CPU per row (user and system), minor
page faults per row, the JVM's CPU by thread name and what the CPU cost allows on two idle cores.
Prints one JSON line per measurement (records/s, MB/s). The store is not committed anywhere.

    .venv/bin/python tools/bench/spark_scan.py --store /tmp/bench-store --size 1073741824
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))


def generate(root: str, size: int, body_size: int, file_size: int) -> None:
    """A commit log as the store writes it (pyrmq.store.message.encode_message records: 4 topics,
    8 queues, TAGS/KEYS/UNIQ_KEY, consecutive offsets); a full file ends with its blank record,
    the last one with zeros. Written directly: the scan reads only the commit log."""
    from pyrmq.store import message as m

    body = os.urandom(body_size)
    ts = int(time.time() * 1000)
    qo: dict[tuple[str, int], int] = {}
    os.makedirs(os.path.join(root, "commitlog"), exist_ok=True)
    base, i, t0 = 0, 0, time.monotonic()
    while base < size:
        pos, chunk = 0, []
        with open(os.path.join(root, "commitlog", f"{base:020d}"), "wb") as fh:
            while base + pos < size:
                topic, qid = f"Bench{i % 4}", i % 8
                msg = m.MessageExtBrokerInner(
                    topic=topic,
                    body=body,
                    queue_id=qid,
                    properties_string=f"TAGS\x01t{i % 3}\x02KEYS\x01k{i}\x02UNIQ_KEY\x01U{i:012d}\x02",
                    born_timestamp=ts + i // 1000,
                    store_timestamp=ts + i // 1000,
                    born_host=("10.0.0.9", 5555),
                    store_host=("10.0.0.2", 10911),
                )
                rec = m.encode_message(msg, qo.get((topic, qid), 0), base + pos)
                if pos + len(rec) + m.END_FILE_MIN_BLANK_LENGTH > file_size:
                    chunk.append(m.encode_blank(file_size - pos))
                    break
                qo[(topic, qid)] = qo.get((topic, qid), 0) + 1
                chunk.append(rec)
                pos += len(rec)
                i += 1
                if len(chunk) == 8192:
                    fh.write(b"".join(chunk))
                    chunk.clear()
                    print(
                        f"generated {(base + pos) / 2**20:.0f} MiB, {i} messages, {time.monotonic() - t0:.0f}s",
                        file=sys.stderr,
                    )
            fh.write(b"".join(chunk))
            fh.truncate(file_size)
        base += file_size


def generate_fast(root: str, size: int, body_size: int, file_size: int, topics: int, queues: int) -> int:
    """The same kind of commit log, built at disk speed for the scale check: one record encoded by
    pyrmq.store.message.encode_message is the template, and numpy writes the fields that change
    per record (topic, queue, queue offset, physical offset, timestamps, tag, KEYS, UNIQ_KEY) into
    fixed-width slots, 64 MiB of records at a time. Topic i % topics, queue (i // topics) % queues,
    so each (topic, queue) has consecutive queue offsets. Returns the number of records."""
    import numpy as np

    from pyrmq.store import message as m

    if topics > 1000:
        raise SystemExit("--topics: at most 1000 (three-digit topic names)")
    body = os.urandom(body_size)
    ts = int(time.time() * 1000)
    sentinel = {"qo": 0x0102030405060708, "phys": 0x1112131415161718, "born": 0x2122232425262728}
    store_ts = 0x3132333435363738
    msg = m.MessageExtBrokerInner(
        topic="Bench999",
        body=body,
        queue_id=0x41424344,
        properties_string=f"TAGS\x01t9\x02KEYS\x01k{9 * 10**11}\x02UNIQ_KEY\x01U{8 * 10**15}\x02",
        born_timestamp=sentinel["born"],
        store_timestamp=store_ts,
        born_host=("10.0.0.9", 5555),
        store_host=("10.0.0.2", 10911),
    )
    tpl = bytes(m.encode_message(msg, sentinel["qo"], sentinel["phys"]))

    def at(needle: bytes) -> int:
        pos = tpl.find(needle)
        if pos < 0 or tpl.find(needle, pos + 1) >= 0:
            raise RuntimeError(f"template field {needle!r} not found once")
        return pos

    pos8 = {k: at(v.to_bytes(8, "big")) for k, v in sentinel.items()}
    pos_store_ts, pos_qid = at(store_ts.to_bytes(8, "big")), at((0x41424344).to_bytes(4, "big"))
    pos_topic = at(b"Bench999") + 5
    pos_tag = at(b"TAGS\x01t9") + 6
    pos_key = at(f"k{9 * 10**11}".encode()) + 1
    pos_uniq = at(f"U{8 * 10**15}".encode()) + 1
    rs = len(tpl)
    tpl_arr = np.frombuffer(tpl, np.uint8)

    def digits(arr: np.ndarray, col: int, values: np.ndarray, width: int) -> None:
        for d in range(width):
            arr[:, col + width - 1 - d] = 48 + (values // 10**d) % 10

    def be64(arr: np.ndarray, col: int, values: np.ndarray) -> None:
        arr[:, col : col + 8] = values.astype(">i8").view(np.uint8).reshape(-1, 8)

    os.makedirs(os.path.join(root, "commitlog"), exist_ok=True)
    i, base, t0 = 0, 0, time.monotonic()
    chunk_rows = max(1, (64 << 20) // rs)
    while base < size:
        per_file = (file_size - m.END_FILE_MIN_BLANK_LENGTH) // rs
        last = base + file_size >= size
        n_file = min(per_file, -(-(size - base) // rs)) if last else per_file
        with open(os.path.join(root, "commitlog", f"{base:020d}"), "wb") as fh:
            for r0 in range(0, n_file, chunk_rows):
                k = min(chunk_rows, n_file - r0)
                idx = np.arange(i, i + k, dtype=np.int64)
                arr = np.tile(tpl_arr, (k, 1))
                stamp = ts + idx // 1000
                be64(arr, pos8["qo"], idx // (topics * queues))
                be64(arr, pos8["phys"], base + (r0 + np.arange(k, dtype=np.int64)) * rs)
                be64(arr, pos8["born"], stamp)
                be64(arr, pos_store_ts, stamp)
                arr[:, pos_qid : pos_qid + 4] = ((idx // topics) % queues).astype(">i4").view(np.uint8).reshape(-1, 4)
                digits(arr, pos_topic, idx % topics, 3)
                arr[:, pos_tag] = 48 + idx % 3
                digits(arr, pos_key, idx, 12)
                digits(arr, pos_uniq, idx, 16)
                fh.write(arr.tobytes())
                i += k
            if not last:
                fh.write(m.encode_blank(file_size - n_file * rs))
            fh.truncate(file_size)
        print(
            f"generated {(base + n_file * rs) / 2**30:.1f} GiB, {i} records, {time.monotonic() - t0:.0f}s",
            file=sys.stderr,
        )
        base += file_size
    return i


def _proc_stats() -> dict[int, tuple[int, list[int]]]:
    """pid -> (ppid, [minflt, cminflt, majflt, cmajflt, utime, stime, cutime, cstime]) from /proc."""
    procs: dict[int, tuple[int, list[int]]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                text = fh.read()
        except OSError:
            continue
        rest = text[text.rindex(")") + 2 :].split()  # state, ppid, ..., minflt .. cstime
        procs[int(d)] = (int(rest[1]), [int(x) for x in rest[7:15]])
    return procs


def tree_cpu(root: int) -> dict[str, float]:
    """CPU seconds (user, system) and minor page faults so far of the Spark JVM `root` (its own
    threads) and of its descendants (the Python daemon and workers, with their reaped children),
    from /proc (Linux)."""
    procs = _proc_stats()
    tick = os.sysconf("SC_CLK_TCK")
    minflt, _, _, _, utime, stime, _, _ = procs.get(root, (0, [0] * 8))[1]
    out = {"jvm_user": utime / tick, "jvm_sys": stime / tick, "jvm_minflt": float(minflt)}
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    todo, user, sys_, faults = list(children.get(root, [])), 0, 0, 0
    while todo:
        pid = todo.pop()
        s = procs[pid][1]
        user, sys_, faults = user + s[4] + s[6], sys_ + s[5] + s[7], faults + s[0] + s[1]
        todo += children.get(pid, [])
    out.update(py_user=user / tick, py_sys=sys_ / tick, py_minflt=float(faults))
    out["jvm"], out["py"] = out["jvm_user"] + out["jvm_sys"], out["py_user"] + out["py_sys"]
    return out


def jvm_threads(root: int) -> dict[str, float]:
    """CPU seconds so far of the JVM's threads, summed by name without digits ("GC Thread#",
    "C2 CompilerThread", "Executor task launch worker for task ...", ...; Linux keeps 15 chars)."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    try:
        tids = os.listdir(f"/proc/{root}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{root}/task/{tid}/stat") as fh:
                text = fh.read()
        except OSError:
            continue
        name = "".join(c for c in text[text.index("(") + 1 : text.rindex(")")] if not c.isdigit()).strip()
        rest = text[text.rindex(")") + 2 :].split()
        out[name] = out.get(name, 0.0) + (int(rest[11]) + int(rest[12])) / tick
    return out


class PeakRss:
    """Peak resident memory of the Spark JVM and of its descendant processes (the Python daemon
    and workers), sampled from /proc every 0.2 s while a measure runs (Linux)."""

    def __init__(self, root: int) -> None:
        import threading

        self.root, self.jvm, self.worker, self.workers = root, 0, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _rss(pid: int) -> int:
        try:
            with open(f"/proc/{pid}/statm") as fh:
                return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            return 0

    def _children(self) -> list[int]:
        kids: dict[int, list[int]] = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/stat") as fh:
                        text = fh.read()
                except OSError:
                    continue
                kids.setdefault(int(text[text.rindex(")") + 2 :].split()[1]), []).append(int(d))
        todo, out = list(kids.get(self.root, [])), []
        while todo:
            pid = todo.pop()
            out.append(pid)
            todo += kids.get(pid, [])
        return out

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.jvm = max(self.jvm, self._rss(self.root))
            sizes = [self._rss(p) for p in self._children()]
            self.worker = max(self.worker, *sizes, 0)
            self.workers = max(self.workers, sum(sizes))

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def report(self) -> dict:
        mib = 1 << 20
        return {
            "peak_rss_jvm_MiB": round(self.jvm / mib),
            "peak_rss_one_python_process_MiB": round(self.worker / mib),
            "peak_rss_python_processes_sum_MiB": round(self.workers / mib),
        }


def drop_cache(paths: list[str]) -> None:
    """Evict these files' pages from the page cache (posix_fadvise DONTNEED), so the next read is
    cold without touching the rest of the machine's cache."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", required=True, help="store root (generated when it has no commit log)")
    p.add_argument("--size", type=int, default=1 << 30, help="commit-log bytes to generate (default 1 GiB)")
    p.add_argument("--body-size", type=int, default=1024)
    p.add_argument("--file-size", type=int, default=1 << 30, help="mappedFileSizeCommitLog (default 1 GiB)")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--split-size", type=int, default=256 * 1024 * 1024)
    p.add_argument("--skip", default="", help="comma list of measurements to skip (spark: every Spark measure)")
    p.add_argument("--split-sizes", default="64", help="header scans with these split sizes (MiB), comma list")
    p.add_argument("--warmup", type=int, default=2, help="untimed full header scans before the Spark measures")
    p.add_argument("--batch-rows", default="", help="header scans (256 MiB splits) with these batchRows, comma list")
    p.add_argument("--generator", choices=("python", "fast"), default="python", help="fast: numpy-patched template")
    p.add_argument("--topics", type=int, default=4, help="topics of the fast generator")
    p.add_argument("--queues", type=int, default=8, help="queues per topic of the fast generator")
    p.add_argument("--cold", action="store_true", help="also raw-cold and header-cold: files evicted first")
    p.add_argument("--body-batch-mib", default="", help="body scans with these batchBytes (MiB), comma list")
    p.add_argument(
        "--baseline",
        default="",
        help="a checkout of another pyrmq version (extension built in place): its Python workers run "
        "--baseline-measures first, in a session of their own",
    )
    p.add_argument("--baseline-measures", default="header,bodies", help="header, bodies, bodies-batch<N>m")
    p.add_argument("--uds", action="store_true", help="then --uds-measures with Unix domain sockets to the workers")
    p.add_argument("--uds-measures", default="header,bodies", help="as --baseline-measures")
    p.add_argument(
        "--session",
        action="append",
        default=[],
        help="label|key=value,...|measures: those measures (as --baseline-measures) in a session with that Spark conf",
    )
    p.add_argument("--profile", default="", help="directory: one more body scan under py-spy and JFR, files there")
    p.add_argument("--py-spy", default="", help="the py-spy executable for --profile (else JFR only)")
    args = p.parse_args(argv)
    skip = set(args.skip.split(","))

    from pyrmq.spark import commitlog_scan as scan

    if not (os.path.isdir(os.path.join(args.store, "commitlog")) and scan.list_commit_log(args.store)):
        if args.generator == "fast":
            t0 = time.perf_counter()
            n = generate_fast(args.store, args.size, args.body_size, args.file_size, args.topics, args.queues)
            print(json.dumps({"measure": "generate", "seconds": round(time.perf_counter() - t0, 1), "records": n}))
        else:
            generate(args.store, args.size, args.body_size, args.file_size)
    files = scan.list_commit_log(args.store)
    splits = scan.plan_splits(args.store, scan.PlanOptions(split_size=args.split_size))
    data = sum(sp.stop - sp.start for sp in splits)

    def report(name: str, seconds: float, records: int | None, extra: dict | None = None) -> None:
        row = {"measure": name, "seconds": round(seconds, 3), "bytes": data, "MBps": round(data / 1e6 / seconds, 1)}
        row["load1"] = round(os.getloadavg()[0], 1)  # the machine's load average at the end
        if records is not None:
            row.update(records=records, records_per_s=round(records / seconds))
        row.update(extra or {})
        print(json.dumps(row), flush=True)

    def raw(name: str, into: bool = False) -> None:
        """Every file start to end in 64 MiB reads: new bytes each read, or (`into`) readinto one
        buffer (no allocation: the copy out of the page cache alone)."""
        buf = bytearray(64 << 20)
        t0, c0 = time.perf_counter(), time.process_time()
        for f in files:
            with open(f.path, "rb", buffering=0) as fh:
                if into:
                    while fh.readinto(buf):
                        pass
                else:
                    while fh.read(64 << 20):
                        pass
        cpu = time.process_time() - c0
        extra = {"note": "whole files incl. preallocated tail", "cpu_seconds": round(cpu, 3)}
        extra["MBps_per_cpu_s"] = round(data / 1e6 / cpu, 1) if cpu else None
        report(name, time.perf_counter() - t0, None, extra)

    if args.cold and "raw-cold" not in skip:
        drop_cache([f.path for f in files])
        raw("raw-cold")
    if "raw" not in skip:
        raw("raw")
    if "raw-readinto" not in skip:
        raw("raw-readinto", into=True)
    header = ["topic", "queueId", "queueOffset", "commitLogOffset", "storeSize", "bodySize", "storeTimestamp"]
    if "walk" not in skip:
        t0, c0 = time.perf_counter(), time.process_time()
        n = sum(1 for sp in splits for _ in scan.iter_split(sp))
        cpu = time.process_time() - c0
        report(
            "reference walk, 1 core, no Spark (header decode + BODYCRC)",
            time.perf_counter() - t0,
            n,
            {"cpu_seconds": round(cpu, 3), "records_per_cpu_s": round(n / cpu)},
        )
    from pyrmq import _speedups
    from pyrmq.spark import bulk
    from pyrmq.spark.columns import RecordFilter, arrow_schema

    twins = ("walk_records", "record_fields", "copy_ranges")
    impls = {"bulk-pure": {n: _speedups.REFERENCES[n] for n in twins}}
    if _speedups.native is not None:
        impls["bulk-compiled"] = {n: getattr(_speedups.native, n) for n in twins}
    for name, funcs in impls.items():
        if name in skip:
            continue
        for n, fn in funcs.items():
            setattr(bulk, n, fn)
        for what, cols in (("header columns", header), ("header columns + body", [*header, "body"])):
            scan_ = bulk.BulkScan(cols, arrow_schema(cols), RecordFilter())
            t0, c0 = time.perf_counter(), time.process_time()
            n = sum(b.num_rows for sp in splits for b in scan_.read(sp))
            cpu = time.process_time() - c0
            report(
                f"{name}, 1 core, no Spark ({what} + BODYCRC)",
                time.perf_counter() - t0,
                n,
                {"cpu_seconds": round(cpu, 3), "records_per_cpu_s": round(n / cpu)},
            )
    if _speedups.native is not None:  # Spark's workers import the compiled path
        for n in twins:
            setattr(bulk, n, getattr(_speedups.native, n))

    if "spark" in skip:  # the measures without Spark only
        return 0
    from pyspark.sql import functions as F

    from pyrmq.spark import register, spark_session

    def session(name: str, conf: dict[str, str]) -> tuple[Any, int]:
        """A fresh SparkSession (the JVM and its Python daemon started anew), warmed up: JVM
        start and JIT of the scan + aggregate path, Python workers and their imports (the first
        full scan of a fresh session costs several times the later ones)."""
        spark = spark_session(
            name,
            args.master,
            {
                "spark.ui.enabled": "false",
                "spark.sql.shuffle.partitions": "2",
                "spark.ui.showConsoleProgress": "false",
                **conf,
            },
        )
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
        spark.read.format("rocketmq").option("offsets", str(files[0].start)).load(args.store).count()
        for _ in range(args.warmup):
            opts = {"splitSize": str(args.split_size), "columns": ",".join(header)}
            warm = spark.read.format("rocketmq").options(**opts).load(args.store)
            warm.agg(F.count(F.lit(1)), F.sum("storeSize")).collect()
        gateway: Any = spark.sparkContext._gateway
        where = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("pyrmq").__file__).collect()[0]
        print(json.dumps({"session": name, "conf": conf, "workers_import_pyrmq_from": where}), flush=True)
        return spark, gateway.proc.pid  # spark-submit execs the JVM

    def python_daemon(jvm_pid: int) -> int | None:
        for pid, (ppid, _) in _proc_stats().items():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    cmd = fh.read()
            except OSError:
                continue
            if ppid == jvm_pid and b"pyspark.daemon" in cmd:
                return pid
        return None

    def spark_scan(
        spark, jvm_pid: int, name: str, columns: list[str], cold: bool = False, profile: str = "", **opts: str
    ):
        if name in skip:
            return
        if cold:
            drop_cache([f.path for f in files])
        r = spark.read.format("rocketmq").option("splitSize", args.split_size).option("columns", ",".join(columns))
        for k, v in opts.items():
            r = r.option(k, v)
        df = r.load(args.store)
        size = F.length("body") if "body" in columns else F.col("storeSize")
        tools = []
        if profile:  # py-spy on the Python daemon and its workers, Java Flight Recorder on the JVM
            os.makedirs(profile, exist_ok=True)
            daemon = python_daemon(jvm_pid)
            if args.py_spy and daemon is not None:
                out = os.path.join(profile, f"{name}.pyspy.txt")
                tools.append(
                    subprocess.Popen(
                        [
                            args.py_spy,
                            "record",
                            "-p",
                            str(daemon),
                            "--subprocesses",
                            "--native",
                            "-r",
                            "97",
                            "-f",
                            "raw",
                            "-o",
                            out,
                        ],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                )
                time.sleep(1)
            jfr = os.path.join(profile, f"{name}.jfr")
            subprocess.run(
                ["jcmd", str(jvm_pid), "JFR.start", "name=bench", "settings=profile", f"filename={jfr}"],
                check=False,
                stdout=subprocess.DEVNULL,
            )
        t0_cpu, t0_threads = tree_cpu(jvm_pid), jvm_threads(jvm_pid)
        t0 = time.perf_counter()
        with PeakRss(jvm_pid) as rss:
            row = df.agg(F.count(F.lit(1)).alias("n"), F.sum(size).alias("b")).collect()[0]
        seconds = time.perf_counter() - t0
        t1_cpu, t1_threads = tree_cpu(jvm_pid), jvm_threads(jvm_pid)
        if profile:
            subprocess.run(["jcmd", str(jvm_pid), "JFR.stop", "name=bench"], check=False, stdout=subprocess.DEVNULL)
            for tool in tools:
                tool.send_signal(signal.SIGINT)
                tool.wait(60)
        d = {k: t1_cpu[k] - t0_cpu[k] for k in t0_cpu}
        jvm_s, py_s = d["jvm"], d["py"]
        threads = {k: round(v - t0_threads.get(k, 0.0), 2) for k, v in t1_threads.items()}
        extra = {
            "partitions": df.rdd.getNumPartitions(),
            "summed_bytes": row.b,
            "options": opts,
            "jvm_cpu_s": round(jvm_s, 2),
            "python_workers_cpu_s": round(py_s, 2),
            "jvm_ns_per_row": round(jvm_s / row.n * 1e9),
            "python_ns_per_row": round(py_s / row.n * 1e9),
            "jvm_sys_ns_per_row": round(d["jvm_sys"] / row.n * 1e9),
            "python_sys_ns_per_row": round(d["py_sys"] / row.n * 1e9),
            "jvm_minor_faults_per_row": round(d["jvm_minflt"] / row.n, 3),
            "python_minor_faults_per_row": round(d["py_minflt"] / row.n, 3),
            # what the CPU time allows on two otherwise idle cores
            "records_per_s_2_idle_cores": round(2 * row.n / (jvm_s + py_s)) if jvm_s + py_s else None,
            "MBps_2_idle_cores": round(2 * data / 1e6 / (jvm_s + py_s), 1) if jvm_s + py_s else None,
            "jvm_threads_cpu_s": dict(sorted(((k, v) for k, v in threads.items() if v >= 0.05), key=lambda kv: -kv[1])),
            **rss.report(),
        }
        report(f"spark {name} ({args.master})", seconds, row.n, extra)

    body_cols = [*header, "body"]

    def listed(spark: Any, jvm_pid: int, prefix: str, measures: str) -> None:
        """header, bodies or bodies-batch<N>m (batchBytes N MiB), as `prefix`-<name>."""
        for m_ in (x for x in measures.split(",") if x):
            opts = {"batchBytes": str(int(m_[len("bodies-batch") : -1]) << 20)} if m_.startswith("bodies-batch") else {}
            spark_scan(spark, jvm_pid, f"{prefix}-{m_}", body_cols if m_.startswith("bodies") else header, **opts)

    if args.baseline:  # the same measures with the Python workers importing pyrmq from another checkout
        # (a Python that puts it first on sys.path, run in it: spark.executorEnv.PYTHONPATH comes
        # after the worker's cwd, which is the JVM's)
        exe = os.path.join(tempfile.mkdtemp(prefix="spark-scan-"), "python")
        with open(exe, "w") as fh:
            base = shlex.quote(args.baseline)  # also the cwd: `python -m` puts the cwd first on sys.path
            fh.write(f'#!/bin/sh\ncd {base} && PYTHONPATH={base} exec {shlex.quote(sys.executable)} "$@"\n')
        os.chmod(exe, 0o755)
        before = os.environ.get("PYSPARK_PYTHON")
        os.environ["PYSPARK_PYTHON"] = exe
        spark, jvm_pid = session("pyrmq-bench-baseline", {"spark.pyspark.python": exe})
        listed(spark, jvm_pid, "baseline", args.baseline_measures)
        spark.stop()
        if before is None:
            del os.environ["PYSPARK_PYTHON"]
        else:
            os.environ["PYSPARK_PYTHON"] = before
    spark, jvm_pid = session("pyrmq-bench", {})
    if args.cold:
        spark_scan(spark, jvm_pid, "header-cold", header, cold=True)
    spark_scan(spark, jvm_pid, "header", header)
    for mib in (int(x) for x in args.split_sizes.split(",") if x):
        spark_scan(spark, jvm_pid, f"header-{mib}m", header, splitSize=str(mib << 20))
    for rows in (int(x) for x in args.batch_rows.split(",") if x):
        spark_scan(spark, jvm_pid, f"header-rows{rows}", header, splitSize=str(256 << 20), batchRows=str(rows))
    spark_scan(spark, jvm_pid, "header-ref", header, decoder="reference")
    spark_scan(spark, jvm_pid, "nocrc", header, checkCRC="false")
    spark_scan(spark, jvm_pid, "bodies", body_cols)
    for mib in (int(x) for x in args.body_batch_mib.split(",") if x):
        spark_scan(spark, jvm_pid, f"bodies-batch{mib}m", body_cols, batchBytes=str(mib << 20))
    spark_scan(spark, jvm_pid, "bodies-ref", body_cols, decoder="reference")
    if args.profile:
        spark_scan(spark, jvm_pid, "bodies-profiled", body_cols, profile=args.profile)
    spark.stop()
    if args.uds:  # Spark >= 4.1: the JVM and its Python workers over Unix domain sockets, not TCP
        spark, jvm_pid = session("pyrmq-bench-uds", {"spark.python.unix.domain.socket.enabled": "true"})
        listed(spark, jvm_pid, "uds", args.uds_measures)
        spark.stop()
    for spec in args.session:  # label|key=value,key=value|measures
        label, confs, measures = spec.split("|")
        conf = dict(kv.split("=", 1) for kv in confs.split(",") if kv)
        spark, jvm_pid = session(f"pyrmq-bench-{label}", conf)
        listed(spark, jvm_pid, label, measures)
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
