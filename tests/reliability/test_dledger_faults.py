"""DLedger members as processes (``python -m pyrmq.dledger.server``) under SIGSTOP: a leader whose
followers are both frozen keeps an entry it cannot get acknowledged; it is then frozen itself, the
followers wake up, elect a new leader that takes acknowledged writes, and the old leader wakes up
and follows it. Nothing acknowledged is lost and the three stores end byte-identical. The entry
that was never acknowledged either vanished everywhere (the old leader's tail truncated) or, when
the frozen followers' sockets still held its push, was committed by the new leader: Raft allows
both (an unacknowledged write is not a lost one), so either is accepted."""

from __future__ import annotations

import asyncio
from pathlib import Path

from support.dledger import GROUP, assert_stores_identical, peers_string, run, until
from support.ports import free_port
from support.procs import ManagedProcess
from support.pyrmq_proc import venv_python

from pyrmq.dledger import protocol as p
from pyrmq.dledger.store_files import DLedgerStoreReader, default_path
from pyrmq.remoting.client import RemotingClient

IDS = ("n0", "n1", "n2")


def start(base: Path, self_id: str, peers: str) -> ManagedProcess:
    argv = [venv_python(), "-m", "pyrmq.dledger.server", "--group", GROUP, "--self-id", self_id]
    argv += ["--peers", peers, "--store-base-dir", str(base), "--heartbeat-ms", "300"]
    argv += ["--data-file-size", "4096", "--index-file-size", "2048"]
    return ManagedProcess(f"dledger-{self_id}", argv, base / f"{self_id}.log")


def test_frozen_leader_loses_only_its_unacknowledged_tail(tmp_path: Path) -> None:
    ports = {i: free_port() for i in IDS}
    peers = peers_string(ports)
    addr = {i: f"127.0.0.1:{port}" for i, port in ports.items()}
    procs = {i: start(tmp_path, i, peers) for i in IDS}

    async def leader_seen(client: RemotingClient, ask: str) -> str | None:
        try:
            cmd = await client.invoke(addr[ask], p.request_command(p.MetadataRequest(group=GROUP, remote_id=ask)), 0.5)
        except Exception:
            client.close_channel(addr[ask])
            return None
        return p.MetadataResponse.decode(cmd.body).leader_id

    async def agreed(client: RemotingClient, among: list[str]) -> str:
        seen: dict[str, str | None] = {}

        async def poll() -> None:
            for i in among:
                seen[i] = await leader_seen(client, i)

        def settled() -> bool:
            values = set(seen.values())
            return len(seen) == len(among) and len(values) == 1 and next(iter(values)) in among

        async def loop() -> None:
            while not settled():
                await poll()
                await asyncio.sleep(0.05)

        await asyncio.wait_for(loop(), 30)
        leader = next(iter(seen.values()))
        assert leader is not None
        return leader

    async def append(client: RemotingClient, leader: str, body: bytes) -> p.AppendEntryResponse:
        req = p.AppendEntryRequest(group=GROUP, remote_id=leader, body=body)
        return p.AppendEntryResponse.decode((await client.invoke(addr[leader], p.request_command(req), 10)).body)

    async def main() -> None:
        async with RemotingClient() as client:
            for proc in procs.values():
                await until(lambda proc=proc: "STARTED" in proc.log.read_text(), 60, f"start of {proc.name}")
            old = await agreed(client, list(IDS))
            for k in range(10):
                assert (await append(client, old, b"acked %d" % k)).code == p.DLedgerResponseCode.SUCCESS
            followers = [i for i in IDS if i != old]
            for i in followers:
                procs[i].pause()
            # alone, the leader keeps the entry but cannot get it acknowledged
            lonely = await append(client, old, b"never acknowledged")
            assert lonely.code in (p.DLedgerResponseCode.WAIT_QUORUM_ACK_TIMEOUT, p.DLedgerResponseCode.TERM_CHANGED)
            procs[old].pause()
            for i in followers:
                procs[i].resume()
            new = await agreed(client, followers)
            for k in range(5):
                assert (await append(client, new, b"new leader %d" % k)).code == p.DLedgerResponseCode.SUCCESS
            procs[old].resume()
            await agreed(client, list(IDS))
            assert (await append(client, new, b"all three")).code == p.DLedgerResponseCode.SUCCESS
            await asyncio.sleep(1.5)  # the next COMMIT push and the checkpoint's fsync timer

    try:
        run(main, timeout=150)
    finally:
        for proc in procs.values():
            proc.stop()
    assert_stores_identical(tmp_path, IDS)
    acked = [b"acked %d" % k for k in range(10)]
    later = [*(b"new leader %d" % k for k in range(5)), b"all three"]
    bodies = [e.body for e in DLedgerStoreReader(default_path(str(tmp_path), IDS[0])).entries()]
    assert bodies in ([*acked, *later], [*acked, b"never acknowledged", *later]), bodies
