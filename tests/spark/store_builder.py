"""A pyrmq-written store with every record shape the Spark sources must handle (used by the
tests in this directory: `from spark.store_builder import ...`)."""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from pyrmq.store import message as m
from pyrmq.store.commitlog import MessageExtBatch
from pyrmq.store.message_store import MessageStore
from pyrmq.store.store_config import MessageStoreConfig

CL_SIZE = 16 * 1024  # several commit-log files
CQ_SIZE = 20 * 64
SLOTS, ENTRIES = 64, 2000
LONG_TOPIC = "L" * 130  # > 127 chars: a V2 record
BASE_TS = 1_700_000_000_000


def store_config(root: Path, **kw) -> MessageStoreConfig:
    base = dict(
        store_path_root_dir=str(root),
        mapped_file_size_commit_log=CL_SIZE,
        mapped_file_size_consume_queue=CQ_SIZE,
        max_hash_slot_num=SLOTS,
        max_index_num=ENTRIES,
    )
    base.update(kw)
    return MessageStoreConfig(**base)


@dataclass
class Sent:
    """What a test put, keyed by UNIQ_KEY: topic, queue, body (uncompressed), flag, props, hosts."""

    by_uniq: dict[str, dict] = field(default_factory=dict)


def build_store(root: Path, n: int = 120) -> Sent:
    """A pyrmq store with tags, keys, properties, IPv6 hosts, zlib-compressed bodies, a V2 (long
    topic) record, a classic batch and a 5.x inner-batch record; several commit-log files."""
    sent = Sent()
    clock = iter(range(BASE_TS, BASE_TS + 10_000_000, 7))
    s = MessageStore(store_config(root), clock=lambda: next(clock))
    s.load()
    s.start()
    try:
        for i in range(n):
            topic = ("TopicA", "TopicB", LONG_TOPIC)[i % 3] if i % 10 else "TopicA"
            body = f"body-{i}-".encode() * (1 + i % 40)
            sys_flag, stored = 0, body
            if i % 9 == 4:  # compressed like the Java producer (zlib, type bits 0x300)
                sys_flag = m.MessageSysFlag.COMPRESSED_FLAG | m.MessageSysFlag.COMPRESSION_ZLIB
                stored = zlib.compress(body, 5)
            uniq = f"UNIQ{i:08d}"
            props = {"TAGS": f"tag{i % 4}", "KEYS": f"k{i} common", "UNIQ_KEY": uniq, "seq": str(i)}
            born = ("::1", 40000 + i) if i % 7 == 3 else ("10.0.0.9", 5555)
            store_host = ("fe80::2", 10911) if i % 11 == 5 else ("10.0.0.2", 10911)
            msg = m.MessageExtBrokerInner(
                topic=topic,
                body=stored,
                queue_id=i % 4,
                flag=i % 3,
                properties=props,
                sys_flag=sys_flag,
                born_timestamp=BASE_TS - 1000 + i,
                born_host=born,
                store_host=store_host,
                reconsume_times=i % 2,
            )
            r = s.put_message(msg)
            assert r.is_ok(), r
            sent.by_uniq[uniq] = dict(
                topic=topic,
                queue_id=i % 4,
                body=body,
                stored_len=len(stored),
                flag=i % 3,
                props=props,
                born=born,
                store_host=store_host,
                sys_flag=sys_flag,
                reconsume=i % 2,
                queue_offset=r.append_message_result.logics_offset,
                offset=r.append_message_result.wrote_offset,
            )
        # a classic batch: one full record per element
        elements = [
            m.BatchElement(f"batch-{j}".encode(), f"TAGS\x01bt\x02UNIQ_KEY\x01BATCH{j:04d}\x02KEYS\x01bk{j}\x02", j)
            for j in range(3)
        ]
        r = s.put_messages(
            MessageExtBatch(
                topic="TopicB",
                body=m.encode_batch_body(elements),
                queue_id=2,
                properties_string="CLUSTER\x01c1\x02",
                born_timestamp=BASE_TS,
            )
        )
        assert r.is_ok(), r
        for j in range(3):
            sent.by_uniq[f"BATCH{j:04d}"] = dict(
                topic="TopicB",
                queue_id=2,
                body=f"batch-{j}".encode(),
                flag=j,
                props={"TAGS": "bt", "UNIQ_KEY": f"BATCH{j:04d}", "KEYS": f"bk{j}", "CLUSTER": "c1"},
                queue_offset=r.append_message_result.logics_offset + j,
            )
        # an inner-batch record (5.x BatchCQ): the client batch is the body of one record
        inner = [
            m.BatchElement(f"inner-{j}".encode(), f"UNIQ_KEY\x01INNER{j:04d}\x02TAGS\x01it\x02", 7) for j in range(2)
        ]
        r = s.put_message(
            m.MessageExtBrokerInner(
                topic="TopicC",
                body=m.encode_batch_body(inner),
                queue_id=0,
                sys_flag=m.MessageSysFlag.INNER_BATCH_FLAG | m.MessageSysFlag.NEED_UNWRAP_FLAG,
                properties={"INNER_NUM": "2", "UNIQ_KEY": "INNEROUTER"},
            )
        )
        assert r.is_ok(), r
        for j in range(2):
            sent.by_uniq[f"INNER{j:04d}"] = dict(
                topic="TopicC",
                queue_id=0,
                body=f"inner-{j}".encode(),
                flag=7,
                props={"UNIQ_KEY": f"INNER{j:04d}", "TAGS": "it"},
                queue_offset=r.append_message_result.logics_offset + j,
            )
        deadline = time.monotonic() + 10
        while s.dispatch_behind_bytes() > 0 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        s.shutdown()
    return sent
