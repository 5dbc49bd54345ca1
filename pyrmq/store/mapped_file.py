"""Fixed-size memory-mapped files named by their 20-digit start offset, and the queue of them.

Java: store.logfile.DefaultMappedFile and store.MappedFileQueue. Used for the commit log
and each consume queue (index files map themselves, see index.py).

Invariants: flushed_position <= committed_position <= wrote_position <= file_size. Without a
transient store pool committed == wrote. A file is never resized; new data only goes to the
last file; readers read up to the read position (= wrote position). Bytes are written only
below ``reserved`` or the wrote position (pages the filesystem backs, see space.py).
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import time
from collections.abc import Callable, Iterator

from pyrmq.common.clock import now_ms as system_now_ms
from pyrmq.store.space import CONSUME_QUEUE_RESERVE_AHEAD, DiskFullError, backed_prefix, is_disk_full, reserve_ahead

log = logging.getLogger(__name__)

OS_PAGE_SIZE = 4096  # DefaultMappedFile.OS_PAGE_SIZE

SyncFn = Callable[[mmap.mmap, int, int], None]
"""Makes [offset, offset+length) of a mapping durable; raises OSError on failure."""


def default_sync(mm: mmap.mmap, offset: int, length: int) -> None:
    mm.flush(offset, length)  # msync(MS_SYNC)


_fdatasync = getattr(os, "fdatasync", None)
# Without an injected SyncFn a MappedFile makes its data durable with fdatasync(fd) instead of
# mmap.flush: CPython 3.11's mmap.flush keeps the GIL during msync, so every sync-flush stalled
# the producers' thread for the whole disk round trip. On Linux both end in vfs_fsync_range over
# the file's dirty page-cache pages, which are the MAP_SHARED pages: same durability.


class StoreLoadError(RuntimeError):
    """A store directory the Java broker would also refuse (wrong file size, bad file name)."""


_MADV_RANDOM: int | None = getattr(mmap, "MADV_RANDOM", None)


def offset_to_file_name(offset: int) -> str:
    """Java UtilAll#offset2FileName: 20 zero-padded decimal digits."""
    return f"{offset:020d}"


