"""`spark.readStream.format("rocketmq")`: consume-queue offsets in the checkpoint, only complete
entries, and every message exactly once in a Parquet sink across a restart of the query and of a
live pyrmq broker that is receiving messages meanwhile."""

from __future__ import annotations

import asyncio
import json
import shutil
import struct
import threading
from pathlib import Path

import numpy as np
import pytest
from spark.streams import RestartingQuery
from support.pyrmq_proc import PyrmqBroker
from support.requests import send_v2
from support.servers import PyrmqNamesrv

from pyrmq.protocol.codes import ResponseCode
from pyrmq.remoting.client import RemotingClient
from pyrmq.spark import other_scans as other
from pyrmq.spark import streaming as st
from pyrmq.store import message as m
from pyrmq.store.consume_queue import CQ_STORE_UNIT_SIZE

TOPIC = "SparkStreamT"
QUEUES = 4


# --- without Spark: spans, complete entries, planning ---------------------------------------------
def _copy(pyrmq_store, tmp_path: Path) -> Path:
    root, _ = pyrmq_store
    dst = tmp_path / "store"
    shutil.copytree(root, dst)
    return dst


def _last_cq_file(store: Path, topic: str, qid: int) -> Path:
    return sorted((store / "consumequeue" / topic / str(qid)).iterdir())[-1]


def test_spans_equal_the_consume_queues(pyrmq_store) -> None:
    root, _ = pyrmq_store
    spans = st.queue_spans(str(root))
    want = {}
    for q in other.list_consume_queues(str(root)):
        entries = [e[0] for e in other.iter_consume_queue(q)]
        want[(q.topic, q.queue_id)] = (entries[0], entries[-1] + 1)
    assert {k: (s.min, s.end) for k, s in spans.items()} == want
    # the topic and queue options choose the followed queues
    assert set(st.queue_spans(str(root), frozenset({"TopicA"}), frozenset({1, 2}))) == {("TopicA", 1), ("TopicA", 2)}


def test_half_written_entries_are_not_offered(pyrmq_store, tmp_path) -> None:
    """An entry whose record fails its checks, or an entry written only in part, is the writer
    mid-append: the span ends before it."""
    store = _copy(pyrmq_store, tmp_path)
    before = st.queue_spans(str(store))[("TopicA", 0)]
    cq = _last_cq_file(store, "TopicA", 0)
    raw = bytearray(cq.read_bytes())
    n = before.end - int(cq.name) // CQ_STORE_UNIT_SIZE
    phy, size, _tags = struct.unpack_from(">qiq", raw, (n - 1) * CQ_STORE_UNIT_SIZE)
    # 1. the last entry's record is not all there yet: its body bytes are still zeros
    cl = sorted((store / "commitlog").iterdir())
    f = next(p for p in cl if int(p.name) <= phy < int(p.name) + p.stat().st_size)
    data = bytearray(f.read_bytes())
    pos = phy - int(f.name)
    rec = m.decode_message(data, pos)
    body = slice(pos + m.body_position(rec.sys_flag), pos + m.body_position(rec.sys_flag) + rec.body_length)
    saved = bytes(data[body])
    data[body] = bytes(rec.body_length)
    f.write_bytes(data)
    assert st.queue_spans(str(store))[("TopicA", 0)].end == before.end - 1
    data[body] = saved
    f.write_bytes(data)
    assert st.queue_spans(str(store))[("TopicA", 0)].end == before.end
    # 2. an entry with its offset written and its size not yet: not an entry
    struct.pack_into(">q", raw, n * CQ_STORE_UNIT_SIZE, phy + size)
    cq.write_bytes(raw)
    assert st.queue_spans(str(store))[("TopicA", 0)].end == before.end
    # 3. an entry pointing past the commit log's data: not offered either
    struct.pack_into(">qiq", raw, n * CQ_STORE_UNIT_SIZE, 10**9, size, 0)
    cq.write_bytes(raw)
    assert st.queue_spans(str(store))[("TopicA", 0)].end == before.end


