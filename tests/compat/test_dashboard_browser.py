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

import json
import os
import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from compat.test_acl_java import AUTH_CONF
from compat.test_acl_java import _home as acl_home
from support import java, probe
from support.dashboard import Dashboard, DashboardError, api
from support.pyrmq_proc import PyrmqBroker
from support.servers import JavaBroker, JavaNamesrv, namesrv_under_test

from pyrmq.auth.signature import sign_request
from pyrmq.protocol.command import RemotingCommand

ROOT = Path(__file__).resolve().parents[2]
CLUSTER, BROKER = "DefaultCluster", "broker-a"
TOPICS = {"DashNormal": "NORMAL", "DashFifo": "FIFO", "DashDelay": "DELAY", "DashTx": "TRANSACTION"}
GROUP, PRODUCER_GROUP, TRACE_GROUP = "DashGroup", "DashProducer", "DashTraceProducer"
DLQ_TOPIC, DLQ_GROUP = "DashDlq", "DashDlqGroup"  # its consumer fails every message: one lands in the DLQ

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
    f"updateTopic -c {CLUSTER} -t {DLQ_TOPIC}",
    f"sendMessage -t {DLQ_TOPIC} -p dlq-body -k dash-dlq-key -b {BROKER} -i 0",
    f"@dlq-consumer {DLQ_GROUP} {DLQ_TOPIC}",
    f"@wait-consumed {DLQ_GROUP} 1 60000",
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

#: Topics the Add form creates, one per message type (DashAddDelay is deleted again at the end).
ADDED = {"DashAddNormal": "NORMAL", "DashAddFifo": "FIFO", "DashAddDelay": "DELAY", "DashAddTx": "TRANSACTION"}
ADDED_GROUP = "DashAddGroup"
CONTENT_INPUT = ".ant-layout-content input[type=text]"
CHECKBOX = {"NORMAL": "NORMAL", "FIFO": "FIFO", "DELAY": "Delay", "TRANSACTION": "TRANSACTION"}  # the filters' labels
MSG_ID = "[0-9A-F]{32,}"  # 32 hex digits, 56 when the sending JVM has an IPv6 address (the dashboard's)


def _filter(value: str) -> dict:
    return {"fill": {"css": CONTENT_INPUT, "value": value}}


def _time_range() -> list[dict]:
    """Begin 2020, End 2030 through the pickers: the Message and DLQ pages open with both at today's
    midnight (docs/admin.md), so a search without this finds nothing on any broker."""
    pickers = ".ant-layout-content .ant-picker input"
    return [
        {"fill": {"css": pickers, "nth": 0, "value": "2020-01-01 00:00:00"}},
        {"click": "OK"},
        {"fill": {"css": pickers, "nth": 1, "value": "2030-01-01 00:00:00"}},
        {"click": "OK"},
    ]


def _form(label: str, value: str) -> dict:
    return {"fill": {"label": label, "value": value}}


