"""The `rocketmq` source over DLedger stores written by Java 5.5.0 brokers (enableDLegerCommitLog):
a group of three from the Maven Central jars, fed by the official 5.5.0 producer (the
StoreScenarioTest `send` scenario). Over each member's store, the leader's and the followers',
the rows are exactly the acknowledged messages (topic, queue, queue offset, the commitLogOffset
the producer's offsetMsgId names, keys, tags, body), one per entry up to the one the checkpoint
Java wrote at shutdown calls committed, one split per data file up to there (the ledger's end read
from Java's index files, as the full recovery finds it), and they agree with that member's
consume queues; readStream over each member's store offers each of them once. A reference run
(three JVMs): PYRMQ_COMPAT_REFERENCE=1."""

from __future__ import annotations

import json
import random
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from compat.test_dledger_brokers_java_client import dledger_member
from spark.streams import RestartingQuery
from support import java, probe
from support.ports import free_port
from support.servers import JavaBroker, JavaNamesrv

from pyrmq.dledger.entry import BODY_OFFSET
from pyrmq.dledger.store_files import DLedgerStoreReader, default_path
from pyrmq.spark import other_scans
from pyrmq.spark.dledger_end import committed_end, find_ledger_end
from pyrmq.store.message import decode_message_id

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.slow, pytest.mark.reference]

CLUSTER = "SparkDlCluster"
GROUP = "spark-dl-java"
IDS = ("n0", "n1", "n2")
TOPICS = {"SparkDlFour": 4, "SparkDlTwo": 2}
N = 48
#: small DLedger data files (mappedFileSizeCommitLog), so the messages span several splits
DATA_FILE = 128 * 1024


def body(k: int) -> bytes:
    """10 B to 9 KB that do not compress: the client compresses bodies over 4 KiB, and the
    messages must fill more than one data file."""
    return random.Random(k).randbytes(10 + (k * 977) % 9000)


def message(k: int) -> dict:
    topic = sorted(TOPICS)[k % 2]
    return {"topic": topic, "tags": f"tag{k % 3}", "keys": [f"key{k}", f"both{k % 4}"], "bodyHex": body(k).hex()}


