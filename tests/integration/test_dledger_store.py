"""pyrmq.store.dledger_store: three message stores whose commit logs are the members of one
DLedger group (real sockets). A PUT_OK message is in every member's consume queue and index; a
new leader continues the queue offsets; a killed member restarted on its files recovers its
consume queues and dispatches only what they miss."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.dledger import IDS, leaders, member, one_leader, peers_string, run, until
from support.ports import free_port

from pyrmq.broker.put import await_put
from pyrmq.dledger.server import DLedgerServer
from pyrmq.store import message as m
from pyrmq.store.cli import inspect_store, verify_store
from pyrmq.store.cli import main as store_main
from pyrmq.store.dledger_store import DLedgerMessageStore
from pyrmq.store.results import GetMessageStatus, PutMessageStatus
from pyrmq.store.store_config import MessageStoreConfig

TOPIC = "DLedgerStoreTopic"


def open_store(base: Path, self_id: str, peers: str) -> DLedgerMessageStore:
    root = base / self_id
    server = member(root, self_id, peers)
    store = DLedgerMessageStore(MessageStoreConfig(store_path_root_dir=str(root)), server)
    store.load()
    return store


async def start(store: DLedgerMessageStore) -> None:
    await store.dledger.server.start()
    store.start()


def bodies(store: DLedgerMessageStore, max_nums: int = 64) -> list[bytes]:
    got = store.get_message("g", TOPIC, 0, 0, max_nums)
    if got.status is not GetMessageStatus.FOUND:
        return []
    try:
        return [m.decode_message(b).body or b"" for b in got.message_buffer_list]
    finally:
        got.release()


async def ready(stores: dict[str, DLedgerMessageStore]) -> DLedgerMessageStore:
    servers: dict[str, DLedgerServer] = {i: s.dledger.server for i, s in stores.items()}
    await until(lambda: len(leaders(servers)) == 1, 10, "a leader")
    leader = await one_leader(servers)
    found = next(s for s in stores.values() if s.dledger.server is leader)
    await until(lambda: found.dledger.ready, 10, "leader ready")
    return found


async def put(store: DLedgerMessageStore, k: int) -> int:
    msg = m.MessageExtBrokerInner(topic=TOPIC, body=f"m{k}".encode(), properties={"KEYS": f"k{k}"})
    result = await await_put(store.put_message_async(msg))
    assert result.put_message_status is PutMessageStatus.PUT_OK, result
    assert result.append_message_result is not None
    return result.append_message_result.logics_offset


def test_dledger_stores_replicate_fail_over_and_recover(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async def main() -> None:
        peers = peers_string({i: free_port() for i in IDS})
        stores = {i: open_store(tmp_path, i, peers) for i in IDS}
        try:
            for s in stores.values():
                await start(s)
            leader = await ready(stores)
            assert [await put(leader, k) for k in range(20)] == list(range(20))
            want = [f"m{k}".encode() for k in range(20)]
            # PUT_OK: in the leader's consume queue and index already, the others follow the commit
            assert bodies(leader) == want
            assert len(leader.query_message(TOPIC, "k7", 4, 0, 2**62).message_buffer_list) == 1
            await until(lambda: all(bodies(s) == want for s in stores.values()), 5, "dispatch on every member")
            # as Java's brokerStatus shows them: the min offset is the first data file's start, the
            # earliest message time is read BODY_OFFSET further, the member's fsync is the flush
            first = leader.get_message("g", TOPIC, 0, 0, 1)
            stored_at = m.decode_message(first.message_buffer_list[0]).store_timestamp
            first.release()
            assert leader.get_min_phy_offset() == 0
            assert Path(leader.get_store_path_physic()) == tmp_path / leader.dledger.server.config.self_id / (
                f"dledger-{leader.dledger.server.config.self_id}/data"
            )
            assert leader.get_earliest_message_time_all() == stored_at > 0
            end = leader.get_max_phy_offset()
            await until(lambda: leader.get_flushed_where() == end, 5, "the member's flush")
            follower = next(s for s in stores.values() if s is not leader)
            refused = await await_put(follower.put_message_async(m.MessageExtBrokerInner(topic=TOPIC, body=b"x")))
            assert refused.put_message_status is PutMessageStatus.SERVICE_NOT_AVAILABLE
            # the leader's member is killed (its store closed after it): the other two elect a new
            # leader that goes on
            old_id = leader.dledger.server.config.self_id
            await leader.dledger.server.abort()
            leader.shutdown()
            rest = {i: s for i, s in stores.items() if i != old_id}
            new = await ready(rest)
            assert [await put(new, k) for k in range(20, 25)] == list(range(20, 25))
            want += [f"m{k}".encode() for k in range(20, 25)]
            assert bodies(new) == want
            # the old member back on its files: its queues held 20, it dispatches the other 5
            stores[old_id] = back = open_store(tmp_path, old_id, peers)
            assert back.get_max_offset_in_queue(TOPIC, 0) == 20
            assert back.dledger.dispatched_index == 19  # dispatch resumes after the queues' last record
            await start(back)
            await until(lambda: bodies(back) == want, 10, "catch-up of the restarted member")
            assert back.get_max_offset_in_queue(TOPIC, 0) == 25
            assert len(back.query_message(TOPIC, "k22", 4, 0, 2**62).message_buffer_list) == 1
        finally:
            for s in stores.values():
                await s.dledger.server.close()
                s.shutdown()

    run(main)
    # `pyrmq store verify` reads a DLedger member's store: the records inside its entries
    for i in IDS:
        report, stats = verify_store(str(tmp_path / i))
        # (a follower may not have dispatched the last commit yet: a warning, not a problem)
        assert (report.problems, stats.records) == ([], 25), (i, report.problems)
    # `pyrmq store inspect` too: the ledger (entries, term, the commit-log range), its last records,
    # and the queues whose store times are read through it
    for i in IDS:
        info = inspect_store(str(tmp_path / i))
        d = info["dledger"]
        assert d["member_dir"] == str(tmp_path / i / f"dledger-{i}")
        data_files = len(list((tmp_path / i / f"dledger-{i}" / "data").iterdir()))
        assert (d["entries"], d["begin_index"], d["end_index"], d["data_files"]) == (25, 0, 24, data_files), d
        assert data_files > 1  # so the tail is gathered across files
        assert d["term"] >= d["end_term"] >= 1
        assert 0 <= d["committed_index"] <= 24
        assert d["first_record_offset"] == 48  # the first entry at 0, its record BODY_OFFSET further
        assert [(r["topic"], r["queue_offset"]) for r in d["tail"]] == [(TOPIC, q) for q in range(20, 25)]
        assert d["last_record_offset"] == d["tail"][-1]["offset"] < info["commitlog"]["max_offset"] == d["write_pos"]
        assert info["commitlog"]["first_store_time"] is not None
        q = info["topics"][TOPIC]["0"]
        # (a follower may not have dispatched the last commit yet)
        assert q["min_offset"] == 0 and q["max_offset"] in (24, 25), q
        assert q["last_store_time"] == d["tail"][q["max_offset"] - 21]["store_time"]
    assert store_main(["inspect", str(tmp_path / "n1")]) == 0
    text = capsys.readouterr().out
    assert "dledger: " in text and "25 entr(y/ies), index 0 .. 24" in text, text
    assert f"{TOPIC} queue 0 offset 24" in text, text
    clean = tmp_path / "n0" / "dledger-n0" / "data"
    data = next(p for p in sorted(clean.iterdir()) if p.stat().st_size)
    raw = bytearray(data.read_bytes())
    at = raw.find(b"m3")  # a message body inside the first data file
    raw[at] ^= 0xFF
    data.write_bytes(bytes(raw))
    report, _ = verify_store(str(tmp_path / "n0"))
    assert any("bad record" in str(p) for p in report.problems), report.problems


def test_crashed_member_rebuilds_its_index_from_the_ledger(tmp_path: Path) -> None:
    async def main() -> None:
        peers = peers_string({i: free_port() for i in IDS})
        stores = {i: open_store(tmp_path, i, peers) for i in IDS}
        try:
            for s in stores.values():
                await start(s)
            leader = await ready(stores)
            for k in range(10):
                await put(leader, k)
            want = [f"m{k}".encode() for k in range(10)]
            await until(lambda: all(bodies(s) == want for s in stores.values()), 5, "dispatch on every member")
            # a follower's process dies: no store shutdown, the abort file stays, its lock goes
            crashed_id = next(i for i, s in stores.items() if s is not leader)
            crashed = stores[crashed_id]
            await crashed.dledger.server.abort()
            crashed._lock.release()
            stores[crashed_id] = back = open_store(tmp_path, crashed_id, peers)
            assert not back.last_exit_ok
            # the index files newer than the checkpoint are gone: all of them here
            assert back.query_message(TOPIC, "k3", 4, 0, 2**62).message_buffer_list == []
            assert back.dledger.dispatched_index == -1  # so dispatch starts over at the first entry
            await start(back)
            await until(lambda: bodies(back) == want, 10, "dispatch after the crash")
            for k in range(10):
                assert len(back.query_message(TOPIC, f"k{k}", 4, 0, 2**62).message_buffer_list) == 1
        finally:
            for s in stores.values():
                await s.dledger.server.close()
                s.shutdown()

    run(main)
