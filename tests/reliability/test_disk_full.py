"""A broker whose disk fills while producers send: it keeps running, refuses as Java does, loses
nothing it acknowledged, and takes messages again by itself once space is freed.

Each test mounts small filesystems (tmpfs, or a loop device; support/small_fs.py), starts a
`pyrmq broker` process on them and sends 1-4 KiB messages from four concurrent senders of pyrmq's
own client while a filler file grows until the filesystem is full (ENOSPC). Then:

- the broker process is alive; every answer is SEND_OK or SERVICE_NOT_AVAILABLE (14) with Java's
  remark ("the broker's disk is full [CL: .. CQ: .. INDEX: ..]"); no timeout, no other code;
- after the filler is deleted, sends succeed again within RESUME_BOUND_S;
- every SEND_OK message is pulled back at the queue offset its answer named;
- after a clean stop, `pyrmq store verify` finds nothing wrong.

Cases: the whole store on one small filesystem (the issue's setup), and the commit log
(storePathCommitLog), the consume queues or the index alone on one, each checked to be the writer
that met the full disk: the commit log refuses the put, a consume-queue or index write stalls
dispatch (Java keeps those two at <root>/consumequeue and <root>/index: the folder itself is the
mount point).
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from support.pyrmq_proc import PyrmqBroker, venv_python
from support.requests import pull, send_v2
from support.servers import PyrmqNamesrv
from support.small_fs import Filler, small_filesystem

from pyrmq.protocol.codes import ResponseCode
from pyrmq.remoting.client import RemotingClient
from pyrmq.store import message as m

ROOT = Path(__file__).resolve().parents[2]
TOPIC = "DiskFullT"
QUEUES = 4
SENDERS = 4
RESUME_BOUND_S = 5.0  # pyrmq re-checks every second (Java's cleaner every 10 s)
JAVA_REMARK_HEAD = (
    "service not available now. It may be caused by one of the following reasons: the broker's disk is full [CL: "
)
JAVA_REMARK_TAIL = "], messages are put to the slave, message store has been shut down, etc."


@pytest.fixture(scope="module")
def namesrv(tmp_path_factory):
    ns = PyrmqNamesrv(tmp_path_factory.mktemp("disk-namesrv"))
    yield ns
    ns.stop()


@dataclass
class Sends:
    ok: dict[int, tuple[int, int]] = field(default_factory=dict)  # seq -> (queue id, queue offset)
    ok_at: list[float] = field(default_factory=list)
    refused: list[tuple[float, str]] = field(default_factory=list)
    other: list[str] = field(default_factory=list)  # anything else: must stay empty


async def _sender(
    client: RemotingClient, addr: str, broker: str, body: int, keys: bool, queues: int, seqs, out: Sends, stop
):
    while not stop.is_set():
        seq = next(seqs)
        props = {"KEYS": f"k{seq}"} if keys else {}
        req = send_v2(TOPIC, broker, b"%08d" % seq + b"." * (body - 8), queues=QUEUES, queue_id=seq % queues, **props)
        try:
            r = await client.invoke(addr, req, 5)
        except Exception as e:  # a timeout or a dropped connection: the broker did not answer
            out.other.append(f"{seq}: {type(e).__name__}: {e}")
            await asyncio.sleep(0.05)
            continue
        if r.code == ResponseCode.SUCCESS:
            out.ok[seq] = (int(r.ext_fields["queueId"]), int(r.ext_fields["queueOffset"]))
            out.ok_at.append(time.monotonic())
        elif r.code == ResponseCode.SERVICE_NOT_AVAILABLE:
            out.refused.append((time.monotonic(), r.remark or ""))
            await asyncio.sleep(0.01)  # a client backs off too; keeps the refusal loop cheap
        else:
            out.other.append(f"{seq}: code {r.code} {r.remark}")


async def _until(cond, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        await asyncio.sleep(0.05)


async def _pull_all(client: RemotingClient, addr: str) -> dict[tuple[int, int], int]:
    """(queue id, queue offset) -> message seq, for every message the broker serves."""
    got: dict[tuple[int, int], int] = {}
    for qid in range(QUEUES):
        offset = 0
        while True:
            r = await client.invoke(addr, pull(TOPIC, "disk-full-check", offset, queue_id=qid), 10)
            if r.code != ResponseCode.SUCCESS:
                break
            for msg in m.decode_messages(r.body):
                got[(qid, msg.queue_offset)] = int(msg.body[:8])
            offset = int(r.ext_fields["nextBeginOffset"])
    return got


def _fill_while_sending(
    broker: PyrmqBroker, filler: Filler, *, body: int, keys: bool, queues: int
) -> tuple[Sends, float]:
    """Send, fill the disk, wait for refusals, free the space, wait for sends to succeed again.
    Returns what happened and how long after freeing the first send succeeded."""
    out = Sends()

    async def scenario() -> float:
        stop = asyncio.Event()
        seqs = iter(range(10**9))
        async with RemotingClient() as client:
            senders = [
                asyncio.create_task(_sender(client, broker.addr, broker.name, body, keys, queues, seqs, out, stop))
                for _ in range(SENDERS)
            ]
            try:
                await _until(lambda: len(out.ok) >= 50, 15, "50 sends before the filler starts")
                filler.start()
                await _until(filler.full.is_set, 10, "the filler fills the filesystem")
                assert filler.error is None, filler.error
                await _until(lambda: len(out.refused) >= 20, 10, "20 refusals on the full disk")
                assert broker.alive(), broker.tail()
                freed = time.monotonic()
                filler.remove()
                await _until(
                    lambda: out.ok_at[-1] > freed,
                    RESUME_BOUND_S,
                    f"a send succeeds after freeing ({shutil.disk_usage(filler.path.parent)} of the small disk)",
                )
                resumed = out.ok_at[-1] - freed
                n = len(out.ok)
                await _until(lambda: len(out.ok) >= n + 20, 10, "20 more sends after resuming")
            finally:
                stop.set()
                await asyncio.gather(*senders)
            got = await _pull_all(client, broker.addr)
        for seq, where in out.ok.items():
            assert got.get(where) == seq, f"SEND_OK message {seq} at {where}: pulled {got.get(where)}"
        return resumed

    resumed = asyncio.run(scenario())
    return out, resumed


def _check_answers(out: Sends) -> None:
    assert out.other == [], out.other[:10]
    assert out.refused, "no refusal seen"
    for _, remark in out.refused:
        assert remark.startswith(JAVA_REMARK_HEAD) and remark.endswith(JAVA_REMARK_TAIL), remark


def _verify(broker: PyrmqBroker, commit_log: Path) -> None:
    assert broker.stop() == 0, broker.tail()
    r = subprocess.run(
        [venv_python(), "-m", "pyrmq", "store", "verify", str(broker.store_dir), "--commitlog", str(commit_log)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


#: which writer meets the full disk first: its log line
COMMIT_LOG_FULL = "commit log: no disk space for a record"
CQ_STALLED = "dispatch to CommitLogDispatcherBuildConsumeQueue stopped"
INDEX_STALLED = "dispatch to CommitLogDispatcherBuildIndex stopped"


@pytest.mark.parametrize(
    "small, size_mib, body, keys, queues, expect",
    [
        # the setup: the whole store on one small filesystem; whichever writer needs a
        # page next meets the full disk (usually an index hash-slot page)
        ("store", 32, 4096, True, QUEUES, (COMMIT_LOG_FULL, CQ_STALLED, INDEX_STALLED)),
        # storePathCommitLog on its own; 64 KiB messages soon use up its 4 MiB reservation
        ("commitlog", 24, 65536, False, QUEUES, (COMMIT_LOG_FULL,)),
        # <root>/consumequeue is the mount point; one queue uses up its page of reservation soonest
        ("consumequeue", 8, 1024, False, 1, (CQ_STALLED,)),
        ("index", 8, 1024, True, QUEUES, (INDEX_STALLED,)),  # <root>/index is the mount point
    ],
)
def test_disk_fills_during_load(namesrv, tmp_path, small, size_mib, body, keys, queues, expect):
    store = tmp_path / "store"
    mount = {"store": store, "commitlog": tmp_path / "commitlog"}.get(small, store / small)
    with small_filesystem(mount, size_mib):
        commit_log = tmp_path / "commitlog" / "data" if small == "commitlog" else store / "commitlog"
        broker = PyrmqBroker(
            namesrv.addr,
            tmp_path,
            store_dir=store,
            storePathCommitLog=commit_log,
            mappedFileSizeCommitLog=8 << 20,
        )
        try:
            filler = Filler(mount / "filler", pause=0)  # full in a blink, while the senders go on
            out, resumed = _fill_while_sending(broker, filler, body=body, keys=keys, queues=queues)
            _check_answers(out)
            log = broker.tail(1000)
            assert any(line in log for line in expect), log
            others = {COMMIT_LOG_FULL, CQ_STALLED, INDEX_STALLED} - set(expect)
            assert not any(line in log for line in others), log
            _verify(broker, commit_log)
        finally:
            broker.stop()
    print(f"{small}: ok={len(out.ok)} refused={len(out.refused)} resumed after {resumed:.2f} s")
