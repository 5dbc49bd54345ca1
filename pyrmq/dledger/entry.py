"""The DLedger entry and its index item, as io.openmessaging.storage:dledger 0.3.2 lays them out.

Java: ``entry.DLedgerEntry``, ``entry.DLedgerEntryCoder``, ``store.file.DLedgerMmapFileStore``
(``INDEX_UNIT_SIZE``, ``CURRENT_MAGIC``) and ``store.file.MmapFileList`` (the blank filler).
The same bytes are the data file record and what a push carries (as JSON, see protocol.py).

Entry, big-endian, ``BODY_OFFSET + len(body)`` bytes:

========  ====  ==========================================================
offset    size  field
========  ====  ==========================================================
0         4     magic (1; -1 is the blank that fills the end of a data file)
4         4     size, the whole entry
8         8     index (0, 1, 2, ... with no gap)
16        8     term of the leader that appended it
24        8     pos, the entry's own offset in the data files (POS_OFFSET)
32        4     channel (reserved, 0)
36        4     chain crc (not computed by 0.3.2: 0)
40        4     body crc (not computed by 0.3.2: 0)
44        4     body size (HEADER_SIZE ends here)
48        n     body (BODY_OFFSET)
========  ====  ==========================================================

Index item, 32 bytes, item ``i`` at byte ``32 * i`` of the index files: magic (4), pos (8),
size (4), index (8), term (8).

A blank (``MmapFileList#preAppend``) is magic -1 and the remaining length of the file, written
when an entry plus ``MIN_BLANK_LEN`` no longer fits; the rest of the file is zeros.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass

__all__ = [
    "BLANK_MAGIC_CODE",
    "BODY_OFFSET",
    "CURRENT_MAGIC",
    "ENTRY_HEADER",
    "HEADER_SIZE",
    "INDEX_ITEM",
    "INDEX_UNIT_SIZE",
    "MIN_BLANK_LEN",
    "POS_OFFSET",
    "DLedgerEntry",
    "EntryFormatError",
    "IndexItem",
    "decode_entry",
    "decode_index_item",
    "encode_blank",
    "encode_entry",
    "encode_index_item",
]

#: DLedgerEntryCoder#encode, one field per line
ENTRY_HEADER = struct.Struct(
    ">"
    "i"  # magic
    "i"  # size
    "q"  # index
    "q"  # term
    "q"  # pos
    "i"  # channel
    "i"  # chain crc
    "i"  # body crc
    "i"  # body size
)
#: DLedgerEntry.POS_OFFSET (magic, size, index, term)
POS_OFFSET = struct.calcsize(">iiqq")
#: DLedgerEntry.HEADER_SIZE, up to the body size field; Java's recovery checks ``size > HEADER_SIZE``
HEADER_SIZE = struct.calcsize(">iiqqqiii")
#: DLedgerEntry.BODY_OFFSET
BODY_OFFSET = ENTRY_HEADER.size

#: DLedgerEntryCoder#encodeIndex, one field per line
INDEX_ITEM = struct.Struct(
    ">"
    "i"  # magic
    "q"  # pos
    "i"  # size
    "q"  # index
    "q"  # term
)
#: DLedgerMmapFileStore.INDEX_UNIT_SIZE
INDEX_UNIT_SIZE = INDEX_ITEM.size

#: DLedgerMmapFileStore.MAGIC_1 == CURRENT_MAGIC
CURRENT_MAGIC = 1
#: MmapFileList.BLANK_MAGIC_CODE
BLANK_MAGIC_CODE = -1
#: MmapFileList.MIN_BLANK_LEN: an entry is only written where this much room is left after it
MIN_BLANK_LEN = 8

assert (POS_OFFSET, HEADER_SIZE, BODY_OFFSET, INDEX_UNIT_SIZE) == (24, 44, 48, 32)


class EntryFormatError(ValueError):
    """Bytes that are not a DLedger entry or index item (short, or fields that disagree)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DLedgerEntry:
    """One log entry. Java: ``entry.DLedgerEntry``; ``size`` is derived, as ``computeSizeInBytes``."""

    index: int
    term: int
    body: bytes
    pos: int = 0
    magic: int = CURRENT_MAGIC
    channel: int = 0
    chain_crc: int = 0
    body_crc: int = 0

    @property
    def size(self) -> int:
        return BODY_OFFSET + len(self.body)


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexItem:
    """One 32-byte index file item: where entry ``index`` lies in the data files."""

    index: int
    term: int
    pos: int
    size: int
    magic: int = CURRENT_MAGIC


def encode_entry(entry: DLedgerEntry) -> bytes:
    """The entry's bytes, exactly as DLedgerEntryCoder#encode writes them."""
    head = ENTRY_HEADER.pack(
        entry.magic,
        entry.size,
        entry.index,
        entry.term,
        entry.pos,
        entry.channel,
        entry.chain_crc,
        entry.body_crc,
        len(entry.body),
    )
    return head + entry.body


def decode_entry(data: bytes | bytearray | memoryview | mmap.mmap, offset: int = 0) -> DLedgerEntry:
    """The entry at ``offset``. Raises EntryFormatError when the bytes are short, the size is not
    ``BODY_OFFSET + body size`` or the magic is not CURRENT_MAGIC (a blank is not an entry);
    anything else is a bug."""
    if len(data) - offset < BODY_OFFSET:
        raise EntryFormatError(f"entry at {offset}: {len(data) - offset} bytes, a header needs {BODY_OFFSET}")
    magic, size, index, term, pos, channel, chain_crc, body_crc, body_size = ENTRY_HEADER.unpack_from(data, offset)
    if magic != CURRENT_MAGIC:
        raise EntryFormatError(f"entry at {offset}: magic {magic}")
    if body_size < 0 or size != BODY_OFFSET + body_size:
        raise EntryFormatError(f"entry at {offset}: size {size} != {BODY_OFFSET} + body size {body_size}")
    end = offset + size
    if end > len(data):
        raise EntryFormatError(f"entry at {offset}: size {size} runs past the end ({len(data)})")
    return DLedgerEntry(
        magic=magic,
        index=index,
        term=term,
        pos=pos,
        channel=channel,
        chain_crc=chain_crc,
        body_crc=body_crc,
        body=bytes(data[offset + BODY_OFFSET : end]),
    )


def encode_index_item(item: IndexItem) -> bytes:
    return INDEX_ITEM.pack(item.magic, item.pos, item.size, item.index, item.term)


def decode_index_item(data: bytes | bytearray | memoryview, offset: int = 0) -> IndexItem:
    """The index item at ``offset``. Raises EntryFormatError when short; an all-zero item (never
    written) decodes with magic 0, which the caller checks."""
    if len(data) - offset < INDEX_UNIT_SIZE:
        raise EntryFormatError(f"index item at {offset}: {len(data) - offset} bytes, needs {INDEX_UNIT_SIZE}")
    magic, pos, size, index, term = INDEX_ITEM.unpack_from(data, offset)
    return IndexItem(magic=magic, pos=pos, size=size, index=index, term=term)


def encode_blank(length: int) -> bytes:
    """The filler at the end of a data file: magic -1, the length left, then zeros."""
    if length < MIN_BLANK_LEN:
        raise ValueError(f"a blank needs {MIN_BLANK_LEN} bytes, not {length}")
    return struct.pack(">ii", BLANK_MAGIC_CODE, length) + bytes(length - MIN_BLANK_LEN)
