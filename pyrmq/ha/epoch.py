"""The epoch file: which master term wrote which range of the commit log. Java EpochFileCache.

Each entry is (epoch, start offset); an entry ends where the next one starts, the last one is
open (Long.MAX_VALUE). A new master appends (its epoch, its max offset); a slave appends the
master's epoch when a transfer frame carries a new one. Comparing two lists gives the last
offset both logs agree on (``find_consistent_point``), where a slave truncates before it
replicates.

The file (``<storePathRootDir>/epochFileCheckpoint``, or storePathEpochFile) is Java's
CheckpointFile: the entry count, the CRC32 (sign bit cleared, as UtilAll.crc32) of the entry
lines, then one ``epoch-startOffset`` line per entry, each line ending in "\\n"; written through
``<file>.tmp`` with the old one kept as ``<file>.bak`` (MixAll.string2File). Like Java, an empty
list is never written, and a reader falls back to the .bak when the file is unreadable.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import zlib
from dataclasses import dataclass

from pyrmq.common.files import write_file_atomically

log = logging.getLogger("pyrmq.ha")

#: Java EpochEntry's endOffset while the entry is the last one (Long.MAX_VALUE)
OPEN_END = (1 << 63) - 1


@dataclass(slots=True)
class EpochEntry:
    epoch: int
    start_offset: int
    end_offset: int = OPEN_END


def _crc32(data: bytes) -> int:
    return zlib.crc32(data) & 0x7FFFFFFF


def encode_checkpoint(entries: list[EpochEntry]) -> str:
    """The file text of ``entries`` (Java CheckpointFile#write with EpochEntrySerializer)."""
    lines = "".join(f"{e.epoch}-{e.start_offset}\n" for e in entries)
    return f"{len(entries)}\n{_crc32(lines.encode())}\n{lines}"


class EpochFileError(ValueError):
    """The file's count or CRC does not match its entries."""


def decode_checkpoint(text: str) -> list[EpochEntry]:
    """Entries of a checkpoint file's text; EpochFileError when count or CRC disagree (CRC 0 is
    not checked, as in Java). Lines that are not ``int-int`` are skipped but counted in the CRC."""
    rows = text.split("\n")
    if rows and rows[-1] == "":
        rows.pop()
    if len(rows) < 2:
        raise EpochFileError("epoch file shorter than its two header lines")
    try:
        expected, crc = int(rows[0]), int(rows[1])
    except ValueError as e:
        raise EpochFileError(f"bad epoch file header: {e}") from None
    entries: list[EpochEntry] = []
    for line in rows[2:]:
        parts = line.split("-")
        if len(parts) == 2:
            try:
                entries.append(EpochEntry(int(parts[0]), int(parts[1])))
            except ValueError:
                raise EpochFileError(f"bad epoch line {line!r}") from None
    if len(entries) != expected:
        raise EpochFileError(f"Expect {expected} entries, only found {len(entries)} entries")
    truth = _crc32("".join(r + "\n" for r in rows[2:]).encode())
    if crc != 0 and crc != truth:
        raise EpochFileError(f"Entries crc32 not match, file={crc}, truth={truth}")
    _link(entries)
    return entries


def _link(entries: list[EpochEntry]) -> None:
    for prev, nxt in itertools.pairwise(entries):
        prev.end_offset = nxt.start_offset


class EpochFileCache:
    """Entries ordered by epoch, persisted on every change when ``path`` is set."""

    def __init__(self, path: str | None = None, entries: list[EpochEntry] | None = None) -> None:
        self.path = path
        self._lock = threading.RLock()
        self._entries: list[EpochEntry] = []
        if entries:
            self._entries = sorted((EpochEntry(e.epoch, e.start_offset) for e in entries), key=lambda e: e.epoch)
            _link(self._entries)

    # --- file ----------------------------------------------------------------------------------
    def load(self) -> bool:
        """Read the file (or its .bak); a missing file is an empty cache. False when neither reads."""
        if self.path is None:
            return True
        for p in (self.path, self.path + ".bak"):
            if not os.path.exists(p):
                continue
            try:
                with open(p, encoding="utf-8") as f:
                    entries = decode_checkpoint(f.read())
            except (OSError, EpochFileError) as e:
                log.error("Error happen when init epoch entries from %s: %s", p, e)
                continue
            if entries:
                with self._lock:
                    self._entries = sorted(entries, key=lambda e: e.epoch)
                return True
        return not os.path.exists(self.path)

    def _flush(self) -> None:
        if self.path is None or not self._entries:
            return
        try:
            write_file_atomically(self.path, encode_checkpoint(self._entries))
        except OSError as e:
            log.error("Error happen when flush epochEntries to %s: %s", self.path, e)

    # --- queries -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> list[EpochEntry]:
        with self._lock:
            return [EpochEntry(e.epoch, e.start_offset, e.end_offset) for e in self._entries]

    def first_entry(self) -> EpochEntry | None:
        with self._lock:
            return EpochEntry(**_fields(self._entries[0])) if self._entries else None

    def last_entry(self) -> EpochEntry | None:
        with self._lock:
            return EpochEntry(**_fields(self._entries[-1])) if self._entries else None

    def last_epoch(self) -> int:
        e = self.last_entry()
        return e.epoch if e is not None else -1

    def get_entry(self, epoch: int) -> EpochEntry | None:
        with self._lock:
            for e in self._entries:
                if e.epoch == epoch:
                    return EpochEntry(**_fields(e))
        return None

    def next_entry(self, epoch: int) -> EpochEntry | None:
        """The first entry with a bigger epoch."""
        with self._lock:
            for e in self._entries:
                if e.epoch > epoch:
                    return EpochEntry(**_fields(e))
        return None

    def find_epoch_entry_by_offset(self, offset: int) -> EpochEntry | None:
        with self._lock:
            for e in self._entries:
                if e.start_offset <= offset < e.end_offset:
                    return EpochEntry(**_fields(e))
        return None

    def find_consistent_point(self, other: EpochFileCache) -> int:
        """The last offset this log and ``other`` agree on, or -1. Java findConsistentPoint: from
        the newest local epoch down, the first epoch both have with the same start offset; its
        end is the smaller of the two ends."""
        with self._lock:
            mine = list(self._entries)
        for local in reversed(mine):
            theirs = other.get_entry(local.epoch)
            if theirs is not None and theirs.start_offset == local.start_offset:
                return min(local.end_offset, theirs.end_offset)
        return -1

    # --- changes -------------------------------------------------------------------------------
    def append_entry(self, epoch: int, start_offset: int) -> bool:
        """False (nothing changes) unless both epoch and start offset grow. Java appendEntry."""
        with self._lock:
            if self._entries:
                last = self._entries[-1]
                if last.epoch >= epoch or last.start_offset >= start_offset:
                    log.error(
                        "The appending entry (%d, %d) is not bigger than the last one (%d, %d), append failed",
                        epoch,
                        start_offset,
                        last.epoch,
                        last.start_offset,
                    )
                    return False
                last.end_offset = start_offset
            self._entries.append(EpochEntry(epoch, start_offset))
            self._flush()
            return True

    def set_last_epoch_entry_end_offset(self, end_offset: int) -> None:
        with self._lock:
            if self._entries and self._entries[-1].start_offset <= end_offset:
                self._entries[-1].end_offset = end_offset

    def truncate_suffix_by_epoch(self, epoch: int) -> None:
        """Drop entries of ``epoch`` and later."""
        self._truncate_suffix(lambda e: e.epoch >= epoch)

    def truncate_suffix_by_offset(self, offset: int) -> None:
        """Drop entries that start at ``offset`` or later; the new last one is open again."""
        self._truncate_suffix(lambda e: e.start_offset >= offset)

    def _truncate_suffix(self, drop) -> None:  # type: ignore[no-untyped-def]
        with self._lock:
            self._entries = [e for e in self._entries if not drop(e)]
            if self._entries:
                self._entries[-1].end_offset = OPEN_END
            self._flush()

    def truncate_prefix_by_offset(self, offset: int) -> None:
        """Drop entries that end at or before ``offset`` (the files holding them were deleted)."""
        with self._lock:
            self._entries = [e for e in self._entries if e.end_offset > offset]
            self._flush()


def _fields(e: EpochEntry) -> dict[str, int]:
    return {"epoch": e.epoch, "start_offset": e.start_offset, "end_offset": e.end_offset}


__all__ = [
    "OPEN_END",
    "EpochEntry",
    "EpochFileCache",
    "EpochFileError",
    "decode_checkpoint",
    "encode_checkpoint",
]
