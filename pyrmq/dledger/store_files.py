"""A DLedger store directory, read and written as io.openmessaging.storage:dledger 0.3.2 does.

Java: ``DLedgerConfig`` (paths), ``store.file.DLedgerMmapFileStore`` (recover, appendAsLeader,
checkpoint), ``store.file.MmapFileList`` (files named by their first offset, 20 digits; blank
filler), ``MemberState`` (the ``currterm`` file) and ``utils.IOUtils#string2File``.

The directory of member ``selfId`` under ``storeBaseDir`` (a RocketMQ broker passes
``storePathRootDir``)::

    dledger-<selfId>/
        data/00000000000000000000 ...   entries (entry.py); files of mappedFileSizeForEntryData
                                        (RocketMQ: mappedFileSizeCommitLog) unless the broker sets
                                        storePathDLedgerCommitLog, which replaces data/
        index/00000000000000000000 ...  32-byte index items, item i at 32*i; files of
                                        mappedFileSizeForEntryIndex (default 32 * 5 Mi)
        checkpoint                      "committedIndex=<n>\\nendIndex=<n>\\n"
        currterm                        "voteLeader=<id or empty>\\ncurrTerm=<n>\\n"
        currterm.bak, checkpoint.bak    the previous content (string2File)

The two text files are ``java.util.Properties`` written by ``IOUtils#properties2String``, in the
entry order of the Properties map: on JDK 9+ (a ConcurrentHashMap inside) that is the order above,
checked against JDK 17. Readers accept any order.

DLedgerCommitLog (apache/rocketmq store/dledger) makes each entry body one whole commit-log record
(store/message.py) and, in its append hook, sets the record's PHYSICALOFFSET to the entry's pos +
BODY_OFFSET: a message's commit-log offset is where its record lies inside the DLedger data files.
"""

from __future__ import annotations

import itertools
import mmap
import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from pyrmq.common.files import write_file_atomically
from pyrmq.common.properties import PropertiesError, load_properties

from .entry import (
    BLANK_MAGIC_CODE,
    BODY_OFFSET,
    CURRENT_MAGIC,
    INDEX_UNIT_SIZE,
    MIN_BLANK_LEN,
    DLedgerEntry,
    EntryFormatError,
    IndexItem,
    decode_entry,
    decode_index_item,
    encode_blank,
    encode_entry,
    encode_index_item,
)

__all__ = [
    "CHECK_POINT_FILE",
    "COMMITLOG_PHYSICAL_OFFSET_POSITION",
    "DEFAULT_DATA_FILE_SIZE",
    "DEFAULT_INDEX_FILE_SIZE",
    "TERM_PERSIST_FILE",
    "Checkpoint",
    "DLedgerStoreReader",
    "DLedgerStoreWriter",
    "StoreFormatError",
    "TermState",
    "commitlog_append_hook",
    "commitlog_records",
    "default_path",
    "find_member_dir",
    "fsync_paths",
    "offset_to_file_name",
    "read_checkpoint",
    "read_term_file",
    "write_checkpoint",
    "write_term_file",
]

#: MemberState.TERM_PERSIST_FILE and its keys
TERM_PERSIST_FILE = "currterm"
_KEY_TERM = "currTerm"
_KEY_VOTE_FOR = "voteLeader"
#: DLedgerMmapFileStore.CHECK_POINT_FILE and its keys
CHECK_POINT_FILE = "checkpoint"
_KEY_END_INDEX = "endIndex"
_KEY_COMMITTED_INDEX = "committedIndex"

#: DLedgerConfig defaults
DEFAULT_DATA_FILE_SIZE = 1024 * 1024 * 1024
DEFAULT_INDEX_FILE_SIZE = INDEX_UNIT_SIZE * 5 * 1024 * 1024

#: MessageDecoder.PHY_POS_POSITION: TOTALSIZE, MAGICCODE, BODYCRC, QUEUEID, FLAG, QUEUEOFFSET
COMMITLOG_PHYSICAL_OFFSET_POSITION = struct.calcsize(">iiiiiq")

_PHYSICAL_OFFSET = struct.Struct(">q")


