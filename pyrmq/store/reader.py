"""The one read-only reader of store directories, the Java broker's or pyrmq's.

`pyrmq store inspect|verify` (store/cli.py) and the Spark sources (spark/) read through it:
which files make up a log directory (names, lengths, gaps), commit-log records, consume-queue
entries, index files (geometry, header, slots, entries), the checkpoint and the config JSON
files. The byte formats are the writer modules' (message, consume_queue, index, checkpoint,
config): one definition each, none redeclared here.

Nothing is written: files are opened read-only and mapped, nothing is recovered, renamed or
truncated (the store's loaders would), so a reader can run next to a live broker, whose tail
may look partly written.
"""

from __future__ import annotations

import mmap
import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import TypeVar

from pyrmq.protocol.fastjson import FastJsonBody
from pyrmq.store import config as cfg
from pyrmq.store import message as m
from pyrmq.store.checkpoint import CHECKPOINT_FIELDS, CHECKPOINT_FILE_SIZE, CHECKPOINT_LAYOUT
from pyrmq.store.consume_queue import CQ_ENTRY_LAYOUT, CQ_STORE_UNIT_SIZE
from pyrmq.store.index import (
    HASH_SLOT_LAYOUT,
    HASH_SLOT_SIZE,
    INDEX_ENTRY_LAYOUT,
    INDEX_HEADER_LAYOUT,
    INDEX_HEADER_SIZE,
    INDEX_SIZE,
    hash_slot_position,
    index_entry_position,
    index_file_size,
)
from pyrmq.store.space import backed_prefix
from pyrmq.store.store_config import MessageStoreConfig

T = TypeVar("T", bound=FastJsonBody)

#: log file names: the offset of the first byte, 20 digits (mapped_file.offset_to_file_name)
LOG_FILE_NAME = re.compile(r"^\d{20}$")
#: index file names: the local creation time yyyyMMddHHmmssSSS (index.time_millis_to_file_name)
INDEX_FILE_NAME = re.compile(r"^\d{17}$")


def sub_dir(path: str, name: str) -> str:
    """`path/name` when it is a directory, else `path` (a store root or the sub-directory itself)."""
    d = os.path.join(path, name)
    return d if os.path.isdir(d) else path


