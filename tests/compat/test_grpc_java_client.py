"""The official 5.x gRPC SDK for Java (rocketmq-client-java) against pyrmq's gRPC endpoint (issue 15).

compat/java-tests/grpcclient/GrpcScenarios runs every step concurrently in one JVM (each step
has its own topic and group; the SDK's default configuration, SSL on, against each server's
default permissive port) and prints one JSON line per observation; each test here asserts
on one step, so a run tells exactly which steps a server passes:

- simple: Producer sends with tag, keys and a user property; SimpleConsumer receives, acks all
  but two; one comes back (deliveryAttempt 2) after its invisible duration (10 s, the Java
  proxy's minimum for ReceiveMessage), the other after ChangeInvisibleDuration gave it 2 s.
- fifo: one message group, received in send order (FIFO topic, orderly group).
- delay: deliveryTimestamp 3 s ahead (DELAY topic), not received before.
- tx: transactional producer: committed, rolled back, and left open; the broker's check-back
  reaches the SDK's TransactionChecker, which commits (TRANSACTION topic). Delivery is at least
  once: the Java broker sometimes checks a committed half message too (and delivers it twice).
- push: PushConsumer fails each message once; the redelivery succeeds.
- dlq: PushConsumer of a group with retryMaxTimes 1 fails every delivery: two deliveries, then
  the message is in %DLQ%<group> (read there by the 5.5.0 remoting consumer).
- send / recv, across protocols: what the SDK sends is consumed by the official 5.5.0 remoting
  push consumer, and what the 5.5.0 remoting producer sends is received by the SDK's
  SimpleConsumer (StoreScenarioTest send/consume in client5, before and after the SDK's JVM).

The reference side ("java", opt-in PYRMQ_COMPAT_REFERENCE=1) is the Java proxy 5.5.0 in local
mode (support.servers.JavaLocalProxy: ProxyStartup with a BrokerController in the same JVM)
with the Java NameServer; that run proves the scenario. Topics (with their message.type) and the
orderly group are created with the 5.5.0 mqadmin in one JVM, on either side.
"""

from __future__ import annotations

import json
import subprocess
import uuid

import pytest
from support import java
from support.servers import JavaLocalProxy

pytestmark = [pytest.mark.compat, pytest.mark.java]

BROKER = "grpc-java"
STEPS = ("simple", "fifo", "delay", "tx", "push", "dlq", "send", "recv")
TOPIC_TYPES = {
    "simple": "NORMAL",
    "fifo": "FIFO",
    "delay": "DELAY",
    "tx": "TRANSACTION",
    "push": "NORMAL",
    "dlq": "NORMAL",
    "send": "NORMAL",
    "recv": "NORMAL",
}
COUNT = 3
INVISIBLE_MS = 10_000
# Check-back once a second, for half messages older than 3 s (Java: 30 s and 6 s).
BROKER_CONF = {"transactionCheckInterval": 1000, "transactionTimeOut": 3000}
RUN_TIMEOUT = 150
TIMER_PRECISION_MS = 1000  # timerPrecisionMs, the same on both sides


@pytest.fixture(scope="module", params=["pyrmq", "java"])
def broker_kind(request):
    return request.param


def grpc_servers(broker_kind: str, request, tmp_path_factory, name: str, conf: dict):
    """The `server` fixture's body, shared by the SDK tests: (name server, broker) with a gRPC
    endpoint at broker.grpc_addr, pyrmq's or the Java proxy 5.5.0 in local mode."""
    if broker_kind == "pyrmq":
        ns = request.getfixturevalue("pyrmq_namesrv")
        broker = request.getfixturevalue("pyrmq_broker")(ns.addr, name=name, grpc_port=0, **conf)
        yield ns, broker
        return
    ns = request.getfixturevalue("java_namesrv")
    broker = JavaLocalProxy(ns.addr, tmp_path_factory.mktemp(f"{name}-proxy"), name=name, **conf)
    yield ns, broker
    if getattr(request.module, "_compat_failed", False):
        print(f"\n{broker!r}\n{broker.tail(60)}")
    broker.stop()


