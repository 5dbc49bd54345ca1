"""Java 5.5.0 writes a store with the official client; pyrmq.store reads every record, consume-queue
and index entry of it and agrees with what the Java side reported. Also: after kill -9, pyrmq's
abnormal recovery reaches the same offsets as the Java broker's own restart.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest
from support import java

from pyrmq.store import cli as store_cli
from pyrmq.store import config as cfg
from pyrmq.store import reader
from pyrmq.store.message import decode_message_id
from pyrmq.store.message_store import MessageStore
from pyrmq.store.store_config import MessageStoreConfig

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.slow]

CL_SIZE = 2 * 1024 * 1024  # a 1 MiB body still fits, and a few of them roll the commit log
CQ_SIZE = 300000 * 20 // 100  # the harness's mappedFileSizeConsumeQueue
SLOTS, ENTRIES = 1000, 4000
BROKER_CONF = dict(
    mappedFileSizeCommitLog=CL_SIZE,
    mappedFileSizeConsumeQueue=CQ_SIZE,
    maxHashSlotNum=SLOTS,
    maxIndexNum=ENTRIES,
    flushConsumerOffsetInterval=1000,
)
#: properties the consumer adds on its side (not in the store)
CLIENT_SIDE_PROPS = {"MIN_OFFSET", "MAX_OFFSET", "CONSUME_START_TIME"}
ALL_BYTES = bytes(range(256)).hex()
BIG = 1024 * 1024
RANDOM_BIG = random.Random(20261121).randbytes(BIG)


def repeat_body(n: int) -> bytes:
    return bytes((i * 7 + 3) & 0xFF for i in range(n))


def store_config(root: Path) -> MessageStoreConfig:
    return MessageStoreConfig(
        store_path_root_dir=str(root),
        mapped_file_size_commit_log=CL_SIZE,
        mapped_file_size_consume_queue=CQ_SIZE,
        max_hash_slot_num=SLOTS,
        max_index_num=ENTRIES,
    )


def scenario(java_home: Path, workdir: Path, method: str, namesrv: str, spec: dict, timeout: float = 240) -> list[dict]:
    """Run StoreScenarioTest#<method> with the official client 5.5.0; its JSON lines."""
    spec_path = workdir / f"{method}-{time.monotonic_ns()}.json"
    out = spec_path.with_suffix(".out")
    spec_path.write_text(json.dumps(spec))
    java.run_junit(
        "client5",
        "StoreScenarioTest",
        method,
        home=java_home,
        timeout=timeout,
        props={"namesrv": namesrv, "spec": spec_path, "out": out},
    )
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def create_topic(mqadmin, broker, namesrv: str, topic: str, queues: int) -> None:
    r = mqadmin(
        "5.5.0", "updateTopic", "-b", broker.addr, "-t", topic, "-r", str(queues), "-w", str(queues), namesrv=namesrv
    )
    assert "success" in r.stdout, r.stdout + r.stderr


def sends(broker_name: str) -> tuple[dict, dict[str, bytes]]:
    """The send spec and the body of every message by a key unique to it."""
    msgs: list[dict] = [
        {
            "messages": [
                {
                    "topic": "TopicEight",
                    "tags": "TagA",
                    "keys": ["k1", "k2"],
                    "props": {"color": "red", "n": "1"},
                    "bodyHex": b"hello".hex(),
                }
            ]
        },
        {"messages": [{"topic": "TopicEight", "tags": "Bin", "keys": ["bin"], "bodyHex": ALL_BYTES}]},
        {"messages": [{"topic": "TopicOne", "tags": "Big", "keys": ["big1"], "bodyRepeat": BIG}]},
        {
            "messages": [
                {"topic": "TopicEight", "tags": "D", "keys": ["delayed"], "delayLevel": 1, "bodyHex": b"later".hex()}
            ]
        },
        {
            "batch": True,
            "queueId": 3,
            "broker": broker_name,
            "messages": [
                {
                    "topic": "TopicEight",
                    "tags": "B",
                    "keys": [f"b{i}"],
                    "props": {"i": str(i)},
                    "bodyHex": bytes([i]).hex(),
                }
                for i in range(3)
            ],
        },
        # incompressible: the compressed record still takes ~1 MiB, so the commit log rolls
        {"messages": [{"topic": "TopicOne", "tags": "Big", "keys": ["big2"], "bodyHex": RANDOM_BIG.hex()}]},
        {"messages": [{"topic": "TopicEight", "tags": "Big", "keys": ["big3"], "bodyHex": RANDOM_BIG[::-1].hex()}]},
    ]
    msgs += [
        {
            "messages": [
                {
                    "topic": "TopicOne" if i % 2 else "TopicEight",
                    "tags": f"t{i % 3}",
                    "keys": [f"small{i}", "common"],
                    "props": {"seq": str(i)},
                    "bodyHex": f"msg-{i}".encode().hex(),
                }
            ]
        }
        for i in range(24)
    ]
    bodies: dict[str, bytes] = {}
    for s in msgs:
        for m in s["messages"]:
            body = repeat_body(m["bodyRepeat"]) if "bodyRepeat" in m else bytes.fromhex(m["bodyHex"])
            bodies[m["keys"][0]] = body
    return {"group": "StoreCheckProducer", "sends": msgs}, bodies