#: The actions that change state, in one pass after the read-only steps (the same on both sides):
#: each step's final page or dialog is compared like the pages above, and test_every_page_shows_the_same
#: then reads the brokers' own state with the probe.
ACTION_STEPS: list[dict] = [
    *[
        {
            "name": f"act-topic-add-{kind.lower()}",
            "goto": "/topic",
            "actions": [
                {"click": "Add / Update"},
                _form("topicName", topic),
                {"select": {"nth": 2, "option": kind}},
                # one queue for the transactional topic, so the send below has one place to go
                *([_form("writeQueueNums", "1"), _form("readQueueNums", "1")] if kind == "TRANSACTION" else []),
                {"capture": "form", "values": True},
                {"click": "Commit", "inDialog": True},
                _filter("DashAdd"),
            ],
        }
        for topic, kind in ADDED.items()
    ],
    {
        "name": "act-topic-added-by-type",
        "goto": "/topic",
        "actions": [
            _filter("DashAdd"),
            {"capture": "NORMAL"},
            {"click": "Topic Config"},
            {"capture": "NORMAL config", "values": True},
            {"close": True},
            {"click": "NORMAL"},
            *[
                action
                for kind in ("FIFO", "DELAY", "TRANSACTION")
                for action in (
                    {"click": CHECKBOX[kind]},
                    {"capture": kind},
                    {"click": "Topic Config"},
                    {"capture": f"{kind} config", "values": True},
                    {"close": True},
                    {"click": CHECKBOX[kind]},
                )
            ],
            {"click": "UNSPECIFIED"},
        ],
    },
    {
        "name": "act-topic-config-commit",
        "goto": "/topic",
        "actions": [
            _filter("DashAddNormal"),
            {"click": "Topic Config"},
            _form("writeQueueNums", "1"),
            _form("readQueueNums", "1"),
            _form("perm", "6"),
            {"click": "Commit", "inDialog": True},
            {"click": "Topic Config"},
        ],
        "values": True,
        "after": "escape",
    },
    {
        "name": "act-topic-send",
        "goto": "/topic",
        "actions": [
            _filter("DashAddNormal"),
            {"click": "Send Massage"},
            _form("Tag", "tagS"),
            _form("Key", "dash-send-key"),
            _form("Message Body", "sent from the dashboard"),
            {"click": "Commit", "inDialog": True},
        ],
        "after": "escape",
    },
    {
        # the dashboard sends to a TRANSACTION topic with a transactional producer (half message, commit)
        "name": "act-topic-send-transaction",
        "goto": "/topic",
        "actions": [
            _filter("DashAddTx"),
            {"click": "NORMAL"},
            {"click": "TRANSACTION"},
            {"click": "Send Massage"},
            _form("Tag", "tagT"),
            _form("Key", "dash-tx-key"),
            _form("Message Body", "a transaction from the dashboard"),
            {"click": "Commit", "inDialog": True},
        ],
        "after": "escape",
    },
    {
        "name": "act-topic-reset-offset",
        "goto": "/topic",
        "actions": [
            _filter("DashNormal"),
            {"click": "Reset Consumer Offset"},
            {"select": {"nth": 0, "option": GROUP, "close": True}},
            {"fill": {"css": ".ant-modal-content .ant-picker input", "value": "2020-01-01 00:00:00"}},
            {"click": "OK"},
            {"capture": "form"},
            {"click": "RESET", "inDialog": True},
        ],
        "after": "escape",
    },
    {
        "name": "act-topic-skip-accumulate",
        "goto": "/topic",
        "actions": [
            _filter("DashNormal"),
            {"click": "Skip Message Accumulate"},
            {"select": {"nth": 0, "option": GROUP, "close": True}},
            {"click": "Commit", "inDialog": True},
        ],
        "after": "escape",
    },
    {
        "name": "act-topic-delete",
        "goto": "/topic",
        "actions": [
            _filter("DashAddDelay"),
            {"click": "NORMAL"},
            {"click": "Delay"},
            {"capture": "before"},
            {"click": "Delete"},
            {"click": "Yes"},
            _filter("DashAdd"),
            {"click": "FIFO"},
            {"click": "TRANSACTION"},
        ],
    },
    {
        "name": "act-consumer-add",
        "goto": "/consumer",
        "actions": [
            {"click": "Add / Update"},
            _form("Group Name", ADDED_GROUP),
            {"select": {"nth": 0, "option": CLUSTER, "close": True}},
            {"select": {"nth": 1, "option": BROKER, "close": True}},
            _form("Max Retries", "3"),
            _form("Retry Queues", "2"),
            {"capture": "form", "values": True},
            {"click": "Commit", "inDialog": True},
            {"click": "REFRESH"},  # the group list is the dashboard's cache: its REFRESH re-reads the brokers
            _filter("Dash"),
        ],
    },
    {
        "name": "act-consumer-config",
        "goto": "/consumer",
        "actions": [_filter(ADDED_GROUP), {"click": "Config"}],
        "values": True,
        "after": "escape",
    },
    {
        "name": "act-consumer-refresh",
        "goto": "/consumer",
        "actions": [_filter(GROUP), {"click": "REFRESH", "nth": 1}],
    },
    {
        "name": "act-consumer-delete",
        "goto": "/consumer",
        "actions": [
            _filter(ADDED_GROUP),
            {"click": "Delete"},
            {"click": BROKER, "inDialog": True},
            {"capture": "dialog"},
            {"click": "Confirm Delete", "inDialog": True},
            {"click": "REFRESH"},
            _filter("Dash"),
        ],
    },
    {
        "name": "act-message-by-topic",
        "goto": "/message",
        "actions": [
            {"select": {"value": "DashNormal"}},
            *_time_range(),
            {"click": "Search"},
            {"capture": "list"},
            {"click": "Message Detail"},
        ],
        "after": "escape",
    },
    {
        "name": "act-message-resend",
        "goto": "/message",
        "actions": [
            {"select": {"value": "DashNormal"}},
            *_time_range(),
            {"click": "Search"},
            {"click": "Message Detail"},
            {"click": "Resend Message", "inDialog": True},
            {"capture": "result", "notices": True},
        ],
        "after": "escape",
    },
    {
        "name": "act-message-transaction-by-key",
        "goto": "/message",
        "actions": [
            {"click": "Message Key"},
            {"select": {"value": "DashAddTx"}},
            {"fill": {"css": ".ant-layout-content input.ant-input", "value": "dash-tx-key"}},
            {"click": "Search"},
        ],
    },
    {
        "name": "act-message-sent-by-key",
        "goto": "/message",
        "actions": [
            {"click": "Message Key"},
            {"select": {"value": "DashAddNormal"}},
            {"fill": {"css": ".ant-layout-content input.ant-input", "value": "dash-send-key"}},
            {"click": "Search"},
        ],
    },
    {
        "name": "act-message-by-id",
        "goto": "/message",
        "actions": [
            {"click": "Message ID"},
            {"select": {"value": "DashAddNormal"}},
            {"fill": {"css": ".ant-layout-content input.ant-input", "valueFrom": MSG_ID}},
            {"click": "Search"},
        ],
        "after": "escape",
    },
    {
        "name": "act-dlq-source",
        "goto": "/message",
        "actions": [
            {"click": "Message Key"},
            {"select": {"value": DLQ_TOPIC}},
            {"fill": {"css": ".ant-layout-content input.ant-input", "value": "dash-dlq-key"}},
            {"click": "Search"},
        ],
    },
    {
        # by the id the last step showed: the DLQ page's own time pickers never reach its query, and
        # its Detail/Resend buttons send msgId=undefined (docs/admin.md), so the list is what is compared
        "name": "act-dlq-by-id",
        "goto": "/dlqMessage",
        "actions": [
            {"click": "Message ID"},
            {"select": {"value": DLQ_GROUP}},
            {"fill": {"css": ".ant-layout-content input.ant-input", "valueFrom": MSG_ID}},
            {"click": "Search"},
        ],
    },
    {
        "name": "act-trace-by-key",
        "goto": "/messageTrace",
        "actions": [
            {"click": "Message Key"},
            {"select": {"nth": 1, "value": "DashNormal"}},
            {"fill": {"css": ".ant-layout-content input.ant-input", "value": "dash-trace-key"}},
            {"click": "Search"},
        ],
    },
    {
        "name": "act-trace-by-id",
        "goto": "/messageTrace",
        "actions": [
            {"click": "Message ID"},
            {"select": {"nth": 1, "value": "DashNormal"}},
            {"fill": {"css": ".ant-layout-content input.ant-input", "valueFrom": MSG_ID}},
            {"click": "Search"},
            {"capture": "list"},
            {"click": "Message Trace Detail"},
        ],
    },
]
#: The default run takes these (a topic added with a message type and its config, a transactional
#: send through the form, a message search by time with its tracking and a resend to the online
#: consumer): each side's pass costs ~6 s a step. PYRMQ_DASHBOARD_ACTIONS=1 runs every action.
DEFAULT_ACTIONS = {"act-topic-add-transaction", "act-topic-send-transaction", "act-message-resend"}
ALL_ACTIONS = os.environ.get("PYRMQ_DASHBOARD_ACTIONS") == "1"
STEPS += [step for step in ACTION_STEPS if ALL_ACTIONS or step["name"] in DEFAULT_ACTIONS]

