"""pyrmq.spark.dledger_end: the end of a DLedger store's entries found through its index files
equals what the full recovery (DLedgerStoreReader) finds, on the Java-written store and on stores
with blanks, a torn index, a truncation and the stale items Java's truncation leaves, without
reading the entries before the committed index; and where a scan stops by default, after the
entry the checkpoint calls committed (committed_end), with a leader's uncommitted tail left out
of the records the Spark source plans unless asked for."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.fakes import GOLDEN_DIR

from pyrmq.dledger import store_files as sf
from pyrmq.dledger.entry import BODY_OFFSET, INDEX_UNIT_SIZE
from pyrmq.spark.commitlog_scan import PlanOptions, iter_split, plan_offset_splits, plan_splits
from pyrmq.spark.dledger_end import committed_end, find_ledger_end
from pyrmq.store import message as m

JAVA = GOLDEN_DIR / "dledger" / "java-0.3.2-tiny" / "dledger-n0"
DATA, INDEX = 1024, 4 * INDEX_UNIT_SIZE


def same_as_walk(path: Path) -> int:
    """find_ledger_end's end, checked against the full recovery's; it must come from the index."""
    found = find_ledger_end(str(path))
    ledger = sf.DLedgerStoreReader(str(path))
    assert (found.data_files, found.data_file_size) == (ledger.data_files, ledger.data_file_size)
    assert (found.write_pos, found.how) == (ledger.write_pos, "index")
    return found.write_pos


def written(path: Path, n: int, committed: int | None) -> list[sf.DLedgerEntry]:
    w = sf.DLedgerStoreWriter(str(path), data_file_size=DATA, index_file_size=INDEX)
    entries = [w.append_as_leader(bytes([65 + i % 26]) * (90 + 17 * (i % 7)), 1 + i // 10) for i in range(n)]
    if committed is not None:
        w.persist_checkpoint(committed)
    w.close()
    return entries


def test_java_store() -> None:
    assert same_as_walk(JAVA) == 2048 + 238


@pytest.mark.parametrize("committed", [None, -1, 0, 17, 29, 40])
def test_files_with_blanks_from_any_checkpoint(tmp_path: Path, committed: int | None) -> None:
    entries = written(tmp_path / "n0", 30, committed)
    assert len(list((tmp_path / "n0" / "data").iterdir())) > 3
    assert same_as_walk(tmp_path / "n0") == entries[-1].pos + entries[-1].size


def test_entries_whose_items_are_not_written_yet(tmp_path: Path) -> None:
    """An entry reaches its data file before its item reaches the index (a member killed between
    the two writes): the entries after the last item are read from the data."""
    path = tmp_path / "n0"
    entries = written(path, 30, 10)
    index = path / "index"
    for f in index.iterdir():  # items 26..29 gone: 24..27 in one file, 28, 29 in the next
        if int(f.name) >= 28 * INDEX_UNIT_SIZE:
            f.unlink()
    f = index / sf.offset_to_file_name(24 * INDEX_UNIT_SIZE)
    raw = bytearray(f.read_bytes())
    raw[2 * INDEX_UNIT_SIZE :] = bytes(2 * INDEX_UNIT_SIZE)
    f.write_bytes(bytes(raw))
    assert same_as_walk(path) == entries[-1].pos + entries[-1].size


def test_the_last_entry_before_a_blank(tmp_path: Path) -> None:
    """A ledger whose last entry is followed by the blank filler and a next data file that holds
    nothing yet ends after that entry, as the recovery says."""
    path = tmp_path / "n0"
    w = sf.DLedgerStoreWriter(str(path), data_file_size=DATA, index_file_size=INDEX)
    last = None
    while last is None or last.pos < DATA:  # until an entry opens the second file
        last = w.append_as_leader(b"x" * 300, 1)
    end = w.get(last.index - 1)
    w.close()
    # the next file as Java leaves it after a truncation: there, all zeros
    (path / "data" / sf.offset_to_file_name(DATA)).write_bytes(bytes(DATA))
    assert same_as_walk(path) == end.pos + end.size < DATA - 300


def test_truncation_and_the_stale_items_java_leaves(tmp_path: Path) -> None:
    """Java's truncation (MmapFileList#truncateOffset) only moves the write positions: the old
    items past the new end stay in the index files. They do not chain to the new last entry."""
    path = tmp_path / "n0"
    entries = written(path, 30, 12)
    index_before = {f.name: f.read_bytes() for f in (path / "index").iterdir()}
    w = sf.DLedgerStoreWriter(str(path), data_file_size=DATA, index_file_size=INDEX)
    w.truncate(sf.DLedgerEntry(index=15, term=9, pos=entries[15].pos, body=b"new leader's entry"))
    w.append_as_leader(b"and one more", 9)
    w.close()
    for name, raw in index_before.items():  # the old items back where pyrmq zeroed them
        f = path / "index" / name
        now = f.read_bytes() if f.exists() else bytes(INDEX)
        merged = bytearray(now)
        for i in range(0, INDEX, INDEX_UNIT_SIZE):
            item = int(name) // INDEX_UNIT_SIZE + i // INDEX_UNIT_SIZE
            if item > 16:
                merged[i : i + INDEX_UNIT_SIZE] = raw[i : i + INDEX_UNIT_SIZE]
        f.write_bytes(bytes(merged))
    ledger = sf.DLedgerStoreReader(str(path))
    assert ledger.ledger_end_index == 16
    assert same_as_walk(path) == ledger.write_pos


def test_entries_before_the_committed_index_are_not_read(tmp_path: Path) -> None:
    """A broken header far below the committed index stops the full recovery there; the index
    path never reads it (the scan reports it as a corrupt entry instead)."""
    path = tmp_path / "n0"
    entries = written(path, 30, 25)
    first = path / "data" / sf.offset_to_file_name(0)
    raw = bytearray(first.read_bytes())
    raw[entries[2].pos + 4 : entries[2].pos + 8] = b"\x7f\x00\x00\x00"  # entry 2's size
    first.write_bytes(bytes(raw))
    assert sf.DLedgerStoreReader(str(path)).ledger_end_index == 1
    found = find_ledger_end(str(path))
    assert (found.write_pos, found.how) == (entries[-1].pos + entries[-1].size, "index")


def test_falls_back_to_the_walk(tmp_path: Path) -> None:
    """No index at all (or one that does not match its entries): the full recovery answers."""
    path = tmp_path / "n0"
    entries = written(path, 12, 5)
    shutil.rmtree(path / "index")
    found = find_ledger_end(str(path))
    assert (found.write_pos, found.how) == (entries[-1].pos + entries[-1].size, "walk")
    assert find_ledger_end(str(tmp_path / "empty")).write_pos == 0


def end_of(entry: sf.DLedgerEntry) -> int:
    return entry.pos + entry.size


def test_committed_end_of_the_java_store() -> None:
    """The Java-written store: checkpoint committedIndex=7, endIndex=9 (entries 8 and 9 not
    committed): the read end is after entry 7, as DLedgerCommitLog's committedPos after recover()."""
    ledger = sf.DLedgerStoreReader(str(JAVA))
    assert (ledger.checkpoint, ledger.ledger_end_index) == (sf.Checkpoint(end_index=9, committed_index=7), 9)
    found = find_ledger_end(str(JAVA))
    assert committed_end(str(JAVA), found) == end_of(ledger.get(7)) < found.write_pos == 2048 + 238
    splits = plan_splits(str(JAVA.parent))
    assert splits[-1].base + splits[-1].data_end == end_of(ledger.get(7))
    everything = plan_splits(str(JAVA.parent), PlanOptions(include_uncommitted=True))
    assert everything[-1].base + everything[-1].data_end == 2048 + 238