class StoreFormatError(ValueError):
    """A store directory Java would refuse to recover (files out of order, an index that disagrees
    with its entry, a text file Properties#load refuses)."""


def default_path(store_base_dir: str, self_id: str) -> str:
    """DLedgerConfig#getDefaultPath: ``<storeBaseDir>/dledger-<selfId>``."""
    return os.path.join(store_base_dir, f"dledger-{self_id}")


def find_member_dir(root: str) -> str | None:
    """The one DLedger member directory (``dledger-<selfId>`` with a ``data/``) under a broker's
    store root, None when there is none or more than one."""
    found = sorted(
        os.path.join(root, d)
        for d in os.listdir(root)
        if d.startswith("dledger-") and os.path.isdir(os.path.join(root, d, "data"))
    )
    return found[0] if len(found) == 1 else None


def offset_to_file_name(offset: int) -> str:
    """DLedgerUtils#offset2FileName: 20 zero-padded decimal digits."""
    return f"{offset:020d}"


# --------------------------------------------------------------------------- the text files


@dataclass(frozen=True, slots=True)
class TermState:
    """MemberState's persisted part: the current term and whom this member voted for in it."""

    curr_term: int = 0
    vote_for: str | None = None


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """DLedgerMmapFileStore#persistCheckPoint. Java reads back only committedIndex."""

    end_index: int = -1
    committed_index: int = -1


def _read_properties(path: str) -> dict[str, str] | None:
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    try:
        return load_properties(raw.decode("utf-8", errors="replace"))
    except PropertiesError as e:
        raise StoreFormatError(f"{path}: {e}") from None


def _int(props: dict[str, str], key: str, default: int, path: str) -> int:
    raw = props.get(key)
    if raw is None or not raw.strip():
        return default
    try:
        return int(raw.strip())
    except ValueError:
        raise StoreFormatError(f"{path}: {key}={raw!r} is not a long") from None


def read_term_file(directory: str) -> TermState:
    """MemberState#loadTerm: a missing file is term 0, no vote; an empty voteLeader is no vote."""
    path = os.path.join(directory, TERM_PERSIST_FILE)
    props = _read_properties(path)
    if props is None:
        return TermState()
    vote = props.get(_KEY_VOTE_FOR)
    return TermState(_int(props, _KEY_TERM, 0, path), vote or None)


def write_term_file(directory: str, state: TermState) -> None:
    """MemberState#persistTerm, through string2File (the previous content kept as ``.bak``)."""
    text = f"{_KEY_VOTE_FOR}={state.vote_for or ''}\n{_KEY_TERM}={state.curr_term}\n"
    write_file_atomically(os.path.join(directory, TERM_PERSIST_FILE), text)


def read_checkpoint(directory: str, *, backup: bool = False) -> Checkpoint | None:
    """The ``checkpoint`` file, or with ``backup`` its ``.bak`` (the content before the last write)."""
    path = os.path.join(directory, CHECK_POINT_FILE + (".bak" if backup else ""))
    props = _read_properties(path)
    if props is None:
        return None
    return Checkpoint(_int(props, _KEY_END_INDEX, -1, path), _int(props, _KEY_COMMITTED_INDEX, -1, path))


def write_checkpoint(directory: str, checkpoint: Checkpoint) -> None:
    text = f"{_KEY_COMMITTED_INDEX}={checkpoint.committed_index}\n{_KEY_END_INDEX}={checkpoint.end_index}\n"
    write_file_atomically(os.path.join(directory, CHECK_POINT_FILE), text)


# --------------------------------------------------------------------------- the data and index files


def _list_files(directory: str) -> list[tuple[int, str]]:
    """(first offset, path) of each file named by its offset, in offset order."""
    if not os.path.isdir(directory):
        return []
    out = []
    for name in os.listdir(directory):
        if len(name) == 20 and name.isdigit():
            out.append((int(name), os.path.join(directory, name)))
    out.sort()
    return out