@pytest.fixture(scope="module")
def server(broker_kind, request, java_harness, tmp_path_factory):
    yield from grpc_servers(broker_kind, request, tmp_path_factory, BROKER, BROKER_CONF)


def create_resources(ns, broker, prefix: str, workdir) -> None:
    """The steps' topics with their message.type and their groups (FIFO: orderly). The Java proxy
    answers a consumer's Telemetry settings with INVALID_ARGUMENT "group not found" for a group
    the broker does not have: autoCreateSubscriptionGroup does not reach gRPC clients.

    Lines that fail (mqadmin's 3 s timeout on a busy machine) are run again, twice at most."""
    lines = [
        f"updateTopic -b $B -t {prefix}-{step} -r 2 -w 2 -a +message.type={kind}" for step, kind in TOPIC_TYPES.items()
    ]
    lines += [
        f"updateSubGroup -b $B -g {prefix}-{step}-g"
        + (" -o true" if kind == "FIFO" else "")
        + (" -r 1" if step == "dlq" else "")
        for step, kind in TOPIC_TYPES.items()
    ]
    for attempt in range(3):
        wd = workdir / f"try{attempt}"
        argv = java.mqadmin_batch_argv("5.5.0", lines, ns.addr, wd, B=broker.addr)
        r = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            env=java.java_env(wd / "home"),
            cwd=wd,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert r.returncode == 0 and "DONE" in r.stdout, f"{r.stdout}\n{r.stderr}"
        failed = [(line, i) for i, line in enumerate(lines) if "success" not in (wd / "out" / f"{i}.out").read_text()]
        if not failed:
            return
        lines = [line for line, _ in failed]
    line, i = failed[0]
    raise AssertionError(f"{line}: {(wd / 'out' / f'{i}.err').read_text()[-2000:]}")


def run_scenarios(endpoint: str, prefix: str, steps, home, timeout: float = RUN_TIMEOUT) -> dict[str, list[dict]]:
    """Run GrpcScenarios once; its events grouped by step (the whole output under "_out")."""
    argv = java.java_argv(
        "grpcclient",
        "io.pyrmq.compat.grpc.GrpcScenarios",
        [endpoint, prefix, *steps],
        home,
        {"count": COUNT, "stepTimeoutMs": 60_000},
    )
    r = subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, env=java.java_env(home), stdin=subprocess.DEVNULL
    )
    (home / "scenarios.out").write_text(f"exit {r.returncode}\n--- stdout ---\n{r.stdout}\n--- stderr ---\n{r.stderr}")
    events: dict[str, list[dict]] = {}
    for line in r.stdout.splitlines():
        if line.startswith("@@ "):
            ev = json.loads(line[3:])
            events.setdefault(ev["step"], []).append(ev)
    events["_out"] = [{"exit": r.returncode, "output": str(home / "scenarios.out"), "stderr": r.stderr[-3000:]}]
    return events


def remoting_case(method: str, spec: dict, ns_addr: str, wd) -> list[dict] | str:
    """StoreScenarioTest#<method> with the 5.5.0 remoting client: its JSON lines, or the failure."""
    wd.mkdir(parents=True, exist_ok=True)
    (wd / f"{method}.json").write_text(json.dumps(spec))
    out = wd / f"{method}.out"
    props = {"namesrv": ns_addr, "spec": wd / f"{method}.json", "out": out}
    try:
        java.run_junit("5.5.0", "StoreScenarioTest", method, props=props, home=java.prepare_home(wd / method))
    except java.JUnitFailed as e:
        return str(e)[-4000:]
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def remoting_send_spec(prefix: str) -> dict:
    """StoreScenarioTest#send's spec for the recv step: COUNT messages to <prefix>-recv with a tag,
    a key and a user property (shared by the Node.js SDK test)."""
    return {
        "group": f"{prefix}-rp",
        "sends": [
            {
                "messages": [
                    {
                        "topic": f"{prefix}-recv",
                        "tags": "R",
                        "keys": [f"rk-{i}"],
                        "props": {"color": f"r{i}"},
                        "bodyHex": f"recv-{i}".encode().hex(),
                    }
                ]
            }
            for i in range(COUNT)
        ],
    }


