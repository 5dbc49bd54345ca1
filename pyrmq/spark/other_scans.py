"""Consume queues, index files and consumerOffset.json as rows (Spark-free).

Reading is pyrmq.store.reader's, the reader `pyrmq store inspect|verify` uses too (same file
lists, same entries, same index geometry); this module only shapes rows for the sources.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from pyrmq.store import config as cfg
from pyrmq.store import reader
from pyrmq.store.consume_queue import PRE_BLANK_SIZE
from pyrmq.store.reader import QueueDir

__all__ = ["QueueDir", "iter_consume_queue", "iter_index_file", "list_consume_queues", "list_index_files"]


# --- consume queues ------------------------------------------------------------------------------
def list_consume_queues(path: str) -> list[QueueDir]:
    """consumequeue/<topic>/<queueId>/ directories (path: store root or consumequeue/)."""
    return reader.list_queue_dirs(reader.sub_dir(path, "consumequeue"))[0]


def iter_consume_queue(qdir: QueueDir) -> Iterator[tuple[int, int, int, int, str]]:
    """(queue offset, commit-log offset, size, tags code, file) for each real entry, up to the
    first empty (or torn) entry like ConsumeQueue#recover; pre-blank fillers are skipped."""
    log, _ = reader.open_log(qdir.path)
    with log:
        for f, _pos, queue_offset, phy, size, tags in reader.iter_queue_entries(log):
            if size != PRE_BLANK_SIZE:
                yield queue_offset, phy, size, tags, f.path


# --- index files ---------------------------------------------------------------------------------
def list_index_files(path: str) -> list[str]:
    return reader.list_index_files(reader.sub_dir(path, "index"))[0]


def iter_index_file(
    path: str, hash_slot_num: int | None = None, index_num: int | None = None
) -> Iterator[tuple[int, int, int, int, int, int, int, int, int]]:
    """(keyHash, phyOffset, timeDiff, store time ms, prevIndex, slot, entry number, file begin ms,
    file end ms) for entries 1..indexCount-1 (entry 0 is never used, IndexHeader starts at 1).
    The geometry is reader.index_geometry's; ValueError when it cannot be told."""
    size = os.path.getsize(path)
    geometry = reader.index_geometry(size, hash_slot_num, index_num)
    if geometry is None:
        raise ValueError(
            f"index file {path} of {size} bytes does not fit maxHashSlotNum={hash_slot_num}, "
            f"maxIndexNum={index_num}; pass the broker's values as options"
        )
    mm = reader.map_readonly(path)
    if mm is None:
        return
    try:
        header = reader.read_index_header(mm)
        if header is None:
            return
        begin, end, slots = header.begin_timestamp, header.end_timestamp, geometry.hash_slot_num
        for n, _pos, h, phy, diff, prev in reader.iter_index_entries(mm, geometry, header):
            yield h, phy, diff, begin + diff * 1000, prev, h % slots, n, begin, end
    finally:
        mm.close()


# --- consumerOffset.json -------------------------------------------------------------------------
def read_consumer_offsets(path: str) -> tuple[list[tuple[str, str, int, int]], str | None]:
    """([(group, topic, queueId, committed offset)], file used): the store's (or the given)
    consumerOffset.json as the broker loads it (its .bak when the file is missing, empty or
    unreadable); nothing is renamed or rewritten."""
    if os.path.isfile(path):
        p = path
    else:
        d = os.path.join(path, "config") if os.path.isdir(os.path.join(path, "config")) else path
        p = os.path.join(d, cfg.ConsumerOffsetSerializeWrapper.FILE_NAME)
    got = reader.read_config(p, cfg.ConsumerOffsetSerializeWrapper)
    if got is None:
        return [], None
    wrapper, used = got
    rows = []
    for key, table in wrapper.offset_table.items():
        parts = key.split("@")
        if len(parts) != 2:
            continue  # broadcast / LMQ keys
        topic, group = parts
        for qid, off in sorted(table.items()):
            rows.append((group, topic, int(qid), int(off)))
    return rows, used