@pytest.mark.parametrize(
    ("committed", "upto"),
    [(None, 29), (-1, -1), (0, 0), (17, 17), (25, 25), (29, 29), (40, 29)],
)
def test_committed_end_from_any_checkpoint(tmp_path: Path, committed: int | None, upto: int) -> None:
    """No checkpoint: the ledger's end (the store does not say); -1: nothing; past the ledger's end
    (a checkpoint Java's updateCommittedIndex would cap): the ledger's end."""
    path = tmp_path / "n0"
    entries = written(path, 30, None)
    if committed is not None:
        sf.write_checkpoint(str(path), sf.Checkpoint(end_index=29, committed_index=committed))
    want = 0 if upto < 0 else end_of(entries[upto])
    assert committed_end(str(path), find_ledger_end(str(path))) == want


def test_committed_end_from_the_backup_while_java_replaces_the_checkpoint(tmp_path: Path) -> None:
    """IOUtils#string2File: checkpoint.tmp written, the old content kept as .bak, the file deleted,
    .tmp renamed. Caught between delete and rename, the .bak's (older) committed index answers."""
    path = tmp_path / "n0"
    entries = written(path, 30, 12)
    w = sf.DLedgerStoreWriter(str(path), data_file_size=DATA, index_file_size=INDEX)
    w.persist_checkpoint(20)  # the previous content (12) goes to checkpoint.bak
    w.close()
    (path / "checkpoint").rename(path / "checkpoint.tmp")
    assert sf.read_checkpoint(str(path), backup=True) == sf.Checkpoint(end_index=29, committed_index=12)
    assert committed_end(str(path), find_ledger_end(str(path))) == end_of(entries[12])