ADDR = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{2,5})?\b")
HEX_ID = re.compile(r"\b[0-9A-F]{32}(?:[0-9A-F]{24})?\b")
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
def dashboard(pyrmq_namesrv, tmp_path_factory):
    """The module's dashboard, signing with the ACL brokers' admin key: the brokers without auth
    ignore the signature, so one start serves the unauthenticated pages and the ACL page."""
    d = Dashboard(
        tmp_path_factory.mktemp("dashboard-app"), pyrmq_namesrv.addr, access_key=ACL_ADMIN[0], secret_key=ACL_ADMIN[1]
    )
    yield d
    d.stop()


# --- ACL 2.0 brokers (test_acl_java's AUTH_CONF and plain_acl.yml) seen through the dashboard ---
# Its credentials are fixed for its lifetime (rocketmq.config.accessKey/secretKey). The module's
# `dashboard` signs with the admin's key, so the default run drives the ACL page with it
# (test_acl_page_add_modify_delete, before the unauthenticated pages). The key test starts a dashboard
# per key (admin, wrong secret, unknown key) and comes before the module's `dashboard` fixture
# (port 8082) exists: opt-in (PYRMQ_SOAK=1).

GET_TOPIC_CONFIG, GET_SUBSCRIPTIONGROUP_CONFIG = 351, 352
AUTH_LIST_USER, AUTH_LIST_ACL = 3005, 3010
ACL_ADMIN = ("admin_user", "admin_secret_1")
ACL_WRONG = ("admin_user", "not_the_secret")
ACL_UNKNOWN = ("dash_no_such_user", "any_secret_1")  # an access key no broker knows
ACL_NAMES = {"topic": "DashAddNormal", "denied": "DashAclDenied", "group": GROUP, "denied_group": "DashAclDeniedG"}
ACL_TOPIC = "DashAddNormal"


