"""The four data sources through Spark (local[2]) over a pyrmq-written store: rows equal what was
put, consume queues and index agree with the commit log, pushdown, corrupt records, live store."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import threading
import time

import pytest
from pyspark.sql import functions as F
from spark.store_builder import BASE_TS, ENTRIES, SLOTS, store_config

from pyrmq.spark import index_key_hash, jobs
from pyrmq.store import message as m
from pyrmq.store.message_store import MessageStore


def test_rows_equal_what_was_put(spark, corrupt_log, pyrmq_store) -> None:
    root, sent = pyrmq_store
    rows = spark.read.format("rocketmq").option("splitSize", "6000").load(str(root)).collect()
    assert len(rows) == len(sent.by_uniq)
    for r in rows:
        want = sent.by_uniq[r.msgId]
        assert (r.topic, r.queueId, r.queueOffset, bytes(r.body), r.flag) == (
            want["topic"],
            want["queue_id"],
            want["queue_offset"],
            want["body"],
            want["flag"],
        ), r.msgId
        props = dict(r.properties)
        assert {k: props.get(k) for k in want["props"]} == want["props"]
        assert r.tags == want["props"].get("TAGS")
        assert r.keys == [k for k in want["props"].get("KEYS", "").split(" ") if k]
        assert r.storeTimestamp.tzinfo is None or r.storeTimestamp.utcoffset() == dt.timedelta(0)
        if "offset" in want:  # single puts: ids, sizes and hosts as the store reported them
            assert r.commitLogOffset == want["offset"]
            assert m.decode_message_id(r.offsetMsgId).offset == want["offset"]
            assert r.bodySize == want["stored_len"] and r.sysFlag & 1 == want["sys_flag"] & 1
            assert r.reconsumeTimes == want["reconsume"]
            born = dt.datetime.fromtimestamp((BASE_TS - 1000 + int(want["props"]["seq"])) / 1000, dt.UTC)
            assert r.bornTimestamp.replace(tzinfo=dt.UTC) == born
            ip, port = want["born"]
            assert r.bornHost == (f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}")
    # counts per topic/queue equal the consume queues' max offsets
    store = MessageStore(store_config(shutil.copytree(root, root.parent / "copy-rows")))
    store.load()
    try:
        counts = {
            (r.topic, r.queueId): r["count"]
            for r in spark.read.format("rocketmq").load(str(root)).groupBy("topic", "queueId").count().collect()
        }
        want = {(t, q): store.get_max_offset_in_queue(t, q) for t in store.get_topics() for q in store.get_queue_ids(t)}
        # an inner-batch record is one consume-queue entry in a classic store, and two rows here
        assert counts.pop(("TopicC", 0)) == 2 and want.pop(("TopicC", 0)) == 1
        assert counts == want
    finally:
        store.shutdown()


def test_consume_queue_and_index_agree_with_the_commit_log(spark, corrupt_log, pyrmq_store) -> None:
    root, sent = pyrmq_store
    msgs = (
        spark.read.format("rocketmq")
        .option("columns", "topic,queueId,queueOffset,commitLogOffset,storeSize,msgId,keys")
        .load(str(root))
    )
    by_offset: dict = {}
    for r in msgs.collect():  # the inner batch: two rows at one offset, the entry is the first
        by_offset.setdefault(r.commitLogOffset, r)
    cq = spark.read.format("rocketmq_consumequeue").load(str(root)).collect()
    assert len(cq) == len(sent.by_uniq) - 1  # the inner batch record has one entry in a classic store
    for e in cq:  # every entry points at a record of its topic and queue, with its size
        r = by_offset[e.commitLogOffset]
        assert (r.topic, r.queueId, r.queueOffset, r.storeSize) == (e.topic, e.queueId, e.queueOffset, e.size)
    assert min(e.file for e in cq) == "00000000000000000000"
    idx = (
        spark.read.format("rocketmq_index")
        .option("maxHashSlotNum", SLOTS)
        .option("maxIndexNum", ENTRIES)
        .load(str(root))
        .collect()
    )
    for topic, key in [("TopicA", "common"), ("TopicB", "k1"), ("TopicA", "UNIQ00000010"), ("TopicB", "bk1")]:
        h = index_key_hash(topic, key)
        offs = {e.phyOffset for e in idx if e.keyHash == h}
        want = {o for o, r in by_offset.items() if r.topic == topic and (key in r.keys or r.msgId == key)}
        assert want and want <= offs, (topic, key)
    found = jobs.find_messages(
        spark,
        str(root),
        key="k1",
        topic="TopicB",
        index_options={"maxHashSlotNum": str(SLOTS), "maxIndexNum": str(ENTRIES)},
    ).collect()
    assert [r.msgId for r in found] == ["UNIQ00000001"]
    one = sent.by_uniq["UNIQ00000007"]
    oid = m.create_message_id(m.host_to_bytes(one["store_host"]), one["offset"])
    assert [r.msgId for r in jobs.find_messages(spark, str(root), msg_id=oid).collect()] == ["UNIQ00000007"]


def test_pushdown_and_options_filter_exactly(spark, corrupt_log, pyrmq_store) -> None:
    root, _sent = pyrmq_store

    def fresh(**opts):
        r = spark.read.format("rocketmq").option("columns", "topic,queueId,commitLogOffset,storeTimestamp,msgId")
        for k, v in opts.items():
            r = r.option(k, v)
        return r.load(str(root))

    everything = fresh().collect()
    offs = sorted(r.commitLogOffset for r in everything)
    lo, hi = offs[20], offs[60]
    t_lo = sorted(r.storeTimestamp for r in everything)[30]
    want = sorted(
        r.msgId
        for r in everything
        if r.topic == "TopicA" and lo <= r.commitLogOffset < hi and r.storeTimestamp >= t_lo and r.queueId in (1, 2)
    )
    cond = (
        (F.col("topic") == "TopicA")
        & (F.col("commitLogOffset") >= lo)
        & (F.col("commitLogOffset") < hi)
        & (F.col("storeTimestamp") >= t_lo)
        & F.col("queueId").isin(1, 2)
    )
    pushed = fresh(pushdown="true", splitSize="4000").where(cond)
    assert sorted(r.msgId for r in pushed.collect()) == want
    # the offset range prunes partitions at planning time
    assert pushed.rdd.getNumPartitions() < fresh(splitSize="4000").rdd.getNumPartitions()
    plain = fresh()
    assert sorted(r.msgId for r in plain.where(cond).collect()) == want
    assert len(plain.collect()) == len(everything)  # the same DataFrame, no stale filter
    t_ms = int(t_lo.replace(tzinfo=dt.UTC).timestamp() * 1000)
    by_options = fresh(topic="TopicA", startOffset=str(lo), endOffset=str(hi), startTime=str(t_ms), queueId="1,2")
    assert sorted(r.msgId for r in by_options.collect()) == want


def test_corrupt_record_fails_or_is_skipped_and_reported(spark, corrupt_log, pyrmq_store, tmp_path) -> None:
    root, sent = pyrmq_store
    copy = tmp_path / "store"
    shutil.copytree(root, copy)
    target = sent.by_uniq["UNIQ00000033"]["offset"]
    cl = sorted(os.listdir(copy / "commitlog"))
    fname = [n for n in cl if int(n) <= target][-1]
    path = copy / "commitlog" / fname
    data = bytearray(path.read_bytes())
    pos = target - int(fname)
    msg = m.decode_message(data, pos, read_body=False)
    body_at = pos + m.body_position(msg.sys_flag)
    data[body_at] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(Exception) as e:
        spark.read.format("rocketmq").load(str(copy)).count()
    text = str(e.value)
    assert "corrupt commit-log record" in text and fname in text and f"commit-log offset {target}" in text
    before = len(corrupt_log)
    rows = (
        spark.read.format("rocketmq")
        .option("corrupt", "skip")
        .option("columns", "msgId,commitLogOffset")
        .load(str(copy))
        .collect()
    )
    assert len(rows) == len(sent.by_uniq) - 1 and "UNIQ00000033" not in {r.msgId for r in rows}
    assert len(corrupt_log) == before + 1
    assert any(rec[2] == target and rec[0].endswith(fname) for rec in corrupt_log.records)


def test_offsets_source(spark, corrupt_log, tmp_path) -> None:
    from pyrmq.store import config as cfg

    root = tmp_path / "s"
    w = cfg.ConsumerOffsetSerializeWrapper(
        offset_table={"T1@g1": {0: 5, 1: 7}, "T2@g2": {3: 1}, "%RETRY%g1@g1": {0: 0}}
    )
    cfg.persist_config(root, w)
    rows = sorted(tuple(r) for r in spark.read.format("rocketmq_offsets").load(str(root)).collect())
    assert rows == [
        ("g1", "%RETRY%g1", 0, 0, "consumerOffset.json"),
        ("g1", "T1", 0, 5, "consumerOffset.json"),
        ("g1", "T1", 1, 7, "consumerOffset.json"),
        ("g2", "T2", 3, 1, "consumerOffset.json"),
    ]


def test_job_over_a_store_being_written(spark, corrupt_log, tmp_path) -> None:
    """A writer thread appends through pyrmq.store while Spark jobs run: no error, and every
    result is a prefix of the written log (queue offsets dense from 0 per queue)."""
    root = tmp_path / "live"
    s = MessageStore(store_config(root))
    s.load()
    s.start()
    stop = threading.Event()
    written: list[int] = []

    def writer() -> None:
        i = 0
        while not stop.is_set() and i < 4000:
            r = s.put_message(
                m.MessageExtBrokerInner(
                    topic="Live", body=os.urandom(100 + i % 900), queue_id=i % 3, properties={"UNIQ_KEY": f"LV{i}"}
                )
            )
            written.append(r.append_message_result.wrote_offset)
            i += 1

    th = threading.Thread(target=writer)
    th.start()
    try:
        time.sleep(0.3)
        for _ in range(1):
            df = (
                spark.read.format("rocketmq")
                .option("splitSize", "6000")
                .option("columns", "queueId,queueOffset,commitLogOffset")
                .load(str(root))
            )
            rows = df.collect()
            offs = sorted(r.commitLogOffset for r in rows)
            wait = time.monotonic() + 5  # `written` grows after put_message returns
            while len(written) < len(offs) and time.monotonic() < wait:
                time.sleep(0.001)
            assert len(offs) <= len(written) and offs == written[: len(offs)]
            per_q: dict[int, list[int]] = {}
            for r in sorted(rows, key=lambda r: r.commitLogOffset):
                per_q.setdefault(r.queueId, []).append(r.queueOffset)
            assert all(v == list(range(len(v))) for v in per_q.values())
        assert written
    finally:
        stop.set()
        th.join(60)
        s.shutdown()
