"""Consume queues, index files and consumerOffset.json as rows (Spark-free).

Formats come from pyrmq.store (consume_queue, index, config): one definition each. Files are
read-only here: nothing is recovered, renamed or truncated (pyrmq.store's loaders would).
"""

from __future__ import annotations

import mmap
import os
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from pyrmq.store import config as cfg
from pyrmq.store import consume_queue as cq
from pyrmq.store import index as ix

_FILE_NAME = re.compile(r"^\d{20}$")
_INDEX_NAME = re.compile(r"^\d{17}$")
PRE_BLANK_SIZE = 0x7FFFFFFF  # ConsumeQueue#fillPreBlank filler entries
DEFAULT_HASH_SLOT_NUM = 5_000_000  # MessageStoreConfig.maxHashSlotNum
DEFAULT_INDEX_NUM = 5_000_000 * 4  # MessageStoreConfig.maxIndexNum
_INDEX_ENTRY = struct.Struct(">iqii")  # keyHash, phyOffset, timeDiff, prevIndex: ix.INDEX_ENTRY precompiled
assert _INDEX_ENTRY.size == ix.INDEX_ENTRY.sizeof() == ix.INDEX_SIZE


def _root_sub(path: str, sub: str) -> str:
    d = os.path.join(path, sub)
    return d if os.path.isdir(d) else path


# --- consume queues ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class QueueDir:
    topic: str
    queue_id: int
    path: str


def list_consume_queues(path: str) -> list[QueueDir]:
    """consumequeue/<topic>/<queueId>/ directories (path: store root or consumequeue/)."""
    root = _root_sub(path, "consumequeue")
    out = []
    if not os.path.isdir(root):
        return out
    for topic in sorted(os.listdir(root)):
        tdir = os.path.join(root, topic)
        if not os.path.isdir(tdir):
            continue
        for q in os.listdir(tdir):
            if q.lstrip("-").isdigit() and os.path.isdir(os.path.join(tdir, q)):
                out.append(QueueDir(topic, int(q), os.path.join(tdir, q)))
    out.sort(key=lambda d: (d.topic, d.queue_id))
    return out


def iter_consume_queue(qdir: QueueDir) -> Iterator[tuple[int, int, int, int, str]]:
    """(queue offset, commit-log offset, size, tags code, file) for each real entry; stops at the
    first empty (or torn) entry like ConsumeQueue#recover; pre-blank fillers are skipped."""
    files = sorted((int(n), os.path.join(qdir.path, n)) for n in os.listdir(qdir.path) if _FILE_NAME.match(n))
    unit = cq.CQ_STORE_UNIT_SIZE
    for base, fpath in files:
        with open(fpath, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < unit:
                continue
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            index = base // unit
            for i, (offset, sz, tags) in enumerate(struct.iter_unpack(">qiq", mm[: size - size % unit])):
                if offset < 0 or sz <= 0:
                    return
                if sz != PRE_BLANK_SIZE:
                    yield index + i, offset, sz, tags, fpath
        finally:
            mm.close()


# --- index files ---------------------------------------------------------------------------------
def list_index_files(path: str) -> list[str]:
    root = _root_sub(path, "index")
    if not os.path.isdir(root):
        return []
    return [os.path.join(root, n) for n in sorted(os.listdir(root)) if _INDEX_NAME.match(n)]


def index_layout(file_size: int, hash_slot_num: int | None, index_num: int | None) -> tuple[int, int]:
    """(slots, entries) of an index file: 40 + slots*4 + entries*20 bytes (IndexFile). The file
    does not record them; a missing one is derived from the file size and the other."""
    if hash_slot_num is None and index_num is None:
        hash_slot_num = DEFAULT_HASH_SLOT_NUM
    if index_num is None:
        index_num = (file_size - ix.INDEX_HEADER_SIZE - hash_slot_num * ix.HASH_SLOT_SIZE) // ix.INDEX_SIZE
    if hash_slot_num is None:
        hash_slot_num = (file_size - ix.INDEX_HEADER_SIZE - index_num * ix.INDEX_SIZE) // ix.HASH_SLOT_SIZE
    if ix.INDEX_HEADER_SIZE + hash_slot_num * ix.HASH_SLOT_SIZE + index_num * ix.INDEX_SIZE != file_size:
        raise ValueError(
            f"index file of {file_size} bytes does not fit maxHashSlotNum={hash_slot_num}, "
            f"maxIndexNum={index_num}; pass the broker's values as options"
        )
    return hash_slot_num, index_num


def iter_index_file(
    path: str, hash_slot_num: int | None = None, index_num: int | None = None
) -> Iterator[tuple[int, int, int, int, int, int, int, int, int]]:
    """(keyHash, phyOffset, timeDiff, store time ms, prevIndex, slot, entry number, file begin ms,
    file end ms) for entries 1..indexCount-1 (entry 0 is never used, IndexHeader starts at 1)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < ix.INDEX_HEADER_SIZE:
            return
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        slots, entries = index_layout(size, hash_slot_num, index_num)
        head = ix.INDEX_HEADER.parse(mm[: ix.INDEX_HEADER_SIZE])
        begin_ts, end_ts, count = head.begin_timestamp, head.end_timestamp, head.index_count
        count = min(max(count, 1), entries)
        base = ix.INDEX_HEADER_SIZE + slots * ix.HASH_SLOT_SIZE
        for n in range(1, count):
            h, phy, diff, prev = _INDEX_ENTRY.unpack_from(mm, base + n * ix.INDEX_SIZE)
            yield h, phy, diff, begin_ts + diff * 1000, prev, h % slots, n, begin_ts, end_ts
    finally:
        mm.close()


# --- consumerOffset.json -------------------------------------------------------------------------
def read_consumer_offsets(path: str) -> tuple[list[tuple[str, str, int, int]], str | None]:
    """([(group, topic, queueId, committed offset)], file used). Falls back to .bak when the main
    file is missing or empty (ConfigManager#load); never renames or rewrites anything."""
    root = path
    if os.path.isfile(path):
        candidates = [path, path + ".bak"]
    else:
        d = os.path.join(root, "config") if os.path.isdir(os.path.join(root, "config")) else root
        p = os.path.join(d, cfg.ConsumerOffsetSerializeWrapper.FILE_NAME)
        candidates = [p, p + ".bak"]
    for p in candidates:
        try:
            with open(p, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            continue
        if not data.strip():
            continue
        wrapper = cfg.decode_config(cfg.ConsumerOffsetSerializeWrapper, data)
        rows = []
        for key, table in wrapper.offset_table.items():
            parts = key.split("@")
            if len(parts) != 2:
                continue  # broadcast / LMQ keys
            topic, group = parts
            for qid, off in sorted(table.items()):
                rows.append((group, topic, int(qid), int(off)))
        return rows, p
    return [], None