def _on_acl_topic(name: str, button: str) -> dict:
    return {"name": name, "goto": "/topic", "actions": [_filter(ACL_TOPIC), {"click": button}], "after": "escape"}


_ACTIONS = {step["name"]: step for step in ACTION_STEPS}
#: Cluster, Topic list, a topic's Status and Route, Consumer list, and Send Message; the first
#: step adds the topic (the admin's dashboard creates it, the wrong secret's is refused).
_ADD = _ACTIONS["act-topic-add-normal"]
ACL_KEY_STEPS: list[dict] = [
    # one queue, so the message sent below has one place to go on both brokers
    {
        **_ADD,
        "actions": [
            *_ADD["actions"][:3],
            _form("writeQueueNums", "1"),
            _form("readQueueNums", "1"),
            *_ADD["actions"][3:],
        ],
    },
    {"name": "cluster", "goto": "/cluster"},
    {"name": "topic-list", "goto": "/topic"},
    _on_acl_topic("topic-status", "Status"),
    _on_acl_topic("topic-router", "Router"),
    {"name": "consumer", "goto": "/consumer"},
    {**_ACTIONS["act-topic-send"], "actions": [*_ACTIONS["act-topic-send"]["actions"], {"capture": "sent"}]},
]


@pytest.fixture(scope="module")
def acl_sides(tmp_path_factory):
    """A name server and an ACL 2.0 broker (broker-a in DefaultCluster) for pyrmq and for Java 5.5.0,
    apart from the module's unauthenticated pair; both sides start at once."""
    base = tmp_path_factory.mktemp("dashboard-acl")
    started: list = []

    def start(label: str, new_ns, new_broker) -> Side:
        ns = new_ns(base / f"{label}-namesrv")
        started.append(ns)
        wd = base / f"{label}-broker"
        home = acl_home(wd, ACL_NAMES)
        extra = {"rocketmqHome": str(home)} if label == "pyrmq" else {}
        broker = new_broker(ns.addr, wd, name=BROKER, cluster=CLUSTER, **extra, **AUTH_CONF)
        started.append(broker)
        return Side(label, ns, broker, base / label)

    try:
        with ThreadPoolExecutor(2) as ex:
            futures = [
                ex.submit(start, "pyrmq", namesrv_under_test, PyrmqBroker),
                ex.submit(start, "java", JavaNamesrv, JavaBroker),
            ]
            sides = [f.result() for f in futures]
        yield sides
    finally:
        for server in reversed(started):
            server.stop()