class DLedgerStoreReader:
    """Read-only view of a DLedger store directory, recovered as DLedgerMmapFileStore#recover does:
    entries are read from the first data file until a zero size or an entry that does not check,
    so a torn tail is simply the end. Index items are checked against the entries they point at.

    Raises StoreFormatError for files out of order; anything else is a bug.
    """

    def __init__(self, path: str, *, data_path: str | None = None) -> None:
        self.path = path
        self.data_path = data_path or os.path.join(path, "data")
        self.index_path = os.path.join(path, "index")
        self.data_files = _list_files(self.data_path)
        self.index_files = _list_files(self.index_path)
        self.data_file_size = self._uniform_size(self.data_files, "data")
        self.index_file_size = self._uniform_size(self.index_files, "index")
        self.ledger_begin_index = -1
        self.ledger_end_index = -1
        self.ledger_end_term = -1
        #: the offset after the last entry: where the next one goes
        self.write_pos = self.data_files[0][0] if self.data_files else 0
        for entry in self.entries():
            if self.ledger_begin_index == -1:
                self.ledger_begin_index = entry.index
            self.ledger_end_index = entry.index
            self.ledger_end_term = entry.term
            self.write_pos = entry.pos + entry.size
        self.term = read_term_file(path)
        self.checkpoint = read_checkpoint(path)

    @staticmethod
    def _uniform_size(files: list[tuple[int, str]], what: str) -> int:
        sizes = {os.path.getsize(p) for _, p in files}
        if len(sizes) > 1:
            raise StoreFormatError(f"{what} files of different sizes: {sorted(sizes)}")
        size = sizes.pop() if sizes else 0
        for (a, _), (b, pb) in itertools.pairwise(files):
            if b - a != size:
                raise StoreFormatError(f"{what} file {pb} does not follow the previous one ({a} + {size})")
        return size

    @property
    def committed_index(self) -> int:
        """What the checkpoint says, capped at the ledger end (Java's updateCommittedIndex)."""
        if self.checkpoint is None:
            return -1
        return min(self.checkpoint.committed_index, self.ledger_end_index)

    def entries(self, first_file: int = 0) -> Iterator[DLedgerEntry]:
        """Every entry in order, across blanks, until the recovered end, from the data file
        ``first_file`` on. Each data file is mapped, not read whole: a file is 1 GiB by default,
        and only the entries' bodies are copied out."""
        last_index = -1
        last_term = -1
        for start, path in self.data_files[first_file:]:
            with open(path, "rb") as f:
                if os.fstat(f.fileno()).st_size < MIN_BLANK_LEN:
                    return
                data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            with data:
                pos = 0
                while pos + MIN_BLANK_LEN <= len(data):
                    magic, size = struct.unpack_from(">ii", data, pos)
                    if magic == BLANK_MAGIC_CODE:
                        break  # the rest of this file is filler
                    if size == 0:
                        return
                    try:
                        entry = decode_entry(data, pos)
                    except EntryFormatError:
                        return
                    if entry.pos != start + pos or entry.term < last_term:
                        return
                    if last_index != -1 and entry.index != last_index + 1:
                        return
                    yield entry
                    last_index, last_term = entry.index, entry.term
                    pos += size
                else:
                    return

    def index_item(self, index: int) -> IndexItem:
        """The index item of entry ``index``. Raises KeyError outside the ledger, StoreFormatError
        when the item does not match its entry."""
        if not self.ledger_begin_index <= index <= self.ledger_end_index or index < 0:
            raise KeyError(index)
        offset = index * INDEX_UNIT_SIZE
        for start, path in self.index_files:
            if start <= offset < start + self.index_file_size:
                with open(path, "rb") as f:
                    f.seek(offset - start)
                    item = decode_index_item(f.read(INDEX_UNIT_SIZE))
                if item.magic != CURRENT_MAGIC or item.index != index:
                    raise StoreFormatError(f"index item {index}: {item}")
                return item
        raise StoreFormatError(f"no index file holds item {index}")

    def get(self, index: int) -> DLedgerEntry:
        """DLedgerMmapFileStore#get: through the index file to the entry."""
        item = self.index_item(index)
        for start, path in self.data_files:
            if start <= item.pos < start + self.data_file_size:
                with open(path, "rb") as f:
                    f.seek(item.pos - start)
                    entry = decode_entry(f.read(item.size))
                if entry.pos != item.pos or entry.index != index or entry.term != item.term:
                    raise StoreFormatError(f"entry {index} at {item.pos} does not match its index item")
                return entry
        raise StoreFormatError(f"no data file holds pos {item.pos}")


