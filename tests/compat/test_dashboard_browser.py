"""The official RocketMQ Dashboard 2.1.0 clicked through in a headless chromium, against pyrmq and
against the Java 5.5.0 broker, page by page; what each page shows must be the same.

Both sides get the same seed through the official mqadmin and client (MqadminBatch: topics of
each message type, a consumer group with an online push consumer, a producer, keyed and traced
messages), kept online while the browser runs. One dashboard serves both sides: it is switched from
one name server to the other with the OPS page's own call. Each step's visible text (the page, or
the open dialog) is normalised (addresses, message ids, times) and compared line by line; a line
that differs fails the test unless docs/admin.md lists it, with its reason, in the table under
"Dashboard pages: known differences". Screenshots of every step are kept under the test's
tmp directory (printed on failure).
"""

from __future__ import annotations

import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support import java
from support.dashboard import Dashboard

ROOT = Path(__file__).resolve().parents[2]
CLUSTER, BROKER = "DefaultCluster", "broker-a"
TOPICS = {"DashNormal": "NORMAL", "DashFifo": "FIFO", "DashDelay": "DELAY", "DashTx": "TRANSACTION"}
GROUP, PRODUCER_GROUP, TRACE_GROUP = "DashGroup", "DashProducer", "DashTraceProducer"

# Seed lines (MqadminBatch): the last line keeps the clients online while the browser runs.
SEED = [
    *[
        f"updateTopic -c {CLUSTER} -t {t} -a +message.type={kind}" + (" -o true" if kind == "FIFO" else "")
        for t, kind in TOPICS.items()
    ],
    f"updateSubGroup -c {CLUSTER} -g {GROUP}",
    # queues fixed, so both brokers hold the same queue contents
    f"sendMessage -t DashNormal -p first-body -k dash-key-1 -c tagA -b {BROKER} -i 1",
    f"sendMessage -t DashNormal -p second-body -k dash-key-2 -c tagB -b {BROKER} -i 2",
    f"@push-consumer {GROUP} DashNormal",
    f"@producer {PRODUCER_GROUP} DashNormal",
    f"@trace-producer {TRACE_GROUP} DashNormal RMQ_SYS_TRACE_TOPIC dash-trace-key",
    # every message consumed and committed (the Java broker sometimes hands the second one out
    # only after a minute: a wait for the consumer's own count would race it)
    f"@wait-committed {GROUP} DashNormal 4 150000",
]
STAY_ONLINE = "@sleep 1800000"

TOPIC_FILTER = {"fill": {"css": ".ant-layout-content input[type=text]", "value": "DashNormal"}}


def _topic_modal(name: str, button: str) -> dict:
    return {"name": name, "goto": "/topic", "actions": [TOPIC_FILTER, {"click": button}], "after": "escape"}


