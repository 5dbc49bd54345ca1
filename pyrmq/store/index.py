"""Message index by key: hash slots + chained entries. Java: store.index.IndexFile, IndexHeader,
IndexService (spec store-format §4).

    header (40 bytes)                slots (slotNum x int)       entries (indexNum x 20 bytes)
    0  beginTimestamp  long          newest entry number per     0  keyHash    int (>= 0)
    8  endTimestamp    long          hash slot, 0 = empty        4  phyOffset  long
    16 beginPhyOffset  long                                      12 timeDiff   int (seconds from begin)
    24 endPhyOffset    long                                      16 prevIndex  int (0 = end of chain)
    32 hashSlotCount   int
    36 indexCount      int  (starts at 1: entry 0 is never used)

Only the key's 4-byte hash is stored: lookups return false positives, callers verify the record.
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import struct
import time
from collections.abc import Callable

import construct as cs

from pyrmq.common.constants import MessageConst
from pyrmq.common.java_lang import java_string_hash
from pyrmq.store.message import MessageSysFlag
from pyrmq.store.results import DispatchRequest
from pyrmq.store.space import INDEX_RESERVE_AHEAD, PAGE, DiskFullError, allocate, data_ranges, reserve_ahead

log = logging.getLogger(__name__)

INDEX_HEADER_SIZE = 40
HASH_SLOT_SIZE = 4
INDEX_SIZE = 20
INVALID_INDEX = 0

INDEX_HEADER_LAYOUT = struct.Struct(
    ">"
    "q"  # beginTimestamp
    "q"  # endTimestamp
    "q"  # beginPhyOffset
    "q"  # endPhyOffset
    "i"  # hashSlotCount
    "i"  # indexCount
)
INDEX_ENTRY_LAYOUT = struct.Struct(">iqii")
HASH_SLOT_LAYOUT = struct.Struct(">i")

INDEX_HEADER = cs.Struct(
    "begin_timestamp" / cs.Int64sb,
    "end_timestamp" / cs.Int64sb,
    "begin_phy_offset" / cs.Int64sb,
    "end_phy_offset" / cs.Int64sb,
    "hash_slot_count" / cs.Int32sb,
    "index_count" / cs.Int32sb,
)
INDEX_ENTRY = cs.Struct(
    "key_hash" / cs.Int32sb, "phy_offset" / cs.Int64sb, "time_diff" / cs.Int32sb, "prev_index" / cs.Int32sb
)


def index_file_size(hash_slot_num: int, index_num: int) -> int:
    """Bytes of an index file: header, slots, entries. Java IndexFile (fileTotalSize)."""
    return INDEX_HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE + index_num * INDEX_SIZE


def hash_slot_position(slot: int) -> int:
    return INDEX_HEADER_SIZE + slot * HASH_SLOT_SIZE


def index_entry_position(hash_slot_num: int, entry: int) -> int:
    return INDEX_HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE + entry * INDEX_SIZE


def index_key_hash(key: str) -> int:
    """abs(String.hashCode) with Math.abs(Integer.MIN_VALUE) forced to 0. Java IndexFile#indexKeyHashMethod."""
    h = java_string_hash(key)
    if h == -(2**31):
        return 0
    return abs(h)


def build_key(topic: str, key: str) -> str:
    return f"{topic}#{key}"


def build_tag_key(topic: str, tags: str) -> str:
    """``topic#T#tags``: the entry 5.5.0 adds for a tagged message (IndexService#buildKey(topic, tags, "T"))."""
    return f"{topic}#T#{tags}"


def time_millis_to_file_name(ms: int) -> str:
    """Local time yyyyMMddHHmmssSSS. Java UtilAll#timeMillisToHumanString."""
    t = time.localtime(ms / 1000)
    return time.strftime("%Y%m%d%H%M%S", t) + f"{ms % 1000:03d}"


