"""`spark.readStream.format("rocketmq")` tailing a live store while the official Java 5.5.0
producer (compat/java-tests StoreScenarioTest#send) writes into it: every message the client was
given SEND_OK for lands exactly once in the Parquet sink, across a restart of the query from its
checkpoint in the middle of the flow, with the topic, queue, queue offset, keys, tags and body
the client sent and was told. The broker is pyrmq's (default run) or the Java 5.5.0 broker with
the stream reading the Java store directory (reference, PYRMQ_COMPAT_REFERENCE=1)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from spark.streams import RestartingQuery
from support import java, probe
from support.pyrmq_proc import PyrmqBroker
from support.servers import JavaBroker, JavaNamesrv, PyrmqNamesrv

pytestmark = [pytest.mark.compat, pytest.mark.java]

TOPIC = "SparkJavaProducer"
QUEUES = 4
COLUMNS = "topic,queueId,queueOffset,commitLogOffset,msgId,keys,tags,body"


def repeat_body(n: int) -> bytes:
    """StoreScenarioTest's bodyRepeat n."""
    return bytes((i * 7 + 3) & 0xFF for i in range(n))


def message(seq: int) -> dict:
    return {
        "topic": TOPIC,
        "tags": f"tag{seq % 3}",
        "keys": [f"k{seq}", "common"],
        "props": {"seq": seq},
        "bodyRepeat": 300 + seq % 200,
    }


class JavaSender:
    """One run of the official producer (its own JVM) over seqs, in a thread; `acked` maps each
    SEND_OK message's client msgId to (seq, queue id, queue offset)."""

    def __init__(self, home: Path, namesrv: str, workdir: Path, seqs: range, pause_ms: int = 0) -> None:
        self.spec = workdir / f"send-{seqs.start}.json"
        self.out = self.spec.with_suffix(".out")
        self.spec.write_text(
            json.dumps(
                {
                    "group": "SparkStreamProducer",
                    "pauseMs": pause_ms,
                    "sends": [{"messages": [message(s)]} for s in seqs],
                }
            )
        )
        self.home, self.namesrv, self.error = home, namesrv, None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            java.run_junit(
                "client5",
                "StoreScenarioTest",
                "send",
                home=self.home,
                timeout=240,
                props={"namesrv": self.namesrv, "spec": self.spec, "out": self.out},
            )
        except BaseException as e:  # reported by join()
            self.error = e

    def sent_so_far(self) -> int:
        return len(self.out.read_text().splitlines()) if self.out.exists() else 0

    def join(self) -> dict[str, tuple[int, int, int]]:
        self.thread.join(300)
        assert not self.thread.is_alive(), "the Java producer is still running"
        if self.error is not None:
            raise self.error
        acked = {}
        for line in self.out.read_text().splitlines():
            r = json.loads(line)
            assert r["status"] == "SEND_OK" and r["topic"] == TOPIC, r
            acked[r["msgId"]] = (int(r["properties"]["seq"]), r["queueId"], r["queueOffset"])
        return acked


def _servers(stack: str, tmp_path: Path):
    if stack == "pyrmq":
        ns = PyrmqNamesrv(tmp_path / "ns")
        broker = PyrmqBroker(
            ns.addr,
            tmp_path / "broker",
            mappedFileSizeCommitLog=64 * 1024,  # the stream crosses commit-log files
            mappedFileSizeConsumeQueue=20 * 50,
            flushIntervalCommitLog=50,
        )
        return ns, broker
    ns = JavaNamesrv(tmp_path / "ns")
    broker = JavaBroker(
        ns.addr, tmp_path / "broker", store_dir=tmp_path / "java-store", mappedFileSizeCommitLog=64 * 1024
    )
    return ns, broker


@pytest.mark.parametrize("stack", ["pyrmq", pytest.param("java", marks=pytest.mark.reference)])
def test_stream_while_the_java_producer_sends(stack, spark, corrupt_log, tmp_path) -> None:
    java.ensure_built()  # a missing JDK or Maven fails here, loudly
    home = java.prepare_home(tmp_path / "java-home")
    ns, broker = _servers(stack, tmp_path)
    try:
        probe.create_topic(broker.addr, TOPIC, QUEUES)
        store, out, check = Path(broker.store_dir), tmp_path / "out", tmp_path / "ck"
        acked = JavaSender(home, ns.addr, tmp_path, range(0, 20)).join()  # the topic has data

        def start():
            return (
                spark.readStream.format("rocketmq")
                .option("topic", TOPIC)
                .option("columns", COLUMNS)
                .load(str(store))
                .writeStream.format("parquet")
                .option("path", str(out))
                .option("checkpointLocation", str(check))
                .trigger(processingTime="300 milliseconds")
                .start()
            )

        q = RestartingQuery(start)
        q.wait_rows(spark, out, 20)
        # the producer sends while the query runs; the query is stopped and started again from its
        # checkpoint while the producer goes on
        sender = JavaSender(home, ns.addr, tmp_path, range(20, 320), pause_ms=25)
        q.wait_rows(spark, out, 60)
        during = sender.sent_so_far()
        q.stop()
        restarts = q.restarts
        q = RestartingQuery(start)
        acked.update(sender.join())
        q.wait_rows(spark, out, len(acked))
        q.query.processAllAvailable()
        q.stop()
        print(
            f"{stack}: {during} of 300 sent when the query stopped; restarts at source start: {restarts + q.restarts}"
        )
        # rows of the running producer reached the sink before the stop (on a saturated machine
        # the producer may have finished by then: the restart is still one from the checkpoint)
        assert during >= 40, during

        rows = spark.read.parquet(str(out)).collect()
        assert len(acked) == 320
        by_id: dict = {}
        for r in rows:
            assert r.msgId not in by_id, f"message {r.msgId} twice"
            by_id[r.msgId] = r
        assert set(by_id) == set(acked)
        for msg_id, (seq, qid, qoffset) in acked.items():
            r = by_id[msg_id]
            assert (r.topic, r.queueId, r.queueOffset) == (TOPIC, qid, qoffset)
            assert (list(r.keys), r.tags) == ([f"k{seq}", "common"], f"tag{seq % 3}")
            assert bytes(r.body) == repeat_body(300 + seq % 200)
        # the checkpoint's last offsets are the queues' ends
        offsets = sorted(int(p.name) for p in (check / "offsets").iterdir() if p.name.isdigit())
        last = json.loads((check / "offsets" / str(offsets[-1])).read_text().splitlines()[-1])
        ends: dict[str, int] = {}
        for _seq, qid, qoffset in acked.values():
            ends[str(qid)] = max(ends.get(str(qid), 0), qoffset + 1)
        assert last == {TOPIC: ends}
        assert len(list((store / "commitlog").iterdir())) > 2
    finally:
        broker.stop()
        ns.stop()