def _drive_with_key(acl_sides, key: tuple[str, str], steps: list[dict], workdir: Path) -> dict[str, list[dict]]:
    d = Dashboard(workdir / "app", acl_sides[0].ns.addr, access_key=key[0], secret_key=key[1])
    try:
        shown = {}
        for side in acl_sides:
            d.use_namesrv(side.ns.addr)
            shown[side.label] = d.drive(steps, workdir / side.label)
        return shown
    finally:
        d.stop()


def signed(addr: str, code: int, fields: dict[str, str], key: tuple[str, str] = ACL_ADMIN) -> probe.Reply:
    """One request signed as AclClientRPCHook signs it (pyrmq's own signer), read with the probe."""
    cmd = RemotingCommand.request(code, dict(fields), b"")
    sign_request(cmd, *key)
    return probe.request(addr, code, cmd.ext_fields)


def _failed_calls(record: dict) -> list[tuple[str, str]]:
    return [
        (c["path"].split("?")[0], str((c["body"] or {}).get("errMsg")))
        for c in record["calls"]
        if c["status"] != 200 or (c["body"] or {}).get("status") not in (0, None)
    ]


def refused_key_problems(shown: dict[str, list[dict]], remark: str) -> list[str]:
    """With a wrong secret or an unknown access key: the brokers refuse (CODE 16 and `remark`),
    nothing is sent, and pyrmq's pages, failed steps (the rows' buttons are missing from the empty
    lists) and refused calls equal Java's."""
    problems = [p for p in differences(ACL_KEY_STEPS, shown) if "step failed" not in p]
    seen = {}
    for label, records in shown.items():
        seen[label] = [
            (rec["name"], rec["error"], sorted({(path, ADDR.sub("<addr>", msg)) for path, msg in _failed_calls(rec)}))
            for rec in records
        ]
        dumped = json.dumps(seen[label])
        if "CODE: 16" not in dumped or remark not in dumped:
            problems.append(f"[{label}] no call was refused with CODE 16 {remark!r}: {seen[label]}")
        if any("SEND_OK" in rec["text"] for rec in records):
            problems.append(f"[{label}] a message was sent with a refused key")
    if seen["pyrmq"] != seen["java"]:
        problems.append(f"failed steps or refused calls differ: pyrmq {seen['pyrmq']} != java {seen['java']}")
    return problems


@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_acl_brokers_right_key_and_wrong_secret(acl_sides, tmp_path):
    """The dashboard with the admin's access key works on every page against both ACL brokers (the
    topic it adds and the message it sends reach each broker); with a wrong secret, and with an
    access key no broker knows, the same pages show the brokers' refusal (CODE 16 with Java's
    remark); pyrmq's pages equal Java's in all three runs."""
    admin = _drive_with_key(acl_sides, ACL_ADMIN, ACL_KEY_STEPS, tmp_path / "admin")
    problems = differences(ACL_KEY_STEPS, admin)
    for side in acl_sides:
        sent = admin[side.label][-1]["text"]
        if "SEND_OK" not in sent:
            problems.append(f"[{side.label}] the admin's Send Message did not show SEND_OK: {sent!r}")
        r = signed(side.broker.addr, GET_TOPIC_CONFIG, {"topic": ACL_TOPIC})
        if r.code != probe.SUCCESS:
            problems.append(f"[{side.label}] {ACL_TOPIC} not on the broker: {r.code} {r.remark}")
    assert not problems, f"admin key (screenshots under {tmp_path}):\n" + "\n".join(problems[:80])

    wrong = _drive_with_key(acl_sides, ACL_WRONG, ACL_KEY_STEPS, tmp_path / "wrong")
    problems = refused_key_problems(wrong, "check signature failed.")
    assert not problems, f"wrong secret (screenshots under {tmp_path}):\n" + "\n".join(problems[:80])

    unknown = _drive_with_key(acl_sides, ACL_UNKNOWN, ACL_KEY_STEPS, tmp_path / "unknown")
    problems = refused_key_problems(unknown, f"User:{ACL_UNKNOWN[0]} is not found.")
    assert not problems, f"unknown access key (screenshots under {tmp_path}):\n" + "\n".join(problems[:80])