def test_committed_end_without_the_committed_item(tmp_path: Path) -> None:
    """The committed entry's index item is not there (or does not match): the entries say."""
    path = tmp_path / "n0"
    entries = written(path, 30, 22)
    f = path / "index" / sf.offset_to_file_name(20 * INDEX_UNIT_SIZE)
    raw = bytearray(f.read_bytes())
    raw[2 * INDEX_UNIT_SIZE : 3 * INDEX_UNIT_SIZE] = bytes(INDEX_UNIT_SIZE)  # item 22
    f.write_bytes(bytes(raw))
    assert committed_end(str(path), find_ledger_end(str(path))) == end_of(entries[22])


def commitlog_ledger(path: Path, n: int, committed: int) -> list[int]:
    """A DLedger commit log as a leader leaves it: ``n`` records in entries (PHYSICALOFFSET = entry
    pos + 48), the checkpoint naming entry ``committed``; the records' commit-log offsets."""
    w = sf.DLedgerStoreWriter(str(path), data_file_size=DATA, index_file_size=INDEX)
    w.append_hook = sf.commitlog_append_hook
    host = ("127.0.0.1", 10911)
    offsets = []
    for i in range(n):
        msg = m.MessageExtBrokerInner(topic="DlTail", body=b"r%d" % i * 20, queue_id=0, born_host=host, store_host=host)
        entry = w.append_as_leader(bytes(m.encode_message(msg, queue_offset=i)), 1)
        offsets.append(entry.pos + BODY_OFFSET)
    w.persist_checkpoint(committed)
    w.close()
    return offsets


def scanned(splits: list) -> list[int]:
    return [msg.commit_log_offset for s in splits for _buf, _pos, msg in iter_split(s)]


def test_the_scan_leaves_out_the_uncommitted_tail(tmp_path: Path) -> None:
    """A leader's store with records the group never committed (entries 20..23 past the
    checkpoint's committedIndex=19): the plan reads the 20 committed ones, the offsets option
    finds no uncommitted one; includeUncommitted reads all 24."""
    root = tmp_path / "store"
    offsets = commitlog_ledger(root / "dledger-n0", 24, 19)
    assert len({o // DATA for o in offsets}) > 2  # several data files
    assert scanned(plan_splits(str(root))) == offsets[:20]
    assert scanned(plan_splits(str(root), PlanOptions(include_uncommitted=True))) == offsets
    assert scanned(plan_offset_splits(str(root), [offsets[3], offsets[19], offsets[21]])) == [offsets[3], offsets[19]]
    assert scanned(plan_offset_splits(str(root), offsets[20:], include_uncommitted=True)) == offsets[20:]