def map_readonly(path: str) -> mmap.mmap | None:
    """The whole file mapped read-only; None for an empty file (mmap cannot map zero bytes)."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return None
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


@dataclass(frozen=True, slots=True)
class Finding:
    """Something wrong with a file. `problem`: corruption, or what the Java broker refuses to
    load; otherwise a warning (expected after a crash or on a live store)."""

    path: str
    offset: int | None
    message: str
    problem: bool


# --------------------------------------------------------------------------- log directories


@dataclass(frozen=True, slots=True)
class LogFile:
    """One fixed-size file of a log directory (commit log or one consume queue)."""

    path: str
    start: int  # offset of its first byte in the log: the file name
    size: int

    @property
    def name(self) -> str:
        return os.path.basename(self.path)


def list_log_files(directory: str, expected_size: int | None = None) -> tuple[list[LogFile], list[Finding]]:
    """The files of a log directory in name order (Java MappedFileQueue#doLoad), and what is wrong.

    Only 20-digit names of the log's file size (`expected_size`, else the first file's) belong to
    the log: Java refuses to load a directory with another name or length (5.x skips
    sub-directories; an empty last file is what 5.x deletes at start)."""
    found: list[Finding] = []
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return [], found
    candidates = []
    for name in names:
        p = os.path.join(directory, name)
        if os.path.isdir(p):
            found.append(
                Finding(p, None, "sub-directory in a log directory (5.x skips it, 4.9.x fails to load)", False)
            )
        elif not LOG_FILE_NAME.match(name):
            found.append(
                Finding(
                    p,
                    None,
                    "stray file: not a 20-digit offset name; the Java broker refuses to load this directory",
                    True,
                )
            )
        else:
            candidates.append(LogFile(p, int(name), os.path.getsize(p)))
    # a file just created by a live writer may not have its length yet: size from the first that has
    size = expected_size or next((c.size for c in candidates if c.size), 0)
    if not candidates or not size:
        return [], found
    files: list[LogFile] = []
    for i, f in enumerate(candidates):
        if f.size != size:
            if f.size == 0 and i == len(candidates) - 1:
                found.append(Finding(f.path, None, "empty last file (5.x deletes it at start)", False))
            else:
                found.append(
                    Finding(
                        f.path, None, f"length {f.size} != {size} (mapped file size); Java refuses to load it", True
                    )
                )
            continue
        if f.start % size:
            found.append(Finding(f.path, None, f"name {f.start} is not a multiple of the file size {size}", True))
        if i and f.start != candidates[i - 1].start + size:
            prev = candidates[i - 1].start
            found.append(Finding(f.path, None, f"gap: previous file starts at {prev}, expected {prev + size}", True))
        files.append(f)
    return files, found


class MappedLog:
    """The files of a log directory, each mapped read-only on first use. Close it (or use `with`)."""

    def __init__(self, files: list[LogFile]) -> None:
        self.files = files
        self.file_size = files[0].size if files else 0
        self._maps: dict[str, mmap.mmap] = {}
        self._readable: dict[str, int] = {}

    @property
    def min_offset(self) -> int:
        return self.files[0].start if self.files else 0

    def buffer(self, f: LogFile) -> mmap.mmap:
        mm = self._maps.get(f.path)
        if mm is None:
            mapped = map_readonly(f.path)
            if mapped is None:
                raise ValueError(f"{f.path} is empty")
            mm = self._maps[f.path] = mapped
        return mm

    def readable(self, f: LogFile) -> int:
        """Bytes of `f` before its first hole: what a scan for the end of the data may read (past
        it only zeros, and a mapped read of a hole allocates on tmpfs: SIGBUS on a full one)."""
        n = self._readable.get(f.path)
        if n is None:
            with open(f.path, "rb") as fh:
                n = self._readable[f.path] = backed_prefix(fh.fileno(), f.size)
        return n

    def file_at(self, offset: int) -> LogFile | None:
        """The file holding log offset `offset`."""
        if not self.files or self.file_size <= 0:
            return None
        i = (offset - self.files[0].start) // self.file_size
        if 0 <= i < len(self.files) and self.files[i].start <= offset < self.files[i].start + self.file_size:
            return self.files[i]
        for f in self.files:  # gaps: fall back to a search
            if f.start <= offset < f.start + self.file_size:
                return f
        return None

    def close(self) -> None:
        for mm in self._maps.values():
            mm.close()
        self._maps.clear()

    def __enter__(self) -> MappedLog:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def open_log(directory: str, expected_size: int | None = None) -> tuple[MappedLog, list[Finding]]:
    files, found = list_log_files(directory, expected_size)
    return MappedLog(files), found


# --------------------------------------------------------------------------- commit log records


class BodyCRCError(m.MessageDecodeError):
    """The record is well formed but its BODYCRC does not match the body: its TOTALSIZE can be
    trusted, so a scan can step over it."""


def read_record(
    buf: m.ReadableBuffer,
    pos: int,
    limit: int | None = None,
    *,
    check_crc: bool = True,
    read_body: bool = False,
    decode_properties: bool = True,
) -> m.StoredMessage:
    """The record at `pos`, which must end by `limit` (default: the buffer's end). BODYCRC is
    checked over the stored bytes without copying them. Raises BodyCRCError for a CRC mismatch,
    MessageDecodeError for anything else (blank, bad magic, lengths that disagree, truncation)."""
    end = len(buf) if limit is None else limit
    if pos + 8 > end:
        raise m.MessageDecodeError(f"truncated record header at {pos}")
    total, _magic = m.peek_total_size_and_magic(buf, pos)
    if pos + max(total, 8) > end:
        raise m.MessageDecodeError(f"total size {total} at {pos} runs past the data")
    msg = m.decode_message(buf, pos, read_body=read_body, check_crc=False, decode_properties=decode_properties)
    if check_crc:
        if msg.body is not None:
            crc = m.crc32(msg.body)
        else:
            body_pos = pos + m.body_position(msg.sys_flag)
            with memoryview(buf)[body_pos : body_pos + msg.body_length] as body:
                crc = zlib.crc32(body) & 0x7FFFFFFF
        if crc != msg.body_crc:
            raise BodyCRCError(f"body CRC mismatch at {pos}")
    return msg


def iter_file_records(
    buf: mmap.mmap, size: int, *, check_crc: bool, decode_properties: bool = True
) -> Iterator[tuple[int, m.StoredMessage | m.MessageDecodeError | None]]:
    """(position, record) for each record of a commit-log file from its start, as Java recovery
    walks it: a blank record ends the file; (pos, None) marks data ending in zeros elsewhere;
    (pos, error) is a bad record, after which the walk stops unless only its BODYCRC is wrong.
    A `size` short of the buffer (the data before a hole, MappedLog.readable) ends like zeros."""
    pos = 0
    while size - pos > 4:
        total, magic = m.peek_total_size_and_magic(buf, pos) if size - pos >= 8 else (0, 0)
        if magic == m.BLANK_MAGIC_CODE:
            return
        if total == 0 and magic == 0:
            yield pos, None
            return
        try:
            msg = read_record(buf, pos, size, check_crc=check_crc, decode_properties=decode_properties)
        except BodyCRCError as e:
            yield pos, e
            pos += total
            continue
        except m.MessageDecodeError as e:
            yield pos, e
            return
        yield pos, msg
        pos += total
    if size < len(buf):
        yield pos, None


class CommitLogReader(MappedLog):
    """A commit-log directory, read-only, with record lookup by commit-log offset."""

    def record_at(self, offset: int, *, read_body: bool = False) -> m.StoredMessage:
        """The record starting at `offset`; raises MessageDecodeError if there is none."""
        f = self.file_at(offset)
        if f is None:
            raise m.MessageDecodeError(f"no commit log file holds offset {offset}")
        msg = m.decode_message(self.buffer(f), offset - f.start, read_body=read_body)
        if msg.commit_log_offset != offset:
            raise m.MessageDecodeError(f"record there says PHYSICALOFFSET {msg.commit_log_offset}")
        return msg


def open_commit_log(directory: str) -> tuple[CommitLogReader, list[Finding]]:
    files, found = list_log_files(directory)
    return CommitLogReader(files), found


# --------------------------------------------------------------------------- consume queues


@dataclass(frozen=True, slots=True)
class QueueDir:
    topic: str
    queue_id: int
    path: str


def list_queue_dirs(consume_queue_dir: str) -> tuple[list[QueueDir], list[Finding]]:
    """consumequeue/<topic>/<queueId>/ directories by topic and queue id; entries Java skips (not
    a directory, a queue name that is not an integer) are findings."""
    found: list[Finding] = []
    try:
        topics = sorted(os.listdir(consume_queue_dir))
    except FileNotFoundError:
        return [], found
    out: list[QueueDir] = []
    for topic in topics:
        tdir = os.path.join(consume_queue_dir, topic)
        if not os.path.isdir(tdir):
            found.append(Finding(tdir, None, "not a topic directory; Java skips it", False))
            continue
        for q in sorted(os.listdir(tdir)):
            qdir = os.path.join(tdir, q)
            if q.lstrip("-").isdigit() and os.path.isdir(qdir):
                out.append(QueueDir(topic, int(q), qdir))
            else:
                found.append(
                    Finding(qdir, None, "not a queue directory (name is not an integer); Java skips it", False)
                )
    out.sort(key=lambda d: (d.topic, d.queue_id))
    return out, found


QueueEntry = tuple[LogFile, int, int, int, int, int]
"""(file, position in it, queue offset, commit-log offset, size, tags code)"""


def iter_queue_entries(log: MappedLog) -> Iterator[QueueEntry]:
    """Entries of one consume queue until the first empty one (Java ConsumeQueue#recover: offset
    >= 0 and size > 0), or a gap between files. Pre-blank fillers (size
    consume_queue.PRE_BLANK_SIZE) are included: they hold queue offsets below the min offset."""
    unit = CQ_STORE_UNIT_SIZE
    files = log.files
    for i, f in enumerate(files):
        start_index = f.start // unit
        readable = log.readable(f)
        with memoryview(log.buffer(f))[: readable - readable % unit] as view:
            for n, (phy, size, tags) in enumerate(CQ_ENTRY_LAYOUT.iter_unpack(view)):
                if phy < 0 or size <= 0:
                    return
                yield f, n * unit, start_index + n, phy, size, tags
        if i + 1 < len(files) and files[i + 1].start != f.start + f.size:
            return


# --------------------------------------------------------------------------- index files


@dataclass(frozen=True, slots=True)
class IndexGeometry:
    """Slot and entry counts of an index file (Java maxHashSlotNum, maxIndexNum)."""

    hash_slot_num: int
    index_num: int

    @property
    def file_size(self) -> int:
        return index_file_size(self.hash_slot_num, self.index_num)


_JAVA_DEFAULT_CONFIG = MessageStoreConfig()
#: Java MessageStoreConfig defaults: 5,000,000 slots and 4 entries per slot
JAVA_DEFAULT_INDEX_GEOMETRY = IndexGeometry(_JAVA_DEFAULT_CONFIG.max_hash_slot_num, _JAVA_DEFAULT_CONFIG.max_index_num)


def index_geometry(
    file_size: int, hash_slot_num: int | None = None, index_num: int | None = None
) -> IndexGeometry | None:
    """The geometry of an index file of `file_size` bytes, None when it cannot be told.

    The file does not record it: Java's IndexFile maps the broker's maxHashSlotNum/maxIndexNum
    (header + slots x 4 + entries x 20 bytes) whatever the file's length. So given values are
    checked against the size; one given value and the size give the other; with none given,
    Java's defaults if the size is theirs, else Java's default ratio of 4 entries per slot."""
    if hash_slot_num and index_num:
        g = IndexGeometry(hash_slot_num, index_num)
        return g if g.file_size == file_size else None
    if hash_slot_num:
        rest = file_size - index_file_size(hash_slot_num, 0)
        return IndexGeometry(hash_slot_num, rest // INDEX_SIZE) if rest >= 0 and rest % INDEX_SIZE == 0 else None
    if index_num:
        rest = file_size - index_file_size(0, index_num)
        return IndexGeometry(rest // HASH_SLOT_SIZE, index_num) if rest >= 0 and rest % HASH_SLOT_SIZE == 0 else None
    java = JAVA_DEFAULT_INDEX_GEOMETRY
    if file_size == java.file_size:
        return java
    ratio = java.index_num // java.hash_slot_num
    per_slot = index_file_size(1, ratio) - index_file_size(0, 0)
    rest = file_size - index_file_size(0, 0)
    if rest > 0 and rest % per_slot == 0:
        return IndexGeometry(rest // per_slot, ratio * (rest // per_slot))
    return None


def list_index_files(index_dir: str) -> tuple[list[str], list[Finding]]:
    """Index files in name (= creation time) order, as Java IndexService#load opens them."""
    found: list[Finding] = []
    try:
        names = sorted(os.listdir(index_dir))
    except FileNotFoundError:
        return [], found
    out = []
    for n in names:
        p = os.path.join(index_dir, n)
        if INDEX_FILE_NAME.match(n) and os.path.isfile(p):
            out.append(p)
        else:
            found.append(Finding(p, None, "not an index file name (17-digit local time)", False))
    return out, found


@dataclass(frozen=True, slots=True)
class IndexHeader:
    """Java IndexHeader: the first INDEX_HEADER_SIZE bytes of an index file."""

    begin_timestamp: int
    end_timestamp: int
    begin_phy_offset: int
    end_phy_offset: int
    hash_slot_count: int
    index_count: int  # next entry number; entry 0 is never used

    @property
    def entries(self) -> int:
        """Entries in use: 1 .. indexCount-1 (Java IndexHeader#load reads indexCount <= 0 as 1)."""
        return max(self.index_count, 1) - 1


def read_index_header(buf: mmap.mmap | bytes) -> IndexHeader | None:
    """The header, None when the file is shorter than one."""
    if len(buf) < INDEX_HEADER_SIZE:
        return None
    return IndexHeader(*INDEX_HEADER_LAYOUT.unpack_from(buf, 0))


def iter_index_slots(
    buf: mmap.mmap, geometry: IndexGeometry, ranges: list[tuple[int, int]] | None = None
) -> Iterator[tuple[int, int, int]]:
    """(slot, position, head entry number) of every used (non-zero) hash slot; with `ranges` (the
    file's data, space.data_ranges) only slots there are read: holes hold none."""
    start = hash_slot_position(0)
    end = hash_slot_position(geometry.hash_slot_num)
    for lo, hi in ranges if ranges is not None else [(start, end)]:
        first = max(0, -(-(lo - start) // HASH_SLOT_SIZE))
        last = min(geometry.hash_slot_num, (hi - start) // HASH_SLOT_SIZE)
        if last <= first:
            continue
        with memoryview(buf)[hash_slot_position(first) : hash_slot_position(last)] as view:
            for i, (head,) in enumerate(HASH_SLOT_LAYOUT.iter_unpack(view)):
                if head:
                    yield first + i, hash_slot_position(first + i), head


IndexEntry = tuple[int, int, int, int, int, int]
"""(entry number, position, keyHash, phyOffset, timeDiff in s from beginTimestamp, prevIndex)"""


def iter_index_entries(buf: mmap.mmap, geometry: IndexGeometry, header: IndexHeader) -> Iterator[IndexEntry]:
    """Entries 1 .. indexCount-1, never past the file's maxIndexNum."""
    count = min(header.entries + 1, geometry.index_num)
    for n in range(1, count):
        pos = index_entry_position(geometry.hash_slot_num, n)
        yield (n, pos, *INDEX_ENTRY_LAYOUT.unpack_from(buf, pos))


# --------------------------------------------------------------------------- checkpoint and config


def read_checkpoint(path: str) -> dict[str, int] | None:
    """The checkpoint's fields by their Java names; None without a checkpoint file. A short file
    reads as zeros past its end (fields added by later versions)."""
    try:
        with open(path, "rb") as f:
            data = f.read(CHECKPOINT_FILE_SIZE)
    except FileNotFoundError:
        return None
    values = CHECKPOINT_LAYOUT.unpack_from(data.ljust(CHECKPOINT_LAYOUT.size, b"\0"), 0)
    return dict(zip(CHECKPOINT_FIELDS, values, strict=True))


def read_config(path: str, cls: type[T]) -> tuple[T, str] | None:
    """A config JSON file as the broker would load it (the main file, or its .bak when the main
    file is missing, empty or unreadable), with the path used; None when neither has content.
    Raises config.ConfigFileError when content exists but none parses. Unlike the broker's load,
    an unreadable main file is left where it is."""
    return cfg.read_config_text(path, lambda text: cfg.decode_config(cls, text), rename_corrupt=False)