ACL_USER, ACL_PASSWORD, ACL_RESOURCE = "dash_user1", "dash_pw_1", "DashAclTopic"
ACL_NEW_PASSWORD = "dash_pw_2"
ACL_SEARCH = {"fill": {"placeholder": "Search ...", "value": ACL_USER, "enter": True}}
PERMISSIONS_TAB = {"click": "ACL Permissions"}
QUICK = {"settle": 0}  # typing and picking in a form: no round trip to wait for
NO_DIALOG = {"noDialog": True, **QUICK}  # after a form's Confirm/OK: the list it reloads, not the closing form


def _quick(action: dict) -> dict:
    return {**action, **QUICK}


#: The ACL page (2.1.0's ACL Management, on the cluster's first broker). Each form's result is
#: captured with the list it reloads (the users, or the policy list's refusal: docs/security.md);
#: Modify reopens the form on the one row the search keeps.
ACL_STEPS: list[dict] = [
    {
        "name": "acl-user-add-modify",
        "goto": "/acl",
        "actions": [
            {"click": "Add User"},
            _quick(_form("Username", ACL_USER)),
            _quick(_form("Password", ACL_PASSWORD)),
            _quick({"select": {"nth": 0, "option": "Normal"}}),
            _quick({"select": {"nth": 1, "option": "enable"}}),
            {"capture": "add form", "values": True, **QUICK},
            {"click": "Confirm", "inDialog": True},
            NO_DIALOG,
            {"capture": "added", "notices": True},
            ACL_SEARCH,
            {"click": "Modify"},
            {"capture": "modify form", "values": True, **QUICK},
            _quick(_form("Password", ACL_NEW_PASSWORD)),
            _quick({"select": {"nth": 0, "option": "Super"}}),
            {"capture": "modified form", "values": True, **QUICK},
            {"click": "Confirm", "inDialog": True},
            NO_DIALOG,
            {"capture": "modified", "notices": True},
            ACL_SEARCH,
            {"click": "View"},  # the passwords in clear: the new one
        ],
    },
    {
        "name": "acl-policy-add-modify",
        "goto": "/acl",
        "actions": [
            PERMISSIONS_TAB,
            {"click": "Add ACL Permission"},
            _quick({"fill": {"placeholder": "Please input name", "value": ACL_USER}}),
            _quick({"select": {"nth": 1, "option": "Custom"}}),
            _quick({"clickCss": ".ant-modal-content .ant-tag"}),  # the resource field's "add" tag
            _quick({"select": {"nth": 2, "option": "Topic"}}),
            _quick(
                {"fill": {"css": ".ant-modal-content .ant-space input.ant-input", "value": ACL_RESOURCE, "enter": True}}
            ),
            _quick({"select": {"nth": 2, "option": "Pub", "close": True}}),
            # a source IP: the page's list copies each entry's sourceIps and fails on a policy
            # without any (a null list: on both brokers, docs/security.md)
            _quick({"select": {"nth": 3, "option": "127.0.0.1", "close": True}}),
            _quick({"select": {"nth": 4, "option": "Allow"}}),
            {"capture": "add form", **QUICK},
            {"click": "OK", "inDialog": True},
            NO_DIALOG,
            {"capture": "added", "notices": True},
            ACL_SEARCH,
            {"click": "Modify"},
            {"capture": "modify form", **QUICK},
            # Sub besides Pub, a second source IP, and Deny (updateAcl: the entry of that resource replaced)
            _quick({"select": {"nth": 2, "option": "Sub", "close": True}}),
            _quick({"select": {"nth": 3, "option": "0.0.0.0", "close": True}}),
            _quick({"select": {"nth": 4, "option": "Deny"}}),
            {"capture": "modified form", **QUICK},
            {"click": "OK", "inDialog": True},
            NO_DIALOG,
            {"capture": "modified", "notices": True},
            ACL_SEARCH,
        ],
    },
]