class IndexFile:
    """One index file, mapped whole. Header fields are written through on every put.

    Before a put writes into the mapping its pages get disk space (space.py): the header page at
    open, each hash-slot page the first time a key hashes into it, the entry area some way ahead
    of the next entry. A put the disk cannot hold raises DiskFullError having written nothing."""

    def __init__(
        self, path: str, hash_slot_num: int, index_num: int, end_phy_offset: int = 0, end_timestamp: int = 0
    ) -> None:
        self.file_name = path
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.file_size = index_file_size(hash_slot_num, index_num)
        existed = os.path.exists(path)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(self._fd).st_size < self.file_size:
                os.ftruncate(self._fd, self.file_size)
            allocate(self._fd, 0, min(PAGE, self.file_size))  # the header's page
            self.mm = mmap.mmap(self._fd, self.file_size)
        except BaseException:
            os.close(self._fd)
            if not existed:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            raise
        self._entries_base = index_entry_position(hash_slot_num, 0)
        # 1 = the slot page has disk space (written or reserved); the others are holes, read as
        # empty slots without touching the mapping (a read fault allocates on tmpfs)
        self._slot_pages = bytearray(self._entries_base // PAGE + 1)
        self._slot_pages[0] = 1
        for start, end in data_ranges(self._fd, PAGE, self._entries_base):
            self._slot_pages[start // PAGE : -(-end // PAGE)] = b"\x01" * (-(-end // PAGE) - start // PAGE)
        self._entries_reserved = 0
        self.begin_timestamp: int
        self.end_timestamp: int
        self.begin_phy_offset: int
        self.end_phy_offset: int
        self.hash_slot_count: int
        self.index_count: int
        if existed:
            (
                self.begin_timestamp,
                self.end_timestamp,
                self.begin_phy_offset,
                self.end_phy_offset,
                self.hash_slot_count,
                self.index_count,
            ) = INDEX_HEADER_LAYOUT.unpack_from(self.mm, 0)
            self.hash_slot_count = max(self.hash_slot_count, 0)
            self.index_count = max(self.index_count, 1)
        else:
            self.begin_timestamp = self.end_timestamp = 0
            self.begin_phy_offset = self.end_phy_offset = 0
            self.hash_slot_count = 0
            self.index_count = 1
            if end_phy_offset > 0:
                self.begin_phy_offset = self.end_phy_offset = end_phy_offset
            if end_timestamp > 0:
                self.begin_timestamp = self.end_timestamp = end_timestamp

    def _write_header(self) -> None:
        INDEX_HEADER_LAYOUT.pack_into(
            self.mm,
            0,
            self.begin_timestamp,
            self.end_timestamp,
            self.begin_phy_offset,
            self.end_phy_offset,
            self.hash_slot_count,
            self.index_count,
        )

    def is_write_full(self) -> bool:
        return self.index_count >= self.index_num

    def put_key(self, key: str, phy_offset: int, store_timestamp: int) -> bool:
        """Add one entry; False when the file is full. Java IndexFile#putKey."""
        count = self.index_count
        if count >= self.index_num:
            return False
        mm = self.mm
        key_hash = index_key_hash(key)
        slot_pos = hash_slot_position(key_hash % self.hash_slot_num)
        entry_pos = self._entries_base + count * INDEX_SIZE
        self._reserve(slot_pos, entry_pos)
        (slot_value,) = HASH_SLOT_LAYOUT.unpack_from(mm, slot_pos)
        if slot_value <= INVALID_INDEX or slot_value > count:
            slot_value = INVALID_INDEX
        begin = self.begin_timestamp
        if begin <= 0:
            time_diff = 0
        else:
            time_diff = (
                (store_timestamp - begin) // 1000 if store_timestamp >= begin else -((begin - store_timestamp) // 1000)
            )
            time_diff = min(max(time_diff, 0), 2**31 - 1)
        INDEX_ENTRY_LAYOUT.pack_into(mm, entry_pos, key_hash, phy_offset, time_diff, slot_value)
        HASH_SLOT_LAYOUT.pack_into(mm, slot_pos, count)
        if count <= 1:
            self.begin_phy_offset = phy_offset
            self.begin_timestamp = store_timestamp
        if slot_value == INVALID_INDEX:
            self.hash_slot_count += 1
        self.index_count = count + 1
        self.end_phy_offset = phy_offset
        self.end_timestamp = store_timestamp
        self._write_header()
        return True

    def _reserve(self, slot_pos: int, entry_pos: int) -> None:
        """Disk space for the slot's page and the entry; DiskFullError when there is none."""
        page = slot_pos // PAGE
        if not self._slot_pages[page]:
            allocate(self._fd, page * PAGE, PAGE)
            self._slot_pages[page] = 1
        end = entry_pos + INDEX_SIZE
        if end > self._entries_reserved:
            self._entries_reserved = reserve_ahead(
                self._fd, self._entries_reserved, entry_pos, end, INDEX_RESERVE_AHEAD, self.file_size
            )

    def is_time_matched(self, begin: int, end: int) -> bool:
        return (
            (begin < self.begin_timestamp and end > self.end_timestamp)
            or (self.begin_timestamp <= begin <= self.end_timestamp)
            or (self.begin_timestamp <= end <= self.end_timestamp)
        )

    def select_phy_offset(self, phy_offsets: list[int], key: str, max_num: int, begin: int, end: int) -> None:
        """Append matching commit-log offsets, newest first. Java IndexFile#selectPhyOffset."""
        key_hash = index_key_hash(key)
        slot_pos = hash_slot_position(key_hash % self.hash_slot_num)
        if not self._slot_pages[slot_pos // PAGE]:
            return  # a hole: no key ever hashed into this page
        (slot_value,) = HASH_SLOT_LAYOUT.unpack_from(self.mm, slot_pos)
        if slot_value <= INVALID_INDEX or slot_value > self.index_count or self.index_count <= 1:
            return
        nxt = slot_value
        while len(phy_offsets) < max_num:
            h, phy, diff, prev = INDEX_ENTRY_LAYOUT.unpack_from(self.mm, self._entries_base + nxt * INDEX_SIZE)
            if diff < 0:
                break
            t = self.begin_timestamp + diff * 1000
            if h == key_hash and begin <= t <= end:
                phy_offsets.append(phy)
            if prev <= INVALID_INDEX or prev > self.index_count or prev == nxt or t < begin:
                break
            nxt = prev

    def flush(self) -> None:
        self._write_header()
        self.mm.flush()

    def close(self) -> None:
        if not self.mm.closed:
            with contextlib.suppress(BufferError):
                self.mm.close()
            os.close(self._fd)

    def destroy(self) -> None:
        self.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.file_name)


class IndexService:
    """The run of index files. Java: store.index.IndexService."""

    def __init__(
        self,
        store_path: str,
        hash_slot_num: int,
        index_num: int,
        clock: Callable[[], int],
        on_file_full: Callable[[int], None] | None = None,
        max_msgs_num_batch: int = 64,
    ) -> None:
        self.store_path = store_path
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.clock = clock
        self.on_file_full = on_file_full  # called with the full file's endTimestamp after its flush
        self.max_msgs_num_batch = max_msgs_num_batch
        self.index_file_list: list[IndexFile] = []
        # (commit-log offset, keys done) of a request whose keys stopped at a DiskFullError: its
        # retry goes on from there (the duplicate check would skip the whole request)
        self._resume: tuple[int, int] | None = None

    def load(self, last_exit_ok: bool, index_msg_timestamp: int) -> bool:
        """Open files in name order; after a crash delete those not covered by the checkpoint."""
        if not os.path.isdir(self.store_path):
            return True
        for name in sorted(os.listdir(self.store_path)):
            path = os.path.join(self.store_path, name)
            if os.path.isdir(path):
                continue
            f = IndexFile(path, self.hash_slot_num, self.index_num)
            if not last_exit_ok and f.end_timestamp > index_msg_timestamp:
                f.destroy()
                continue
            self.index_file_list.append(f)
        return True

    def _last_file(self) -> IndexFile:
        last = self.index_file_list[-1] if self.index_file_list else None
        if last is not None and not last.is_write_full():
            return last
        prev_end_phy = last.end_phy_offset if last else 0
        prev_end_ts = last.end_timestamp if last else 0
        os.makedirs(self.store_path, exist_ok=True)
        now = self.clock()
        name = time_millis_to_file_name(now)
        while any(os.path.basename(f.file_name) == name for f in self.index_file_list) or os.path.exists(
            os.path.join(self.store_path, name)
        ):
            now += 1
            name = time_millis_to_file_name(now)
        f = IndexFile(
            os.path.join(self.store_path, name), self.hash_slot_num, self.index_num, prev_end_phy, prev_end_ts
        )
        self.index_file_list.append(f)
        if last is not None:
            last.flush()
            if self.on_file_full:
                self.on_file_full(last.end_timestamp)
        return f

    def build_index(self, req: DispatchRequest) -> None:
        """Index UNIQ_KEY and each KEYS token as topic#key, then the TAGS as topic#T#tags.

        Java 5.5.0 IndexService#buildIndex (the tag entry is new in 5.5.0: checked in the
        rocketmq-store-5.5.0 jar and against a store the 5.5.0 broker wrote)."""
        f = self._last_file()
        phy, ts, topic = req.commit_log_offset, req.store_timestamp, req.topic
        done = 0
        if self._resume is not None and self._resume[0] == phy:
            done = self._resume[1]
        else:
            has_entries = f.index_count > 1 or len(self.index_file_list) > 1
            if phy < f.end_phy_offset or (has_entries and phy == f.end_phy_offset):
                return
        if req.sys_flag & 0xC == MessageSysFlag.TRANSACTION_ROLLBACK_TYPE:
            return
        keys = []
        if req.uniq_key:
            keys.append(build_key(topic, req.uniq_key))
        if req.keys:
            keys.extend(build_key(topic, k) for k in req.keys.split(" ") if k)
        tags = req.properties.get(MessageConst.TAGS) if req.properties else None
        if tags:
            keys.append(build_tag_key(topic, tags))
        for i in range(done, len(keys)):
            try:
                f = self._put_key(f, keys[i], phy, ts)
            except DiskFullError:
                self._resume = (phy, i)
                raise
        self._resume = None

    def _put_key(self, f: IndexFile, key: str, phy: int, ts: int) -> IndexFile:
        """Put into `f`, rolling to a new file while full; the file that took the key."""
        while not f.put_key(key, phy, ts):
            f = self._last_file()
        return f

    def query_offset(self, topic: str, key: str, max_num: int, begin: int, end: int) -> tuple[list[int], int, int]:
        """(commit-log offsets newest first, last file's endTimestamp, endPhyOffset).
        Java IndexService#queryOffset."""
        offsets: list[int] = []
        max_num = min(max_num, self.max_msgs_num_batch)
        last_ts = last_phy = 0
        files = self.index_file_list
        full_key = build_key(topic, key)
        for i in range(len(files), 0, -1):
            f = files[i - 1]
            if i == len(files):
                last_ts, last_phy = f.end_timestamp, f.end_phy_offset
            if f.is_time_matched(begin, end):
                f.select_phy_offset(offsets, full_key, max_num, begin, end)
            if f.begin_timestamp < begin or len(offsets) >= max_num:
                break
        return offsets, last_ts, last_phy

    def truncate_beyond(self, phy_offset: int) -> None:
        """Delete files holding entries at or past `phy_offset` (they are rebuilt by dispatch)."""
        while (
            self.index_file_list
            and self.index_file_list[-1].end_phy_offset >= phy_offset
            and (self.index_file_list[-1].index_count > 1)
        ):
            self.index_file_list.pop().destroy()

    def delete_expired_file(self, min_phy_offset: int) -> int:
        """Delete files (never the last) whose endPhyOffset < the commit log's min offset."""
        n = 0
        while len(self.index_file_list) > 1 and self.index_file_list[0].end_phy_offset < min_phy_offset:
            self.index_file_list.pop(0).destroy()
            n += 1
        return n

    def flush(self) -> None:
        for f in self.index_file_list:
            f.flush()

    def get_last_file_end_phy_offset(self) -> int:
        """Where the newest kept file's entries end (0 without files): records below it are
        indexed, dispatch skips them (build_index)."""
        return self.index_file_list[-1].end_phy_offset if self.index_file_list else 0

    def get_last_file_end_timestamp(self) -> int:
        return self.index_file_list[-1].end_timestamp if self.index_file_list else 0

    def destroy(self) -> None:
        for f in self.index_file_list:
            f.destroy()
        self.index_file_list = []

    def shutdown(self) -> None:
        for f in self.index_file_list:
            f.flush()
            f.close()
