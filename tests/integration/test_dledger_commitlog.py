"""pyrmq.store.dledger_commitlog: the commit log on a group of three DLedger members over real
sockets. A put is PUT_OK only once a majority holds its entry; every member dispatches the same
committed records; a new leader continues the queue offsets; a restarted member recovers."""

from __future__ import annotations

import asyncio
from pathlib import Path

from support.dledger import IDS, assert_stores_identical, leaders, member, one_leader, run, started_group, until

from pyrmq.dledger.entry import BODY_OFFSET, decode_entry
from pyrmq.dledger.protocol import DLedgerResponseCode
from pyrmq.dledger.server import DLedgerServer
from pyrmq.store import message as m
from pyrmq.store.commitlog import MessageExtBatch
from pyrmq.store.dledger_commitlog import DLedgerCommitLog, put_status
from pyrmq.store.results import DispatchRequest, PutMessageStatus
from pyrmq.store.store_config import MessageStoreConfig

TOPIC = "DLedgerTopic"


class Member:
    """A member's commit log and what it dispatched (the consume queues' view)."""

    def __init__(self, server: DLedgerServer) -> None:
        self.server = server
        self.dispatched: list[DispatchRequest] = []
        self.commit_log = DLedgerCommitLog(server, MessageStoreConfig(), self.dispatched.append)


def message(k: int, queue_id: int = 0) -> m.MessageExtBrokerInner:
    return m.MessageExtBrokerInner(
        topic=TOPIC,
        body=f"body {k}".encode(),
        queue_id=queue_id,
        properties={"TAGS": f"t{k % 3}", "KEYS": f"key{k}"},
    )


def seen(member: Member) -> list[tuple[str, int, int, int]]:
    return [(r.topic, r.queue_id, r.consume_queue_offset, r.commit_log_offset) for r in member.dispatched]


async def ready_leader(members: dict[str, Member]) -> Member:
    leader = await one_leader({i: x.server for i, x in members.items()})
    found = next(x for x in members.values() if x.server is leader)
    await until(lambda: found.commit_log.ready, 10, "leader ready")
    return found


def test_puts_acknowledged_on_a_majority_and_dispatched_on_every_member(tmp_path: Path) -> None:
    async def main() -> None:
        async with started_group(tmp_path) as servers:
            members = {i: Member(s) for i, s in servers.items()}
            leader = await ready_leader(members)
            msgs = [message(k, k % 2) for k in range(30)]
            results = await asyncio.gather(*(leader.commit_log.put_message(x) for x in msgs))
            assert all(r.put_message_status is PutMessageStatus.PUT_OK for r in results)
            # queue offsets 0..14 on each queue, in put order
            for q in (0, 1):
                assert [
                    r.append_message_result.logics_offset for r, x in zip(results, msgs, strict=True) if x.queue_id == q
                ] == list(range(15))  # type: ignore[union-attr]
            # acknowledged = dispatched and readable on the leader already
            assert len(leader.dispatched) == 30
            for r, x in zip(results, msgs, strict=True):
                amr = r.append_message_result
                assert amr is not None
                raw = leader.commit_log.get_message(amr.wrote_offset, amr.wrote_bytes)
                assert raw is not None
                back = m.decode_message(raw)
                assert (back.body, back.commit_log_offset, back.queue_offset) == (
                    x.body,
                    amr.wrote_offset,
                    amr.logics_offset,
                )
                assert back.msg_id == amr.msg_id
                # the record is the body of the entry just before it
                entry = decode_entry(
                    leader.server.store.read(amr.wrote_offset - BODY_OFFSET, BODY_OFFSET + amr.wrote_bytes)
                )
                assert (entry.pos + BODY_OFFSET, entry.body) == (amr.wrote_offset, raw)
            assert leader.commit_log.get_message(leader.commit_log.get_max_offset(), 10) is None
            # every member dispatches the same records once they learn the commit
            await until(lambda: all(len(x.dispatched) == 30 for x in members.values()), 5, "dispatch on all")
            assert all(seen(x) == seen(leader) for x in members.values())
            tags = {r.commit_log_offset: r.tags_code for r in leader.dispatched}
            assert tags[results[4].append_message_result.wrote_offset] == m.tags_string_to_tags_code("t1")  # type: ignore[union-attr]
            assert [r.keys for r in leader.dispatched] == [f"key{k}" for k in range(30)]
            # a client batch: consecutive entries, consecutive queue offsets, one answer
            elements = [m.BatchElement(f"batch {k}".encode(), f"KEYS\x01b{k}\x02") for k in range(5)]
            batch = MessageExtBatch(TOPIC, m.encode_batch_body(elements), properties_string="CLUSTER\x01c1")
            done = await leader.commit_log.put_messages(batch)
            assert done.put_message_status is PutMessageStatus.PUT_OK
            amr = done.append_message_result
            assert amr is not None and (amr.logics_offset, amr.msg_num) == (15, 5)
            batch_records = leader.dispatched[30:]
            assert [r.consume_queue_offset for r in batch_records] == list(range(15, 20))
            assert amr.msg_id.split(",") == [
                m.create_message_id(("127.0.0.1", 10911), r.commit_log_offset) for r in batch_records
            ]
            assert amr.wrote_offset == batch_records[0].commit_log_offset
            assert [(r.keys, (r.properties or {}).get("CLUSTER")) for r in batch_records] == [
                (f"b{k}", "c1") for k in range(5)
            ]
            await until(lambda: all(len(x.dispatched) == 35 for x in members.values()), 5, "batch on all")
            bad = await leader.commit_log.put_messages(MessageExtBatch(TOPIC, b"\x00\x00\x00\x05"))
            assert bad.put_message_status is PutMessageStatus.MESSAGE_ILLEGAL
            # a follower refuses puts
            follower = next(x for x in members.values() if x is not leader)
            refused = await follower.commit_log.put_message(message(99))
            assert refused.put_message_status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert_stores_identical(tmp_path, IDS)

    run(main)


