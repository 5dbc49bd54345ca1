"""The official LMQ examples (rocketmq-example 5.5.0, org.apache.rocketmq.example.lmq) run unchanged.

LMQProducer sends 128 messages to TopicLMQParent, each dispatched to the light queues %LMQ%123 and
%LMQ%456 (INNER_MULTI_DISPATCH); LMQPullConsumer pulls 32 from %LMQ%123 starting at its min
offset; LMQPushConsumer (group CID_LMQ_1) consumes %LMQ%123 from the first offset, with a route
it builds itself; LMQPushPopConsumer switches CID_LMQ_POP_1 to POP with the admin API
(setMessageRequestMode) and pops %LMQ%456.

The classes hard-code the name server 127.0.0.1:9876, the broker 127.0.0.1:10911, broker-a and
DefaultCluster: their setNamesrvAddr call wins over the NAMESRV_ADDR variable and the
rocketmq.namesrv.addr property, so nothing points them elsewhere. The whole scenario therefore
runs in a private network namespace (support/netns.py), where those ports are free whatever
else runs on the machine. Against pyrmq by default; against the Java 5.5.0 name server and
broker with PYRMQ_COMPAT_REFERENCE=1 (that run proves the scenario). Both assert the same output.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from support import netns, pyrmq_proc, servers
from support.java import java_argv, java_env
from support.procs import ManagedProcess

pytestmark = [pytest.mark.compat, pytest.mark.java]

NAMESRV_PORT = 9876
BROKER_PORT = 10911
EXAMPLES = "org.apache.rocketmq.example.lmq."
COUNT = 128  # LMQProducer's loop
PULL_BATCH = 32  # LMQPullConsumer's one pullBlockIfNotFound
LMQ_CONF = {"enableLmq": "true", "enableMultiDispatch": "true"}
#: The push consumers' first rebalance can run before their first heartbeat reached the broker (the
#: examples learn the broker's address after start(); the heartbeat timer fires 1 s after start):
#: the broker then knows no consumer of the group, and the next rebalance comes 20 s later. A client
#: property (not a code change) makes that 1 s.
REBALANCE_EVERY_SECOND = {"rocketmq.client.rebalance.waitInterval": 1000}

#: One MessageExt as MessageExt#toString prints it (the examples print whole messages).
MESSAGE = re.compile(
    r"MessageExt \[brokerName=(?P<broker>[^,]*), queueId=(?P<qid>\d+), storeSize=(?P<size>\d+), "
    r"queueOffset=(?P<qoff>\d+), .*?msgId=(?P<msg_id>[0-9A-F]+), commitLogOffset=(?P<phy>\d+), .*?Message\{topic='(?P<topic>[^']*)', flag=\d+, properties=\{(?P<props>[^}]*)\}"
)
SEND_OK = re.compile(r"SendResult \[sendStatus=SEND_OK, .*?queueOffset=\d+")


@pytest.fixture(params=["pyrmq", "java"])
def broker_kind(request):
    return request.param


def _props(text: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in text.split(", ") if "=" in item)


def _messages(log: Path) -> list[dict]:
    out = []
    for m in MESSAGE.finditer(log.read_text(errors="replace")):
        props = _props(m["props"])
        out.append(
            {
                "broker": m["broker"],
                "topic": m["topic"],
                "queue_id": int(m["qid"]),
                "queue_offset": int(m["qoff"]),
                "store_size": int(m["size"]),
                "msg_id": m["msg_id"],
                "commit_log_offset": int(m["phy"]),
                "key": props.get("KEYS"),
                "dispatch": props.get("INNER_MULTI_DISPATCH"),
                "lmq_offsets": props.get("INNER_MULTI_QUEUE_OFFSET"),
                "max_offset": props.get("MAX_OFFSET"),  # set by pulls: the queue's max offset
            }
        )
    return out


def _example(name: str, workdir: Path) -> ManagedProcess:
    home = workdir / "home"
    home.mkdir(parents=True, exist_ok=True)
    argv = java_argv("client5", EXAMPLES + name, [], home, REBALANCE_EVERY_SECOND)
    return ManagedProcess(name, argv, workdir / f"{name}.out", env=java_env(home), cwd=workdir)


MAIN_DIED = 'Exception in thread "main"'


def _wait(proc: ManagedProcess, done, timeout: float) -> bool:
    """Until done(); False when the example's main thread died first (its other threads live on)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if done():
            return True
        if MAIN_DIED in proc.log.read_text(errors="replace"):
            return False
        assert proc.alive(), f"{proc.name} exited ({proc.proc.returncode})\n{proc.tail(80)}"
        time.sleep(0.2)
    raise AssertionError(f"{proc.name}: not done after {timeout}s\n{proc.tail(80)}")