@pytest.fixture(scope="module")
def events(server, tmp_path_factory):
    """The remoting producer of the cross-protocol check, the SDK's JVM, then the remoting
    consumer reading what the SDK sent."""
    ns, broker = server
    wd = tmp_path_factory.mktemp("grpc-java-run")
    prefix = f"GJ{uuid.uuid4().hex[:6]}"
    create_resources(ns, broker, prefix, wd / "admin")
    home = java.prepare_home(wd / "home")
    remoting_send = remoting_send_spec(prefix)
    remoting_consume = {"group": f"{prefix}-rc", "topics": [f"{prefix}-send"], "expect": COUNT, "timeoutSec": 90}
    # One after the other: beside the SDK's fourteen clients on two busy cores, the name server
    # (pyrmq's and Java's alike) missed the remoting clients' 3 s timeouts.
    sent = remoting_case("send", remoting_send, ns.addr, wd / "remoting")
    evs = run_scenarios(broker.grpc_addr, prefix, STEPS, home)
    evs["_remoting_send"] = sent  # type: ignore[assignment]
    evs["_remoting_consume"] = remoting_case("consume", remoting_consume, ns.addr, wd / "remoting")  # type: ignore[assignment]
    dlq = {"group": f"{prefix}-dq", "topics": [f"%DLQ%{prefix}-dlq-g"], "expect": 1, "timeoutSec": 60}
    evs["_remoting_dlq"] = remoting_case("consume", dlq, ns.addr, wd / "remoting-dlq")  # type: ignore[assignment]
    return evs


def step_events(events, step: str) -> list[dict]:
    """The step's events; it must have finished without an exception."""
    evs = events.get(step, [])
    done = [e for e in evs if e["ev"] == "done"]
    assert done and done[0]["ok"], (step, done, events["_out"])
    return evs


def of(evs, kind: str) -> list[dict]:
    return [e for e in evs if e["ev"] == kind]


def test_send_receive_ack_redeliver(events):
    evs = step_events(events, "simple")
    sent = of(evs, "sent")
    assert len(sent) == COUNT and all(e["id"] for e in sent)
    first = {e["id"]: e for e in of(evs, "received") if e["attempt"] == 1}
    assert set(first) == {e["id"] for e in sent}, evs
    for e in sent:
        got = first[e["id"]]
        i = int(e["body"].rsplit("-", 1)[1])
        assert got["body"] == e["body"] and got["tag"] == "TagA", got
        assert set(got["keys"].split(",")) == {f"key-{i}", f"k2-{i}"}, got
        assert got["props"].get("color") == f"c{i}", got
    (withheld,) = of(evs, "withheld")
    (changed,) = of(evs, "changed")
    assert withheld["id"] == sent[-1]["id"] and changed["id"] == sent[-2]["id"]
    again = {e["id"]: e for e in of(evs, "received") if e["attempt"] > 1}
    # Only the two not acked come back, once each: one after its invisible duration, the other
    # after the 2 s ChangeInvisibleDuration gave it.
    assert sorted(again) == sorted([withheld["id"], changed["id"]]), again
    assert len([e for e in of(evs, "received") if e["attempt"] > 1]) == 2, evs
    assert again[withheld["id"]]["attempt"] == 2 and again[changed["id"]]["attempt"] == 2, again
    assert again[withheld["id"]]["now"] - withheld["now"] >= INVISIBLE_MS - 2000, (again, withheld)
    assert again[changed["id"]]["now"] - changed["now"] >= 1000, (again, changed)
    assert {e["id"] for e in of(evs, "acked")} == {e["id"] for e in sent}


