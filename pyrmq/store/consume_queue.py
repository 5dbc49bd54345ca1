"""Per topic/queue index into the commit log. Java: store.ConsumeQueue (spec store-format §3).

    entry (20 bytes, big-endian)
    0   commit-log offset   long   PHYSICALOFFSET of the record
    8   size                int    TOTALSIZE of the record
    12  tags code           long   String.hashCode of TAGS, or the deliver time (schedule topic)

A queue offset is an entry number, not a byte position. Only dispatch writes; the max offset moves
after the whole entry is in place. Entries with offset >= 0 and size > 0 are real; a zero entry ends
the data. Pre-blank fillers (offset 0, size 0x7FFFFFFF) sit below the min offset.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Callable, Iterator

import construct as cs

from pyrmq.store.mapped_file import MappedFile, MappedFileQueue, SyncFn
from pyrmq.store.message import ReadableBuffer

log = logging.getLogger(__name__)

CQ_STORE_UNIT_SIZE = 20
CQ_ENTRY_LAYOUT = struct.Struct(
    ">"
    "q"  # commit-log offset
    "i"  # size
    "q"  # tags code
)
CONSUME_QUEUE_ENTRY = cs.Struct("commit_log_offset" / cs.Int64sb, "size" / cs.Int32sb, "tags_code" / cs.Int64sb)
PRE_BLANK_SIZE = 0x7FFFFFFF  # size field of a filler entry (ConsumeQueue#fillPreBlank)
PRE_BLANK_ENTRY = CQ_ENTRY_LAYOUT.pack(0, PRE_BLANK_SIZE, 0)


def encode_entry(offset: int, size: int, tags_code: int) -> bytes:
    return CQ_ENTRY_LAYOUT.pack(offset, size, tags_code)


def decode_entry(buf: ReadableBuffer, pos: int = 0) -> tuple[int, int, int]:
    offset, size, tags_code = CQ_ENTRY_LAYOUT.unpack_from(buf, pos)
    return int(offset), int(size), int(tags_code)


class ConsumeQueue:
    """Per topic/queue index into the commit log: 20-byte big-endian entries (commitlog offset,
    size, tags code). Java: store.ConsumeQueue."""

    def __init__(
        self, topic: str, queue_id: int, store_path: str, mapped_file_size: int, sync: SyncFn | None = None
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.mapped_file_size = mapped_file_size
        self.queue_dir = os.path.join(store_path, topic, str(queue_id))
        self.mapped_file_queue = MappedFileQueue(
            self.queue_dir, mapped_file_size, sync, random_access=True, keep_fds=False
        )
        self.max_physic_offset = -1  # end (offset + size) of the last entry
        self.min_logic_offset = 0  # bytes
        self.last_store_timestamp = 0

    # --- load / recover ----------------------------------------------------------------------------
    def load(self) -> bool:
        return self.mapped_file_queue.load()

    def recover(self) -> None:
        """Scan from the third-last file to the last valid entry (offset >= 0 and size > 0).
        Java ConsumeQueue#recover."""
        files = self.mapped_file_queue.mapped_files
        if not files:
            return
        index = max(0, len(files) - 3)
        size = self.mapped_file_size
        end = files[index].file_from_offset
        while index < len(files):
            mf = files[index]
            pos = 0
            readable = min(size, mf.reserved)  # past it: holes, never written (space.backed_prefix)
            for offset, sz, _tags in CQ_ENTRY_LAYOUT.iter_unpack(mf.mm[: readable - readable % CQ_STORE_UNIT_SIZE]):
                if offset >= 0 and sz > 0:
                    pos += CQ_STORE_UNIT_SIZE
                    if sz != PRE_BLANK_SIZE:
                        self.max_physic_offset = offset + sz
                else:
                    break
            end = mf.file_from_offset + pos
            if pos < size:
                break
            index += 1
        q = self.mapped_file_queue
        q.flushed_where = q.committed_where = end
        q.truncate_dirty_files(end)
        last = q.get_last_mapped_file()
        if last is not None and end >= last.file_from_offset + last.file_size:
            last.set_positions(last.file_size)

    # --- write (dispatch) --------------------------------------------------------------------------
    def put_message_position_info(self, offset: int, size: int, tags_code: int, cq_offset: int) -> bool:
        """Write the entry for queue offset `cq_offset`. Idempotent: entries already present (by
        commit-log offset or by position) are skipped, so a write that raised DiskFullError (or
        any OSError) can be retried. Java ConsumeQueue#putMessagePositionInfo."""
        if offset + size <= self.max_physic_offset:
            return True  # build consume queue repeatedly
        expect = cq_offset * CQ_STORE_UNIT_SIZE
        q = self.mapped_file_queue
        mf = q.get_last_mapped_file(expect, need_create=True)
        assert mf is not None
        if mf.first_create_in_queue and cq_offset != 0 and mf.wrote_position == 0:
            self.min_logic_offset = expect
            q.flushed_where = q.committed_where = expect
            self._fill_pre_blank(mf, expect)
        cur = mf.file_from_offset + mf.wrote_position
        if cq_offset != 0:
            if expect < cur:
                log.warning(
                    "%s-%d: build consume queue repeatedly, expect %d < current %d",
                    self.topic,
                    self.queue_id,
                    expect,
                    cur,
                )
                return True
            if expect != cur:
                log.warning(
                    "%s-%d: logic queue order maybe wrong, expect %d, current %d",
                    self.topic,
                    self.queue_id,
                    expect,
                    cur,
                )
                if expect > cur:
                    # gap (should not happen): keep entry numbers right by padding with fillers
                    while cur < expect:
                        mf = q.get_last_mapped_file(cur, need_create=True)
                        assert mf is not None
                        mf.append_message(PRE_BLANK_ENTRY)
                        cur += CQ_STORE_UNIT_SIZE
                    mf = q.get_last_mapped_file(expect, need_create=True)
                    assert mf is not None
        ok = mf.append_message(CQ_ENTRY_LAYOUT.pack(offset, size, tags_code))  # DiskFullError: retried
        self.max_physic_offset = offset + size
        return ok

    def _fill_pre_blank(self, mf: MappedFile, until_where: int) -> None:
        n = (until_where % self.mapped_file_size) // CQ_STORE_UNIT_SIZE
        if n:
            mf.append_message(PRE_BLANK_ENTRY * n, 0)

    # --- read ---------------------------------------------------------------------------------------
    def get_min_offset_in_queue(self) -> int:
        return self.min_logic_offset // CQ_STORE_UNIT_SIZE

    def get_max_offset_in_queue(self) -> int:
        return self.mapped_file_queue.get_max_offset() // CQ_STORE_UNIT_SIZE

    def get_message_total_in_queue(self) -> int:
        return self.get_max_offset_in_queue() - self.get_min_offset_in_queue()

    def get(self, index: int) -> tuple[int, int, int] | None:
        """(commit-log offset, size, tags code) of entry `index`, or None."""
        pos = index * CQ_STORE_UNIT_SIZE
        if index < 0 or pos < self.min_logic_offset:
            return None
        mf = self.mapped_file_queue.find_mapped_file_by_offset(pos)
        if mf is None:
            return None
        rel = pos % self.mapped_file_size
        if rel + CQ_STORE_UNIT_SIZE > mf.get_read_position():
            return None
        return CQ_ENTRY_LAYOUT.unpack_from(mf.mm, rel)

    def iterate_from(self, start_index: int, max_count: int | None = None) -> Iterator[tuple[int, int, int, int]]:
        """(queue offset, commit-log offset, size, tags code) from start_index to the end."""
        index = start_index
        n = 0
        while max_count is None or n < max_count:
            e = self.get(index)
            if e is None:
                return
            yield (index, *e)
            index += 1
            n += 1

    def get_last_entry(self) -> tuple[int, int, int] | None:
        """(commit-log offset, size, tags code) of the last entry, None when empty."""
        mx = self.get_max_offset_in_queue()
        if mx <= self.get_min_offset_in_queue():
            return None
        return self.get(mx - 1)

    def get_last_offset(self) -> int:
        """Commit-log offset of the last entry, -1 when empty."""
        mx = self.get_max_offset_in_queue()
        if mx <= self.get_min_offset_in_queue():
            return -1
        e = self.get(mx - 1)
        return -1 if e is None else e[0]

    def get_offset_in_queue_by_time(
        self, timestamp: int, pickup: Callable[[int, int], int], min_phy_offset: int
    ) -> int:
        """First queue offset whose record was stored at or after `timestamp` (binary search over the
        entries, store times read from the commit log), else the nearest. Java
        ConsumeQueue#getOffsetInQueueByTime (BoundaryType.LOWER)."""
        lo, hi = self.get_min_offset_in_queue(), self.get_max_offset_in_queue() - 1
        # skip entries whose record was already deleted from the commit log
        while lo <= hi:
            e = self.get(lo)
            if e is not None and e[0] >= min_phy_offset and e[1] != PRE_BLANK_SIZE:
                break
            lo += 1
        if lo > hi:
            return self.get_max_offset_in_queue() if hi >= 0 else 0
        first_ok = lo
        result = -1
        while lo <= hi:
            mid = (lo + hi) // 2
            e = self.get(mid)
            ts = pickup(e[0], e[1]) if e else -1
            if ts < 0:
                return 0
            if ts >= timestamp:
                result = mid
                hi = mid - 1
            else:
                lo = mid + 1
        if result == -1:
            return self.get_max_offset_in_queue() if lo > first_ok else first_ok
        return result

    # --- maintenance --------------------------------------------------------------------------------
    def truncate_dirty_logic_files(self, phy_offset: int) -> None:
        """Drop entries pointing at or beyond `phy_offset`; files left empty are deleted. Scans back
        from the end (entries are ordered by commit-log offset). Java ConsumeQueue#truncateDirtyLogicFiles."""
        q = self.mapped_file_queue
        while q.mapped_files:
            mf = q.mapped_files[-1]
            read = mf.get_read_position()
            pos = read
            while pos >= CQ_STORE_UNIT_SIZE:
                off, sz, _ = CQ_ENTRY_LAYOUT.unpack_from(mf.mm, pos - CQ_STORE_UNIT_SIZE)
                if sz > 0 and sz != PRE_BLANK_SIZE and off >= phy_offset:
                    pos -= CQ_STORE_UNIT_SIZE
                else:
                    break
            if pos == 0:
                q.delete_last_mapped_file()
                continue
            if pos < read:
                end = mf.file_from_offset + pos
                q.truncate_dirty_files(end)
                q.flushed_where = min(q.flushed_where, end)
                q.committed_where = min(q.committed_where, end)
            break
        self.max_physic_offset = self._scan_back_max_physic()

    def _scan_back_max_physic(self) -> int:
        mx = self.get_max_offset_in_queue()
        lo = self.mapped_file_queue.get_min_offset() // CQ_STORE_UNIT_SIZE
        for i in range(mx - 1, max(lo, mx - 2) - 1, -1):
            e = self.get(i)
            if e and e[1] > 0 and e[1] != PRE_BLANK_SIZE:
                return e[0] + e[1]
        return -1

    def correct_min_offset(self, phy_min_offset: int) -> None:
        """Min offset = first entry whose record is still in the commit log. Java correctMinOffset."""
        q = self.mapped_file_queue
        if not q.mapped_files:
            self.min_logic_offset = 0
            return
        start = q.get_min_offset()
        end = q.get_max_offset()
        # binary search by entry (entries are sorted by commit-log offset, fillers sort first)
        lo, hi = start // CQ_STORE_UNIT_SIZE, end // CQ_STORE_UNIT_SIZE
        self.min_logic_offset = start
        while lo < hi:
            mid = (lo + hi) // 2
            mf = q.find_mapped_file_by_offset(mid * CQ_STORE_UNIT_SIZE)
            if mf is None:
                break
            off, sz, _ = CQ_ENTRY_LAYOUT.unpack_from(mf.mm, (mid * CQ_STORE_UNIT_SIZE) % self.mapped_file_size)
            if sz == PRE_BLANK_SIZE or off < phy_min_offset:
                lo = mid + 1
            else:
                hi = mid
        self.min_logic_offset = lo * CQ_STORE_UNIT_SIZE

    def flush(self, flush_least_pages: int = 0) -> bool:
        return self.mapped_file_queue.flush(flush_least_pages)

    def delete_expired_file(self, min_commit_log_offset: int) -> int:
        """Delete leading files whose last entry points below the commit log's min offset."""

        def last_entry(mf: MappedFile) -> int:
            pos = mf.get_read_position() - CQ_STORE_UNIT_SIZE
            if pos < 0:
                return -1
            return decode_entry(mf.mm, pos)[0]

        n = self.mapped_file_queue.delete_expired_file_by_offset(min_commit_log_offset, CQ_STORE_UNIT_SIZE, last_entry)
        self.correct_min_offset(min_commit_log_offset)
        return n

    def destroy(self) -> None:
        self.mapped_file_queue.destroy()
        self.max_physic_offset = -1
        self.min_logic_offset = 0

    def shutdown(self) -> None:
        self.mapped_file_queue.shutdown()