class MappedFile:
    """One pre-sized file, mapped read-write. Java: store.logfile.DefaultMappedFile."""

    __slots__ = (
        "_closed",
        "_fd",
        "_sync",
        "committed_position",
        "file_from_offset",
        "file_name",
        "file_size",
        "first_create_in_queue",
        "flushed_position",
        "mm",
        "reserve_ahead",
        "reserved",
        "store_timestamp",
        "wrote_position",
    )

    def __init__(
        self,
        file_name: str,
        file_size: int,
        sync: SyncFn | None = None,
        reserve_ahead: int = CONSUME_QUEUE_RESERVE_AHEAD,
        random_access: bool = False,
        keep_fd: bool = True,
    ) -> None:
        self.file_name = file_name
        self.file_size = file_size
        self.file_from_offset = int(os.path.basename(file_name))
        fd = os.open(file_name, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            st = os.fstat(fd)
            created = st.st_size < file_size
            if created:
                os.ftruncate(fd, file_size)  # sparse, like Java's map of the full size
            self.mm = mmap.mmap(fd, file_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            if created and random_access and _MADV_RANDOM is not None:
                # The kernel's read-around on a mapping's first fault fills up to read_ahead_kb
                # (8 MiB on some disks) of page cache: for a new consume-queue file all zeros,
                # 2 ms per new queue on the send path. Java writes these entries with pwrite.
                self.mm.madvise(_MADV_RANDOM)
        except BaseException:
            os.close(fd)
            raise
        self._fd: int | None = fd
        self.wrote_position = 0
        self.committed_position = 0
        self.flushed_position = 0
        self._sync = sync  # None: fdatasync on the fd (see _fdatasync)
        self.store_timestamp = 0  # store time of the last appended record
        self.first_create_in_queue = False
        self._closed = False
        # [0, reserved) has disk space (and so has [0, wrote_position)); readers of data not known
        # to be written (recovery) stop there too: see space.backed_prefix
        self.reserved = backed_prefix(fd, file_size)
        self.reserve_ahead = reserve_ahead
        if not keep_fd:
            # the mapping stays valid without it; flush and reserve open the file for their call
            os.close(fd)
            self._fd = None

    @contextlib.contextmanager
    def _file(self) -> Iterator[int]:
        """The file's descriptor: the one kept open, or one opened for this call. Consume-queue
        files keep none: 10,000 topics x 8 queues would hold 80,000 descriptors, past common
        open-file limits (Java keeps one per mapped file and fails there)."""
        if self._fd is not None:
            yield self._fd
            return
        fd = os.open(self.file_name, os.O_RDWR)
        try:
            yield fd
        finally:
            os.close(fd)

    # --- positions -------------------------------------------------------------------------------
    def set_positions(self, pos: int) -> None:
        self.wrote_position = self.committed_position = self.flushed_position = pos

    def get_read_position(self) -> int:
        return self.wrote_position

    def remaining(self) -> int:
        return self.file_size - self.wrote_position

    def is_full(self) -> bool:
        return self.wrote_position >= self.file_size

    # --- write ------------------------------------------------------------------------------------
    def reserve(self, end: int) -> None:
        """Back [0, end) with disk space before writing there; DiskFullError when the filesystem
        has none (nothing was written then). See space.py."""
        if end > self.reserved:
            with self._file() as fd:
                self.reserved = reserve_ahead(
                    fd, self.reserved, self.wrote_position, end, self.reserve_ahead, self.file_size
                )

    def reserved_unwritten(self) -> tuple[int, int]:
        """(device, bytes): disk space this file holds reserved past its writer, and the device
        it is on. Java's files are sparse and never hold such space (see space.py)."""
        with self._file() as fd:
            return os.fstat(fd).st_dev, max(0, self.reserved - self.wrote_position)

    def append_message(self, data: bytes | bytearray | memoryview, position: int | None = None) -> bool:
        """Write at the wrote position (or `position`); False when it does not fit, DiskFullError
        (nothing written) when the disk cannot hold it."""
        pos = self.wrote_position if position is None else position
        n = len(data)
        if pos + n > self.file_size:
            return False
        if pos + n > self.reserved:
            self.reserve(pos + n)
        self.mm[pos : pos + n] = data
        self.wrote_position = pos + n
        self.committed_position = self.wrote_position
        return True

    def write_at(self, position: int, data: bytes | bytearray | memoryview) -> None:
        """Write bytes in place without moving the wrote position (fixes, a file-end blank)."""
        end = position + len(data)
        if end > self.reserved and end > self.wrote_position:
            self.reserve(end)
        self.mm[position:end] = data

    # --- flush -------------------------------------------------------------------------------------
    def is_able_to_flush(self, flush_least_pages: int) -> bool:
        if self.is_full():
            return self.flushed_position < self.file_size
        dirty = self.committed_position - self.flushed_position
        if flush_least_pages > 0:
            return dirty // OS_PAGE_SIZE >= flush_least_pages
        return dirty > 0

    def flush(self, flush_least_pages: int = 0) -> int:
        """Make written data durable; returns the flushed position. OSError from msync propagates
        (the caller must not report the data as flushed)."""
        if self.is_able_to_flush(flush_least_pages):
            target = self.committed_position
            start = (self.flushed_position // mmap.PAGESIZE) * mmap.PAGESIZE
            if target > start:
                if self._sync is not None:
                    self._sync(self.mm, start, target - start)
                elif _fdatasync is not None:
                    if self._closed:
                        raise ValueError("mapped file closed")  # like mmap.flush on a closed map
                    with self._file() as fd:
                        _fdatasync(fd)  # releases the GIL
                else:  # pragma: no cover - no fdatasync on this platform
                    default_sync(self.mm, start, target - start)
            self.flushed_position = target
        return self.flushed_position

    # --- read -------------------------------------------------------------------------------------
    def select_mapped_buffer(self, pos: int, size: int | None = None) -> memoryview | None:
        """View of [pos, pos+size) (or up to the read position); None if not readable yet."""
        read_pos = self.get_read_position()
        if size is None:
            size = read_pos - pos
        if pos < 0 or size < 0 or pos + size > read_pos:
            return None
        return memoryview(self.mm)[pos : pos + size]

    def get_last_modified_timestamp(self) -> int:
        try:
            return int(os.path.getmtime(self.file_name) * 1000)
        except OSError:
            return 0

    # --- lifecycle --------------------------------------------------------------------------------
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.mm.close()
        except BufferError:
            # a reader still holds a view; the mapping goes away when it is collected
            log.debug("mapping of %s still exported; left to GC", self.file_name)
        if self._fd is not None:
            os.close(self._fd)

    def destroy(self) -> bool:
        """Unmap and delete the file. Java DefaultMappedFile#destroy."""
        self.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.file_name)
        return True

    def __repr__(self) -> str:
        return f"MappedFile({os.path.basename(self.file_name)}, wrote={self.wrote_position})"


class MappedFileQueue:
    """An ordered run of MappedFiles forming one logical byte stream. Java: store.MappedFileQueue."""

    def __init__(
        self,
        store_path: str,
        mapped_file_size: int,
        sync: SyncFn | None = None,
        reserve_ahead: int = CONSUME_QUEUE_RESERVE_AHEAD,
        random_access: bool = False,
        keep_fds: bool = True,
    ) -> None:
        self.store_path = store_path
        self.random_access = random_access  # new files skip the kernel's read-around (MappedFile)
        self.keep_fds = keep_fds  # False: files hold no descriptor between calls (MappedFile._file)
        self.mapped_file_size = mapped_file_size
        self.reserve_ahead = reserve_ahead  # disk space reserved ahead of the writer (space.py)
        self.mapped_files: list[MappedFile] = []
        self.flushed_where = 0
        self.committed_where = 0
        self.store_timestamp = 0
        self._sync = sync

    # --- load -------------------------------------------------------------------------------------
    def load(self) -> bool:
        """Open existing files. Raises StoreLoadError when a file's size differs from the
        configured one or its name is not a number (Java MappedFileQueue#doLoad refuses too)."""
        if not os.path.isdir(self.store_path):
            return True
        names = sorted(n for n in os.listdir(self.store_path) if not os.path.isdir(os.path.join(self.store_path, n)))
        for i, name in enumerate(names):
            path = os.path.join(self.store_path, name)
            if not name.isdigit():
                raise StoreLoadError(f"{path}: file name is not a decimal offset")
            size = os.path.getsize(path)
            if size == 0 and i == len(names) - 1:
                log.warning("%s: deleting empty last file (Java 5.x does the same)", path)
                os.unlink(path)
                continue
            if size != self.mapped_file_size:
                raise StoreLoadError(
                    f"{path}: length {size} not matched message store config value {self.mapped_file_size}"
                )
            mf = self._open(path)
            mf.set_positions(self.mapped_file_size)
            self.mapped_files.append(mf)
        return True

    # --- lookup -----------------------------------------------------------------------------------
    def get_first_mapped_file(self) -> MappedFile | None:
        return self.mapped_files[0] if self.mapped_files else None

    def get_last_mapped_file(self, start_offset: int = 0, need_create: bool = False) -> MappedFile | None:
        """Last file, or a new one when there is none or it is full and need_create is set."""
        last = self.mapped_files[-1] if self.mapped_files else None
        if not need_create:
            return last
        create_offset = -1
        if last is None:
            create_offset = start_offset - (start_offset % self.mapped_file_size)
        elif last.is_full():
            create_offset = last.file_from_offset + self.mapped_file_size
        if create_offset < 0:
            return last
        return self.try_create_mapped_file(create_offset)

    def _open(self, path: str) -> MappedFile:
        """One of this queue's files, existing or new (MappedFile applies the advice to new ones only)."""
        return MappedFile(
            path, self.mapped_file_size, self._sync, self.reserve_ahead, self.random_access, self.keep_fds
        )

    def try_create_mapped_file(self, create_offset: int) -> MappedFile:
        path = os.path.join(self.store_path, offset_to_file_name(create_offset))
        try:
            os.makedirs(self.store_path, exist_ok=True)
            mf = self._open(path)
        except OSError as e:
            if is_disk_full(e):  # no room even for the directory entry or inode
                raise DiskFullError(e.errno, f"cannot create {path}: {e.strerror}") from None
            raise
        if not self.mapped_files:
            mf.first_create_in_queue = True
        self.mapped_files.append(mf)
        return mf

    def find_mapped_file_by_offset(self, offset: int, return_first_on_not_found: bool = False) -> MappedFile | None:
        files = self.mapped_files
        if not files:
            return None
        first = files[0]
        index = (offset // self.mapped_file_size) - (first.file_from_offset // self.mapped_file_size)
        if 0 <= index < len(files):
            mf = files[index]
            if mf.file_from_offset <= offset < mf.file_from_offset + self.mapped_file_size:
                return mf
        for mf in files:
            if mf.file_from_offset <= offset < mf.file_from_offset + self.mapped_file_size:
                return mf
        return first if return_first_on_not_found else None

    def get_min_offset(self) -> int:
        return self.mapped_files[0].file_from_offset if self.mapped_files else -1

    def get_max_offset(self) -> int:
        if not self.mapped_files:
            return 0
        last = self.mapped_files[-1]
        return last.file_from_offset + last.get_read_position()

    def get_max_wrote_position(self) -> int:
        if not self.mapped_files:
            return 0
        last = self.mapped_files[-1]
        return last.file_from_offset + last.wrote_position

    # --- flush ------------------------------------------------------------------------------------
    def flush(self, flush_least_pages: int = 0) -> bool:
        """Flush the file holding flushed_where. True when nothing needed flushing (Java's result).

        Raises OSError when the sync fails; flushed_where then stays where it was."""
        mf = self.find_mapped_file_by_offset(self.flushed_where, self.flushed_where == 0)
        if mf is None:
            return True
        ts = mf.store_timestamp
        offset = mf.flush(flush_least_pages)
        where = mf.file_from_offset + offset
        result = where == self.flushed_where
        self.flushed_where = where
        if flush_least_pages == 0:
            self.store_timestamp = ts
        return result

    def commit(self, commit_least_pages: int = 0) -> bool:
        """No transient store pool: committed == wrote. Kept for the Java shape."""
        self.committed_where = self.get_max_wrote_position()
        return True

    # --- truncation / deletion ----------------------------------------------------------------------
    def truncate_dirty_files(self, offset: int) -> None:
        """Drop data from `offset` on: files past it are deleted, the containing file's positions are
        moved back and its tail zeroed (so a later reader sees the end). Java truncateDirtyFiles."""
        keep: list[MappedFile] = []
        for mf in self.mapped_files:
            tail = mf.file_from_offset + self.mapped_file_size
            if tail > offset:
                if offset >= mf.file_from_offset:
                    pos = offset % self.mapped_file_size
                    mf.set_positions(pos)
                    # zero what lies beyond so records past the cut cannot come back after a crash
                    self._zero_tail(mf, pos)
                    keep.append(mf)
                else:
                    mf.destroy()
                    continue
            else:
                keep.append(mf)
        self.mapped_files = keep

    @staticmethod
    def _zero_tail(mf: MappedFile, pos: int) -> None:
        # zero up to the first run of zeros (recovered data usually ends near the torn tail); only
        # pages holding data are written (they are backed: writing a zero page of a sparse file
        # could need space the disk no longer has)
        step = 1 << 16
        p = pos
        while p < mf.reserved:  # past it: holes, zeros already
            n = min(step, mf.reserved - p)
            chunk = mf.mm[p : p + n]
            if chunk.count(0) == n:
                break
            q = p
            while q < p + n:
                page_end = min(p + n, q - q % OS_PAGE_SIZE + OS_PAGE_SIZE)
                if mf.mm[q:page_end].count(0) != page_end - q:
                    mf.mm[q:page_end] = bytes(page_end - q)
                q = page_end
            p += n

    def delete_last_mapped_file(self) -> None:
        if self.mapped_files:
            self.mapped_files.pop().destroy()

    def delete_expired_file_by_time(
        self,
        expired_time_ms: int,
        delete_files_interval_ms: int,
        clean_immediately: bool,
        delete_file_batch_max: int = 10,
        now_ms: Callable[[], int] | None = None,
    ) -> int:
        """Delete the oldest files whose mtime + expired_time <= now (never the last one), stopping at
        the first kept file. Java MappedFileQueue#deleteExpiredFileByTime. Returns how many."""
        now = now_ms or system_now_ms
        deleted = 0
        for mf in list(self.mapped_files[:-1]):
            if now() >= mf.get_last_modified_timestamp() + expired_time_ms or clean_immediately:
                mf.destroy()
                self.mapped_files.remove(mf)
                deleted += 1
                if deleted >= delete_file_batch_max:
                    break
                if delete_files_interval_ms > 0 and mf is not self.mapped_files[-1]:
                    time.sleep(delete_files_interval_ms / 1000)
            else:
                break
        return deleted

    def delete_expired_file_by_offset(
        self, offset: int, unit_size: int, last_entry_offset: Callable[[MappedFile], int]
    ) -> int:
        """Delete leading files whose last entry's commit-log offset < `offset` (never the last file).
        Java MappedFileQueue#deleteExpiredFileByOffset."""
        deleted = 0
        for mf in list(self.mapped_files[:-1]):
            if last_entry_offset(mf) < offset:
                mf.destroy()
                self.mapped_files.remove(mf)
                deleted += 1
            else:
                break
        return deleted

    def destroy(self) -> None:
        for mf in self.mapped_files:
            mf.destroy()
        self.mapped_files = []
        self.flushed_where = self.committed_where = 0
        with contextlib.suppress(OSError):
            os.rmdir(self.store_path)

    def shutdown(self) -> None:
        for mf in self.mapped_files:
            mf.close()