def _delete_row(name: str, *before: dict) -> dict:
    """List (after `before`), search the dashboard's user, Delete its one row, Yes, list again."""
    actions = [*before, {"click": "Confirm"}, ACL_SEARCH, {"capture": "before"}, {"click": "Delete"}]
    actions += [{"click": "Yes"}, {"capture": "result", "notices": True}, {"click": "Confirm"}]
    return {"name": name, "goto": "/acl", "actions": actions}


#: Then the policy and the user are deleted again from their lists (the search keeps one row).
ACL_DELETE_STEPS: list[dict] = [_delete_row("acl-delete-policy", PERMISSIONS_TAB), _delete_row("acl-delete-user")]


def acl_state(addr: str) -> dict:
    """The dashboard's user and its policy as the broker itself answers AUTH_LIST_USER and
    AUTH_LIST_ACL filtered by the user's name (signed with the admin's key): (code, body). Not
    AUTH_GET_USER/GET_ACL: Java's answer those from a cache that keeps a miss for a while."""
    state = {}
    for what, code, fields in (
        ("user", AUTH_LIST_USER, {"filter": ACL_USER}),
        ("acl", AUTH_LIST_ACL, {"subjectFilter": ACL_USER}),
    ):
        r = signed(addr, code, fields)
        state[what] = (r.code, json.loads(r.body) if r.body else None)
    return state


def acl_outcome_problems(modified: dict, deleted: dict | None = None) -> list[str]:
    """What pyrmq's broker must hold after the page's Modify buttons, and after its Deletes."""
    problems = []
    users = modified["user"][1] or []
    want_user = {"username": ACL_USER, "password": ACL_NEW_PASSWORD, "userType": "Super", "userStatus": "enable"}
    if [{k: u.get(k) for k in want_user} for u in users] != [want_user]:
        problems.append(f"the user after Modify is not {want_user}: {modified['user']}")
    entries = [e for acl in modified["acl"][1] or [] for p in acl["policies"] for e in p["entries"]]
    want_entry = {
        "resource": f"Topic:{ACL_RESOURCE}",
        "actions": ["Pub", "Sub"],
        "sourceIps": ["127.0.0.1", "0.0.0.0"],
        "decision": "Deny",
    }
    if [{k: e.get(k) for k in want_entry} for e in entries] != [want_entry]:
        problems.append(f"the policy after Modify is not {want_entry}: {modified['acl']}")
    if deleted is not None and deleted != {"user": (probe.SUCCESS, None), "acl": (probe.SUCCESS, None)}:
        problems.append(f"what the page deleted is still on pyrmq's broker: {deleted}")
    return problems


