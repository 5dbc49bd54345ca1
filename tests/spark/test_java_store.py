"""A store written by the real Java broker 5.5.0, fed by the official client: the `rocketmq`
DataFrame's rows equal what the client sent and was given, counts per queue equal the broker's
max offsets, and the lag job equals `mqadmin consumerProgress` for the same store."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from support import java
from support.servers import JavaBroker, JavaNamesrv

from pyrmq.spark import jobs
from pyrmq.store.message import decode_message_id

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.slow]

BROKER_CONF = dict(
    mappedFileSizeCommitLog=256 * 1024,
    mappedFileSizeConsumeQueue=300000 * 20 // 100,
    maxHashSlotNum=1000,
    maxIndexNum=4000,
    flushConsumerOffsetInterval=1000,
)
CLIENT_SIDE_PROPS = {"MIN_OFFSET", "MAX_OFFSET", "CONSUME_START_TIME"}
GROUP = "SparkLagGroup"


def repeat_body(n: int) -> bytes:
    return bytes((i * 7 + 3) & 0xFF for i in range(n))


@pytest.fixture(scope="module")
def java_env(tmp_path_factory):
    java.ensure_built()  # a missing JDK or Maven fails here, loudly
    home = java.prepare_home(tmp_path_factory.mktemp("java-home"))
    ns = JavaNamesrv(tmp_path_factory.mktemp("java-namesrv"))
    brokers: list[JavaBroker] = []
    yield home, ns, brokers, tmp_path_factory
    for b in brokers:
        b.stop()
    ns.stop()


def scenario(home: Path, workdir: Path, method: str, namesrv: str, spec: dict) -> list[dict]:
    spec_path = workdir / f"{method}-{time.monotonic_ns()}.json"
    out = spec_path.with_suffix(".out")
    spec_path.write_text(json.dumps(spec))
    java.run_junit(
        "client5",
        "StoreScenarioTest",
        method,
        home=home,
        timeout=240,
        props={"namesrv": namesrv, "spec": spec_path, "out": out},
    )
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def parse_consumer_progress(text: str) -> dict[tuple[str, int], tuple[int, int, int]]:
    """(topic, qid) -> (broker offset, consumer offset, diff) from consumerProgress -g (no -s)."""
    out = {}
    for line in text.splitlines():
        t = line.split()
        if len(t) >= 7 and not line.startswith("#") and t[2].isdigit() and t[3].lstrip("-").isdigit():
            out[(t[0], int(t[2]))] = (int(t[3]), int(t[4]), int(t[5]))
    return out


def test_java_store_through_spark(java_env, spark, corrupt_log, tmp_path) -> None:
    home, ns, brokers, _ = java_env
    store = tmp_path / "java-store"
    b = JavaBroker(ns.addr, tmp_path / "broker", store_dir=store, **BROKER_CONF)
    brokers.append(b)
    for topic, n in (("SparkEight", 8), ("SparkOne", 1)):
        r = java.mqadmin(
            "5.5.0", "updateTopic", "-b", b.addr, "-t", topic, "-r", str(n), "-w", str(n), namesrv=ns.addr, home=home
        )
        assert "success" in r.stdout, r.stdout + r.stderr
    sends = [
        {
            "messages": [
                {
                    "topic": "SparkEight",
                    "tags": "TagA",
                    "keys": ["k1", "k2"],
                    "props": {"color": "red"},
                    "bodyHex": b"hello".hex(),
                }
            ]
        },
        {"messages": [{"topic": "SparkOne", "tags": "Big", "keys": ["big"], "bodyRepeat": 20000}]},  # compressed
        {
            "messages": [
                {"topic": "SparkEight", "tags": "D", "keys": ["delayed"], "delayLevel": 1, "bodyHex": b"later".hex()}
            ]
        },
        {
            "batch": True,
            "queueId": 3,
            "broker": b.name,
            "messages": [
                {
                    "topic": "SparkEight",
                    "tags": "B",
                    "keys": [f"b{i}"],
                    "props": {"i": str(i)},
                    "bodyHex": bytes([i, 0, 255]).hex(),
                }
                for i in range(3)
            ],
        },
    ] + [
        {
            "messages": [
                {
                    "topic": "SparkOne" if i % 2 else "SparkEight",
                    "tags": f"t{i % 3}",
                    "keys": [f"s{i}"],
                    "bodyHex": f"msg-{i}".encode().hex(),
                    "flag": i,
                }
            ]
        }
        for i in range(12)
    ]
    results = scenario(home, tmp_path, "send", ns.addr, {"group": "SparkProducer", "sends": sends})
    assert all(r["status"] == "SEND_OK" for r in results), results
    n = sum(len(s["messages"]) for s in sends)
    consumed = scenario(
        home,
        tmp_path,
        "consume",
        ns.addr,
        {"group": GROUP, "topics": ["SparkEight", "SparkOne"], "expect": n, "timeoutSec": 120, "lingerMs": 2500},
    )
    # more messages after the group committed: lag
    extra = scenario(
        home,
        tmp_path,
        "send",
        ns.addr,
        {
            "group": "SparkProducer",
            "sends": [
                {
                    "messages": [
                        {"topic": "SparkEight" if i % 3 else "SparkOne", "keys": [f"late{i}"], "bodyHex": b"late".hex()}
                    ]
                }
                for i in range(7)
            ],
        },
    )
    assert len(extra) == 7
    time.sleep(1.5)  # flushConsumerOffsetInterval
    progress = java.mqadmin("5.5.0", "consumerProgress", "-g", GROUP, namesrv=ns.addr, home=home)
    java_lag = parse_consumer_progress(progress.stdout)
    assert java_lag, progress.stdout + progress.stderr
    assert b.stop() == 0 or not b.alive()

    # 1. every consumed message is a row, field by field
    rows = {r.commitLogOffset: r for r in spark.read.format("rocketmq").load(str(store)).collect()}
    assert len(consumed) == n
    # the bulk decoder (default) and the reference decoder agree on the Java broker's bytes
    ref = spark.read.format("rocketmq").option("decoder", "reference").load(str(store)).collect()
    assert {r.commitLogOffset: r.asDict(recursive=True) for r in ref} == {
        o: r.asDict(recursive=True) for o, r in rows.items()
    }
    for c in consumed:
        r = rows[c["commitLogOffset"]]
        assert (r.topic, r.queueId, r.queueOffset) == (c["topic"], c["queueId"], c["queueOffset"])
        assert (r.msgId, r.offsetMsgId, r.storeSize) == (c["msgId"], c["offsetMsgId"], c["storeSize"])
        # sysFlag as stored; the Java consumer clears COMPRESSED (bit 0) once it has decompressed
        assert (r.flag, r.sysFlag & ~1, r.reconsumeTimes) == (c["flag"], c["sysFlag"] & ~1, c["reconsumeTimes"])
        assert r.tags == c["tags"] and " ".join(r.keys) == (c["keys"] or "")
        assert dict(r.properties) == {k: v for k, v in c["properties"].items() if k not in CLIENT_SIDE_PROPS}
        assert bytes(r.body).hex() == c["bodyHex"]
        assert int(r.storeTimestamp.timestamp() * 1000) == c["storeTimestamp"]
        assert int(r.bornTimestamp.timestamp() * 1000) == c["bornTimestamp"]
    big = [r for r in rows.values() if r.topic == "SparkOne" and "big" in r.keys]
    assert len(big) == 1 and big[0].sysFlag & 1 and bytes(big[0].body) == repeat_body(20000)
    assert big[0].bodySize < 20000  # stored compressed, returned decompressed
    # 2. what the producer was told: ids and queue offsets (the delayed one first lands in SCHEDULE_TOPIC)
    for s, r in zip(sends, results, strict=False):
        for i, off in enumerate(decode_message_id(x).offset for x in r["offsetMsgId"].split(",")):
            row = rows[off]
            assert row.msgId == r["msgId"].split(",")[i] and row.queueOffset == r["queueOffset"] + i
            if "delayLevel" in s["messages"][i]:
                assert row.topic == "SCHEDULE_TOPIC_XXXX" and row.properties["REAL_TOPIC"] == r["topic"]
            else:
                assert (row.topic, row.queueId) == (r["topic"], r["queueId"])
    # 3. counts per topic/queue = the broker's max offsets (consumerProgress #Broker Offset)
    counts: dict[tuple[str, int], int] = {}
    for r in rows.values():
        counts[(r.topic, r.queueId)] = counts.get((r.topic, r.queueId), 0) + 1
    for (topic, qid), (broker_offset, _c, _d) in java_lag.items():
        if not topic.startswith("%RETRY%"):
            assert counts.get((topic, qid), 0) == broker_offset, (topic, qid)
    # 4. the lag job equals consumerProgress
    lag = {
        (r.topic, r.queueId): (r.brokerOffset, r.consumerOffset, r.lag)
        for r in jobs.consumer_lag(spark, str(store), GROUP).collect()
    }
    assert lag == java_lag
    assert sum(v[2] for v in lag.values()) == 7
    # 5. the streaming source over the Java broker's store: each record once, the batch rows
    out, check = tmp_path / "stream-out", tmp_path / "stream-ck"
    q = (
        spark.readStream.format("rocketmq")
        .option("maxRecordsPerTrigger", "10")
        .load(str(store))
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(check))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(600)
    assert not q.isActive and q.exception() is None
    streamed = spark.read.parquet(str(out)).collect()
    assert sorted(r.commitLogOffset for r in streamed) == sorted(rows)
    assert {r.commitLogOffset: r.asDict(recursive=True) for r in streamed} == {
        o: r.asDict(recursive=True) for o, r in rows.items()
    }
