"""pyrmq.dledger.store_files: the Java-written store read back, and a store written by pyrmq that
is byte for byte the one Java wrote from the same appends."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.fakes import GOLDEN_DIR

from pyrmq.dledger import store_files as sf
from pyrmq.dledger.entry import BODY_OFFSET, INDEX_UNIT_SIZE
from pyrmq.store import message as m

JAVA = GOLDEN_DIR / "dledger" / "java-0.3.2-tiny" / "dledger-n0"


def java_bodies() -> list[bytes]:
    """What compat/dledger/DLedgerGolden.java appended."""
    return [bytes([ord("a") + i]) * (100 + 10 * i) for i in range(10)]


def test_read_java_store() -> None:
    r = sf.DLedgerStoreReader(str(JAVA))
    entries = list(r.entries())
    assert [x.index for x in entries] == list(range(10))
    assert [x.body for x in entries] == java_bodies()
    assert {x.term for x in entries} == {3}
    assert (r.ledger_begin_index, r.ledger_end_index, r.ledger_end_term) == (0, 9, 3)
    assert r.data_file_size == 1024 and r.index_file_size == 4 * INDEX_UNIT_SIZE
    # five entries fill file 0 (840 bytes), a blank of 184 follows; entry 5 opens file 1024
    assert [x.pos for x in entries[4:7]] == [652, 1024, 1222]
    assert r.term == sf.TermState(3, "n0")
    assert r.checkpoint == sf.Checkpoint(end_index=9, committed_index=7)
    assert r.committed_index == 7
    for x in entries:
        assert r.get(x.index) == x
    with pytest.raises(KeyError):
        r.get(10)


def test_write_same_bytes_as_java(tmp_path: Path) -> None:
    path = tmp_path / "dledger-n0"
    w = sf.DLedgerStoreWriter(str(path), data_file_size=1024, index_file_size=4 * INDEX_UNIT_SIZE)
    for body in java_bodies():
        w.append(body, 3)
    w.set_term(sf.TermState(3, None))  # Java persisted the no-vote state first (nextTerm), so .bak has it
    w.set_term(sf.TermState(3, "n0"))
    w.persist_checkpoint(7)
    for sub in ("data", "index"):
        want = sorted(p.name for p in (JAVA / sub).iterdir())
        assert sorted(p.name for p in (path / sub).iterdir()) == want
        for name in want:
            got, exp = (path / sub / name).read_bytes(), (JAVA / sub / name).read_bytes()
            assert got == exp, f"{sub}/{name} differs at {next(i for i in range(len(exp)) if got[i] != exp[i])}"
    for name in ("checkpoint", "currterm", "currterm.bak"):
        assert (path / name).read_bytes() == (JAVA / name).read_bytes(), name


def test_reopen_java_store_and_append(tmp_path: Path) -> None:
    path = tmp_path / "dledger-n0"
    shutil.copytree(JAVA, path)
    w = sf.DLedgerStoreWriter(str(path))
    assert (w.ledger_end_index, w.write_pos, w.data_file_size) == (9, 2048 + 238, 1024)
    x = w.append(b"z" * 10, 4)
    assert (x.index, x.term, x.pos) == (10, 4, 2048 + 238)
    r = sf.DLedgerStoreReader(str(path))
    assert (r.ledger_end_index, r.ledger_end_term) == (10, 4)
    assert r.get(10).body == b"z" * 10


def test_torn_tail_is_the_end(tmp_path: Path) -> None:
    path = tmp_path / "dledger-n0"
    shutil.copytree(JAVA, path)
    last = path / "data" / "00000000000000002048"
    raw = bytearray(last.read_bytes())
    raw[238 - 20] ^= 0xFF  # inside entry 9's body (the file's only entry): still an entry, 0.3.2 has no crc
    raw[6] = 1  # entry 9's size field: no longer BODY_OFFSET + body size
    last.write_bytes(bytes(raw))
    r = sf.DLedgerStoreReader(str(path))
    assert r.ledger_end_index == 8


def test_files_out_of_order(tmp_path: Path) -> None:
    path = tmp_path / "dledger-n0"
    shutil.copytree(JAVA, path)
    (path / "data" / "00000000000000001024").unlink()
    with pytest.raises(sf.StoreFormatError, match="does not follow"):
        sf.DLedgerStoreReader(str(path))


def test_text_files_any_order_and_missing(tmp_path: Path) -> None:
    assert sf.read_term_file(str(tmp_path)) == sf.TermState(0, None)
    assert sf.read_checkpoint(str(tmp_path)) is None
    (tmp_path / "currterm").write_text("#c\ncurrTerm=12\nvoteLeader=\n")
    assert sf.read_term_file(str(tmp_path)) == sf.TermState(12, None)
    (tmp_path / "currterm").write_text("currTerm=x\n")
    with pytest.raises(sf.StoreFormatError):
        sf.read_term_file(str(tmp_path))


def test_default_path() -> None:
    assert sf.default_path("/s", "n1") == "/s/dledger-n1"
    assert sf.offset_to_file_name(1024) == "00000000000000001024"


def test_commitlog_records_wrapped(tmp_path: Path) -> None:
    """DLedgerCommitLog: each body is one commit-log record whose PHYSICALOFFSET is its place in
    the data files (entry pos + BODY_OFFSET); store/message.py reads it back."""
    w = sf.DLedgerStoreWriter(str(tmp_path / "dledger-n0"), data_file_size=1024, index_file_size=128)
    host = ("127.0.0.1", 10911)
    for i in range(12):
        msg = m.MessageExtBrokerInner(
            topic="TopicTest", body=b"msg-%d" % i, queue_id=1, born_host=host, store_host=host
        )
        record = bytearray(m.encode_message(msg, queue_offset=i, physical_offset=0))
        w.append(bytes(record), 1, hook=sf.commitlog_append_hook)
    r = sf.DLedgerStoreReader(str(tmp_path / "dledger-n0"))
    seen = []
    for offset, record in sf.commitlog_records(r.entries()):
        ext = m.decode_message(record)
        assert ext.commit_log_offset == offset
        seen.append((ext.queue_offset, ext.body))
        assert offset % 1024 >= BODY_OFFSET
    assert seen == [(i, b"msg-%d" % i) for i in range(12)]


def test_follower_append_and_truncate(tmp_path: Path) -> None:
    """appendAsFollower puts entries at the leader's pos; truncate keeps an equal entry, replaces a
    different one, and what it drops does not come back on recovery."""
    leader = sf.DLedgerStoreWriter(str(tmp_path / "a"), data_file_size=1024, index_file_size=128)
    follower = sf.DLedgerStoreWriter(str(tmp_path / "b"), data_file_size=1024, index_file_size=128)
    entries = [leader.append_as_leader(bytes([65 + i]) * (100 + 10 * i), 1) for i in range(10)]
    for x in entries:
        follower.append_as_follower(x)
    for sub in ("data", "index"):
        for f in (tmp_path / "a" / sub).iterdir():
            assert (tmp_path / "b" / sub / f.name).read_bytes() == f.read_bytes(), f"{sub}/{f.name}"
    with pytest.raises(ValueError):
        follower.append_as_follower(entries[3])
    assert follower.get(7) == entries[7]

    follower.truncate(entries[6])  # equal: kept, 7..9 dropped
    assert (follower.end_index, follower.end_term) == (6, 1)
    assert sf.DLedgerStoreReader(str(tmp_path / "b")).ledger_end_index == 6
    assert sorted(p.name for p in (tmp_path / "b" / "data").iterdir()) == [
        "00000000000000000000",
        "00000000000000001024",
    ]

    other = entries[5].__class__(index=5, term=2, pos=entries[5].pos, body=b"other")
    follower.truncate(other)  # different: replaced, 6 dropped
    r = sf.DLedgerStoreReader(str(tmp_path / "b"))
    assert (r.ledger_end_index, r.ledger_end_term) == (5, 2)
    assert r.get(5).body == b"other" and follower.get(5) == other
    nxt = follower.append_as_leader(b"next", 2)
    assert (nxt.index, nxt.pos) == (6, other.pos + other.size)
    assert [x.index for x in sf.DLedgerStoreReader(str(tmp_path / "b")).entries()] == list(range(7))


def test_recovery_rewrites_index_items_the_data_has(tmp_path: Path) -> None:
    """A member killed between an entry's data write and its index write: on restart the writer
    writes the missing items from the data (DLedgerMmapFileStore#recover), so every entry reads."""
    path = tmp_path / "n0"
    w = sf.DLedgerStoreWriter(str(path), data_file_size=1024, index_file_size=128)
    entries = [w.append_as_leader(bytes([65 + i]) * 150, 1) for i in range(6)]
    w.close()
    index = path / "index"
    (index / "00000000000000000128").unlink()  # items 4 and 5: their file never written
    first = index / "00000000000000000000"
    raw = bytearray(first.read_bytes())
    raw[3 * INDEX_UNIT_SIZE : 4 * INDEX_UNIT_SIZE] = bytes(INDEX_UNIT_SIZE)  # item 3 zero
    first.write_bytes(bytes(raw))
    with pytest.raises(sf.StoreFormatError):
        sf.DLedgerStoreReader(str(path)).index_item(3)

    w = sf.DLedgerStoreWriter(str(path), data_file_size=1024, index_file_size=128)
    assert [w.get(i) for i in range(6)] == entries
    r = sf.DLedgerStoreReader(str(path))
    assert [r.get(i) for i in range(6)] == entries
    nxt = w.append_as_leader(b"next", 1)
    assert sf.DLedgerStoreReader(str(path)).get(6) == nxt