def test_new_leader_continues_offsets_and_restarted_member_recovers(tmp_path: Path) -> None:
    async def main() -> None:
        async with started_group(tmp_path) as servers:
            members = {i: Member(s) for i, s in servers.items()}
            old = await ready_leader(members)
            acked = []
            for k in range(10):
                r = await old.commit_log.put_message(message(k))
                assert r.put_message_status is PutMessageStatus.PUT_OK
                acked.append(f"body {k}".encode())
            old_id = old.server.config.self_id
            await old.server.abort()  # killed
            rest = {i: x for i, x in members.items() if i != old_id}
            await until(lambda: len(leaders({i: x.server for i, x in rest.items()})) == 1, 10, "new leader")
            new = await ready_leader(rest)
            for k in range(10, 20):
                r = await new.commit_log.put_message(message(k))
                assert r.put_message_status is PutMessageStatus.PUT_OK
                assert r.append_message_result is not None and r.append_message_result.logics_offset == k
                acked.append(f"body {k}".encode())
            # the killed member back on its store: its consume queues held the first 5 records
            first_five_end = old.dispatched[4].commit_log_offset + old.dispatched[4].msg_size
            back_server = member(tmp_path, old_id, old.server.config.peers)
            servers[old_id] = back_server
            back = Member(back_server)
            back.commit_log.recover(first_five_end, {f"{TOPIC}-0": 5})
            await back_server.start()
            await until(lambda: len(back.dispatched) == 15, 10, "catch-up dispatch of the restarted member")
            assert [r.consume_queue_offset for r in back.dispatched] == list(range(5, 20))
            assert back.commit_log.dispatched_queue_table == {f"{TOPIC}-0": 20}
            bodies = []
            for r in [*old.dispatched[:5], *back.dispatched]:
                raw = back.commit_log.get_message(r.commit_log_offset, r.msg_size)
                assert raw is not None
                bodies.append(m.decode_message(raw).body)
            assert bodies == acked  # nothing acknowledged lost, nothing twice

    run(main)


def test_no_majority_no_put_ok_and_nothing_dispatched(tmp_path: Path) -> None:
    async def main() -> None:
        async with started_group(tmp_path) as servers:
            members = {i: Member(s) for i, s in servers.items()}
            leader = await ready_leader(members)
            assert (await leader.commit_log.put_message(message(0))).put_message_status is PutMessageStatus.PUT_OK
            for x in members.values():
                if x is not leader:
                    await x.server.abort()
            r = await leader.commit_log.put_message(message(1))
            assert r.put_message_status in (
                PutMessageStatus.IN_SYNC_REPLICAS_NOT_ENOUGH,
                PutMessageStatus.UNKNOWN_ERROR,
            )
            assert len(leader.dispatched) == 1
            assert (
                leader.commit_log.get_max_offset()
                == leader.dispatched[0].commit_log_offset + leader.dispatched[0].msg_size
            )

    run(main, timeout=30)


def test_put_status_follows_java() -> None:
    assert put_status(DLedgerResponseCode.SUCCESS) is PutMessageStatus.PUT_OK
    assert put_status(DLedgerResponseCode.WAIT_QUORUM_ACK_TIMEOUT) is PutMessageStatus.IN_SYNC_REPLICAS_NOT_ENOUGH
    assert put_status(DLedgerResponseCode.NOT_LEADER) is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert put_status(DLedgerResponseCode.LEADER_PENDING_FULL) is PutMessageStatus.OS_PAGE_CACHE_BUSY
    assert put_status(DLedgerResponseCode.TERM_CHANGED) is PutMessageStatus.UNKNOWN_ERROR