def test_java_store_read_by_pyrmq(java_namesrv, java_broker, mqadmin, java_home, tmp_path) -> None:
    store = tmp_path / "java-store"
    b = java_broker(java_namesrv.addr, store_dir=store, fresh=True, **BROKER_CONF)
    create_topic(mqadmin, b, java_namesrv.addr, "TopicEight", 8)
    create_topic(mqadmin, b, java_namesrv.addr, "TopicOne", 1)
    spec, bodies = sends(b.name)
    results = scenario(java_home, tmp_path, "send", java_namesrv.addr, spec)
    assert len(results) == len(spec["sends"]) and all(r["status"] == "SEND_OK" for r in results), results
    n_messages = sum(len(s["messages"]) for s in spec["sends"])
    consumed = scenario(
        java_home,
        tmp_path,
        "consume",
        java_namesrv.addr,
        {
            "group": "StoreCheckGroup",
            "topics": ["TopicEight", "TopicOne"],
            "expect": n_messages,
            "timeoutSec": 90,
            "lingerMs": 2500,
        },
    )
    time.sleep(1.5)  # flushConsumerOffsetInterval, then a clean stop persists everything once more
    # a clean stop removes the abort file; the Java broker's shutdown took over 15 s once on a busy
    # machine (two test workers), and the stop then ended in a kill that leaves the file
    assert b.stop(60) == 0 or not b.alive()
    assert not (store / "abort").exists()

    # 1. the whole store passes pyrmq's own verification
    report, stats = store_cli.verify_store(str(store))
    assert report.problem_count == 0, [str(p) for p in report.problems]
    assert not report.warnings, [str(w) for w in report.warnings]
    assert stats.commit_log_files >= 2 and stats.records >= n_messages + 1  # + the delivered delayed copy

    cl, _ = reader.open_commit_log(str(store / "commitlog"))
    assert cl.file_size == CL_SIZE
    try:
        # 2. what the producer was told matches the records
        for s, r in zip(spec["sends"], results, strict=False):
            offsets = [decode_message_id(x).offset for x in r["offsetMsgId"].split(",")]
            uniq = r["msgId"].split(",")
            props_list = r["properties"] if s.get("batch") else [r["properties"]]
            assert len(offsets) == len(s["messages"]) == len(uniq) == len(props_list)
            for i, (m, off) in enumerate(zip(s["messages"], offsets, strict=False)):
                rec = cl.record_at(off, read_body=True)
                assert rec.msg_id == r["offsetMsgId"].split(",")[i]
                assert rec.uniq_key == uniq[i]
                assert rec.queue_offset == r["queueOffset"] + i
                if "delayLevel" in m:
                    assert (rec.topic, rec.queue_id) == ("SCHEDULE_TOPIC_XXXX", m["delayLevel"] - 1)
                    assert rec.properties["REAL_TOPIC"] == r["topic"]
                    assert rec.properties["REAL_QID"] == str(r["queueId"])
                else:
                    assert (rec.topic, rec.queue_id) == (r["topic"], r["queueId"])
                for k, v in props_list[i].items():
                    assert rec.properties.get(k) == v, (k, rec.properties)
                assert rec.uncompressed_body() == bodies[m["keys"][0]]
                if len(bodies[m["keys"][0]]) == BIG:
                    assert rec.sys_flag & 0x1, "the client compresses large bodies"
                    assert zlib.decompress(rec.body) == bodies[m["keys"][0]]

        # 3. what the consumer was given matches the records (store times, ids, properties)
        assert len(consumed) == n_messages
        for c in consumed:
            rec = cl.record_at(c["commitLogOffset"], read_body=True)
            assert rec.msg_id == c["offsetMsgId"]
            assert (rec.topic, rec.queue_id, rec.queue_offset) == (c["topic"], c["queueId"], c["queueOffset"])
            assert rec.store_timestamp == c["storeTimestamp"] and rec.born_timestamp == c["bornTimestamp"]
            assert rec.store_size == c["storeSize"] and rec.flag == c["flag"]
            assert rec.reconsume_times == c["reconsumeTimes"]
            want_props = {k: v for k, v in c["properties"].items() if k not in CLIENT_SIDE_PROPS}
            assert rec.properties == want_props
            assert rec.uncompressed_body().hex() == c["bodyHex"]
            assert rec.uniq_key == c["msgId"]
    finally:
        cl.close()

    # 4. consume queues and index through pyrmq's MessageStore (on a copy: load() recovers and writes)
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    ms = MessageStore(store_config(copy))
    ms.load()
    try:
        java_max: dict[tuple[str, int], int] = {}
        for c in consumed:
            key = (c["topic"], c["queueId"])
            java_max[key] = max(java_max.get(key, 0), c["queueOffset"] + 1)
            assert ms.get_commit_log_offset_in_queue(c["topic"], c["queueId"], c["queueOffset"]) == c["commitLogOffset"]
        for (topic, qid), mx in java_max.items():
            assert ms.get_max_offset_in_queue(topic, qid) == mx
        now = int(time.time() * 1000) + 60_000
        for c in consumed:
            for key in [c["msgId"], *(c["keys"] or "").split()]:
                got = ms.query_message(c["topic"], key, 32, 0, now)
                assert c["commitLogOffset"] in got.phy_offsets, (c["topic"], key)
        hits = ms.query_message("TopicEight", "common", 64, 0, now).phy_offsets
        assert len(hits) == 12  # the even ones of small0..small23
    finally:
        ms.shutdown()

    # 5. config files: offsets the broker committed, topics; and byte-exact re-encoding
    offsets = cfg.load_config(store, cfg.ConsumerOffsetSerializeWrapper)
    for (topic, qid), mx in java_max.items():
        assert offsets.offset_table[f"{topic}@StoreCheckGroup"][qid] == mx
    topics = cfg.load_config(store, cfg.TopicConfigSerializeWrapper)
    assert topics.topic_config_table["TopicEight"].read_queue_nums == 8
    assert topics.topic_config_table["TopicOne"].write_queue_nums == 1
    for name, cls in cfg.CONFIG_FILES.items():
        text = (store / "config" / name).read_text(encoding="utf-8")
        assert cfg.encode_config(cfg.decode_config(cls, text)) == text, name


