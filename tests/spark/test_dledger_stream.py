"""`spark.readStream.format("rocketmq")` over a DLedger member's store (enableDLegerCommitLog): a
pyrmq group of three message stores (real sockets, n0 the preferred leader). The stream follows
n0's consume queues, which hold only what the group committed: an entry n0 appended as leader
while both followers were down is in its ledger but not offered, until the group commits it.
A second run from the checkpoint adds exactly the records committed since, each once, with the
topic, queue, offset, keys and body of its put. The batch source over the live leader's store
leaves that entry out too (its checkpoint's committedIndex is before it) unless
includeUncommitted is set, and reads it once the group has committed it. The group is closed
while Spark runs (its JVM and workers on a loaded machine must not starve the members' 300 ms
heartbeats; in the one phase where Spark reads a live store, its leader is alone anyway)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from pyspark.sql.types import LongType, StructField, StructType
from spark.streams import RestartingQuery
from support.dledger import IDS, member, peers_string, run, until
from support.ports import free_port

from pyrmq.broker.put import await_put
from pyrmq.dledger.store_files import DLedgerStoreReader, default_path, read_checkpoint
from pyrmq.spark.sources import RocketMQDataSource
from pyrmq.spark.streaming import from_offsets
from pyrmq.store import message as m
from pyrmq.store.dledger_store import DLedgerMessageStore
from pyrmq.store.results import PutMessageStatus
from pyrmq.store.store_config import MessageStoreConfig

TOPICS = ("DlStreamA", "DlStreamB")
FIRST, LATER = 20, 10

#: what was put: commitLogOffset -> (topic, queueId, queueOffset, keys, body)
Sent = dict[int, tuple[str, int, int, str, bytes]]


def message(k: int) -> m.MessageExtBrokerInner:
    return m.MessageExtBrokerInner(
        topic=TOPICS[k % 2], queue_id=k % 3, body=f"dl-stream-{k}-".encode() * (1 + k % 4), properties={"KEYS": f"k{k}"}
    )


async def put(store: DLedgerMessageStore, k: int, sent: Sent) -> None:
    msg = message(k)
    result = await await_put(store.put_message_async(msg))
    assert result.put_message_status is PutMessageStatus.PUT_OK, result
    r = result.append_message_result
    assert r is not None
    sent[r.wrote_offset] = (msg.topic, msg.queue_id, r.logics_offset, f"k{k}", msg.body or b"")


def committed_offered(root: Path) -> int:
    """How many records the stream source would offer now (its latestOffset from nothing)."""
    schema = StructType([StructField("commitLogOffset", LongType())])
    reader = RocketMQDataSource({"path": str(root)}).streamReader(schema)
    return sum(from_offsets(reader.latestOffset(None, reader.getDefaultReadLimit())).values())


def open_member(base: Path, self_id: str, peers: str) -> DLedgerMessageStore:
    root = base / self_id
    server = member(root, self_id, peers, preferred_leader_ids="n0")
    store = DLedgerMessageStore(MessageStoreConfig(store_path_root_dir=str(root)), server)
    store.load()
    return store


async def close(store: DLedgerMessageStore) -> None:
    await store.dledger.server.close()
    store.shutdown()


@contextlib.asynccontextmanager
async def group(base: Path, peers: str, ids: tuple[str, ...]) -> AsyncIterator[dict[str, DLedgerMessageStore]]:
    """The members ``ids`` started on their files, once n0 leads and is ready; all closed after."""
    stores: dict[str, DLedgerMessageStore] = {}
    try:
        for i in ids:
            stores[i] = open_member(base, i, peers)
            await stores[i].dledger.server.start()
            stores[i].start()
        await until(lambda: stores["n0"].dledger.ready, 30, "n0 leading")
        yield stores
    finally:
        for s in stores.values():
            await close(s)


def test_stream_sees_what_the_group_commits_once_across_restarts(spark, corrupt_log, tmp_path: Path) -> None:
    out, check = tmp_path / "out", tmp_path / "check"
    base = tmp_path / "group"
    root = base / "n0"  # n0's store root: the stream's path
    peers = peers_string({i: free_port() for i in IDS})
    sent: Sent = {}

    def stream() -> int:
        """One availableNow run from the checkpoint; the rows in the sink after it."""

        def begin():
            return (
                spark.readStream.format("rocketmq")
                .option("maxRecordsPerTrigger", "8")
                .load(str(root))
                .writeStream.format("parquet")
                .option("path", str(out))
                .option("checkpointLocation", str(check))
                .trigger(availableNow=True)
                .start()
            )

        RestartingQuery(begin).finish(240)
        return spark.read.parquet(str(out)).count()

    async def first() -> None:
        async with group(base, peers, IDS) as stores:
            for k in range(FIRST):
                await put(stores["n0"], k, sent)

    def batch(**options: str) -> list[int]:
        """The commitLogOffsets `spark.read.format("rocketmq")` gives over n0's store."""
        reader = spark.read.format("rocketmq").option("columns", "commitLogOffset")
        for k, v in options.items():
            reader = reader.option(k, v)
        return sorted(r.commitLogOffset for r in reader.load(str(root)).collect())

    run(first, timeout=120)
    assert stream() == FIRST

    async def alone() -> None:
        """Both followers closed: n0 appends the next put, which nobody acknowledges."""
        async with group(base, peers, IDS) as stores:
            for i in ("n1", "n2"):
                await close(stores.pop(i))
            pending = asyncio.ensure_future(await_put(stores["n0"].put_message_async(message(FIRST))))
            ledger = default_path(str(root), "n0")
            await until(lambda: DLedgerStoreReader(ledger).ledger_end_index >= FIRST, 10, "the unacknowledged entry")
            await asyncio.sleep(1)  # more than enough for a dispatch that should not happen
            if pending.done() and not pending.cancelled() and pending.exception() is None:
                assert pending.result().put_message_status is not PutMessageStatus.PUT_OK
            pending.cancel()
            assert committed_offered(root) == FIRST  # in the ledger, not offered
            # the batch source over the live leader's store: the checkpoint says where the commit is
            checkpoint = read_checkpoint(ledger)
            assert checkpoint is not None and checkpoint.committed_index == FIRST - 1
            assert await asyncio.to_thread(batch) == sorted(sent)
            with_tail = await asyncio.to_thread(batch, includeUncommitted="true")
            assert len(with_tail) == FIRST + 1 and set(sent) < set(with_tail)

    run(alone, timeout=300)  # two Spark jobs inside, on a loaded machine

    async def again() -> None:
        """n1 back: n0 (the longer log) leads, the group commits the entry; more puts."""
        async with group(base, peers, ("n0", "n1")) as stores:
            await until(lambda: committed_offered(root) == FIRST + 1, 30, "the entry committed and dispatched")
            entry = DLedgerStoreReader(default_path(str(root), "n0")).get(FIRST)
            wrapped = m.decode_message(entry.body)
            assert wrapped.body is not None
            sent[wrapped.commit_log_offset] = (
                wrapped.topic,
                wrapped.queue_id,
                wrapped.queue_offset,
                "k20",
                wrapped.body,
            )
            for k in range(FIRST + 1, FIRST + 1 + LATER):
                await put(stores["n0"], k, sent)
            await until(lambda: committed_offered(root) == len(sent), 10, "the later puts dispatched")

    run(again, timeout=120)
    assert batch() == sorted(sent)  # the entry once the group committed it, and the later puts
    assert stream() == len(sent) == FIRST + 1 + LATER
    rows = spark.read.parquet(str(out)).collect()
    got = {r.commitLogOffset: (r.topic, r.queueId, r.queueOffset, " ".join(r.keys), bytes(r.body)) for r in rows}
    assert got == sent