def test_min_skips_entries_of_deleted_commit_log_files(pyrmq_store, tmp_path) -> None:
    """After the broker deleted expired commit-log files, a queue starts at its first entry whose
    record is still there (Java's correctMinOffset); a range below it is an error, not a skip."""
    store = _copy(pyrmq_store, tmp_path)
    first, second = sorted((store / "commitlog").iterdir())[:2]
    first.unlink()
    spans = st.queue_spans(str(store))
    for q in other.list_consume_queues(str(store)):
        entries = list(other.iter_consume_queue(q))
        kept = [qo for qo, phy, *_ in entries if phy >= int(second.name)]
        assert (spans[(q.topic, q.queue_id)].min, spans[(q.topic, q.queue_id)].end) == (kept[0], entries[-1][0] + 1)
    assert spans[("TopicA", 0)].min > 0
    with pytest.raises(ValueError, match="no longer holds"):
        st.plan_pieces(str(store), {("TopicA", 0): (0, spans[("TopicA", 0)].end)}, 1 << 20)


def test_pieces_hold_each_record_once(pyrmq_store) -> None:
    root, _ = pyrmq_store
    spans = st.queue_spans(str(root))
    wanted = {k: (s.min, s.end) for k, s in spans.items()}
    all_phys = np.sort(np.concatenate([st.read_entries(str(root), t, q, a, b)[0] for (t, q), (a, b) in wanted.items()]))
    for split_size, gap in ((1 << 30, 1 << 20), (3000, 1 << 20), (1 << 30, 0)):
        pieces = st.plan_pieces(str(root), wanted, split_size, gap)
        got = np.sort(np.concatenate([p.offsets for p in pieces]))
        assert np.array_equal(got, all_phys)
        for p in pieces:
            assert p.split.base + p.split.start == p.offsets[0] < p.split.base + p.split.stop
        assert all(
            sum(p.split.stop - p.split.start for p in g) <= split_size or len(g) == 1
            for g in st.group_pieces(pieces, split_size)
        )
    with pytest.raises(ValueError, match=r"TopicA/0 .* no entries \[14, 20\)"):
        st.read_entries(str(root), "TopicA", 0, 10, 20)


def test_allot_shares_a_limit() -> None:
    assert st.allot({("a", 0): 10, ("a", 1): 1, ("b", 0): 0}, 7) == {("a", 0): 6, ("a", 1): 1, ("b", 0): 0}
    assert sum(st.allot({("a", q): 5 for q in range(4)}, 9).values()) == 9
    assert st.allot({("a", 0): 3}, 100) == {("a", 0): 3}


# --- Spark over a finished store ----------------------------------------------------------------
def _stream(spark, store: Path, out: Path, check: Path, **options: str):
    r = spark.readStream.format("rocketmq")
    for k, v in options.items():
        r = r.option(k, v)
    return (
        r.load(str(store))
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(check))
        .trigger(availableNow=True)
        .start()
    )


def test_stream_equals_batch_with_a_row_limit(pyrmq_store, spark, corrupt_log, tmp_path) -> None:
    """maxRecordsPerTrigger splits the store into several micro-batches; together they hold
    exactly the batch source's rows (every column, inner-batch elements included)."""
    root, _ = pyrmq_store
    q = RestartingQuery(
        lambda: _stream(
            spark, root, tmp_path / "out", tmp_path / "ck", maxRecordsPerTrigger="30", topic="TopicA,TopicB,TopicC"
        )
    )
    q.finish(600)
    batches = sorted(int(p.name) for p in (tmp_path / "ck" / "offsets").iterdir() if p.name.isdigit())
    assert len(batches) >= 3
    got = spark.read.parquet(str(tmp_path / "out")).collect()
    want = spark.read.format("rocketmq").option("topic", "TopicA,TopicB,TopicC").load(str(root)).collect()
    # each record once (an inner batch's elements share their record's offset, not their msgId)
    assert len({(r.commitLogOffset, r.msgId) for r in got}) == len(got) == len(want)
    assert sorted(map(tuple, got), key=str) == sorted(map(tuple, want), key=str)
    last = json.loads((tmp_path / "ck" / "offsets" / str(batches[-1])).read_text().splitlines()[-1])
    spans = st.queue_spans(str(root))
    assert last == st.to_offsets({k: s.end for k, s in spans.items() if k[0] in ("TopicA", "TopicB", "TopicC")})