def assert_fifo_in_order(evs: list[dict]) -> None:
    """One message group, received in send order (shared by the Go SDK test)."""
    sent = [e["body"] for e in of(evs, "sent")]
    got = of(evs, "received")
    assert len(sent) == 2 * COUNT
    assert [e["body"] for e in got] == sent, got
    assert {e["group"] for e in got} == {"mg-1"}


def assert_delayed(evs: list[dict]) -> None:
    """The delayed message keeps its timestamp and is not handed out early (shared by the Go SDK test)."""
    (sent,) = of(evs, "sent")
    got = of(evs, "received")
    assert [e["body"] for e in got] == [sent["body"]], got
    assert got[0]["deliveryTs"] == sent["deliverAt"], got
    # Held back, not handed out before its time (client and server share the clock) less the
    # timer's precision: Java rounds deliverMs down to a timerPrecisionMs (1 s) slot. deliverAt
    # was 3 s after the send began, so this still means held back at least 2 s.
    assert got[0]["now"] >= sent["deliverAt"] - TIMER_PRECISION_MS, (got, sent)


def test_fifo_message_group_in_order(events):
    assert_fifo_in_order(step_events(events, "fifo"))


def test_delay_delivery_timestamp(events):
    assert_delayed(step_events(events, "delay"))


def test_transaction_commit_rollback_checkback(events):
    evs = step_events(events, "tx")
    assert len(of(evs, "sent")) == 3
    # At least once: the Java broker may check (and so deliver) a committed half message again.
    assert {e["body"] for e in of(evs, "received")} == {"tx-check", "tx-commit"}, evs
    assert "tx-check" in {e["body"] for e in of(evs, "checked")}, evs


def test_push_consumer_retry(events):
    evs = step_events(events, "push")
    sent = {e["id"] for e in of(evs, "sent")}
    assert len(sent) == COUNT
    assert {e["id"] for e in of(evs, "failed")} == sent, evs
    assert {e["id"] for e in of(evs, "consumed")} == sent, evs
    retried = [e for e in of(evs, "received") if e["attempt"] == 2]
    assert {e["id"] for e in retried} == sent, evs


def test_grpc_sent_remoting_consumed(events):
    """What the SDK sent (tag, keys, user property) as the 5.5.0 remoting push consumer sees it."""
    sent = of(step_events(events, "send"), "sent")
    got = events["_remoting_consume"]
    assert isinstance(got, list), got
    assert sorted(bytes.fromhex(m["bodyHex"]).decode() for m in got) == sorted(e["body"] for e in sent), got
    assert {m["msgId"] for m in got} == {e["id"] for e in sent}, got
    for m in got:
        i = int(bytes.fromhex(m["bodyHex"]).decode().rsplit("-", 1)[1])
        assert m["tags"] == "X" and m["keys"] == f"key-{i}", m
        assert m["properties"]["color"] == f"c{i}", m


def test_remoting_sent_grpc_received(events):
    """What the 5.5.0 remoting producer sent as the SDK's SimpleConsumer sees it."""
    sent = events["_remoting_send"]
    assert isinstance(sent, list) and len(sent) == COUNT, sent
    got = of(step_events(events, "recv"), "received")
    assert {e["id"] for e in got} == {r["msgId"] for r in sent}, (got, sent)
    for e in got:
        i = int(e["body"].rsplit("-", 1)[1])
        assert e["body"] == f"recv-{i}" and e["tag"] == "R" and e["keys"] == f"rk-{i}", e
        assert e["props"].get("color") == f"r{i}", e


def test_push_consumer_dead_letter(events):
    evs = step_events(events, "dlq")
    (sent,) = of(evs, "sent")
    got = of(evs, "received")
    assert [e["attempt"] for e in got] == [1, 2] and {e["id"] for e in got} == {sent["id"]}, got
    dead = events["_remoting_dlq"]
    assert isinstance(dead, list), dead
    assert [bytes.fromhex(m["bodyHex"]).decode() for m in dead] == [sent["body"]], dead
    assert dead[0]["msgId"] == sent["id"], dead
