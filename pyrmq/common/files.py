"""Writing a small file so that a crash leaves either the old or the new content.

Java ``MixAll#string2File`` (write ``<file>.tmp``, keep the old file as
``<file>.bak``, rename) used by every ``ConfigManager#persist``; here each step
is also fsynced, the directory included, so the rename itself survives a
power loss. The NameServer's config and KV files and the broker's JSON config
files all go through ``write_file_atomically``.
"""

from __future__ import annotations

import os
import shutil

__all__ = ["fsync_dir", "write_file_atomically"]


def fsync_dir(path: str) -> None:
    """fsync a directory so a rename or a new file in it is durable (best effort)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_file_atomically(path: str, data: str | bytes, *, backup: bool = True) -> None:
    """Replace ``path`` with ``data`` (str is written as UTF-8).

    Order: write and fsync ``<file>.tmp``; copy the current file to ``<file>.bak``
    and fsync it (``backup``); rename the tmp file over ``path``; fsync the
    directory. Raises ``OSError``; callers decide whether that is fatal.
    """
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(raw)
        f.flush()
        os.fsync(f.fileno())
    if backup and os.path.exists(path):
        shutil.copyfile(path, path + ".bak")
        with open(path + ".bak", "rb+") as f:
            os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(directory)