def _wait_acl_broker(label: str, timeout: float = 60) -> None:
    """Until the dashboard's cached cluster names an ACL broker: its user list answers (the
    unauthenticated brokers have no user metadata and refuse it)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            api("/acl/users.query?brokerName=broker-a&clusterName=DefaultCluster")
            return
        except (DashboardError, OSError) as e:
            assert time.monotonic() < deadline, f"[{label}] the dashboard never reached the ACL broker: {e}"
            time.sleep(1)


#: The page's Delete buttons (ACL_DELETE_STEPS) run with PYRMQ_SOAK=1 only: the default run keeps
#: within its time budget with the forms and the Modify buttons.
ACL_DELETES = os.environ.get("PYRMQ_SOAK") == "1"


@pytest.mark.timeout(900)
def test_acl_page_add_modify_delete(acl_sides, dashboard, tmp_path):
    """The ACL Management page against the ACL 2.0 brokers with the admin's key: a user added and
    modified (password, type), a policy added and modified (actions, source IPs, decision), and with
    PYRMQ_SOAK=1 both deleted; the pages equal Java's, and each broker's own answers after the Modify
    buttons (and after the Deletes) equal Java's and hold what the forms set."""
    steps = ACL_STEPS + (ACL_DELETE_STEPS if ACL_DELETES else [])
    shown: dict[str, list[dict]] = {}
    state: dict[str, list[dict]] = {}
    for side in acl_sides:
        dashboard.use_namesrv(side.ns.addr)
        _wait_acl_broker(side.label)
        shown[side.label] = dashboard.drive(ACL_STEPS, tmp_path / side.label / "modify")
        state[side.label] = [acl_state(side.broker.addr)]
        if ACL_DELETES:
            shown[side.label] += dashboard.drive(ACL_DELETE_STEPS, tmp_path / side.label / "delete")
            state[side.label].append(acl_state(side.broker.addr))
    problems = differences(steps, shown)
    if state["pyrmq"] != state["java"]:
        problems.append(f"broker state: pyrmq {state['pyrmq']} != java {state['java']}")
    problems += acl_outcome_problems(*state["pyrmq"])
    assert not problems, f"ACL page (screenshots under {tmp_path}):\n" + "\n".join(problems[:80])


@pytest.mark.timeout(1800)
def test_every_page_shows_the_same(sides, dashboard, tmp_path):
    shown = {}
    for side in sides:
        dashboard.use_namesrv(side.ns.addr)
        shown[side.label] = dashboard.drive(STEPS, tmp_path / side.label)
    problems = differences(STEPS, shown)
    state = {side.label: broker_state(side.broker.addr) for side in sides}
    if state["pyrmq"] != state["java"]:
        problems.append(f"broker state after the actions: pyrmq {state['pyrmq']} != java {state['java']}")
    assert not problems, (
        "dashboard pages differ (screenshots under " + str(tmp_path) + "):\n" + "\n".join(problems[:80])
    )


def differences(steps: list[dict], shown: dict[str, list[dict]]) -> list[str]:
    """Failed steps, API calls that failed only against pyrmq, and lines shown on one side only that
    docs/admin.md does not list."""
    allowed = known_differences()
    problems = []
    for step, py, jv in zip(steps, shown["pyrmq"], shown["java"], strict=True):
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
    return problems


def _failed_on_java_too(paths: list[str], java_record: dict) -> bool:
    java_failed = {
        c["path"].split("?")[0]
        for c in java_record["calls"]
        if c["status"] != 200 or (c["body"] or {}).get("status") not in (0, None)
    }
    return all(p.split("?")[0] in java_failed for p in paths)


GROUP_FIELDS = ("groupName", "retryQueueNums", "retryMaxTimes", "consumeEnable", "consumeMessageOrderly")
TOPIC_FIELDS = ("topicName", "readQueueNums", "writeQueueNums", "perm", "order", "topicSysFlag", "attributes")


def broker_state(addr: str) -> dict:
    """What the broker itself holds after the actions: the added topics' configs (DashAddDelay deleted)
    and the added group (deleted), read with the probe, not through the dashboard."""
    state: dict = {}
    for topic in ADDED:
        r = probe.request(addr, GET_TOPIC_CONFIG, {"topic": topic})
        body = json.loads(r.text) if r.code == probe.SUCCESS else {}
        state[topic] = (r.code, {k: body.get(k) for k in TOPIC_FIELDS})
    r = probe.request(addr, GET_SUBSCRIPTIONGROUP_CONFIG, {"group": ADDED_GROUP})
    body = json.loads(r.text) if r.code == probe.SUCCESS else {}
    state[ADDED_GROUP] = (r.code, {k: body.get(k) for k in GROUP_FIELDS})
    return state
