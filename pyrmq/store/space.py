"""Disk space for a mapped file's pages, asked for before anything is written into them.

A store file is created at its full size but sparse (as Java's are). Writing into a MAP_SHARED
page that the filesystem cannot back (a full disk or tmpfs) raises SIGBUS, which kills a Python
process (the JVM turns it into an InternalError and goes on). So every writer into a mapping
first reserves the pages with posix_fallocate, some way ahead of its write position, and a
refusal becomes a ``DiskFullError``: the commit log refuses the put as Java does on a full disk
(SERVICE_NOT_AVAILABLE), dispatch to consume queues and index waits and retries.

posix_fallocate inside a file's size only allocates: the size and the bytes (zeros) stay what
Java writes and expects. Filesystems without fallocate support are served by glibc's emulation
(it writes one zero byte per block, never over data: reservations run ahead of the writers).
"""

from __future__ import annotations

import errno
import mmap
import os

PAGE = mmap.PAGESIZE  # allocation unit of the reservations (the mapping's page)

#: how far ahead of the write position each kind of file reserves (bytes). The commit log asks
#: for a few MiB at a time (one system call per 4 MiB of messages); a consume queue, of which a
#: broker has thousands, one page (204 entries); an index file's entry area 256 KiB.
COMMIT_LOG_RESERVE_AHEAD = 4 * 1024 * 1024
CONSUME_QUEUE_RESERVE_AHEAD = 4 * 1024
INDEX_RESERVE_AHEAD = 256 * 1024

_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


class DiskFullError(OSError):
    """The filesystem cannot back the pages a writer was about to use (ENOSPC or EDQUOT)."""


def is_disk_full(e: OSError) -> bool:
    return isinstance(e, DiskFullError) or e.errno in _FULL_ERRNOS


def existing_ancestor(path: str) -> str | None:
    """``path`` or its nearest existing parent: the partition a folder not created yet will be on."""
    path = os.path.abspath(path)
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent
    return path


def space_available(path: str) -> int:
    """Bytes an unprivileged writer may still allocate on the partition of ``path``; -1 when unknown."""
    where = existing_ancestor(path) if path else None
    if where is None:
        return -1
    try:
        st = os.statvfs(where)
    except OSError:
        return -1
    return st.f_bavail * st.f_frsize


def backed_prefix(fd: int, size: int) -> int:
    """Bytes from the file's start before its first hole: all of them have disk space. Past it,
    reading through a mapping is not safe either on tmpfs, where a read fault allocates the page
    (and is SIGBUS on a full one); holes read as zeros, so readers treat the rest as zeros."""
    try:
        return min(size, os.lseek(fd, 0, os.SEEK_HOLE))
    except OSError:
        return size  # no SEEK_HOLE here: no sparse-read hazard to avoid either


def data_ranges(fd: int, start: int, end: int) -> list[tuple[int, int]]:
    """The runs of [start, end) that hold data (SEEK_DATA / SEEK_HOLE); the rest are holes."""
    out: list[tuple[int, int]] = []
    pos = start
    try:
        while pos < end:
            try:
                data = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as e:
                if e.errno == errno.ENXIO:  # no data after pos
                    break
                raise
            if data >= end:
                break
            hole = min(end, os.lseek(fd, data, os.SEEK_HOLE))
            out.append((data, hole))
            pos = hole
    except OSError:
        return [(start, end)]  # no SEEK_DATA: read it all (no tmpfs hazard then)
    return out


def _page_ceil(n: int) -> int:
    return -(-n // PAGE) * PAGE


def allocate(fd: int, offset: int, length: int) -> None:
    """Back [offset, offset+length) of the file with disk space; DiskFullError when there is none.

    Other errors (a bad descriptor, an I/O error) propagate as the OSError they are."""
    if length <= 0:
        return
    try:
        os.posix_fallocate(fd, offset, length)
    except OSError as e:
        if e.errno in _FULL_ERRNOS:
            raise DiskFullError(e.errno, f"no space left to back {length} bytes at offset {offset}") from None
        raise


def reserve_ahead(fd: int, reserved: int, written: int, end: int, ahead: int, size: int) -> int:
    """Make sure [0, end) of a file of ``size`` bytes is backed; returns the new reserved end.

    ``reserved``: the end already backed; ``written``: bytes below it hold data, so they are
    backed too. Asks for ``ahead`` bytes past ``end`` (page aligned, within the file); when the
    filesystem has not that much, for exactly what ``end`` needs; DiskFullError when not even that."""
    if end <= reserved:
        return reserved
    start = max(reserved, written - written % PAGE)
    if end <= start:
        return start
    end = min(end, size)
    want = min(size, _page_ceil(end + ahead))
    try:
        allocate(fd, start, want - start)
        return want
    except DiskFullError:
        need = min(size, _page_ceil(end))
        if need >= want:
            raise
    allocate(fd, start, need - start)
    return need
