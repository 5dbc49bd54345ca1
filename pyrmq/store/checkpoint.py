"""StoreCheckpoint (4096-byte file of big-endian longs), the abort marker, the lock file and timercheck.

Java: store.StoreCheckpoint, store.timer.TimerCheckpoint, DefaultMessageStore#createTempFile / #lock
(spec store-format §5.1-5.3).

    offset  field                 since
    0       physicMsgTimestamp    all
    8       logicsMsgTimestamp    all
    16      indexMsgTimestamp     all
    24      masterFlushedOffset   5.0.0
    32      confirmPhyOffset      5.1.1
    40..    zero (the file is always 4096 bytes, one OS page)
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
import struct

import construct as cs

from pyrmq.store.space import allocate

CHECKPOINT_FILE_SIZE = 4096
CHECKPOINT_LAYOUT = struct.Struct(">qqqqq")
#: Java's names of the CHECKPOINT_LAYOUT fields, in order
CHECKPOINT_FIELDS = (
    "physicMsgTimestamp",
    "logicsMsgTimestamp",
    "indexMsgTimestamp",
    "masterFlushedOffset",
    "confirmPhyOffset",
)
#: Java TimerCheckpoint: four longs and the DataVersion (stateVersion, timestamp, counter) in one OS page
TIMER_CHECKPOINT_LAYOUT = struct.Struct(">7q")

CHECKPOINT = cs.Struct(
    "physic_msg_timestamp" / cs.Int64sb,
    "logics_msg_timestamp" / cs.Int64sb,
    "index_msg_timestamp" / cs.Int64sb,
    "master_flushed_offset" / cs.Int64sb,
    "confirm_phy_offset" / cs.Int64sb,
)


class StoreCheckpoint:
    """Timestamps that bound recovery. A missing file reads as all zero."""

    def __init__(self, path: str) -> None:
        self.path = path
        existed = os.path.exists(path)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(self._fd).st_size < CHECKPOINT_FILE_SIZE:
                os.ftruncate(self._fd, CHECKPOINT_FILE_SIZE)
            # disk space for the page it writes every second: a sparse page on a full disk
            # would be SIGBUS at the first flush (space.py)
            allocate(self._fd, 0, CHECKPOINT_FILE_SIZE)
            self._mm = mmap.mmap(self._fd, CHECKPOINT_FILE_SIZE)
        except BaseException:
            os.close(self._fd)
            raise
        self.physic_msg_timestamp: int
        self.logics_msg_timestamp: int
        self.index_msg_timestamp: int
        self.master_flushed_offset: int
        self.confirm_phy_offset: int
        (
            self.physic_msg_timestamp,
            self.logics_msg_timestamp,
            self.index_msg_timestamp,
            self.master_flushed_offset,
            self.confirm_phy_offset,
        ) = CHECKPOINT_LAYOUT.unpack_from(self._mm, 0) if existed else (0, 0, 0, 0, 0)

    def flush(self) -> None:
        CHECKPOINT_LAYOUT.pack_into(
            self._mm,
            0,
            self.physic_msg_timestamp,
            self.logics_msg_timestamp,
            self.index_msg_timestamp,
            self.master_flushed_offset,
            self.confirm_phy_offset,
        )
        self._mm.flush()

    def get_min_timestamp(self) -> int:
        """min(physic, logics) - 3 s, at least 0. Java StoreCheckpoint#getMinTimestamp."""
        m = min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 1000 * 3
        return max(m, 0)

    def get_min_timestamp_index(self) -> int:
        return min(self.get_min_timestamp(), self.index_msg_timestamp)

    def shutdown(self) -> None:
        if self._mm.closed:
            return
        self.flush()
        self._mm.close()
        os.close(self._fd)


def create_abort_file(path: str) -> None:
    """Mark the store as running; 5.x writes the PID (MixAll#string2File)."""
    with open(path, "w") as f:
        f.write(str(os.getpid()))
        f.flush()
        os.fsync(f.fileno())


def abort_file_exists(path: str) -> bool:
    return os.path.exists(path)


def delete_abort_file(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


class StoreLockedError(RuntimeError):
    """Another process (pyrmq or the Java broker) holds the store's lock file."""


class StoreLock:
    """POSIX record lock on byte 0 of <root>/lock, compatible with Java FileChannel#tryLock(0, 1)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        except OSError as e:
            os.close(fd)
            raise StoreLockedError(f"Lock failed, MQ already started: {self.path} is locked by another process") from e
        os.pwrite(fd, b"lock", 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            try:
                fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, 0)
            finally:
                os.close(self._fd)
                self._fd = None


class TimerCheckpoint:
    """``<root>/config/timercheck``: timer progress. Java: store/timer/TimerCheckpoint.

    Big-endian longs at 0..55 of a 4 KiB file: lastReadTimeMs, lastTimerLogFlushPos,
    lastTimerQueueOffset, masterTimerQueueOffset, then the DataVersion (stateVersion,
    timestamp, counter). A missing or short file reads as all zero (``existed`` False).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.last_read_time_ms = 0
        self.last_timer_log_flush_pos = 0
        self.last_timer_queue_offset = 0
        self.master_timer_queue_offset = 0
        self.state_version = 0
        self.timestamp = 0
        self.counter = 0
        self.existed = False
        try:
            with open(path, "rb") as f:
                data = f.read(TIMER_CHECKPOINT_LAYOUT.size)
        except FileNotFoundError:
            return
        if len(data) == TIMER_CHECKPOINT_LAYOUT.size:
            self.existed = True
            (
                self.last_read_time_ms,
                self.last_timer_log_flush_pos,
                self.last_timer_queue_offset,
                self.master_timer_queue_offset,
                self.state_version,
                self.timestamp,
                self.counter,
            ) = TIMER_CHECKPOINT_LAYOUT.unpack(data)

    def encode(self) -> bytes:
        return TIMER_CHECKPOINT_LAYOUT.pack(
            self.last_read_time_ms,
            self.last_timer_log_flush_pos,
            self.last_timer_queue_offset,
            self.master_timer_queue_offset,
            self.state_version,
            self.timestamp,
            self.counter,
        )

    def flush(self) -> None:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size < CHECKPOINT_FILE_SIZE:
                os.ftruncate(fd, CHECKPOINT_FILE_SIZE)
            os.pwrite(fd, self.encode(), 0)
            os.fsync(fd)
        finally:
            os.close(fd)
