"""The controller's durable state: an append-only journal of state-machine events.

Java keeps no snapshot of the replicas tables either: DLedgerController
appends each request's events to the DLedger log and rebuilds the state by
replaying it. pyrmq's single controller does the same with a local file,
``<controllerStorePath>/events.journal``: one record per request, written and
fsynced before the request is answered.

Record layout (big-endian)::

    int32   length of the payload
    uint32  CRC32 of the payload
    bytes   payload: UTF-8 JSON array of the request's events (events.event_to_json)

One record holds all events of one request, so a crash applies all or none.
``replay`` stops at the first record that is short or fails its CRC or JSON
(the torn tail of a crash mid-append), truncates the file there and returns
what came before. A controller group of 3 will replicate these same records
once pyrmq has a DLedger-compatible log (issue 13); see docs/controller.md.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import zlib
from collections.abc import Sequence

from pyrmq.common.files import fsync_dir
from pyrmq.controller.events import Event, event_from_json, event_to_json

log = logging.getLogger("pyrmq.controller")

JOURNAL_FILE = "events.journal"

#: length, crc32
RECORD_HEADER = struct.Struct(">iI")
#: a sane upper bound for one request's events; a bigger length is a torn or corrupt header
MAX_RECORD = 16 * 1024 * 1024


def encode_record(events: Sequence[Event]) -> bytes:
    payload = json.dumps([event_to_json(e) for e in events], separators=(",", ":")).encode("utf-8")
    return RECORD_HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def decode_records(data: bytes) -> tuple[list[list[Event]], int]:
    """Every whole, valid record from the start of ``data``, and the offset where they end."""
    out: list[list[Event]] = []
    pos = 0
    while pos + RECORD_HEADER.size <= len(data):
        length, crc = RECORD_HEADER.unpack_from(data, pos)
        start = pos + RECORD_HEADER.size
        if length < 0 or length > MAX_RECORD or start + length > len(data):
            break
        payload = data[start : start + length]
        if zlib.crc32(payload) != crc:
            break
        try:
            raw = json.loads(payload.decode("utf-8"))
            if not isinstance(raw, list):
                break
            events = [event_from_json(e) for e in raw]
        except (ValueError, UnicodeDecodeError):
            break
        out.append(events)
        pos = start + length
    return out, pos


class EventJournal:
    """``append`` returns once the record is on disk; ``replay`` reads it back at start."""

    def __init__(self, store_path: str) -> None:
        self.directory = store_path
        self.path = os.path.join(store_path, JOURNAL_FILE)
        self._file: int | None = None

    def replay(self) -> list[list[Event]]:
        """Read all records, drop a torn tail (the file is truncated to the last good record)."""
        os.makedirs(self.directory, exist_ok=True)
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return []
        records, end = decode_records(data)
        if end < len(data):
            log.warning(
                "controller journal %s: dropping %d bytes of torn tail at offset %d", self.path, len(data) - end, end
            )
            with open(self.path, "rb+") as f:
                f.truncate(end)
                os.fsync(f.fileno())
        return records

    def open(self) -> None:
        os.makedirs(self.directory, exist_ok=True)
        existed = os.path.exists(self.path)
        self._file = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if not existed:
            fsync_dir(self.directory)

    def append(self, events: Sequence[Event]) -> None:
        """Write one record and fsync it. Raises OSError (the request then fails, nothing applied)."""
        if self._file is None:
            self.open()
        assert self._file is not None
        record = encode_record(events)
        size = os.fstat(self._file).st_size
        try:
            written = 0
            while written < len(record):
                written += os.write(self._file, record[written:])
            os.fsync(self._file)
        except OSError:
            # leave no half record in the middle of the file: later records would be unreadable
            try:
                os.ftruncate(self._file, size)
            except OSError:
                log.exception("controller journal %s: cannot cut a failed append", self.path)
            raise

    def close(self) -> None:
        if self._file is not None:
            os.close(self._file)
            self._file = None
