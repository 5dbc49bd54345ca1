"""A DLedger broker's store handed from a Java 5.5.0 broker to a pyrmq broker and back (issue 13:
"a DLedger store written by a Java 5.5.0 group is served by pyrmq and the other way round").

One broker with enableDLegerCommitLog=true in a DLedger group of one member (dLegerPeers names
only itself, so it leads alone and a majority is itself), small data files so that every phase
rolls one. In turn on the same store directory:

1. the Java broker stores messages and stops (SIGTERM: DLedger's shutdown writes the checkpoint);
2. a pyrmq broker recovers the Java-written data, index, checkpoint and currterm files, leads
   (in the term the currterm file holds, or a later one: a member of one that voted for itself
   there takes its own vote again, as Java's elector does), serves every message by pull, stores
   more and stops, leaving Java's bytes as they were;
3. the Java broker again reads pyrmq's files, leads, serves every message and stores more.

At the end the ledger holds every message once, in order, the terms never falling, and
`pyrmq store verify` finds no problem. A reference run (two Java broker starts, about a minute):
PYRMQ_COMPAT_REFERENCE=1."""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

import pytest
from support import probe
from support.ports import free_port
from support.requests import pull, send_v2

from pyrmq.dledger.entry import BODY_OFFSET
from pyrmq.dledger.store_files import DLedgerStoreReader, commitlog_records, default_path
from pyrmq.protocol.codes import ResponseCode
from pyrmq.remoting.client import RemotingClient
from pyrmq.store import message as m
from pyrmq.store.cli import verify_store

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.slow, pytest.mark.reference]

NAME = "dl-handover"
TOPIC = "DlHandover"
SELF = "n0"
#: mappedFileSizeCommitLog, the DLedger data file size: each phase's messages fill more than one
DATA_FILE = 128 * 1024
PER_PHASE = 14


def body(k: int) -> bytes:
    return random.Random(k).randbytes(10_000 + 37 * k)


def broker_conf(peers: str) -> dict:
    return dict(
        fresh=True,
        name=NAME,
        cluster="DlHandoverCluster",
        start_timeout=120,
        enableDLegerCommitLog="true",
        dLegerGroup=NAME,
        dLegerPeers=peers,
        dLegerSelfId=SELF,
        mappedFileSizeCommitLog=DATA_FILE,
        mappedFileSizeConsumeQueue=300000 * 20 // 100,  # the Java harness's: both read the same files
    )


async def _send_all(addr: str, bodies: list[bytes]) -> None:
    """SEND_OK for each, in order (retried while a new leader is not ready to take puts yet)."""
    async with RemotingClient() as c:
        for b in bodies:
            deadline = time.monotonic() + 30
            while (r := await c.invoke(addr, send_v2(TOPIC, NAME, b, queues=1), 10)).code != ResponseCode.SUCCESS:
                assert r.code in (ResponseCode.SERVICE_NOT_AVAILABLE, ResponseCode.SYSTEM_BUSY), r
                assert time.monotonic() < deadline, r
                await asyncio.sleep(0.2)


async def _pull_all(addr: str) -> list[bytes]:
    got: list[bytes] = []
    async with RemotingClient() as c:
        while (r := await c.invoke(addr, pull(TOPIC, "dl-handover-c", len(got)), 10)).code == ResponseCode.SUCCESS:
            got += [x.body or b"" for x in m.decode_messages(r.body)]
    return got


def _serve_and_store(addr: str, stored: list[bytes], more: list[bytes]) -> None:
    """The broker at ``addr`` serves ``stored`` (all of it, in order), then stores ``more``."""
    assert asyncio.run(_pull_all(addr)) == stored
    asyncio.run(_send_all(addr, more))
    assert asyncio.run(_pull_all(addr)) == stored + more


def _ledger(root: Path) -> DLedgerStoreReader:
    return DLedgerStoreReader(default_path(str(root), SELF))


def _records(ledger: DLedgerStoreReader) -> list[tuple[int, bytes]]:
    """(entry term, body) of the test topic's records, in ledger order."""
    terms = {e.pos: e.term for e in ledger.entries()}
    out = []
    for offset, record in commitlog_records(ledger.entries()):
        msg = m.decode_message(record)
        if msg.topic == TOPIC:
            out.append((terms[offset - BODY_OFFSET], msg.body or b""))
    return out


def _data(ledger: DLedgerStoreReader, end: int) -> bytes:
    out = bytearray()
    for start, path in ledger.data_files:
        if start < end:
            out += Path(path).read_bytes()[: end - start]
    return bytes(out)


def test_dledger_store_moves_from_java_to_pyrmq_and_back(
    java_namesrv, java_broker, pyrmq_broker, tmp_path: Path
) -> None:
    root = tmp_path / "store"
    conf = broker_conf(f"{SELF}-127.0.0.1:{free_port()}")
    phases = [[body(p * PER_PHASE + k) for k in range(PER_PHASE)] for p in range(3)]

    # 1. Java writes
    java = java_broker(java_namesrv.addr, store_dir=root, **conf)
    probe.create_topic(java.addr, TOPIC, queues=1)
    _serve_and_store(java.addr, [], phases[0])
    java.stop(60)
    written = _ledger(root)
    assert written.checkpoint is not None and written.checkpoint.committed_index == written.ledger_end_index
    assert written.term.vote_for == SELF  # a group of one: its own vote, in term 0 or later
    assert len({e.pos // DATA_FILE for e in written.entries()}) > 1  # a rolled data file, Java's blank
    java_bytes = _data(written, written.write_pos)

    # 2. pyrmq takes the Java-written store over
    py = pyrmq_broker(java_namesrv.addr, store_dir=root, **conf)
    _serve_and_store(py.addr, phases[0], phases[1])
    py.stop(60)
    by_pyrmq = _ledger(root)
    assert by_pyrmq.term.curr_term >= written.term.curr_term and by_pyrmq.term.vote_for == SELF
    assert by_pyrmq.checkpoint is not None and by_pyrmq.checkpoint.committed_index == by_pyrmq.ledger_end_index
    assert _data(by_pyrmq, written.write_pos) == java_bytes  # Java's entries untouched

    # 3. Java takes the pyrmq-written store back
    java = java_broker(java_namesrv.addr, store_dir=root, **conf)
    _serve_and_store(java.addr, phases[0] + phases[1], phases[2])
    java.stop(60)
    final = _ledger(root)
    assert final.term.curr_term >= by_pyrmq.term.curr_term
    records = _records(final)
    assert [b for _t, b in records] == phases[0] + phases[1] + phases[2]
    terms = [t for t, _b in records]
    assert terms == sorted(terms), terms
    print(f"\nterms: Java {written.term}, pyrmq {by_pyrmq.term}, Java again {final.term}")
    report, stats = verify_store(str(root))
    assert not report.problems and stats.records >= 3 * PER_PHASE, [str(p) for p in report.problems[:5]]