AppendHook = Callable[[int, bytearray], None]


def commitlog_append_hook(pos: int, body: bytearray) -> None:
    """DLedgerCommitLog's AppendHook: the record's PHYSICALOFFSET becomes its place in the data files."""
    _PHYSICAL_OFFSET.pack_into(body, COMMITLOG_PHYSICAL_OFFSET_POSITION, pos + BODY_OFFSET)


def commitlog_records(entries: Iterator[DLedgerEntry]) -> Iterator[tuple[int, bytes]]:
    """(commit-log offset, record bytes) of each commit-log record wrapped in ``entries``."""
    for entry in entries:
        yield entry.pos + BODY_OFFSET, entry.body


def fsync_paths(paths: set[str]) -> None:
    """fsync each file or directory; one removed meanwhile (a truncate) is skipped."""
    for path in sorted(paths):
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class DLedgerStoreWriter:
    """Appends entries the way a DLedger leader does (appendAsLeader): data files and index files of
    fixed sizes, created whole and zero-filled as Java's mmap leaves them, a blank where the next
    entry plus MIN_BLANK_LEN does not fit. Opens an existing store at its recovered end.

    Not thread-safe; one writer per directory. Raises OSError from the file system.
    """

    def __init__(
        self,
        path: str,
        *,
        data_file_size: int = DEFAULT_DATA_FILE_SIZE,
        index_file_size: int = DEFAULT_INDEX_FILE_SIZE,
        data_path: str | None = None,
    ) -> None:
        reader = DLedgerStoreReader(path, data_path=data_path)
        self.path = path
        self.data_path = reader.data_path
        self.index_path = reader.index_path
        self.data_file_size = reader.data_file_size or data_file_size
        self.index_file_size = reader.index_file_size or index_file_size
        if self.index_file_size % INDEX_UNIT_SIZE:
            raise ValueError(f"index file size {self.index_file_size} is not a multiple of {INDEX_UNIT_SIZE}")
        self.ledger_begin_index = reader.ledger_begin_index
        self.ledger_end_index = reader.ledger_end_index
        self.ledger_end_term = reader.ledger_end_term
        self.write_pos = reader.write_pos
        #: the write position the last fsync covered (MmapFileList#getFlushedWhere): what was
        #: recovered is on disk
        self.flushed_pos = reader.write_pos
        self.committed_index = reader.committed_index
        self.term = reader.term
        #: run on each leader append (``commitlog_append_hook`` for a commit log)
        self.append_hook: AppendHook | None = None
        #: files (and directories) written since the last ``take_dirty``
        self._dirty: set[str] = set()
        #: open descriptors by path (pwrite/pread: no buffering between this writer and readers)
        self._fds: dict[str, int] = {}
        self._repair_index(reader)

    def _repair_index(self, reader: DLedgerStoreReader) -> None:
        """DLedgerMmapFileStore#recover: the entries of the last three data files are checked
        against their index items, and from the first that does not match on, the items are
        written again from the entries. An entry reaches the data file before its item reaches
        the index file: a process killed in between leaves an entry the index does not know, and
        every read of it (a leader's COMPARE) would fail."""
        rewrite = False
        for entry in reader.entries(max(0, len(reader.data_files) - 3)):
            offset = entry.index * INDEX_UNIT_SIZE
            item = encode_index_item(
                IndexItem(magic=entry.magic, index=entry.index, term=entry.term, pos=entry.pos, size=entry.size)
            )
            if not rewrite and self._read_at(self.index_path, self.index_file_size, offset, INDEX_UNIT_SIZE) == item:
                continue
            rewrite = True
            self._write_at(self.index_path, self.index_file_size, offset, item)

    def _fd(self, path: str, directory: str, file_size: int, *, create: bool) -> int | None:
        fd = self._fds.get(path)
        if fd is not None:
            return fd
        if not os.path.exists(path):
            if not create:
                return None
            os.makedirs(directory, exist_ok=True)
            with open(path, "wb") as f:
                f.truncate(file_size)
            self._dirty.add(directory)
        fd = self._fds[path] = os.open(path, os.O_RDWR)
        return fd

    def close(self) -> None:
        """Close the files this writer keeps open (it can still be used: they reopen)."""
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            os.close(fd)

    def _write_at(self, directory: str, file_size: int, offset: int, data: bytes) -> None:
        start = offset - offset % file_size
        path = os.path.join(directory, offset_to_file_name(start))
        fd = self._fd(path, directory, file_size, create=True)
        assert fd is not None
        os.pwrite(fd, data, offset - start)
        self._dirty.add(path)

    def append(self, body: bytes, term: int, *, hook: AppendHook | None = None) -> DLedgerEntry:
        """Append ``body`` as the next entry of ``term``; ``hook(pos, body)`` may patch the body
        once its position is known (DLedgerMmapFileStore.AppendHook)."""
        if term < self.ledger_end_term:
            raise ValueError(f"term {term} < ledger end term {self.ledger_end_term}")
        size = BODY_OFFSET + len(body)
        if size + MIN_BLANK_LEN > self.data_file_size:
            raise ValueError(f"an entry of {size} bytes does not fit a data file of {self.data_file_size}")
        room = self.data_file_size - self.write_pos % self.data_file_size
        if size + MIN_BLANK_LEN > room:
            self._write_at(self.data_path, self.data_file_size, self.write_pos, encode_blank(room))
            self.write_pos += room
        pos = self.write_pos
        patched = bytearray(body)
        if hook is not None:
            hook(pos, patched)
        entry = DLedgerEntry(index=self.ledger_end_index + 1, term=term, pos=pos, body=bytes(patched))
        self._write_at(self.data_path, self.data_file_size, pos, encode_entry(entry))
        item = IndexItem(index=entry.index, term=term, pos=pos, size=entry.size)
        self._write_at(self.index_path, self.index_file_size, entry.index * INDEX_UNIT_SIZE, encode_index_item(item))
        self.write_pos = pos + entry.size
        self.ledger_end_index = entry.index
        self.ledger_end_term = term
        if self.ledger_begin_index == -1:
            self.ledger_begin_index = entry.index
        return entry

    # -- the Ledger of raft.py: a member's log on disk

    @property
    def begin_index(self) -> int:
        return self.ledger_begin_index

    @property
    def end_index(self) -> int:
        return self.ledger_end_index

    @property
    def end_term(self) -> int:
        return self.ledger_end_term

    def _read_at(self, directory: str, file_size: int, offset: int, length: int) -> bytes:
        start = offset - offset % file_size
        fd = self._fd(os.path.join(directory, offset_to_file_name(start)), directory, file_size, create=False)
        return b"" if fd is None else os.pread(fd, length, offset - start)

    def read(self, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes of the data files from ``offset``, never across a file's end
        (b"" where no file is)."""
        start = offset - offset % self.data_file_size
        length = min(length, start + self.data_file_size - offset)
        return self._read_at(self.data_path, self.data_file_size, offset, length)

    def get(self, index: int) -> DLedgerEntry:
        """DLedgerMmapFileStore#get. Raises KeyError outside the ledger, StoreFormatError when the
        index item and the entry disagree."""
        if index < 0 or not self.ledger_begin_index <= index <= self.ledger_end_index:
            raise KeyError(index)
        raw = self._read_at(self.index_path, self.index_file_size, index * INDEX_UNIT_SIZE, INDEX_UNIT_SIZE)
        try:
            item = decode_index_item(raw)
            entry = decode_entry(self._read_at(self.data_path, self.data_file_size, item.pos, item.size))
        except EntryFormatError as e:
            raise StoreFormatError(f"entry {index}: {e}") from None
        if (entry.index, entry.pos, entry.term) != (index, item.pos, item.term):
            raise StoreFormatError(f"entry {index} does not match its index item {item}")
        return entry

    def append_as_leader(self, body: bytes, term: int) -> DLedgerEntry:
        return self.append(body, term, hook=self.append_hook)

    def append_as_follower(self, entry: DLedgerEntry) -> None:
        """DLedgerMmapFileStore#appendAsFollower: the entry goes exactly where the leader put it
        (its pos), so every member's data files hold the same bytes."""
        if entry.index != self.ledger_end_index + 1:
            raise ValueError(f"entry {entry.index} does not follow {self.ledger_end_index}")
        room = self.data_file_size - self.write_pos % self.data_file_size
        if entry.size + MIN_BLANK_LEN > room:
            self._write_at(self.data_path, self.data_file_size, self.write_pos, encode_blank(room))
            self.write_pos += room
        if entry.pos != self.write_pos:
            raise ValueError(f"entry {entry.index} at pos {entry.pos}, this ledger writes at {self.write_pos}")
        self._put(entry)

    def _put(self, entry: DLedgerEntry) -> None:
        self._write_at(self.data_path, self.data_file_size, entry.pos, encode_entry(entry))
        item = IndexItem(magic=entry.magic, index=entry.index, term=entry.term, pos=entry.pos, size=entry.size)
        self._write_at(self.index_path, self.index_file_size, entry.index * INDEX_UNIT_SIZE, encode_index_item(item))
        self.write_pos = entry.pos + entry.size
        self.ledger_end_index = entry.index
        self.ledger_end_term = entry.term
        if self.ledger_begin_index == -1:
            self.ledger_begin_index = entry.index

    def _cut(self, directory: str, file_size: int, offset: int) -> None:
        """Drop everything from ``offset`` on: later files removed, the rest of its file zeroed.
        Java only moves its write position and leaves the old bytes, which its recovery could read
        back as entries if nothing overwrote them; zeros end a recovery there."""
        start = offset - offset % file_size
        for first, path in _list_files(directory):
            if first > start:
                fd = self._fds.pop(path, None)
                if fd is not None:
                    os.close(fd)
                os.remove(path)
                self._dirty.add(directory)
            elif first == start:
                self._write_at(directory, file_size, offset, bytes(file_size - (offset - start)))

    def truncate(self, entry: DLedgerEntry) -> None:
        """DLedgerMmapFileStore#truncate: the ledger ends at ``entry``, the local one kept when it is
        the same (equal but for the crcs), else replaced."""
        try:
            local: DLedgerEntry | None = self.get(entry.index)
        except (KeyError, StoreFormatError):
            local = None
        existed = local is not None and (local.magic, local.term, local.pos, local.channel, local.body) == (
            entry.magic,
            entry.term,
            entry.pos,
            entry.channel,
            entry.body,
        )
        cut_at = entry.pos + entry.size if existed else entry.pos
        self._cut(self.data_path, self.data_file_size, cut_at)
        self._cut(self.index_path, self.index_file_size, (entry.index + 1) * INDEX_UNIT_SIZE)
        if existed:
            self.write_pos = cut_at
            self.ledger_end_index = entry.index
            self.ledger_end_term = entry.term
        else:
            self.ledger_end_index = entry.index - 1
            self.write_pos = entry.pos
            self._put(entry)
        if self.ledger_begin_index == -1 or self.ledger_begin_index > entry.index:
            self.ledger_begin_index = entry.index
        self.committed_index = min(self.committed_index, self.ledger_end_index)

    def take_dirty(self) -> set[str]:
        """The files and directories written since the last call, for ``fsync_paths``."""
        dirty, self._dirty = self._dirty, set()
        return dirty

    def flush(self) -> None:
        """fsync everything written so far (DLedgerMmapFileStore#flush; Java runs it every
        ``flushFileInterval``, after the entries were acknowledged from the page cache)."""
        pos = self.write_pos
        fsync_paths(self.take_dirty())
        self.flushed_pos = pos

    def set_term(self, state: TermState) -> None:
        self.term = state
        write_term_file(self.path, state)

    def persist_checkpoint(self, committed_index: int | None = None) -> None:
        if committed_index is not None:
            self.committed_index = min(committed_index, self.ledger_end_index)
        write_checkpoint(self.path, Checkpoint(self.ledger_end_index, self.committed_index))