# --- a live broker --------------------------------------------------------------------------------
class Sender:
    """Sends seq-numbered messages with pyrmq's RemotingClient (SEND_MESSAGE_V2 like the Java
    producer), in a thread: {seq: (queue id, queue offset)} of each SEND_OK."""

    def __init__(self, broker: PyrmqBroker) -> None:
        self.broker = broker
        self.sent: dict[int, tuple[int, int]] = {}
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None

    async def _send(self, seqs: range, pause: float) -> None:
        client = RemotingClient()
        try:
            for seq in seqs:
                body = f"{seq:06d}:".encode() + bytes(seq % 251 for _ in range(100 + seq % 300))
                req = send_v2(
                    TOPIC, self.broker.name, body, queues=QUEUES, queue_id=seq % QUEUES, UNIQ_KEY=f"SEQ{seq:06d}"
                )
                r = await client.invoke(self.broker.addr, req, 10)
                assert r.code == ResponseCode.SUCCESS, (seq, r.code, r.remark)
                self.sent[seq] = (int(r.ext_fields["queueId"]), int(r.ext_fields["queueOffset"]))
                if pause:
                    await asyncio.sleep(pause)
        finally:
            await client.close()

    def start(self, seqs: range, pause: float) -> None:
        def run() -> None:
            try:
                asyncio.run(self._send(seqs, pause))
            except BaseException as e:
                self.error = e

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def join(self) -> None:
        assert self.thread is not None
        self.thread.join(60)
        assert not self.thread.is_alive() and self.error is None, self.error

    def send(self, seqs: range) -> None:
        self.start(seqs, 0)
        self.join()


@pytest.fixture
def live_broker(tmp_path):
    ns = PyrmqNamesrv(tmp_path / "ns")
    broker = None
    try:
        broker = PyrmqBroker(
            ns.addr,
            tmp_path / "broker",
            mappedFileSizeCommitLog=64 * 1024,  # the stream crosses commit-log files
            mappedFileSizeConsumeQueue=20 * 50,
            flushIntervalCommitLog=50,
        )
        yield broker
    finally:
        if broker is not None:
            broker.stop()
        ns.stop()


def live_query(spark, store: Path, out: Path, check: Path) -> RestartingQuery:
    """The streaming query of the live-broker test: Parquet sink, checkpoint, 300 ms triggers."""
    return RestartingQuery(
        lambda: (
            spark.readStream.format("rocketmq")
            .option("topic", TOPIC)
            .option("columns", "topic,queueId,queueOffset,commitLogOffset,msgId,body")
            .load(str(store))
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(check))
            .trigger(processingTime="300 milliseconds")
            .start()
        )
    )


def test_live_broker_exactly_once(spark, corrupt_log, live_broker, tmp_path) -> None:
    store, out, check = live_broker.store_dir, tmp_path / "out", tmp_path / "ck"
    sender = Sender(live_broker)
    sender.send(range(0, 20))  # the topic exists before the query starts
    # 1. the query runs while messages arrive; it is stopped in the middle of the flow
    q = live_query(spark, store, out, check)
    sender.start(range(20, 220), 0.005)
    q.wait_rows(spark, out, 60)
    q.stop()
    sender.join()
    # 2. more messages while the query is down, then it resumes from its checkpoint while the
    #    sender goes on; the broker is restarted under the running query
    sender.send(range(220, 300))
    q = live_query(spark, store, out, check)
    sender.start(range(300, 400), 0.005)
    sender.join()
    live_broker.restart()
    sender.send(range(400, 480))
    q.wait_rows(spark, out, 480)
    q.query.processAllAvailable()
    q.stop()

    rows = spark.read.parquet(str(out)).collect()
    assert len(sender.sent) == 480
    by_seq = {}
    for r in rows:
        seq = int(bytes(r.body)[:6])
        assert seq not in by_seq, f"message {seq} twice"
        by_seq[seq] = r
    assert sorted(by_seq) == list(range(480))
    for seq, r in by_seq.items():
        assert (r.topic, r.msgId) == (TOPIC, f"SEQ{seq:06d}")
        assert (r.queueId, r.queueOffset) == sender.sent[seq]
    # the checkpoint's last offsets are the queues' ends
    offsets = sorted(int(p.name) for p in (check / "offsets").iterdir() if p.name.isdigit())
    last = json.loads((check / "offsets" / str(offsets[-1])).read_text().splitlines()[-1])
    assert last == {TOPIC: {str(q): 480 // QUEUES for q in range(QUEUES)}}
    assert len(list((store / "commitlog").iterdir())) > 2
