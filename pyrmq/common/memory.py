"""Give freed memory back to the OS: glibc's malloc settings and trim, and the process's RSS.

CPython hands blocks over 512 bytes to malloc. glibc serves a large block (a message body, a
frame buffer) from mmap only below its dynamic threshold, which rises to the size of each large
block freed (up to 32 MiB): after one burst of 256 KiB bodies they all come from the heap, and a
heap fragmented by a few live objects is never returned, so the process keeps its peak. Fixing
M_MMAP_THRESHOLD keeps bodies above it in their own mappings, unmapped when freed; `trim` asks
malloc to return the free top of its heaps after a burst. Without glibc both do nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os

log = logging.getLogger("pyrmq.memory")

_M_MMAP_THRESHOLD = -3  # malloc.h
#: blocks of this size or more get their own mapping (glibc's initial threshold, kept fixed)
MMAP_THRESHOLD = 128 * 1024

_libc: ctypes.CDLL | None = None
_loaded = False


def _glibc() -> ctypes.CDLL | None:
    global _libc, _loaded
    if not _loaded:
        _loaded = True
        name = ctypes.util.find_library("c")
        try:
            lib = ctypes.CDLL(name) if name else None
            if lib is not None and hasattr(lib, "mallopt") and hasattr(lib, "malloc_trim"):
                _libc = lib
        except OSError:
            _libc = None
    return _libc


def fix_mmap_threshold(threshold: int = MMAP_THRESHOLD) -> bool:
    """mallopt(M_MMAP_THRESHOLD): large blocks are mapped and unmapped, never kept; True if set."""
    lib = _glibc()
    if lib is None:
        return False
    ok = bool(lib.mallopt(_M_MMAP_THRESHOLD, threshold))
    log.debug("malloc mmap threshold fixed at %d: %s", threshold, ok)
    return ok


def trim() -> bool:
    """malloc_trim(0): return free heap memory to the OS; True if some was."""
    lib = _glibc()
    return bool(lib.malloc_trim(0)) if lib is not None else False


def rss_bytes(pid: int | None = None) -> int:
    """Resident set size of a process (this one by default), from /proc; 0 where there is none."""
    try:
        with open(f"/proc/{pid or 'self'}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def anon_bytes(pid: int | None = None) -> int:
    """RssAnon of a process: its resident memory less mapped files (the store's mapped commit log
    is resident too, but it is page cache the kernel may drop); 0 where /proc has none."""
    try:
        with open(f"/proc/{pid or 'self'}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


__all__ = ["MMAP_THRESHOLD", "anon_bytes", "fix_mmap_threshold", "rss_bytes", "trim"]