def _offsets_file(store: Path) -> dict:
    """config/lmqConsumerOffset.json (fastjson writes queue ids as bare numbers: `{0:128}`)."""
    text = (store / "config" / "lmqConsumerOffset.json").read_text()
    return json.loads(re.sub(r"([{,]\s*)(\d+):", r'\1"\2":', text))


def _keys(msgs: list[dict]) -> set[int]:
    return {int(m["key"].removeprefix("Key")) for m in msgs}


def _servers(kind: str, tmp_path: Path, monkeypatch, conf: dict | None = None) -> list:
    """Name server on 9876, broker-a of DefaultCluster on 10911 (the examples' addresses);
    `conf` instead of LMQ_CONF for other examples (test_acl_client_example.py)."""
    broker_conf = LMQ_CONF if conf is None else conf
    monkeypatch.setattr(servers, "free_port", lambda: NAMESRV_PORT)
    monkeypatch.setattr(servers, "broker_port", lambda: BROKER_PORT)
    monkeypatch.setattr(pyrmq_proc, "broker_port", lambda: BROKER_PORT)
    if kind == "pyrmq":
        ns = servers.PyrmqNamesrv(tmp_path / "namesrv")
        started = [ns]
        started.append(pyrmq_proc.PyrmqBroker(ns.addr, tmp_path / "broker", name="broker-a", **broker_conf))
    else:
        ns = servers.JavaNamesrv(tmp_path / "namesrv")
        started = [ns]
        started.append(servers.JavaBroker(ns.addr, tmp_path / "broker", name="broker-a", **broker_conf))
    assert ns.addr == f"127.0.0.1:{NAMESRV_PORT}" and started[1].addr == f"127.0.0.1:{BROKER_PORT}"
    return started


def _finish(proc: ManagedProcess, done, timeout: float = 90) -> list[dict]:
    """Wait until `done(messages)`, then stop the example (consumers never exit by themselves).

    Run a second time when its main thread died on its first request for the light queue's route,
    before it consumed anything: RemotingSendRequestException, the Java client's channel to the
    name server closed under it (seen with the Java name server on a loaded machine)."""
    for attempt in (1, 2):
        try:
            if _wait(proc, lambda p=proc: done(_messages(p.log)), timeout):
                time.sleep(0.5)  # anything more (a second pull, a redelivery) would show up now
                return _messages(proc.log)
            assert attempt == 1 and not _messages(proc.log), proc.tail(80)
        finally:
            proc.stop()
        proc = _example(proc.name, proc.log.parent.parent / "again")
    raise AssertionError("unreachable")