#: Every page and the dialogs it opens; "compare": "keys" compares only the first column of a
#: key/value table (runtime figures differ between any two brokers).
STEPS: list[dict] = [
    {"name": "ops", "goto": "/ops"},
    {"name": "proxy", "goto": "/proxy"},
    {"name": "dashboard", "goto": "/"},
    {"name": "cluster", "goto": "/cluster"},
    {
        "name": "cluster-status",
        "goto": "/cluster",
        "actions": [{"click": "Status"}],
        "after": "escape",
        "compare": "keys",
    },
    {
        "name": "cluster-config",
        "goto": "/cluster",
        "actions": [{"click": "Config"}],
        "after": "escape",
        "compare": "keys",
    },
    {"name": "topic-list", "goto": "/topic"},
    {
        "name": "topic-every-type",
        "goto": "/topic",
        "actions": [{"click": label} for label in ("FIFO", "TRANSACTION", "UNSPECIFIED", "RETRY", "DLQ", "SYSTEM")],
    },
    _topic_modal("topic-status", "Status"),
    _topic_modal("topic-router", "Router"),
    _topic_modal("topic-consumer-manage", "Consumer Manage"),
    _topic_modal("topic-config", "Topic Config"),
    _topic_modal("topic-send-form", "Send Massage"),
    _topic_modal("topic-reset-offset-form", "Reset Consumer Offset"),
    _topic_modal("topic-skip-accumulate-form", "Skip Message Accumulate"),
    {"name": "topic-add-form", "goto": "/topic", "actions": [{"click": "Add / Update"}], "after": "escape"},
    {"name": "consumer", "goto": "/consumer"},
    *[
        {
            "name": f"consumer-{button.lower().replace(' ', '-')}",
            "goto": "/consumer",
            "actions": [{"click": button}],
            "after": "escape",
        }
        for button in ("CLIENT", "CONSUME DETAIL", "Config")
    ],
    {"name": "producer", "goto": "/producer"},
    {
        "name": "producer-search",
        "goto": "/producer",
        "actions": [
            {"select": {"value": "DashNormal"}},
            {"fill": {"css": ".ant-layout-content input[type=text]", "value": PRODUCER_GROUP}},
            {"click": "SEARCH"},
        ],
    },
    {"name": "message", "goto": "/message"},
    {
        "name": "message-by-key",
        "goto": "/message",
        "actions": [
            {"click": "Message Key"},
            {"select": {"value": "DashNormal"}},
            {"fill": {"css": ".ant-layout-content input.ant-input", "value": "dash-key-1"}},
            {"click": "Search"},
        ],
    },
    {"name": "dlq", "goto": "/dlqMessage"},
    {"name": "trace", "goto": "/messageTrace"},
    {"name": "acl", "goto": "/acl"},
]

ADDR = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{2,5})?\b")
HEX_ID = re.compile(r"\b[0-9A-F]{32}\b")
DATE = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d{3})?")
EPOCH_MS = re.compile(r"\b1\d{12}\b")
RUNTIME = re.compile(r"\[ \d+ days, \d+ hours, \d+ minutes, \d+ seconds \]")
STORE_PATH = re.compile(r"(?<=_)/\S+")  # commitLogDiskRatio_<the store's path>


def normalise(text: str) -> list[str]:
    text = RUNTIME.sub("<runtime>", text)
    text = STORE_PATH.sub("<path>", text)
    text = DATE.sub("<time>", text)
    text = EPOCH_MS.sub("<ms>", text)
    text = HEX_ID.sub("<id>", text)
    text = ADDR.sub("<addr>", text)
    return [line.strip() for line in text.splitlines() if line.strip()]


def keys_of(text: str) -> list[str]:
    return sorted(
        {STORE_PATH.sub("<path>", line.split("\t", 1)[0].strip()) for line in text.splitlines() if "\t" in line}
    )


def known_differences() -> list[tuple[str, re.Pattern[str], str]]:
    """(step, line pattern, reason) rows of docs/admin.md's "Dashboard pages: known differences"."""
    doc = (ROOT / "docs" / "admin.md").read_text()
    section = doc.split("### Dashboard pages: known differences", 1)
    assert len(section) == 2, "docs/admin.md has no 'Dashboard pages: known differences' table"
    rows = []
    for line in section[1].split("\n### ", 1)[0].splitlines():
        m = re.match(r"\|\s*`([^`]+)`\s*\|\s*`([^`]+)`\s*\|\s*(.+?)\s*\|$", line)
        if m:
            rows.append((m[1], re.compile(m[2].replace("\\|", "|")), m[3]))  # a table cell escapes its |
    return rows