def send(home: Path, workdir: Path, namesrv: str, messages: list[dict]) -> list[dict]:
    """The results of the sends, in order. A run whose client failed before a message left it (its
    name-server route lookup timed out: the Java client's first request on a loaded machine) is
    run again for the messages it did not send; any other failure fails the test."""
    results: list[dict] = []
    for attempt in range(3):
        spec = workdir / f"send-{attempt}.json"
        out = workdir / f"send-{attempt}.out"
        rest = messages[len(results) :]
        spec.write_text(json.dumps({"group": "SparkDlProducer", "sends": [{"messages": [x]} for x in rest]}))
        try:
            java.run_junit(
                "client5",
                "StoreScenarioTest",
                "send",
                home=home,
                timeout=240,
                props={"namesrv": namesrv, "spec": spec, "out": out},
            )
        except java.JUnitFailed as e:
            if attempt == 2 or "updateTopicRouteInfoFromNameServer" not in str(e):
                raise
            print(f"\nthe producer's route lookup failed; again for the {len(rest)} messages left")
        if out.exists():
            results += [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
        if len(results) == len(messages):
            break
    return results


def queue_entries(store: Path) -> set[tuple[str, int, int, int, int]]:
    """(topic, queueId, queueOffset, commitLogOffset, size) of the test topics' consume queues."""
    return {
        (q.topic, q.queue_id, qo, phy, size)
        for q in other_scans.list_consume_queues(str(store))
        if q.topic in TOPICS
        for qo, phy, size, _tags, _f in other_scans.iter_consume_queue(q)
    }


@pytest.fixture(scope="module")
def java_group(tmp_path_factory):
    """Three Java DLedger brokers, the acknowledged messages, then the brokers stopped: their
    stores, each with every message in its consume queues."""
    java.ensure_built()  # a missing JDK or Maven fails here, loudly
    home = java.prepare_home(tmp_path_factory.mktemp("java-home"))
    ns = JavaNamesrv(tmp_path_factory.mktemp("java-namesrv"))
    peers = ";".join(f"{i}-127.0.0.1:{free_port()}" for i in IDS)
    brokers: list[JavaBroker] = []

    def start(self_id: str) -> JavaBroker:
        conf = dledger_member(CLUSTER, GROUP, peers, self_id)
        conf.pop("fresh")
        conf.update(mappedFileSizeCommitLog=DATA_FILE, mappedFileSizeConsumeQueue=300000 * 20 // 100)
        b = JavaBroker(ns.addr, tmp_path_factory.mktemp(f"java-dledger-{self_id}"), **conf)
        brokers.append(b)
        return b

    try:
        with ThreadPoolExecutor(len(IDS)) as pool:  # a member registers once the group has a leader
            members = dict(zip(IDS, pool.map(start, IDS), strict=True))
        for topic, queues in TOPICS.items():  # on every member, as a new leader must know them
            for b in members.values():
                probe.create_topic(b.addr, topic, queues=queues)
        workdir = tmp_path_factory.mktemp("java-dledger-send")
        sent = [message(k) for k in range(N)]
        acked = send(home, workdir, ns.addr, sent)
        stores = {i: b.store_dir for i, b in members.items()}
        # every member dispatches what the group committed: wait for all N in each one's queues
        deadline = time.monotonic() + 60
        while any(len(queue_entries(s)) < N for s in stores.values()):
            assert time.monotonic() < deadline, {i: len(queue_entries(s)) for i, s in stores.items()}
            time.sleep(0.5)
        for b in brokers:
            b.stop()
        yield stores, sent, acked
    finally:
        for b in brokers:
            b.stop()
        ns.stop()


@pytest.mark.parametrize("member", IDS)
def test_rows_are_the_acknowledged_messages(spark, corrupt_log, java_group, member) -> None:
    stores, sent, acked = java_group
    assert len(acked) == N and all(a["status"] == "SEND_OK" for a in acked), acked
    store = stores[member]
    want = {}
    for x, a in zip(sent, acked, strict=True):
        offset = decode_message_id(a["offsetMsgId"]).offset
        want[offset] = (a["topic"], a["queueId"], a["queueOffset"], x["tags"], x["keys"], bytes.fromhex(x["bodyHex"]))
    assert {t for t, *_ in want.values()} == set(TOPICS) and len(want) == N
    ledger = DLedgerStoreReader(default_path(str(store), member))
    # the plan's end, read through Java's index files, is the full recovery's
    end = find_ledger_end(default_path(str(store), member))
    assert (end.write_pos, end.how) == (ledger.write_pos, "index")
    # the source reads up to the entry the checkpoint Java wrote at shutdown calls committed
    committed = [e for e in ledger.entries() if e.index <= ledger.committed_index]
    read_end = committed_end(default_path(str(store), member), end)
    assert committed and read_end == committed[-1].pos + committed[-1].size
    print(f"\n{member}: checkpoint {ledger.checkpoint}, ledger end index {ledger.ledger_end_index}")
    files = [p for start, p in ledger.data_files if start < read_end]
    assert len(files) > 1  # several data files: several splits

    df = spark.read.format("rocketmq").load(str(store))
    assert df.rdd.getNumPartitions() == len(files)
    rows = df.collect()
    got = {
        r.commitLogOffset: (r.topic, r.queueId, r.queueOffset, r.tags, list(r.keys), bytes(r.body))
        for r in rows
        if r.topic in TOPICS
    }
    assert got == want
    # one row per committed entry of the ledger, each test message once
    assert len(rows) == len(committed)
    assert len([r for r in rows if r.topic in TOPICS]) == N
    # a record's offset is its entry's position + 48, as the broker stamped it
    assert sorted(r.commitLogOffset for r in rows) == [e.pos + BODY_OFFSET for e in committed]
    # the rows agree with this member's consume queues
    assert {(r.topic, r.queueId, r.queueOffset, r.commitLogOffset, r.storeSize) for r in rows if r.topic in TOPICS} == (
        queue_entries(store)
    )
    cq = spark.read.format("rocketmq_consumequeue").load(str(store)).where("topic like 'SparkDl%'").collect()
    assert sorted((e.topic, e.queueId, e.queueOffset, e.commitLogOffset) for e in cq) == sorted(
        (t, q, o, c) for c, (t, q, o, *_x) in want.items()
    )
    # records found by their offsets, as a lookup by offsetMsgId does
    some = sorted(want)[5:9]
    by_offsets = spark.read.format("rocketmq").option("offsets", ",".join(map(str, some))).load(str(store))
    assert sorted(r.commitLogOffset for r in by_offsets.collect()) == some


@pytest.mark.parametrize("member", IDS)
def test_stream_offers_the_acknowledged_messages(spark, corrupt_log, java_group, member, tmp_path) -> None:
    """readStream over the member's store: by Java's consume queues into its DLedger data files,
    each acknowledged message once, with the topic, queue and offset the producer was told."""
    stores, sent, acked = java_group
    out = tmp_path / "out"

    def begin():
        return (
            spark.readStream.format("rocketmq")
            .load(str(stores[member]))
            .where("topic like 'SparkDl%'")
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(tmp_path / "check"))
            .trigger(availableNow=True)
            .start()
        )

    RestartingQuery(begin).finish(240)
    rows = spark.read.parquet(str(out)).collect()
    got = sorted((r.commitLogOffset, r.topic, r.queueId, r.queueOffset, bytes(r.body)) for r in rows)
    want = sorted(
        (
            decode_message_id(a["offsetMsgId"]).offset,
            a["topic"],
            a["queueId"],
            a["queueOffset"],
            bytes.fromhex(x["bodyHex"]),
        )
        for x, a in zip(sent, acked, strict=True)
    )
    assert got == want