def test_lmq_examples(broker_kind, java_harness, tmp_path, monkeypatch):
    (tmp_path / "namesrv").mkdir()
    (tmp_path / "broker").mkdir()
    started: list = []
    with netns.private_loopback():
        try:
            started += _servers(broker_kind, tmp_path, monkeypatch)
            producer = _example("LMQProducer", tmp_path / "producer")
            started.append(producer)
            assert producer.proc.wait(120) == 0, producer.tail(80)
            sent = SEND_OK.findall(producer.log.read_text(errors="replace"))
            # The example prints and skips a failed send (a 3 s timeout on a loaded machine, mostly
            # the first one); such a message may still have been stored. What counts is what the
            # light queue holds: its max offset, which every pulled message carries.
            assert len(sent) >= COUNT - 8, producer.tail(80)

            # The push consumer first, alone: its first heartbeat timer fires 1 s after start() and
            # reaches the broker only if the example has learnt the broker's address by then (else the
            # next one comes 30 s later and, until then, the broker knows no consumer of the group).
            # Then the other two, while it consumes.
            first = _example("LMQPushConsumer", tmp_path / "LMQPushConsumer")
            started.append(first)
            _wait(first, lambda: "Consumer Started." in first.log.read_text(errors="replace"), 60)
            examples = {n: _example(n, tmp_path / n) for n in ("LMQPullConsumer", "LMQPushPopConsumer")}
            started += examples.values()
            pull = _finish(examples["LMQPullConsumer"], lambda ms: len(ms) >= PULL_BATCH)
            stored = int(pull[0]["max_offset"])
            assert len(sent) <= stored <= COUNT
            push = _finish(first, lambda ms: len(_keys(ms)) >= stored)
            pop = _finish(examples["LMQPushPopConsumer"], lambda ms: len(_keys(ms)) >= stored)
        finally:
            for p in reversed(started):
                p.stop()

    # What the broker persisted at shutdown (enableLmq: lmqConsumerOffset.json). The pull offsets
    # are the next offset of each group's last pull; the push consumers may also have pulled their
    # (empty) retry topics by then. POP committed the popped offsets (the commit of the push
    # consumer's own offsets depends on its 5 s timer, so it is not asserted).
    offsets = _offsets_file(tmp_path / "broker" / "store")
    pulled = offsets["pullOffsetTable"]
    retries = {k: pulled.pop(k) for k in list(pulled) if k.startswith("%RETRY%")}
    assert pulled == {"%LMQ%123@CID_LMQ_PULL_1": {"0": PULL_BATCH}, "%LMQ%123@CID_LMQ_1": {"0": stored}}
    assert set(retries) <= {"%RETRY%CID_LMQ_1@CID_LMQ_1", "%RETRY%CID_LMQ_POP_1@CID_LMQ_POP_1"}
    assert all(v == {"0": 0} for v in retries.values()), retries
    assert offsets["offsetTable"]["%LMQ%456@CID_LMQ_POP_1"] == {"0": stored}
    assert offsets["lmqOffsetTable"] == {}  # no %LMQ% group here

    # Every message is in both light queues, at the same offset in each; the offsets are 0..stored-1.
    offset_of = {}
    for name, msgs in (("pull", pull), ("push", push), ("pop", pop)):
        for m in msgs:
            assert (m["broker"], m["dispatch"]) == ("broker-a", "%LMQ%123,%LMQ%456"), (name, m)
            first, second = m["lmq_offsets"].split(",")
            assert first == second, (name, m)
            assert offset_of.setdefault(m["key"], int(first)) == int(first), (name, m)
    assert sorted(offset_of.values()) == list(range(stored))
    # The stored record: Java's layout and properties (the size grows with the digits of the key,
    # the body and the two offsets; 323 bytes for Key0 at offset 0, as the Java broker stores it),
    # and the message id is the store host 127.0.0.1:10911 and the commit-log offset.
    for m in pull + push + pop:
        digits = len(m["key"]) - 3 + len(str(offset_of[m["key"]]))
        assert m["store_size"] == 319 + 2 * digits, m
        assert m["msg_id"] == f"7F00000100002A9F{m['commit_log_offset']:016X}", m
    # The pull consumer's one pull: the first 32 of %LMQ%123 from its min offset 0, in order.
    assert [int(m["lmq_offsets"].split(",")[0]) for m in pull] == list(range(PULL_BATCH))
    # The push consumer gets each message once, with the stored (parent) topic.
    pushed = sorted(int(m["key"].removeprefix("Key")) for m in push)
    assert pushed == sorted(_keys(push)) and len(pushed) == stored
    assert {m["topic"] for m in pull + push} == {"TopicLMQParent"}
    # The push-pop consumer pops each once (each was acked: no redelivery); the client names the LMQ.
    assert sorted(int(m["key"].removeprefix("Key")) for m in pop) == pushed
    assert {m["topic"] for m in pop} == {"%LMQ%456"}
