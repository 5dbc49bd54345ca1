"""Scanning commit-log files by byte range, without Spark: split planning, record boundaries,
the live tail, corrupt records. Record decoding is pyrmq.store.message's (one definition).

Why byte ranges: a 1 GiB file must be read by several tasks, but records are variable-length and
a task handed [start, stop) cannot know where a record begins. We use the record's own address:
PHYSICALOFFSET (bytes 28..36) equals the record's absolute commit-log offset, and MAGICCODE
(bytes 4..8) is one of two constants. A task finds the first position p >= start whose magic
matches and whose PHYSICALOFFSET == file base + p (`next_boundary`, a C-speed `mmap.find` for
the magic bytes), then walks TOTALSIZE hops. A task owns the records that *start* in its range
(the last one may end past `stop`), so every record is read by exactly one task and only the
bytes a task needs are touched (the file is mmapped, pages fault in on use).

The active (last) file has an unwritten or torn tail. The planner fixes one `data_end` for it
(`find_data_end`: binary search for the last chunk holding a record start, then a checked walk):
partitions never read past it, so a job over a store that is still being written sees one
consistent prefix of the log, the same for every task.

A record that fails its checks (structure, BODYCRC) but is followed by a valid record is corrupt;
one that is followed by nothing valid is the unwritten tail. Java counterpart: CommitLog#
checkMessageAndReturnSize (recovery stops at the first bad record; we can go on).

Which files make up the log and how a record is checked is pyrmq.store.reader's (the reader
`pyrmq store verify` uses); this module adds the byte-range splitting.

A DLedger broker's store (enableDLegerCommitLog) has an empty commitlog/: its records sit inside
the entries of ``dledger-<selfId>/data`` (pyrmq.dledger.entry), each at the entry's pos +
BODY_OFFSET, which is also its PHYSICALOFFSET and what the consume queues point at. Such a store
is planned as one split per data file up to the end of the entries its checkpoint calls committed
(or the ledger's end, uncommitted tail included, when asked; both found through its index files
on the planning side: pyrmq.spark.dledger_end), and walked entry by entry (`iter_dledger_split`):
the entry sizes give the record boundaries, so no search is needed.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from pyrmq.dledger.entry import BLANK_MAGIC_CODE, BODY_OFFSET, CURRENT_MAGIC
from pyrmq.dledger.store_files import find_member_dir
from pyrmq.spark.dledger_end import LedgerEnd, committed_end, find_ledger_end
from pyrmq.store import message as m
from pyrmq.store import reader
from pyrmq.store.reader import LogFile

#: the two record magics share their first three bytes (DA A3 20, then A7 for V1, AB for V2)
_MAGIC_PREFIX = m.MESSAGE_MAGIC_CODE.to_bytes(4, "big", signed=True)[:3]
_MAGIC_LAST = {
    m.MESSAGE_MAGIC_CODE.to_bytes(4, "big", signed=True)[3],
    m.MESSAGE_MAGIC_CODE_V2.to_bytes(4, "big", signed=True)[3],
}
#: chunk size for the tail search; larger than any record (maxMessageSize 4 MiB + headers)
TAIL_PROBE_CHUNK = 8 * 1024 * 1024

#: a commit-log file's bytes: mapped, or read into memory (searchable with .find)
Buffer = mmap.mmap | bytes | bytearray


class CorruptRecordError(ValueError):
    """A record that fails its checks in the middle of the log (not the unwritten tail)."""

    def __init__(self, file: str, file_pos: int, offset: int, reason: str) -> None:
        super().__init__(
            f"corrupt commit-log record in {file} at file position {file_pos} (commit-log offset {offset}): {reason}"
        )
        self.file, self.file_pos, self.offset, self.reason = file, file_pos, offset, reason


@dataclass(frozen=True, slots=True)
class Split:
    """Records of `file` whose start position is in [start, stop) and below `data_end`."""

    path: str
    base: int
    start: int
    stop: int
    data_end: int  # no byte at or past this position is read
    dledger: bool = False  # a DLedger data file: start is an entry's position (iter_dledger_split)


#: the entry header fields a walk needs: magic, size, index, term, pos (pyrmq.dledger.entry)
_ENTRY_PREFIX = struct.Struct(">iiqqq")


def dledger_member(path: str) -> str | None:
    """The DLedger member directory when `path` is a DLedger broker's store root (one
    ``dledger-<selfId>/data`` under it) or that member directory itself; else None."""
    if os.path.basename(os.path.normpath(path)).startswith("dledger-") and os.path.isdir(os.path.join(path, "data")):
        return path
    return find_member_dir(path) if os.path.isdir(path) else None


def dledger_read_end(member: str, include_uncommitted: bool = False) -> LedgerEnd:
    """The member's data files and where a scan of them stops: after the entry its checkpoint
    calls committed (dledger_end.committed_end, what a broker opened on the store would serve),
    or, with ``include_uncommitted``, at the ledger's end (a leader's uncommitted tail too)."""
    ledger = find_ledger_end(member)
    if include_uncommitted:
        return ledger
    return replace(ledger, write_pos=committed_end(member, ledger))


def plan_dledger_splits(member: str, opts: PlanOptions) -> list[Split]:
    """One split per data file holding entries, the last one up to the read end (dledger_read_end;
    found through the index: the other files end with their blank filler, where a walk stops)."""
    ledger = dledger_read_end(member, opts.include_uncommitted)
    splits = []
    for start, path in ledger.data_files:
        end = min(ledger.data_file_size, ledger.write_pos - start)
        if end <= 0:
            break
        if opts.min_offset is not None and start + end <= opts.min_offset:
            continue
        if opts.max_offset is not None and start >= opts.max_offset:
            continue
        splits.append(Split(path, start, 0, end, end, dledger=True))
    return splits


def plan_dledger_offset_splits(member: str, offsets: list[int], include_uncommitted: bool = False) -> list[Split]:
    """One split per commit-log offset: the entry at offset - BODY_OFFSET (checked when read),
    before the read end (dledger_read_end)."""
    ledger = dledger_read_end(member, include_uncommitted)
    out = []
    for off in sorted(set(offsets)):
        at = off - BODY_OFFSET
        for start, path in ledger.data_files:
            end = min(ledger.data_file_size, ledger.write_pos - start)
            if start <= at < start + end:
                out.append(Split(path, start, at - start, at - start + 1, end, dledger=True))
                break
    return out


def list_commit_log(path: str) -> list[LogFile]:
    """The commit log's files (path: a store root or the commit-log directory itself), as the
    store reader lists them."""
    return reader.list_log_files(reader.sub_dir(path, "commitlog"))[0]


def record_files(path: str) -> tuple[list[LogFile], bool]:
    """The files holding the store's records, and whether they are a DLedger member's data files.
    Both are named by the offset of their first byte, and a record's PHYSICALOFFSET is its place
    in them (inside a DLedger entry: the entry's pos + BODY_OFFSET), so a commit-log offset from a
    consume queue finds its record the same way in either."""
    member = dledger_member(path)
    if member is not None:
        return reader.list_log_files(os.path.join(member, "data"))[0], True
    return list_commit_log(path), False


def record_split(f: LogFile, dledger: bool, first: int, last: int, data_end: int) -> Split:
    """The split of `f` whose records start at commit-log offsets `first` to `last` (records the
    caller knows are there), none read past `data_end`. In a DLedger data file the walk starts at
    the entry that wraps the record (iter_dledger_split)."""
    shift = BODY_OFFSET if dledger else 0
    return Split(f.path, f.start, first - shift - f.start, last - shift - f.start + 1, data_end - f.start, dledger)


def _is_boundary(buf: Buffer, base: int, pos: int, limit: int) -> bool:
    """Record header at pos: a record magic, PHYSICALOFFSET == base + pos, sane TOTALSIZE."""
    if pos + m.PHYSICALOFFSET_OFFSET + 8 > limit:
        return False
    total, magic = m.peek_total_size_and_magic(buf, pos)
    if magic != m.MESSAGE_MAGIC_CODE and magic != m.MESSAGE_MAGIC_CODE_V2:
        return False
    if total < m.MIN_RECORD_SIZE or pos + total > limit:
        return False
    return m.peek_physical_offset(buf, pos) == base + pos


def next_boundary(buf: Buffer, base: int, start: int, search_end: int, limit: int) -> int | None:
    """First record start p with start <= p < search_end (record must end by `limit`), or None."""
    pos = start + 4
    find = buf.find
    while True:
        i = find(_MAGIC_PREFIX, pos, min(search_end + 4 + len(_MAGIC_PREFIX), limit))
        if i < 0 or i - 4 >= search_end:
            return None
        p = i - 4
        if p >= start and i + 3 < limit and buf[i + 3] in _MAGIC_LAST and _is_boundary(buf, base, p, limit):
            return int(p)
        pos = i + 1


def check_record(buf: Buffer, pos: int, limit: int, check_crc: bool = True) -> tuple[m.StoredMessage | None, str]:
    """Header-only decode plus BODYCRC (reader.read_record). (msg, '') or (None, why)."""
    try:
        return reader.read_record(buf, pos, limit, check_crc=check_crc, decode_properties=False), ""
    except m.MessageDecodeError as e:
        return None, str(e)


def walk_end(buf: Buffer, base: int, pos: int, limit: int) -> int:
    """End of valid data walking from the record start `pos`: stops at a blank record, zeros,
    or a bad record with nothing valid after it (the torn tail). Bad records followed by valid
    ones are stepped over (the reader reports them)."""
    while pos + 8 <= limit:
        total, magic = m.peek_total_size_and_magic(buf, pos)
        if magic == m.BLANK_MAGIC_CODE:
            return pos
        msg, _why = check_record(buf, pos, limit)
        if msg is not None:
            pos += total
            continue
        nxt = next_boundary(buf, base, pos + 1, limit, limit)
        if nxt is None:
            return pos
        pos = nxt
    return pos


def find_data_end(buf: Buffer, base: int, size: int, chunk: int = TAIL_PROBE_CHUNK) -> int:
    """Where the valid data of a (possibly active) file ends. Binary search for the last chunk
    holding a record start (chunks hold starts up to the data end, none after: chunk > any
    record), then a checked walk from that start."""
    n = -(-size // chunk)
    lo, hi, last = 0, n - 1, None
    while lo <= hi:
        mid = (lo + hi) // 2
        b = (
            0
            if mid == 0 and _is_boundary(buf, base, 0, size)
            else next_boundary(buf, base, mid * chunk, min(size, (mid + 1) * chunk), size)
        )
        if b is not None:
            last, lo = b, mid + 1
        else:
            hi = mid - 1
    if last is None:
        return 0
    # the walk may cross later chunks when a big record spans one
    return walk_end(buf, base, last, size)


@dataclass(slots=True)
class PlanOptions:
    split_size: int = 256 * 1024 * 1024
    min_offset: int | None = None  # commit-log offset range pruning (inclusive / exclusive)
    max_offset: int | None = None
    #: a DLedger store: read past the checkpoint's committed entry to the ledger's end
    include_uncommitted: bool = False


def _active_file(files: list[LogFile]) -> tuple[int, int] | None:
    """(index, data end) of the last file whose first record is valid; later files are empty
    preallocated ones (AllocateMappedFileService)."""
    for i in range(len(files) - 1, -1, -1):
        mm = reader.map_readonly(files[i].path)
        if mm is None:
            continue
        try:
            if _is_boundary(mm, files[i].start, 0, files[i].size):
                return i, find_data_end(mm, files[i].start, files[i].size)
        finally:
            mm.close()
    return None


def plan_splits(path: str, opts: PlanOptions | None = None) -> list[Split]:
    """Byte-range splits over the commit log. Only the last file holding data is searched for its
    data end (the other files end with their blank record); empty preallocated files are dropped."""
    opts = opts or PlanOptions()
    member = dledger_member(path)
    if member is not None:
        return plan_dledger_splits(member, opts)
    files = list_commit_log(path)
    found = _active_file(files)
    if found is None:
        return []
    active, data_end = found
    splits: list[Split] = []
    for i, f in enumerate(files[: active + 1]):
        end = data_end if i == active else f.size
        lo, hi = 0, end
        if opts.min_offset is not None:
            if f.start + end <= opts.min_offset:
                continue
            lo = max(0, opts.min_offset - f.start)
        if opts.max_offset is not None:
            if f.start >= opts.max_offset:
                continue
            hi = min(end, opts.max_offset - f.start)
        step = max(opts.split_size, 1)
        s = lo
        while s < hi:
            splits.append(Split(f.path, f.start, s, min(hi, s + step), end))
            s += step
    return splits


def plan_offset_splits(path: str, offsets: list[int], include_uncommitted: bool = False) -> list[Split]:
    """One split per commit-log offset (a record lookup: offsetMsgId, index or consume-queue hit);
    ``include_uncommitted`` as in PlanOptions."""
    member = dledger_member(path)
    if member is not None:
        return plan_dledger_offset_splits(member, offsets, include_uncommitted)
    files = list_commit_log(path)
    found = _active_file(files)
    if found is None:
        return []
    active, data_end = found
    out = []
    for off in sorted(set(offsets)):
        for i, f in enumerate(files[: active + 1]):
            end = data_end if i == active else f.size
            if f.start <= off < f.start + end:
                out.append(Split(f.path, f.start, off - f.start, off - f.start + 1, end))
                break
    return out


def first_record(buf: Buffer, split: Split, limit: int) -> int | None:
    """Position of the first record `split` owns (None: no record starts in its range)."""
    if split.start == 0:
        return 0
    return next_boundary(buf, split.base, split.start, min(split.stop, limit), limit)


def check_corrupt_mode(corrupt: str) -> None:
    if corrupt not in ("fail", "skip"):
        raise ValueError(f"corrupt must be 'fail' or 'skip', not {corrupt!r}")


def after_bad_record(
    buf: Buffer, split: Split, pos: int, limit: int, why: str, corrupt: str, stats: ScanStats | None
) -> int | None:
    """The record at `pos` failed its checks (`why`): where the scan goes on, or None when it ends
    there. Zeros up to the end of a complete file end the data; anything else is a corrupt record,
    logged in `stats`, raised with corrupt="fail", stepped over to the next valid record with "skip"."""
    total, magic = m.peek_total_size_and_magic(buf, pos)
    nxt = next_boundary(buf, split.base, pos + 1, limit, limit)
    if nxt is None and split.data_end >= len(buf) and total == 0 and magic == 0:
        return None  # zeros up to the end of a complete file
    if stats is not None:
        stats.corrupt.append((split.path, pos, split.base + pos, why))
    if corrupt == "fail":
        raise CorruptRecordError(split.path, pos, split.base + pos, why)
    return nxt


@dataclass(slots=True)
class ScanStats:
    records: int = 0
    corrupt: list[tuple[str, int, int, str]] = field(default_factory=list)  # (file, pos, offset, why)


def iter_split(
    split: Split, *, check_crc: bool = True, corrupt: str = "fail", stats: ScanStats | None = None
) -> Iterator[tuple[memoryview | mmap.mmap, int, m.StoredMessage]]:
    """(buffer, position, header-decoded record) for each valid record owned by `split`.

    corrupt="fail" raises CorruptRecordError; "skip" records it in `stats` and resumes at the next
    valid record. The buffer is valid until the generator advances past the split."""
    check_corrupt_mode(corrupt)
    if split.dledger:
        yield from iter_dledger_split(split, check_crc=check_crc, corrupt=corrupt, stats=stats)
        return
    mm = reader.map_readonly(split.path)
    if mm is None:
        return
    try:
        limit = min(split.data_end, len(mm))
        first = first_record(mm, split, limit)
        if first is None:
            return
        pos = first
        while pos < split.stop and pos + 8 <= limit:
            total, magic = m.peek_total_size_and_magic(mm, pos)
            if magic == m.BLANK_MAGIC_CODE:
                return
            msg, why = check_record(mm, pos, limit, check_crc)
            if msg is None:
                nxt = after_bad_record(mm, split, pos, limit, why, corrupt, stats)
                if nxt is None:
                    return
                pos = nxt
                continue
            if stats is not None:
                stats.records += 1
            yield mm, pos, msg
            pos += total
    finally:
        _close_map(mm)


def _close_map(mm: mmap.mmap) -> None:
    try:
        mm.close()
    except BufferError:  # a caller still holds a view; the map goes with the last reference
        pass


def iter_dledger_split(
    split: Split, *, check_crc: bool = True, corrupt: str = "fail", stats: ScanStats | None = None
) -> Iterator[tuple[memoryview | mmap.mmap, int, m.StoredMessage]]:
    """iter_split over a DLedger data file: the record inside each entry from split.start on, until
    the blank filler or data_end. An entry whose record fails its checks is corrupt (the entry's
    size still says where the next one starts, so "skip" goes on there); so is a broken entry
    header where an entry must start, after which "skip" ends the split (no size to go on with)."""
    check_corrupt_mode(corrupt)
    mm = reader.map_readonly(split.path)
    if mm is None:
        return
    try:
        limit = min(split.data_end, len(mm))
        pos = split.start
        while pos < split.stop and pos + BODY_OFFSET <= limit:
            magic, size, _index, _term, entry_pos = _ENTRY_PREFIX.unpack_from(mm, pos)
            if magic == BLANK_MAGIC_CODE or (magic == 0 and size == 0):
                return  # the blank filler, or zeros: this file's entries end here
            if magic != CURRENT_MAGIC or size <= BODY_OFFSET or pos + size > limit or entry_pos != split.base + pos:
                if pos == split.start and pos:
                    return  # a position asked for (the offsets option) that is no entry's
                # where an entry must start (a file's first, or after one): a broken header, and
                # no size to go on with
                why = f"not a DLedger entry: magic {magic}, size {size}, pos {entry_pos}"
                if stats is not None:
                    stats.corrupt.append((split.path, pos, split.base + pos, why))
                if corrupt == "fail":
                    raise CorruptRecordError(split.path, pos, split.base + pos, why)
                return
            at = pos + BODY_OFFSET
            msg, why = check_record(mm, at, pos + size, check_crc)
            if msg is None:
                if stats is not None:
                    stats.corrupt.append((split.path, at, split.base + at, why))
                if corrupt == "fail":
                    raise CorruptRecordError(split.path, at, split.base + at, why)
            else:
                if stats is not None:
                    stats.records += 1
                yield mm, at, msg
            pos += size
    finally:
        _close_map(mm)
