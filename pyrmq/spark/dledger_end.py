"""Where a DLedger store's entries end, for planning a scan, without a walk over the whole ledger.

DLedgerStoreReader recovers as DLedgerMmapFileStore#recover does, reading every entry header from
the first data file on: a 1 GiB data file of 1 KiB records is a million headers, all read on the
driver before a single task starts. A plan needs only the end of the last data file (the others
end with their blank filler, which the scan stops at), and the index files give it: item ``i`` at
byte ``32 * i`` says where entry ``i`` lies (DLedgerMmapFileStore#get reads entries that way).

So: start at the checkpoint's committed index (a committed entry is never truncated, so its item
is current) or at the first entry, follow the items while they chain (index i at item i, each
entry where the one before ended or at the next file's start, terms never falling: items that a
truncation left behind past the end break the chain), check the last one against its entry (or
the ones before it, when its entry is gone), then walk on through the data for the entries whose items are not written yet (an entry reaches its
data file before its item reaches the index file). Anything that does not check falls back to the
full recovery, so the answer is the reader's whenever the files agree with themselves.

`committed_end` is where a scan stops by default: after the entry the checkpoint calls committed.
DLedgerMmapFileStore#persistCheckPoint writes ``committedIndex`` every checkPointInterval (3 s)
while the member runs and once more at shutdown, and recover() reads it back as the committed
index; DLedgerCommitLog serves nothing past that committed position (getMaxOffset, getData).
So the entries after it are either not committed by the group (a leader's tail a new leader may
truncate) or committed less than 3 s ago, and a broker opened on the store serves neither until
the group tells it more.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

import numpy as np

from pyrmq.dledger.entry import (
    BLANK_MAGIC_CODE,
    BODY_OFFSET,
    CURRENT_MAGIC,
    ENTRY_HEADER,
    INDEX_UNIT_SIZE,
    MIN_BLANK_LEN,
)
from pyrmq.dledger.store_files import DLedgerStoreReader, _list_files, offset_to_file_name, read_checkpoint

#: one index item as numpy reads it (entry.INDEX_ITEM)
ITEM_DTYPE = np.dtype([("magic", ">i4"), ("pos", ">i8"), ("size", ">i4"), ("index", ">i8"), ("term", ">i8")])
assert ITEM_DTYPE.itemsize == INDEX_UNIT_SIZE
#: index items read per step while following the chain
CHUNK_ITEMS = 64 * 1024
#: items tried backwards from the chain's end before the full recovery answers
BACK_OFF_ITEMS = 64

_PREFIX = struct.Struct(">ii")


@dataclass(frozen=True, slots=True)
class LedgerEnd:
    """The data files and where their entries end (DLedgerStoreReader's write_pos)."""

    data_files: list[tuple[int, str]]
    data_file_size: int
    write_pos: int
    #: how it was found: "index", or "walk" (the full recovery)
    how: str


class _Files:
    """pread over a log of fixed-size files named by their first offset."""

    def __init__(self, directory: str, files: list[tuple[int, str]], size: int) -> None:
        self.directory, self.starts, self.size = directory, {s for s, _ in files}, size

    def read(self, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes from ``offset``, never across a file's end; b"" where no file is."""
        if self.size <= 0:
            return b""
        start = offset - offset % self.size
        if start not in self.starts:
            return b""
        with open(os.path.join(self.directory, offset_to_file_name(start)), "rb") as f:
            return os.pread(f.fileno(), min(length, start + self.size - offset), offset - start)


def _walk(path: str, data_path: str | None) -> LedgerEnd:
    ledger = DLedgerStoreReader(path, data_path=data_path)
    return LedgerEnd(ledger.data_files, ledger.data_file_size, ledger.write_pos, "walk")


def _header(data: _Files, pos: int) -> tuple[int, int, int, int] | None:
    """(size, index, term, pos) of the entry header at ``pos``, None when none is there."""
    raw = data.read(pos, BODY_OFFSET)
    if len(raw) < BODY_OFFSET:
        return None
    magic, size, index, term, at, _ch, _cc, _bc, body_size = ENTRY_HEADER.unpack(raw)
    if magic != CURRENT_MAGIC or size != BODY_OFFSET + body_size or body_size < 0:
        return None
    return size, index, term, at


def find_ledger_end(path: str, *, data_path: str | None = None) -> LedgerEnd:
    """The end of the entries of the DLedger member directory ``path``, read through the index
    (see the module docstring). Raises StoreFormatError as DLedgerStoreReader does."""
    data_path = data_path or os.path.join(path, "data")
    index_path = os.path.join(path, "index")
    data_files = _list_files(data_path)
    index_files = _list_files(index_path)
    dsize = DLedgerStoreReader._uniform_size(data_files, "data")
    isize = DLedgerStoreReader._uniform_size(index_files, "index")
    if not data_files:
        return LedgerEnd(data_files, dsize, 0, "index")
    data = _Files(data_path, data_files, dsize)
    index = _Files(index_path, index_files, isize)
    first = _header(data, data_files[0][0])
    if first is None or first[3] != data_files[0][0]:
        return _walk(path, data_path)  # no entry at the start: the walk says what is there
    begin = first[1]
    checkpoint = read_checkpoint(path)
    start = begin if checkpoint is None else max(begin, checkpoint.committed_index)
    last = _item(index, start)
    if last is None:
        last = _item(index, begin)
        if last is None:
            return _walk(path, data_path)
    found: tuple[int, int, int, int] | None = _follow(index, last, dsize)
    # an item whose entry is not there (the data of a truncated tail is gone): the one before
    for _ in range(BACK_OFF_ITEMS):
        if found is None or found[2] < last[2]:
            break
        pos, size, idx, term = found
        if _header(data, pos) == (size, idx, term, pos):
            return LedgerEnd(data_files, dsize, _walk_on(data, pos + size, idx, term, dsize), "index")
        found = _item(index, idx - 1)
    return _walk(path, data_path)


def committed_end(path: str, ledger: LedgerEnd, *, data_path: str | None = None) -> int:
    """The end of the entries the checkpoint of member directory ``path`` calls committed, at most
    ``ledger.write_pos`` (updateCommittedIndex caps the committed index at the ledger's end):
    ``committedIndex`` below the first entry (-1: nothing committed yet) is the first data file's
    start, no entry readable; no checkpoint at all is ``ledger.write_pos`` (the store does not say).
    Without ``checkpoint`` its ``.bak`` answers: IOUtils#string2File deletes the file before it
    renames the new one in, and the content before is a committed index too, only older."""
    checkpoint = read_checkpoint(path) or read_checkpoint(path, backup=True)
    if checkpoint is None or not ledger.data_files or ledger.write_pos <= ledger.data_files[0][0]:
        return ledger.write_pos
    data_path = data_path or os.path.join(path, "data")
    data = _Files(data_path, ledger.data_files, ledger.data_file_size)
    first = _header(data, ledger.data_files[0][0])
    if first is None:
        return ledger.write_pos  # find_ledger_end found entries, so the walk below says where
    c = checkpoint.committed_index
    if c < first[1]:
        return ledger.data_files[0][0]
    index_files = _list_files(os.path.join(path, "index"))
    index = _Files(os.path.join(path, "index"), index_files, DLedgerStoreReader._uniform_size(index_files, "index"))
    item = _item(index, c)
    if item is not None:
        pos, size, _i, term = item
        if pos + size <= ledger.write_pos and _header(data, pos) == (size, c, term, pos):
            return pos + size
    # no item for it, or one that does not check: the entries say (past the end: the end)
    for entry in DLedgerStoreReader(path, data_path=data_path).entries():
        if entry.index == c:
            return min(entry.pos + entry.size, ledger.write_pos)
    return ledger.write_pos


def _item(index: _Files, i: int) -> tuple[int, int, int, int] | None:
    """(pos, size, index, term) of item ``i`` when it is one (magic, its own index)."""
    raw = index.read(i * INDEX_UNIT_SIZE, INDEX_UNIT_SIZE)
    if len(raw) < INDEX_UNIT_SIZE:
        return None
    item = np.frombuffer(raw, ITEM_DTYPE)[0]
    if int(item["magic"]) != CURRENT_MAGIC or int(item["index"]) != i:
        return None
    return int(item["pos"]), int(item["size"]), i, int(item["term"])


def _follow(index: _Files, last: tuple[int, int, int, int], dsize: int) -> tuple[int, int, int, int]:
    """The last item of the chain that starts at ``last``."""
    while True:
        pos, size, i, term = last
        raw = index.read((i + 1) * INDEX_UNIT_SIZE, CHUNK_ITEMS * INDEX_UNIT_SIZE)
        n = len(raw) // INDEX_UNIT_SIZE
        if not n:
            return last
        items = np.frombuffer(raw, ITEM_DTYPE, count=n)
        ipos = items["pos"].astype(np.int64)
        isize = items["size"].astype(np.int64)
        iterm = items["term"].astype(np.int64)
        prev_end = np.concatenate(([pos + size], (ipos + isize)[:-1]))
        prev_term = np.concatenate(([term], iterm[:-1]))
        next_file = prev_end - prev_end % dsize + dsize
        ok = (
            (items["magic"] == CURRENT_MAGIC)
            & (items["index"] == np.arange(i + 1, i + 1 + n))
            & (iterm >= prev_term)
            & (isize > BODY_OFFSET)
            & ((ipos == prev_end) | (ipos == next_file))
        )
        bad = np.flatnonzero(~ok)
        k = int(bad[0]) if len(bad) else n
        if k:
            last = int(ipos[k - 1]), int(isize[k - 1]), i + k, int(iterm[k - 1])
        if k < n:
            return last


def _walk_on(data: _Files, end: int, index: int, term: int, dsize: int) -> int:
    """The end of the entries from ``end`` on (after entry ``index`` of ``term``): those written
    to the data files before their index items, read as the full recovery reads them (a blank
    filler moves on to the next file's start; the end stays before it unless an entry follows)."""
    while True:
        pos = end
        raw = data.read(pos, MIN_BLANK_LEN)
        if len(raw) == MIN_BLANK_LEN and _PREFIX.unpack(raw)[0] == BLANK_MAGIC_CODE:
            pos = pos - pos % dsize + dsize
        head = _header(data, pos)
        if head is None:
            return end
        size, i, t, at = head
        if at != pos or i != index + 1 or t < term or len(data.read(pos, size)) < size:
            return end
        end, index, term = pos + size, i, t
