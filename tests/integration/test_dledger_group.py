"""pyrmq.dledger.server: groups of three DLedger members on 127.0.0.1 ports talking DLedger's RPCs
through real sockets: election, replication, the quorum commit, a killed leader replaced, a
restarted member catching up, and the three stores byte-identical afterwards."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.dledger import (
    GROUP,
    IDS,
    assert_stores_identical,
    leaders,
    member,
    one_leader,
    peers_string,
    run,
    started_group,
    until,
)
from support.ports import free_port

from pyrmq.dledger import protocol as p
from pyrmq.dledger.config import DLedgerConfig
from pyrmq.dledger.entry import DLedgerEntry
from pyrmq.dledger.raft import Role, Timing
from pyrmq.dledger.server import PULL_NOT_SERVED, AppendError, DLedgerServer
from pyrmq.dledger.store_files import DLedgerStoreReader, default_path, read_term_file
from pyrmq.protocol.codes import ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.remoting.client import RemotingClient


def test_three_members_elect_replicate_and_commit(tmp_path: Path) -> None:
    async def main() -> None:
        async with started_group(tmp_path) as members:
            leader = await one_leader(members)
            bodies = [f"message {k}".encode() * (k + 1) for k in range(40)]
            entries = await asyncio.gather(*(leader.append(b) for b in bodies))
            assert [e.index for e in sorted(entries, key=lambda e: e.index)] == list(range(40))
            # acknowledged = committed on the leader; followers learn it by the next push
            assert leader.committed_index >= 39
            await until(lambda: all(m.committed_index == 39 for m in members.values()), 5, "commit on all")
            # a follower refuses appends and names the leader
            follower = next(m for m in members.values() if m is not leader)
            with pytest.raises(AppendError) as info:
                await follower.append(b"x")
            assert info.value.code is p.DLedgerResponseCode.NOT_LEADER
            assert info.value.leader_id == leader.config.self_id
            # the DLedgerClient RPCs on the wire: METADATA from anyone, APPEND on the leader
            async with RemotingClient() as client:
                meta = p.MetadataResponse.decode(
                    (
                        await client.invoke(
                            follower.address,
                            p.request_command(p.MetadataRequest(group=GROUP, remote_id=follower.config.self_id)),
                        )
                    ).body
                )
                assert meta.code == p.DLedgerResponseCode.SUCCESS
                assert meta.leader_id == leader.config.self_id and set(meta.peers or {}) == set(IDS)
                req = p.AppendEntryRequest(group=GROUP, remote_id=leader.config.self_id, body=b"by rpc")
                resp = p.AppendEntryResponse.decode((await client.invoke(leader.address, p.request_command(req))).body)
                assert (resp.code, resp.index) == (p.DLedgerResponseCode.SUCCESS, 40)
                get = p.GetEntriesRequest(group=GROUP, remote_id=leader.config.self_id, begin_index=40)
                got = p.GetEntriesResponse.decode((await client.invoke(leader.address, p.request_command(get))).body)
                assert got.code == p.DLedgerResponseCode.SUCCESS and [e.body for e in got.entries] == [b"by rpc"]
                get.begin_index = 41
                got = p.GetEntriesResponse.decode((await client.invoke(leader.address, p.request_command(get))).body)
                assert got.code == p.DLedgerResponseCode.INDEX_OUT_OF_RANGE
                bad = p.AppendEntryRequest(group="other", remote_id=leader.config.self_id, body=b"x")
                resp = p.AppendEntryResponse.decode((await client.invoke(leader.address, p.request_command(bad))).body)
                assert resp.code == p.DLedgerResponseCode.UNKNOWN_GROUP
                # PULL: 0.3.2 declares it and answers with a remoting SYSTEM_ERROR (handlePull is null)
                pull = p.PullEntriesRequest(group=GROUP, remote_id=follower.config.self_id, node_id="n9", begin_index=0)
                answer = await client.invoke(follower.address, p.request_command(pull))
                assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, PULL_NOT_SERVED)
            await until(lambda: all(m.committed_index == 40 for m in members.values()), 5, "commit of the rpc append")
        assert_stores_identical(tmp_path, IDS)
        for i in IDS:
            reader = DLedgerStoreReader(default_path(str(tmp_path), i))
            assert [e.body for e in reader.entries()] == [*bodies, b"by rpc"]
            assert reader.committed_index == 40
            assert read_term_file(default_path(str(tmp_path), i)).curr_term == leader.term

    run(main)


def test_killed_leader_replaced_and_restarted_member_catches_up(tmp_path: Path) -> None:
    async def main() -> None:
        async with started_group(tmp_path) as members:
            old = await one_leader(members)
            old_id, old_term = old.config.self_id, old.term
            for k in range(10):
                await old.append(f"before {k}".encode())
            await old.abort()  # a killed process: no last flush, no checkpoint, connections cut
            rest = {i: m for i, m in members.items() if i != old_id}
            took = await until(lambda: len(leaders(rest)) == 1, 10, "new leader")
            new = await one_leader(rest)
            assert new.term > old_term
            # 3 heartbeat intervals of silence, then at most a few vote rounds
            assert took < 5, f"election took {took:.1f} s"
            for k in range(25):
                await new.append(f"after {k}".encode())  # a majority of two
            # the old leader comes back on its old store and catches up as a follower
            members[old_id] = back = member(tmp_path, old_id, old.config.peers)
            await back.start()
            await until(lambda: back.committed_index == 34, 10, "catch-up of the restarted member")
            assert back.role is Role.FOLLOWER and back.leader_id == new.config.self_id
            await new.append(b"last")
            await until(lambda: all(m.committed_index == 35 for m in members.values()), 5, "commit on all")
        assert_stores_identical(tmp_path, IDS)
        bodies = [e.body for e in DLedgerStoreReader(default_path(str(tmp_path), old_id)).entries()]
        assert bodies == [
            *(f"before {k}".encode() for k in range(10)),
            *(f"after {k}".encode() for k in range(25)),
            b"last",
        ]

    run(main)


def test_two_of_three_down_acknowledges_nothing(tmp_path: Path) -> None:
    async def main() -> None:
        async with started_group(tmp_path) as members:
            leader = await one_leader(members)
            await leader.append(b"kept")
            for m in members.values():
                if m is not leader:
                    await m.abort()
            with pytest.raises(AppendError) as info:
                await leader.append(b"lonely", timeout_ms=800)
            assert info.value.code in (
                p.DLedgerResponseCode.WAIT_QUORUM_ACK_TIMEOUT,
                p.DLedgerResponseCode.TERM_CHANGED,
            )
            assert leader.committed_index == 0
            # without a majority of heartbeats the leader steps down within 3 intervals
            await until(lambda: leader.role is not Role.LEADER, 5, "step-down of a lonely leader")

    run(main)


def test_leadership_transfer_by_rpc_and_preferred_leader(tmp_path: Path) -> None:
    """LEADERSHIP_TRANSFER (51005) sent to the leader over the wire moves the leadership to the named
    member; a group restarted with preferredLeaderIds=n1 ends up led by n1 whoever wins first.
    (A transferee wins its election for sure only when it is a preferred leader: it then votes
    every 30-100 ms and refuses others' votes, REJECT_TAKING_LEADERSHIP; so all three are.)"""

    async def main() -> None:
        async with started_group(tmp_path, preferred_leader_ids="n0;n1;n2") as members:
            old = await one_leader(members)
            await old.append(b"before")
            old_term = old.term
            target = next(i for i in IDS if i != old.config.self_id)
            ask = p.LeadershipTransferRequest(
                group=GROUP,
                remote_id=old.config.self_id,
                term=old_term,
                transfer_id=old.config.self_id,
                transferee_id=target,
            )
            async with RemotingClient() as client:
                cmd = await client.invoke(old.address, p.request_command(ask), 5)
            answer = p.LeadershipTransferResponse.decode(cmd.body)
            assert answer.code == p.DLedgerResponseCode.SUCCESS, answer
            new = await one_leader(members)
            assert new.config.self_id == target and new.term > old_term
            await new.append(b"after")
            await until(lambda: all(m.committed_index == 1 for m in members.values()), 5, "commit on all")
            peers = old.config.peers
        # the same stores, now with a preferred leader
        preferred = {i: member(tmp_path, i, peers, preferred_leader_ids="n1") for i in IDS}
        try:
            for m in preferred.values():
                await m.start()
            await until(lambda: preferred["n1"].is_leader, 15, "n1 leading")
            leader = await one_leader(preferred)
            await leader.append(b"preferred")
            await until(lambda: all(m.committed_index == 2 for m in preferred.values()), 5, "commit on all")
        finally:
            for m in preferred.values():
                await m.close()
        assert_stores_identical(tmp_path, IDS)

    run(main)


def test_held_push_dropped_by_a_role_change_is_answered(tmp_path: Path) -> None:
    """A follower holds an APPEND that arrived before its predecessor; a vote of a higher term makes
    it a candidate, which drops what it held. The held call is still answered (TIMEOUT, after the
    RPC timeout), not left open."""
    ports = {i: free_port() for i in IDS}
    config = DLedgerConfig(
        group=GROUP,
        self_id="n0",
        peers=peers_string(ports),
        store_base_dir=str(tmp_path),
        data_file_size=4096,
        index_file_size=2048,
        timing=Timing(heart_beat_time_interval_ms=2000),
        rpc_timeout_ms=500,
    )

    async def main() -> None:
        async with DLedgerServer(config) as n0, RemotingClient() as client:
            await until(lambda: n0.term >= 0 and n0.role is Role.CANDIDATE, 5, "candidate")

            async def call(req: p.RequestOrResponse) -> RemotingCommand:
                return await client.invoke(n0.address, p.request_command(req), 5)

            beat = p.HeartBeatRequest(group=GROUP, local_id="n1", remote_id="n0", leader_id="n1", term=n0.term)
            assert p.HeartBeatResponse.decode((await call(beat)).body).code == p.DLedgerResponseCode.SUCCESS
            assert n0.role is Role.FOLLOWER and n0.leader_id == "n1"
            early = DLedgerEntry(index=5, term=n0.term, pos=0, body=b"early")
            push = p.PushEntryRequest(
                group=GROUP, local_id="n1", remote_id="n0", leader_id="n1", term=n0.term, entry=early
            )
            held = asyncio.ensure_future(call(push))
            await asyncio.sleep(0.2)
            assert not held.done()
            vote = p.VoteRequest(
                group=GROUP, local_id="n2", remote_id="n0", leader_id="n2", term=n0.term + 5, ledger_end_index=-1
            )
            answer = p.VoteResponse.decode((await call(vote)).body)
            assert answer.vote_result is p.VoteResult.REJECT_TERM_NOT_READY
            resp = p.PushEntryResponse.decode((await asyncio.wait_for(held, 5)).body)
            assert resp.code == p.DLedgerResponseCode.TIMEOUT

    run(main)