class Side:
    """One broker group (name server + broker named broker-a) and its seed clients."""

    def __init__(self, label: str, ns, broker, workdir: Path):
        self.label, self.ns, self.broker, self.workdir = label, ns, broker, workdir
        self.seed_proc: subprocess.Popen | None = None

    def seed(self) -> None:
        """Run SEED in one client JVM left online; returns once every seed line has finished."""
        wd = self.workdir / "seed"
        argv = java.mqadmin_batch_argv("5.5.0", [*SEED, STAY_ONLINE], self.ns.addr, wd)
        self.seed_log = (wd / "batch.log").open("w")
        self.seed_proc = subprocess.Popen(
            argv, stdout=self.seed_log, stderr=subprocess.STDOUT, env=java.java_env(wd / "home"), cwd=wd
        )
        last = wd / "out" / f"{len(SEED) - 1}.exit"
        deadline = time.monotonic() + 300
        while not last.exists():
            assert self.seed_proc.poll() is None, f"[{self.label}] seed batch exited:\n{self._outputs(wd)}"
            assert time.monotonic() < deadline, f"[{self.label}] seed batch did not finish:\n{self._outputs(wd)}"
            time.sleep(0.5)
        bad = [i for i in range(len(SEED)) if (wd / "out" / f"{i}.exit").read_text().strip() != "0"]
        assert not bad, f"[{self.label}] seed lines failed {bad}:\n{self._outputs(wd)}"

    @staticmethod
    def _outputs(wd: Path) -> str:
        outs = sorted((wd / "out").glob("*.out")) if (wd / "out").exists() else []
        return "\n".join(f"{p.name}: {p.read_text()[-400:]}" for p in outs) + (wd / "batch.log").read_text()[-2000:]

    def stop(self) -> None:
        if self.seed_proc is not None and self.seed_proc.poll() is None:
            self.seed_proc.kill()
            self.seed_proc.wait(10)
            self.seed_log.close()


@pytest.fixture(scope="module")
def sides(pyrmq_namesrv, pyrmq_broker, java_namesrv, java_broker, tmp_path_factory):
    base = tmp_path_factory.mktemp("dashboard")
    # the Java harness sets storePathCommitLog (null, so unlisted, when unset): the same here
    store = base / "pyrmq-store"
    py = pyrmq_broker(
        pyrmq_namesrv.addr, store_dir=store, name=BROKER, cluster=CLUSTER, storePathCommitLog=store / "commitlog"
    )
    jb = java_broker(java_namesrv.addr, name=BROKER, cluster=CLUSTER)
    both = [Side("pyrmq", pyrmq_namesrv, py, base / "pyrmq"), Side("java", java_namesrv, jb, base / "java")]
    try:
        with ThreadPoolExecutor(2) as ex:
            list(ex.map(Side.seed, both))
        yield both
    finally:
        for side in both:
            side.stop()


@pytest.fixture(scope="module")
def dashboard(sides, tmp_path_factory):
    d = Dashboard(tmp_path_factory.mktemp("dashboard-app"), sides[0].ns.addr)
    yield d
    d.stop()


@pytest.mark.timeout(1800)
def test_every_page_shows_the_same(sides, dashboard, tmp_path):
    shown = {}
    for side in sides:
        dashboard.use_namesrv(side.ns.addr)
        shown[side.label] = dashboard.drive(STEPS, tmp_path / side.label)
    allowed = known_differences()
    problems = []
    for step, py, jv in zip(STEPS, shown["pyrmq"], shown["java"], strict=True):
        name = step["name"]
        for side, rec in (("pyrmq", py), ("java", jv)):
            if rec["error"]:
                problems.append(f"{name} [{side}]: step failed: {rec['error']}")
            failed_calls = [
                c["path"]
                for c in rec["calls"]
                if c["status"] != 200 or (c["body"] or {}).get("status") not in (0, None)
            ]
            if failed_calls and side == "pyrmq" and not _failed_on_java_too(failed_calls, jv):
                problems.append(f"{name} [pyrmq]: API calls failed only against pyrmq: {failed_calls}")
        if step.get("compare") == "keys":
            a, b = keys_of(py["text"]), keys_of(jv["text"])
        else:
            a, b = normalise(py["text"]), normalise(jv["text"])
        only_py = [line for line in a if line not in b]
        only_java = [line for line in b if line not in a]
        for line, where in [*((x, "pyrmq") for x in only_py), *((x, "java") for x in only_java)]:
            if not any(s == name and p.search(line) for s, p, _ in allowed):
                problems.append(f"{name}: only on {where}: {line!r}")
    assert not problems, (
        "dashboard pages differ (screenshots under " + str(tmp_path) + "):\n" + "\n".join(problems[:80])
    )


def _failed_on_java_too(paths: list[str], java_record: dict) -> bool:
    java_failed = {
        c["path"].split("?")[0]
        for c in java_record["calls"]
        if c["status"] != 200 or (c["body"] or {}).get("status") not in (0, None)
    }
    return all(p.split("?")[0] in java_failed for p in paths)
