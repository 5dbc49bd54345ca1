"""`pyrmq admin` against pyrmq AND the Java broker 5.5.0, compared with the official mqadmin 5.5.0.

On each side (pyrmq NameServer + broker, Java NameServer + broker) one MqadminBatch JVM sets the
scene (topic, group, three messages, a live push consumer and a live producer) and runs the
official mqadmin read commands; while its clients stay up, the same commands run through
`python -m pyrmq admin` against the same servers, and the outputs are compared after
normalising what legitimately differs (live TPS figures, file names with the current time).
Then `pyrmq admin` alone changes things (reset offsets, skip, perm, broker config, delete group and
topic) on both sides, and bad input (unknown topic/group, bad offsets, malformed values, an
unreachable server) must fail the same way on both sides with exit 1, the brokers staying up.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support import java

pytestmark = [pytest.mark.compat, pytest.mark.java]

CLUSTER = "PyAdminCluster"
BROKER = "broker-pyadmin"
T, G, PG = "PyAdmTopic", "PyAdmGroup", "PyAdmProducer"
ROOT = Path(__file__).resolve().parents[2]

READS = [
    "clusterList",
    f"topicRoute -t {T}",
    f"topicStatus -t {T}",
    f"topicClusterList -t {T}",
    "topicList",
    "brokerStatus -b $B",
    "getBrokerConfig -b $B",
    f"consumerConnection -g {G}",
    f"producerConnection -g {PG} -t {T}",
    f"consumerStatus -g {G}",
    f"getConsumerConfig -g {G}",
    f"queryMsgByKey -t {T} -k K1",
    f"printMsg -t {T} -d true",
    f"printMsgByQueue -t {T} -a {BROKER} -i 0 -p true -d true",
    f"consumeMessage -t {T} -b {BROKER} -i 0 -o 1 -c 2",
    f"queryMsgByOffset -t {T} -b {BROKER} -i 0 -o 0",
    f"consumerProgress -g {G}",  # last: the consumer's offset commits (every second) have settled
]
SETUP = [
    f"updateTopic -b $B -t {T} -r 4 -w 4",
    f"updateSubGroup -b $B -g {G}",
    f"sendMessage -t {T} -p body-1 -k K1 -c tagA -b {BROKER} -i 0",
    f"sendMessage -t {T} -p body-2 -k K2 -c tagB -b {BROKER} -i 0",
    f"sendMessage -t {T} -p body-3 -k K3 -c tagA -b {BROKER} -i 0",
    f"@push-consumer {G} {T}",
    f"@producer {PG} {T}",
    f"@wait-consumed {G} 4 40000",
    "@sleep 8000",
]


def pyadmin(side, line: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    args = [*line.replace("$B", side.broker.addr).split(" "), "-n", side.ns.addr]
    return subprocess.run(
        [sys.executable, "-m", "pyrmq", "admin", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


class Side:
    def __init__(self, label, ns, broker, workdir: Path):
        self.label, self.ns, self.broker, self.workdir = label, ns, broker, workdir
        workdir.mkdir(parents=True, exist_ok=True)

    def start_batch(self, lines: list[str]) -> tuple[subprocess.Popen, Path]:
        """Official mqadmin lines in one JVM, left running (its clients stay up) until killed."""
        script = []
        for line in lines:
            line = line.replace("$B", self.broker.addr)
            script.append(line if line.startswith("@") else "\t".join([*line.split(" "), "-n", self.ns.addr]))
        (self.workdir / "script.txt").write_text("\n".join(script) + "\n")
        home = java.prepare_home(self.workdir / "home")
        argv = java.java_argv(
            java.CLIENT_MODULE["5.5.0"],
            "io.pyrmq.compat.scenarios.MqadminBatch",
            [str(self.workdir / "script.txt"), str(self.workdir / "out")],
            home,
            {"namesrv": self.ns.addr, "java.security.manager": "allow"},
            with_tests=True,
        )
        log = open(self.workdir / "batch.log", "w")
        p = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=java.java_env(home),
            cwd=self.workdir,
            stdin=subprocess.DEVNULL,
        )
        return p, self.workdir / "out"

    def official(self, out: Path, i: int) -> tuple[str, str, int]:
        return ((out / f"{i}.out").read_text(), (out / f"{i}.err").read_text(), int((out / f"{i}.exit").read_text()))


def wait_line(p: subprocess.Popen, out: Path, i: int, deadline_s: float, log: Path) -> None:
    end = time.monotonic() + deadline_s
    while not (out / f"{i}.exit").exists():
        assert p.poll() is None, f"MqadminBatch ended early:\n{log.read_text()[-4000:]}"
        assert time.monotonic() < end, f"MqadminBatch line {i} not done after {deadline_s}s:\n{log.read_text()[-4000:]}"
        time.sleep(0.3)


@pytest.fixture(scope="module")
def sides(pyrmq_namesrv, pyrmq_broker, java_namesrv, java_broker, tmp_path_factory):
    py = pyrmq_broker(pyrmq_namesrv.addr, name=BROKER, cluster=CLUSTER)
    jb = java_broker(java_namesrv.addr, name=BROKER, cluster=CLUSTER)
    base = tmp_path_factory.mktemp("pyrmq-admin")
    return [Side("pyrmq", pyrmq_namesrv, py, base / "pyrmq"), Side("java", java_namesrv, jb, base / "java")]


TPS = re.compile(r"\d+\.\d+\(")


def normalise(cmd: str, text: str) -> str:
    """What may differ between two runs a second apart on the same server."""
    if cmd == "clusterList":  # TPS, hours since the oldest message and disk use move by themselves
        return "\n".join(" ".join(ln.split()[:5]) for ln in text.splitlines())
    if cmd == "brokerStatus":  # values are live counters: keys only
        return "\n".join(sorted(ln.split(":")[0].strip() for ln in text.splitlines() if ":" in ln))
    if cmd == "getBrokerConfig":  # same key = value set; order of a ConcurrentHashMap may differ
        return "\n".join(sorted(text.splitlines()))
    if cmd == "topicList":  # the earlier printMsg's pull consumer (TOOLS_CONSUMER) registers its retry topic
        return "\n".join(sorted(t for t in text.splitlines() if t != "%RETRY%TOOLS_CONSUMER"))
    if cmd == "consumerProgress":  # the live consumer commits its retry queue's offset at its own pace
        text = "\n".join(ln for ln in text.splitlines() if not ln.startswith("%RETRY%"))
        return re.sub(r"Consume TPS: \S+", "Consume TPS: <tps>", text)
    if cmd == "consumerStatus":  # file names carry the current millis
        return re.sub(r"\b\d{13}/", "<now>/", text)
    return text


def run_side(side: Side) -> dict:
    p, out = side.start_batch(SETUP + READS + ["@sleep 120000"])
    try:
        wait_line(p, out, len(SETUP) + len(READS) - 1, 240, side.workdir / "batch.log")
        ours = {line: pyadmin(side, line, side.workdir) for line in READS}
    finally:
        p.kill()
        p.wait(timeout=30)
    official = {line: side.official(out, len(SETUP) + i) for i, line in enumerate(READS)}
    setup = {line: side.official(out, i) for i, line in enumerate(SETUP)}
    changes = run_changes(side)
    bad = run_bad(side)
    return {"ours": ours, "official": official, "setup": setup, "changes": changes, "bad": bad}


CHANGES = [
    f"resetOffsetByTime -g {G} -t {T} -s 0",
    f"skipAccumulatedMessage -g {G} -t {T}",
    f"updateTopicPerm -b $B -t {T} -p 4",
    f"updateTopicPerm -b $B -t {T} -p 6",
    "updateBrokerConfig -b $B -k flushIntervalCommitLog -v 600",
    "getBrokerConfig -b $B",
    f"sendMessage -t {T} -p body-4 -k K4 -b {BROKER} -i 1",
    f"topicStatus -t {T}",
    f"queryMsgByUniqueKey -t {T} -i UNIQ",
    f"queryMsgById -t {T} -i OFFSETID",
    f"deleteSubGroup -b $B -g {G}",
    f"deleteTopic -c {CLUSTER} -t {T}",
    "topicList",
]


def run_changes(side: Side) -> list[tuple[str, subprocess.CompletedProcess]]:
    res = []
    uniq = offset_id = ""
    for line in CHANGES:
        line = line.replace("UNIQ", uniq).replace("OFFSETID", offset_id)
        r = pyadmin(side, line, side.workdir)
        if line.startswith("sendMessage") and r.returncode == 0:
            uniq = r.stdout.split()[-1]
        if line.startswith("queryMsgByUniqueKey") and r.returncode == 0:
            m = re.search(r"Message Body Path:\s+\S+", r.stdout)
            assert m, r.stdout
        if line.startswith("topicStatus"):
            offset_id = ""
        res.append((line, r))
        if line.startswith("queryMsgByUniqueKey"):
            # the offset id of the same message, from a pull at queue 1 offset 0
            q = pyadmin(side, f"queryMsgByOffset -t {T} -b {BROKER} -i 1 -o 0", side.workdir)
            m = re.search(r"^OffsetID:\s+(\S+)", q.stdout, re.M)
            offset_id = m.group(1) if m else "NONE"
    return res


BAD = [
    "topicRoute -t NoSuchTopicXyz",
    "topicStatus -t NoSuchTopicXyz",
    "consumerProgress -g NoSuchGroupXyz",
    "consumerConnection -g NoSuchGroupXyz",
    "resetOffsetByTime -g PyBadGroup -t NoSuchTopicXyz -s now",
    "resetOffsetByTime -g PyBadGroup -t NoSuchTopicXyz -s not-a-time",
    f"queryMsgByOffset -t TBW102 -b {BROKER} -i 0 -o notanumber",
    "updateBrokerConfig -b $B -k brokerConfigPath -v /tmp/x",
    "updateBrokerConfig -b $B -k flushIntervalCommitLog -v not-a-number",
    "updateTopic -b $B -t PyBadTopic -r many",
    "updateTopic -t PyBadTopic",
    "topicList -x",
    "clusterList",
]


def run_bad(side: Side) -> list[tuple[str, subprocess.CompletedProcess]]:
    return [(line, pyadmin(side, line, side.workdir)) for line in BAD]


@pytest.fixture(scope="module")
def results(sides):
    with ThreadPoolExecutor(2) as ex:
        return dict(zip(("pyrmq", "java"), ex.map(run_side, sides), strict=False))


def show(label, line, official, ours) -> str:
    return (
        f"[{label}] {line}\n--- official mqadmin (exit {official[2]})\n{official[0]}\n{official[1][-1500:]}"
        f"\n--- pyrmq admin (exit {ours.returncode})\n{ours.stdout}\n{ours.stderr[-1500:]}"
    )


@pytest.mark.parametrize("line", READS)
def test_reads_match_official_mqadmin(results, line):
    cmd = line.split(" ")[0]
    for label in ("pyrmq", "java"):
        res = results[label]
        official, ours = res["official"][line], res["ours"][line]
        assert official[2] == 0 and "Exception" not in official[1], show(label, line, official, ours)
        assert ours.returncode == 0 and not ours.stderr.strip(), show(label, line, official, ours)
        assert normalise(cmd, ours.stdout) == normalise(cmd, official[0]), show(label, line, official, ours)


def test_changes_on_both_brokers(results, sides):
    out = {
        label: {line.split(" ")[0] + str(i): r for i, (line, r) in enumerate(results[label]["changes"])}
        for label in ("pyrmq", "java")
    }

    def dump(label):
        return "\n".join(f"--- {k} (exit {r.returncode})\n{r.stdout}\n{r.stderr}" for k, r in out[label].items())

    norms = {}
    for s in sides:
        o = out[s.label]
        assert all(r.returncode == 0 for r in o.values()), dump(s.label)
        rows = [ln.split() for ln in o["resetOffsetByTime0"].stdout.splitlines() if ln.startswith(BROKER)]
        assert sorted(rows) == [[BROKER, str(q), "0"] for q in range(4)], dump(s.label)
        rows = [ln.split() for ln in o["skipAccumulatedMessage1"].stdout.splitlines() if ln.startswith(BROKER)]
        assert [BROKER, "0", "4"] in rows, dump(s.label)
        assert "update topic perm from 6 to 4 in" in o["updateTopicPerm2"].stdout, dump(s.label)
        assert "perm=RW-" in o["updateTopicPerm3"].stdout, dump(s.label)
        assert o["updateBrokerConfig4"].stdout == f"update broker config success, {s.broker.addr}\n"
        assert re.search(r"^flushIntervalCommitLog\s+=\s+600$", o["getBrokerConfig5"].stdout, re.M), dump(s.label)
        assert "SEND_OK" in o["sendMessage6"].stdout, dump(s.label)
        status = [ln.split()[:4] for ln in o["topicStatus7"].stdout.splitlines() if ln.startswith(BROKER)]
        assert status[:2] == [[BROKER, "0", "0", "4"], [BROKER, "1", "0", "1"]], dump(s.label)
        for k in ("queryMsgByUniqueKey8", "queryMsgById9"):
            assert re.search(r"^Keys:\s+\[K4\]$", o[k].stdout, re.M), dump(s.label)
            assert re.search(r"^Queue ID:\s+1$", o[k].stdout, re.M), dump(s.label)
        assert f"delete subscription group [{G}] from broker [{s.broker.addr}] success." in o["deleteSubGroup10"].stdout
        assert f"delete topic [{T}] from NameServer success." in o["deleteTopic11"].stdout, dump(s.label)
        assert T not in o["topicList12"].stdout.split(), dump(s.label)
        norms[s.label] = {
            k: _norm_side(s, r.stdout)
            for k, r in o.items()
            if k.startswith(("reset", "skip", "updateTopicPerm", "updateBrokerConfig", "delete"))
        }
    assert norms["pyrmq"] == norms["java"], (dump("pyrmq"), dump("java"))


def _norm_side(side, text: str) -> str:
    text = text.replace(side.broker.addr, "<broker>").replace(side.ns.addr, "<namesrv>")
    text = re.sub(r"timestamp\(long\)\[\d+\]", "timestamp(long)[<ts>]", text)
    return "\n".join(sorted(text.splitlines()))


def error_kind(r: subprocess.CompletedProcess) -> tuple:
    text = r.stdout + r.stderr
    return (
        r.returncode,
        tuple(sorted(set(re.findall(r"CODE: (-?\d+)", text)))),
        tuple(sorted(set(re.findall(r"\b(\w+Exception)\b", text)))),
        text.startswith("usage:") or "usage:" in r.stdout,
    )


def test_bad_input_fails_the_same_way(results, sides):
    pyr, jav = results["pyrmq"]["bad"], results["java"]["bad"]
    for (line, a), (_, b) in zip(pyr[:-1], jav[:-1], strict=False):
        ka, kb = error_kind(a), error_kind(b)
        what = f"{line}\n--- pyrmq\n{a.stdout}\n{a.stderr}\n--- java\n{b.stdout}\n{b.stderr}"
        assert ka == kb, what
        if not line.startswith("updateBrokerConfig -b $B -k flushIntervalCommitLog"):
            assert a.returncode == 1, what  # malformed value: accepted and ignored by both brokers
        assert "Traceback" not in a.stderr + b.stderr, what
    for label, rows in (("pyrmq", pyr), ("java", jav)):
        line, last = rows[-1]
        assert last.returncode == 0 and BROKER in last.stdout, (label, last.stdout, last.stderr)
    for s in sides:
        assert s.broker.alive(), s.label
    usage = dict(pyr)["updateTopic -t PyBadTopic"]
    assert usage.stdout.startswith("usage: mqadmin updateTopic "), usage.stdout
    assert "Missing required option" in usage.stderr, usage.stderr


def test_unreachable_name_server_and_listing(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "pyrmq", "admin", "clusterList", "-n", "127.0.0.1:1"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert r.returncode == 1
    assert "RemotingConnectException: connect to 127.0.0.1:1 failed" in r.stderr, r.stderr
    r = subprocess.run([sys.executable, "-m", "pyrmq", "admin"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("The most commonly used mqadmin commands are:")
    assert len([ln for ln in r.stdout.splitlines() if ln.startswith("   ")]) == 29
