"""The `rocketmq` source over a DLedger broker's store (enableDLegerCommitLog): its records sit
inside the entries of dledger-<selfId>/data, and a row's commitLogOffset is the broker's physical
offset (entry pos + 48), the one its consume queues hold. The store is written by a pyrmq
DLedger group of one member (real Raft log, real commit-log records, real dispatch)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.dledger import DATA_FILE, member, one_leader, peers_string, run, until
from support.ports import free_port

from pyrmq.broker.put import await_put
from pyrmq.dledger.entry import BODY_OFFSET
from pyrmq.dledger.store_files import DLedgerStoreReader
from pyrmq.spark.commitlog_scan import CorruptRecordError, iter_split, plan_splits
from pyrmq.store import message as m
from pyrmq.store.dledger_store import DLedgerMessageStore
from pyrmq.store.results import PutMessageStatus
from pyrmq.store.store_config import MessageStoreConfig

N = 40
TOPICS = ("DlA", "DlB")


def _put_all(root: Path) -> list[tuple[str, int, int, bytes, str, int]]:
    """(topic, queueId, queueOffset, body, keys, commitLogOffset) of each message put."""
    sent: list[tuple[str, int, int, bytes, str, int]] = []

    async def main() -> None:
        server = member(root, "n0", peers_string({"n0": free_port()}))
        store = DLedgerMessageStore(MessageStoreConfig(store_path_root_dir=str(root)), server)
        store.load()
        try:
            await server.start()
            store.start()
            await one_leader({"n0": server})
            await until(lambda: store.dledger.ready, 10, "leader ready")
            for k in range(N):
                topic, qid, keys = TOPICS[k % 2], k % 3, f"key{k} both"
                msg = m.MessageExtBrokerInner(
                    topic=topic, queue_id=qid, body=f"body-{k}-".encode() * (1 + k % 5), properties={"KEYS": keys}
                )
                result = await await_put(store.put_message_async(msg))
                assert result.put_message_status is PutMessageStatus.PUT_OK, result
                r = result.append_message_result
                assert r is not None
                sent.append((topic, qid, r.logics_offset, msg.body or b"", keys, r.wrote_offset))
        finally:
            await server.close()
            store.shutdown()

    run(main)
    return sent


@pytest.fixture(scope="module")
def dledger_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[str, int, int, bytes, str, int]]]:
    root = tmp_path_factory.mktemp("dledger-spark") / "n0"
    return root, _put_all(root)


def test_rows_are_the_records_inside_the_ledger(spark, corrupt_log, dledger_store) -> None:
    root, sent = dledger_store
    ledger = DLedgerStoreReader(str(root / "dledger-n0"))
    assert len(ledger.data_files) > 1  # several data files: several splits
    # the broker's physical offsets are the entries' positions + 48
    assert sorted(s[5] for s in sent) == [e.pos + BODY_OFFSET for e in ledger.entries()]
    cols = "topic,queueId,queueOffset,body,keys,commitLogOffset,file"
    for path in (root, root / "dledger-n0"):  # the broker's store root, or the member directory
        df = spark.read.format("rocketmq").option("columns", cols).load(str(path))
        assert df.rdd.getNumPartitions() == len(ledger.data_files)
        rows = sorted(
            (r.topic, r.queueId, r.queueOffset, bytes(r.body), r.keys, r.commitLogOffset) for r in df.collect()
        )
        assert rows == sorted((t, q, o, b, k.split(), c) for t, q, o, b, k, c in sent)
    # they agree with the consume queues, which hold the same physical offsets
    cq = spark.read.format("rocketmq_consumequeue").load(str(root)).collect()
    assert sorted((e.topic, e.queueId, e.queueOffset, e.commitLogOffset) for e in cq) == sorted(
        (t, q, o, c) for t, q, o, _b, _k, c in sent
    )
    # pushed-down offset bounds and the offsets option find records by their physical offset
    some = sorted(s[5] for s in sent)[10:13]
    by_offsets = spark.read.format("rocketmq").option("offsets", ",".join(map(str, some))).load(str(root))
    assert sorted(r.commitLogOffset for r in by_offsets.collect()) == some
    ranged = spark.read.format("rocketmq").option("startOffset", some[0]).option("endOffset", some[-1]).load(str(root))
    assert sorted(r.commitLogOffset for r in ranged.collect()) == some[:2]


def test_a_corrupt_record_inside_an_entry_fails_or_is_skipped(dledger_store, tmp_path) -> None:
    root, sent = dledger_store
    copy = tmp_path / "n0" / "dledger-n0" / "data"
    copy.mkdir(parents=True)
    for f in (root / "dledger-n0" / "data").iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    first = copy / "00000000000000000000"
    raw = bytearray(first.read_bytes())
    raw[raw.find(b"body-1-")] ^= 0xFF  # the second message's body: its BODYCRC no longer matches
    first.write_bytes(bytes(raw))
    splits = plan_splits(str(tmp_path / "n0"))
    with pytest.raises(CorruptRecordError):
        for s in splits:
            list(iter_split(s))
    got = [msg.commit_log_offset for s in splits for _buf, _pos, msg in iter_split(s, corrupt="skip")]
    assert got == sorted(c for *_x, c in sent if c != sent[1][5])


def test_a_broken_entry_header_is_a_corrupt_record(dledger_store, tmp_path) -> None:
    """The plan reads the ledger's end from the index, not from a walk that would stop at a broken
    header; the scan then reports the broken entry (its size is gone, so "skip" ends that file)."""
    root, sent = dledger_store
    member = tmp_path / "n0" / "dledger-n0"
    shutil.copytree(root / "dledger-n0", member)
    entries = list(DLedgerStoreReader(str(member)).entries())
    in_first = [e for e in entries if e.pos < DATA_FILE]
    assert len(in_first) > 3
    first = member / "data" / "00000000000000000000"
    raw = bytearray(first.read_bytes())
    raw[in_first[2].pos + 4 : in_first[2].pos + 8] = (7).to_bytes(4, "big")  # entry 2's size
    first.write_bytes(bytes(raw))
    splits = plan_splits(str(tmp_path / "n0"))
    assert len(splits) == len({e.pos // DATA_FILE for e in entries})  # every data file, still
    with pytest.raises(CorruptRecordError, match="not a DLedger entry"):
        for s in splits:
            list(iter_split(s))
    got = [msg.commit_log_offset for s in splits for _buf, _pos, msg in iter_split(s, corrupt="skip")]
    lost = {e.pos + BODY_OFFSET for e in in_first[2:]}
    assert got == sorted(c for *_x, c in sent if c not in lost)
