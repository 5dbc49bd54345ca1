"""Small filesystems for full-disk tests, and a file that grows until one is full.

small_filesystem() mounts a tmpfs of the given size on a folder (mounting needs root, which the
test machines have); when that is refused it makes an ext4 image on a loop device; when neither
works the test fails and says why (a full-disk test never passes by not running).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def _run(argv: list[str]) -> str | None:
    """None when the command succeeded, else its error text."""
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{argv[0]}: {e}"
    return None if r.returncode == 0 else f"{' '.join(argv)}: {(r.stderr or r.stdout).strip()}"


@contextlib.contextmanager
def small_filesystem(path: Path, size_mib: int) -> Iterator[Path]:
    """A filesystem of ``size_mib`` MiB mounted on ``path`` (created) for the duration."""
    path.mkdir(parents=True, exist_ok=True)
    errors = []
    err = _run(["mount", "-t", "tmpfs", "-o", f"size={size_mib}m,mode=0755", "tmpfs", str(path)])
    if err is not None:
        errors.append(err)
        image = path.parent / f".{path.name}.img"
        with open(image, "wb") as f:
            f.truncate(size_mib * 1024 * 1024)
        for argv in (["mkfs.ext4", "-q", "-F", "-m", "0", str(image)], ["mount", "-o", "loop", str(image), str(path)]):
            err = _run(argv)
            if err is not None:
                errors.append(err)
                image.unlink(missing_ok=True)
                pytest.fail(f"cannot make a {size_mib} MiB filesystem at {path}: {'; '.join(errors)}")
    try:
        yield path
    finally:
        if _run(["umount", str(path)]) is not None:
            _run(["umount", "-l", str(path)])
        image = path.parent / f".{path.name}.img"
        image.unlink(missing_ok=True)


class Filler(threading.Thread):
    """Grows ``path`` by ``chunk`` bytes every ``pause`` seconds until the filesystem is full
    (ENOSPC), then sets ``full``; ``remove()`` deletes it (space back)."""

    def __init__(self, path: Path, chunk: int = 256 * 1024, pause: float = 0.005) -> None:
        super().__init__(name=f"filler-{path.name}", daemon=True)
        self.path = path
        self.chunk = chunk
        self.pause = pause
        self.full = threading.Event()
        self.written = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        block = b"\xa5" * self.chunk
        try:
            with open(self.path, "wb", buffering=0) as f:
                while True:
                    try:
                        self.written += f.write(block) or 0
                    except OSError as e:
                        if e.errno != errno.ENOSPC:
                            raise
                        self.full.set()
                        return
                    time.sleep(self.pause)
        except BaseException as e:  # reported by the test, not lost in the thread
            self.error = e
            self.full.set()

    def remove(self) -> None:
        self.join(timeout=10)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def shrink(self, nbytes: int) -> int:
        """Give back ``nbytes`` of what it took (all of it if it took less); the bytes freed."""
        self.join(timeout=10)
        size = os.path.getsize(self.path)
        os.truncate(self.path, max(0, size - nbytes))
        return min(size, nbytes)


def free_bytes(path: Path) -> int:
    return shutil.disk_usage(path).free
