"""pyrmq.dledger.server: groups of three DLedger members on 127.0.0.1 ports talking DLedger's RPCs
through real sockets: election, replication, the quorum commit, a killed leader replaced, a
restarted member catching up, and the three stores byte-identical afterwards."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from support.ports import free_port

from pyrmq.dledger import protocol as p
from pyrmq.dledger.config import DLedgerConfig
from pyrmq.dledger.raft import Role, Timing
from pyrmq.dledger.server import AppendError, DLedgerServer
from pyrmq.dledger.store_files import DLedgerStoreReader, default_path, read_term_file
from pyrmq.remoting.client import RemotingClient

IDS = ("n0", "n1", "n2")
GROUP = "it-dledger"
#: heartbeats every 300 ms: a follower gives up on its leader after 900 ms (Java's default is 6 s)
FAST = Timing(heart_beat_time_interval_ms=300)
DATA_FILE = 4096
INDEX_FILE = 32 * 64


def peers_string(ports: dict[str, int]) -> str:
    return ";".join(f"{i}-127.0.0.1:{port}" for i, port in ports.items())


def member(base: Path, self_id: str, peers: str) -> DLedgerServer:
    return DLedgerServer(
        DLedgerConfig(
            group=GROUP,
            self_id=self_id,
            peers=peers,
            store_base_dir=str(base),
            data_file_size=DATA_FILE,
            index_file_size=INDEX_FILE,
            timing=FAST,
        )
    )


async def until(check: Callable[[], bool], timeout: float, what: str) -> float:
    """Seconds it took ``check`` to hold; fails after ``timeout``."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            pytest.fail(f"no {what} within {timeout} s")
        await asyncio.sleep(0.02)
    return time.monotonic() - start


def leaders(members: dict[str, DLedgerServer]) -> list[DLedgerServer]:
    return [m for m in members.values() if m.role is Role.LEADER]


async def one_leader(members: dict[str, DLedgerServer], timeout: float = 10) -> DLedgerServer:
    def settled() -> bool:
        ls = leaders(members)
        return len(ls) == 1 and all(m.leader_id == ls[0].config.self_id for m in members.values())

    await until(settled, timeout, "single leader known to all")
    return leaders(members)[0]


def files_of(base: Path, self_id: str) -> dict[str, bytes]:
    root = Path(default_path(str(base), self_id))
    return {f"{d}/{f.name}": f.read_bytes() for d in ("data", "index") for f in sorted((root / d).iterdir())}


def assert_stores_identical(base: Path, ids: tuple[str, ...]) -> None:
    first = files_of(base, ids[0])
    for other in ids[1:]:
        assert files_of(base, other) == first, f"{other}'s data/index files differ from {ids[0]}'s"


def run(test: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(test(), 60))


@contextlib.asynccontextmanager
async def started_group(base: Path) -> AsyncIterator[dict[str, DLedgerServer]]:
    """Three members on free ports; every one in the dict when the block ends is closed."""
    peers = peers_string({i: free_port() for i in IDS})
    members = {i: member(base, i, peers) for i in IDS}
    try:
        for m in members.values():
            await m.start()
        yield members
    finally:
        for m in members.values():
            await m.close()


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
                bad = p.AppendEntryRequest(group="other", remote_id=leader.config.self_id, body=b"x")
                resp = p.AppendEntryResponse.decode((await client.invoke(leader.address, p.request_command(bad))).body)
                assert resp.code == p.DLedgerResponseCode.UNKNOWN_GROUP
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
