"""Reading and writing the broker's JSON config files like Java's ConfigManager.

Java: ``common/ConfigManager`` (load from ``x.json``, falling back to
``x.json.bak``; persist through ``MixAll#string2File``: write ``.tmp``, keep
``.bak``, rename). Bodies are fastjson-dialect JSON (unquoted integer map keys
are read by the lenient parser).
"""
from __future__ import annotations

import logging
import os
from typing import Any

from pyrmq.namesrv.config import write_file_atomically
from pyrmq.remoting.bodies import BodyDecodeError, lenient_loads

log = logging.getLogger("pyrmq.broker")


def load_json_file(path: str) -> Any | None:
    """The parsed JSON of ``path`` (or of ``path.bak`` when it is unreadable); None when absent."""
    for p in (path, path + ".bak"):
        try:
            with open(p, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            continue
        if not data.strip():
            continue
        try:
            return lenient_loads(data)
        except BodyDecodeError as e:
            log.error("config file %s is not readable JSON: %s", p, e)
    return None


def persist_json_file(path: str, data: bytes) -> None:
    try:
        write_file_atomically(path, data.decode("utf-8"))
    except OSError as e:
        log.error("persist %s failed: %s", os.path.basename(path), e)
