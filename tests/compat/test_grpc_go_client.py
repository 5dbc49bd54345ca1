"""The official 5.x gRPC SDK for Go (rocketmq-clients golang/v5 v5.1.4) against pyrmq's gRPC endpoint
(issue 15).

compat/go-tests/grpcsdk (bin/grpcsdk, built by compat/go-tests/build.sh) runs every step concurrently
in one process (each step has its own topic and group) and prints one JSON line per observation, in
the same shape as the Java SDK's GrpcScenarios; each test here asserts on one step:

- simple: Producer sends with tag, keys and a user property; SimpleConsumer receives, acks all but
  one; the one not acked comes back (deliveryAttempt 2) after its invisible duration (10 s).
- fifo: one message group, received in send order (FIFO topic, orderly group).
- delay: delivery timestamp 3 s ahead (DELAY topic), not received before.

The SDK runs with its defaults: it dials TLS (its switch `golang.EnableSsl`, env var
`rocketmq.client.enableSsl`, default true), which both servers' default permissive ports take.
The reference side ("java", opt-in PYRMQ_COMPAT_REFERENCE=1) is the Java proxy 5.5.0 in local mode
with the Java NameServer, as in test_grpc_java_client; topics and groups are made the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from compat.test_grpc_java_client import (
    BROKER_CONF,
    COUNT,
    INVISIBLE_MS,
    assert_delayed,
    assert_fifo_in_order,
    create_resources,
    of,
    step_events,
)
from support import probe
from support.ports import free_port
from support.pyrmq_proc import PyrmqBroker
from support.servers import JavaLocalProxy

from pyrmq.protocol.bodies.namesrv import TopicRouteData
from pyrmq.protocol.codes import RequestCode, ResponseCode

pytestmark = [pytest.mark.compat, pytest.mark.go, pytest.mark.java]

GO_TESTS = Path(__file__).resolve().parents[2] / "compat" / "go-tests"
BINARY = GO_TESTS / "bin" / "grpcsdk"
STEPS = ("simple", "fifo", "delay")
RUN_TIMEOUT = 120


@pytest.fixture(scope="module", params=["pyrmq", "java"])
def broker_kind(request):
    return request.param


@pytest.fixture(scope="module")
def grpcsdk() -> Path:
    """bin/grpcsdk, built (or confirmed up to date) by compat/go-tests/build.sh; no Go fails here."""
    r = subprocess.run([str(GO_TESTS / "build.sh")], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"compat/go-tests/build.sh exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    assert os.access(BINARY, os.X_OK), f"{BINARY} missing after build.sh"
    return BINARY


@pytest.fixture(scope="module")
def server(broker_kind, request, java_harness, tmp_path_factory):
    """(name server, broker) with a gRPC endpoint at broker.grpc_addr."""
    if broker_kind == "pyrmq":
        ns = request.getfixturevalue("pyrmq_namesrv")
        broker = request.getfixturevalue("pyrmq_broker")(ns.addr, name="grpc-go", grpc_port=0, **BROKER_CONF)
        yield ns, broker
        return
    ns = request.getfixturevalue("java_namesrv")
    broker = JavaLocalProxy(ns.addr, tmp_path_factory.mktemp("go-proxy"), name="grpc-go", **BROKER_CONF)
    yield ns, broker
    if getattr(request.module, "_compat_failed", False):
        print(f"\n{broker!r}\n{broker.tail(60)}")
    broker.stop()


def run_scenarios(
    binary: Path, endpoint: str, prefix: str, workdir: Path, steps: tuple[str, ...] = STEPS
) -> dict[str, list[dict]]:
    """Run bin/grpcsdk once; its events grouped by step (the whole output under "_out")."""
    argv = [str(binary), f"-count={COUNT}", f"-invisible={INVISIBLE_MS}ms", "-step-timeout=60s", endpoint, prefix]
    env = {**os.environ, "HOME": str(workdir), "rocketmq.client.logRoot": str(workdir / "logs")}
    r = subprocess.run(
        [*argv, *steps], capture_output=True, text=True, timeout=RUN_TIMEOUT, env=env, stdin=subprocess.DEVNULL
    )
    out = workdir / "grpcsdk.out"
    out.write_text(f"exit {r.returncode}\n--- stdout ---\n{r.stdout}\n--- stderr ---\n{r.stderr}")
    events: dict[str, list[dict]] = {}
    for line in r.stdout.splitlines():
        if line.startswith("@@ "):
            ev = json.loads(line[3:])
            events.setdefault(ev["step"], []).append(ev)
    events["_out"] = [{"exit": r.returncode, "output": str(out), "stderr": r.stderr[-3000:]}]
    return events


@pytest.fixture(scope="module")
def events(grpcsdk, server, tmp_path_factory):
    ns, broker = server
    wd = tmp_path_factory.mktemp("grpc-go-run")
    prefix = f"GG{uuid.uuid4().hex[:6]}"
    create_resources(ns, broker, prefix, wd / "admin")
    return run_scenarios(grpcsdk, broker.grpc_addr, prefix, wd)


def test_send_receive_ack_redeliver(events):
    assert_simple(step_events(events, "simple"))


def assert_simple(evs: list[dict]) -> None:
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
    withheld = of(evs, "withheld")
    assert len(withheld) == 1 and withheld[0]["id"] == sent[-1]["id"]
    again = [e for e in of(evs, "received") if e["attempt"] > 1]
    # Only the message not acked comes back, once, after its invisible duration.
    assert [e["id"] for e in again] == [sent[-1]["id"]], again
    assert again[0]["attempt"] == 2
    assert again[0]["now"] - withheld[0]["now"] >= INVISIBLE_MS - 2000, (again, withheld)
    assert {e["id"] for e in of(evs, "acked")} == {e["id"] for e in sent}


def test_fifo_message_group_in_order(events):
    assert_fifo_in_order(step_events(events, "fifo"))


def test_delay_delivery_timestamp(events):
    evs = step_events(events, "delay")
    assert_delayed(evs)
    (sent,) = of(evs, "sent")
    (got,) = of(evs, "received")
    assert got["now"] - sent["now"] >= 1500, (got, sent)


def test_simple_step_through_one_of_two_brokers(grpcsdk, pyrmq_namesrv, tmp_path_factory):
    """Two pyrmq brokers of one cluster on 127.0.0.1 and 127.0.0.2 sharing the gRPC port (the Java
    proxy's local mode: the route gives each broker its registered host with that port). The SDK,
    given the first broker's endpoint, sends to both brokers' queues and receives from both."""
    ns = pyrmq_namesrv
    wd = tmp_path_factory.mktemp("grpc-go-cluster")
    prefix = f"GC{uuid.uuid4().hex[:6]}"
    topic, group = f"{prefix}-simple", f"{prefix}-simple-g"
    port = free_port()
    brokers: list[PyrmqBroker] = []
    try:
        for i, host in enumerate(("127.0.0.1", "127.0.0.2")):
            brokers.append(
                PyrmqBroker(ns.addr, wd / f"b{i}", name=f"grpc-go-c{i}", grpc_port=port, host=host, bindAddress=host)
            )
        for b in brokers:
            ext = {
                "topic": topic,
                "readQueueNums": "2",
                "writeQueueNums": "2",
                "perm": "6",
                "attributes": "+message.type=NORMAL",
            }
            assert probe.request(b.addr, RequestCode.UPDATE_AND_CREATE_TOPIC, ext).code == ResponseCode.SUCCESS
            body = json.dumps({"groupName": group}).encode()
            r = probe.request(b.addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body=body)
            assert r.code == ResponseCode.SUCCESS
        deadline = time.monotonic() + 20
        while len(TopicRouteData.decode(probe.topic_route(ns.addr, topic).body or b"{}").queue_datas or []) < 2:
            assert time.monotonic() < deadline, "the topic is not on both brokers in the route"
            time.sleep(0.2)
        events = run_scenarios(grpcsdk, brokers[0].grpc_addr, prefix, wd, ("simple",))
        assert_simple(step_events(events, "simple"))
        stored = [
            sum(
                int(
                    probe.request(b.addr, RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": str(q)}).ext_fields[
                        "offset"
                    ]
                )
                for q in range(2)
            )
            for b in brokers
        ]
        # 3 messages round robin over 4 queues, two on each broker: both brokers got some
        assert sum(stored) == COUNT and all(n > 0 for n in stored), stored
    finally:
        for b in brokers:
            b.stop()