def test_kill9_recovery_reaches_the_java_offsets(java_namesrv, java_broker, mqadmin, java_home, tmp_path) -> None:
    store = tmp_path / "killed"
    b = java_broker(java_namesrv.addr, store_dir=store, fresh=True, **BROKER_CONF)
    create_topic(mqadmin, b, java_namesrv.addr, "TopicEight", 8)
    create_topic(mqadmin, b, java_namesrv.addr, "TopicOne", 1)
    spec = {
        "group": "KillProducer",
        "sends": [
            {
                "messages": [
                    {
                        "topic": "TopicOne" if i % 3 == 0 else "TopicEight",
                        "tags": f"t{i % 4}",
                        "keys": [f"kill{i}"],
                        "bodyRepeat": 200_000 if i % 10 == 0 else 300,
                    }
                ]
            }
            for i in range(60)
        ],
    }
    results = scenario(java_home, tmp_path, "send", java_namesrv.addr, spec)
    assert all(r["status"] == "SEND_OK" for r in results)
    b.kill9()
    assert (store / "abort").exists(), "kill -9 leaves the abort file"
    for_pyrmq, for_java = tmp_path / "for-pyrmq", tmp_path / "for-java"
    shutil.copytree(store, for_pyrmq)
    shutil.copytree(store, for_java)

    ms = MessageStore(store_config(for_pyrmq))
    ms.load()
    try:
        assert not ms.last_exit_ok
        py_max_phy = ms.get_max_phy_offset()
        py_queues = {
            (t, q): ms.get_max_offset_in_queue(t, q) for t in ("TopicEight", "TopicOne") for q in ms.get_queue_ids(t)
        }
    finally:
        ms.shutdown()

    jb = java_broker(java_namesrv.addr, store_dir=for_java, fresh=True, **BROKER_CONF)
    assert jb.stop() == 0 or not jb.alive()
    info = store_cli.inspect_store(str(for_java))
    java_queues = {
        (t, int(q)): v["max_offset"] for t in ("TopicEight", "TopicOne") for q, v in info["topics"].get(t, {}).items()
    }
    assert py_queues == java_queues
    sent: dict[tuple[str, int], int] = {}
    for r in results:
        key = (r["topic"], r["queueId"])
        sent[key] = max(sent.get(key, 0), r["queueOffset"] + 1)
    assert py_queues == sent  # nothing acknowledged was lost (process kill: the page cache survives)
    assert py_max_phy == info["commitlog"]["max_offset"]

    # 6. bad input on a copy of the Java store: `pyrmq store verify` names each file and offset
    bad = tmp_path / "damaged"
    shutil.copytree(store, bad, ignore=shutil.ignore_patterns("rocksdbstore", "timerwheel"))
    names = sorted(p.name for p in (bad / "commitlog").iterdir())
    first = bad / "commitlog" / names[0]
    data = bytearray(first.read_bytes())
    data[88 + 2] ^= 0xFF  # a body byte of the first record (IPv4 hosts: the body starts at 88)
    first.write_bytes(bytes(data))
    (bad / "commitlog" / "stray.log").write_bytes(b"junk")
    last = bad / "commitlog" / names[-1]
    last.write_bytes(last.read_bytes()[: CL_SIZE // 2])
    r = subprocess.run(
        [sys.executable, "-m", "pyrmq", "store", "verify", str(bad)], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"PROBLEM commitlog/{names[0]} @ 0: bad record: body CRC mismatch at 0" in r.stdout, r.stdout
    assert "PROBLEM commitlog/stray.log: stray file" in r.stdout, r.stdout
    assert f"PROBLEM commitlog/{names[-1]}: length {CL_SIZE // 2} != {CL_SIZE}" in r.stdout, r.stdout
