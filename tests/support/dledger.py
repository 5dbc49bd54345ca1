"""DLedger groups in tests: pyrmq members on free 127.0.0.1 ports with fast timers, waits on
their roles, and the byte comparison of their stores (tests/integration, tests/compat)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path

import pytest

from pyrmq.dledger.config import DLedgerConfig
from pyrmq.dledger.raft import Role, Timing
from pyrmq.dledger.server import DLedgerServer
from pyrmq.dledger.store_files import default_path
from support.ports import free_port

IDS = ("n0", "n1", "n2")
GROUP = "it-dledger"
#: heartbeats every 300 ms: a follower gives up on its leader after 900 ms (Java's default is 6 s)
FAST = Timing(heart_beat_time_interval_ms=300)
DATA_FILE = 4096
INDEX_FILE = 32 * 64


def peers_string(ports: dict[str, int]) -> str:
    return ";".join(f"{i}-127.0.0.1:{port}" for i, port in ports.items())


def member(
    base: Path, self_id: str, peers: str, timing: Timing = FAST, preferred_leader_ids: str | None = None
) -> DLedgerServer:
    return DLedgerServer(
        DLedgerConfig(
            group=GROUP,
            self_id=self_id,
            peers=peers,
            store_base_dir=str(base),
            data_file_size=DATA_FILE,
            index_file_size=INDEX_FILE,
            timing=timing,
            preferred_leader_ids=preferred_leader_ids,
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


def leaders(members: Mapping[str, DLedgerServer]) -> list[DLedgerServer]:
    return [m for m in members.values() if m.role is Role.LEADER]


async def one_leader(members: Mapping[str, DLedgerServer], timeout: float = 10) -> DLedgerServer:
    def settled() -> bool:
        ls = leaders(members)
        return len(ls) == 1 and all(m.leader_id == ls[0].config.self_id for m in members.values())

    await until(settled, timeout, "single leader known to all")
    return leaders(members)[0]


def files_of(base: Path, self_id: str) -> dict[str, bytes]:
    root = Path(default_path(str(base), self_id))
    return {f"{d}/{f.name}": f.read_bytes() for d in ("data", "index") for f in sorted((root / d).iterdir())}


def assert_stores_identical(base: Path, ids: tuple[str, ...]) -> None:
    """Every data and index file of each member equals the first member's, byte for byte."""
    first = files_of(base, ids[0])
    for other in ids[1:]:
        assert files_of(base, other) == first, f"{other}'s data/index files differ from {ids[0]}'s"


def run(test: Callable[[], Awaitable[None]], timeout: float = 60) -> None:
    asyncio.run(asyncio.wait_for(test(), timeout))


@contextlib.asynccontextmanager
async def started_group(base: Path, preferred_leader_ids: str | None = None) -> AsyncIterator[dict[str, DLedgerServer]]:
    """Three members on free ports; every one in the dict when the block ends is closed."""
    peers = peers_string({i: free_port() for i in IDS})
    members = {i: member(base, i, peers, preferred_leader_ids=preferred_leader_ids) for i in IDS}
    try:
        for m in members.values():
            await m.start()
        yield members
    finally:
        for m in members.values():
            await m.close()
