"""Store directories compared between a master and its replica, whichever broker wrote them."""

from __future__ import annotations

import os
import time
from pathlib import Path


def commit_log_files(store: Path) -> dict[str, bytes]:
    """Every commit-log file of a store, by name (empty when it has none yet)."""
    d = store / "commitlog"
    return {name: (d / name).read_bytes() for name in sorted(os.listdir(d))} if d.is_dir() else {}


def commit_log_differences(want: dict[str, bytes], got: dict[str, bytes]) -> list[str]:
    """Files that differ. Unwritten tails are zero on both sides (files are created sparse); a file
    only one side has must be all zeros: Java's AllocateMappedFileService creates the next file
    before it is needed."""
    out = []
    for name in sorted(set(want) | set(got)):
        a, b = want.get(name), got.get(name)
        if a is None or b is None:
            if (a or b or b"").count(0) != len(a or b or b""):
                out.append(f"{name} (only on the {'master' if b is None else 'slave'}, not empty)")
        elif a != b:
            out.append(name)
    return out


def wait_identical_commit_logs(master_store: Path, slave_store: Path, timeout: float = 60) -> dict[str, bytes]:
    """Until the slave's commit log is the master's, byte for byte, file for file."""
    deadline = time.monotonic() + timeout
    while True:
        want, got = commit_log_files(master_store), commit_log_files(slave_store)
        differ = commit_log_differences(want, got)
        if want and not differ:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"master files {sorted(want)}, slave files {sorted(got)}, differing {differ}")
        time.sleep(0.3)
