"""The classic HA transfer protocol, sans-IO: bytes in, frames or offsets out; values in, bytes out.

Java: store.ha.DefaultHAClient (REPORT_HEADER_SIZE, reportSlaveMaxOffset, dispatchReadRequest) and
store.ha.DefaultHAConnection (TRANSFER_HEADER_SIZE, ReadSocketService, WriteSocketService). Two
one-way byte streams over one TCP connection, no framing word, no version, all big-endian:

- slave -> master: reports, 8 bytes each: the slave's max commit-log offset (``>q``). The first
  report says where the transfer starts; every later one acknowledges what the slave holds.
- master -> slave: transfer frames, a 12-byte header (physical offset ``>q``, body size ``>i``)
  then ``body size`` bytes of the master's commit log starting at that offset. A frame of body
  size 0 is a heartbeat: it carries the offset the master will send from next.

Invariant of the decoders: ``feed`` returns frames (or the latest report) or raises
HAProtocolError; anything else escaping is a bug. After an error a decoder stays failed: the
connection must be closed. docs/ha.md tells the Java rules in full.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import Enum

from pyrmq.store import message as m

#: slave -> master: the slave's max physical offset (DefaultHAClient.REPORT_HEADER_SIZE = 8)
REPORT = struct.Struct(
    ">q"  # slaveMaxOffset
)
REPORT_HEADER_SIZE = REPORT.size

#: master -> slave frame header (DefaultHAConnection.TRANSFER_HEADER_SIZE = 8 + 4)
TRANSFER_HEADER = struct.Struct(
    ">q"  # physicOffset: commit-log offset of the first body byte
    "i"  # bodySize: 0 for a heartbeat
)
TRANSFER_HEADER_SIZE = TRANSFER_HEADER.size

#: DefaultHAClient.READ_MAX_BUFFER_SIZE: the Java slave reads into a 4 MiB buffer, so a frame whose
#: header and body exceed it can never be dispatched there; pyrmq refuses it instead of stalling.
MAX_TRANSFER_BODY_SIZE = 4 * 1024 * 1024 - TRANSFER_HEADER_SIZE

_MIN_COMPACT = 64 * 1024


class HAConnectionState(Enum):
    """Java store.ha.HAConnectionState, in Java's order: AutoSwitch HA puts ``ordinal`` on the wire.
    Classic HA uses READY, TRANSFER and SHUTDOWN only."""

    READY = "READY"
    HANDSHAKE = "HANDSHAKE"
    TRANSFER = "TRANSFER"
    SUSPEND = "SUSPEND"
    SHUTDOWN = "SHUTDOWN"

    @property
    def ordinal(self) -> int:
        return _STATE_ORDER.index(self)

    @classmethod
    def from_ordinal(cls, value: int) -> HAConnectionState | None:
        return _STATE_ORDER[value] if 0 <= value < len(_STATE_ORDER) else None


_STATE_ORDER: tuple[HAConnectionState, ...] = tuple(HAConnectionState)


class HAProtocolError(Exception):
    """The peer sent bytes that break the HA protocol or the commit-log stream: close the connection."""


@dataclass(frozen=True, slots=True)
class TransferFrame:
    """One master -> slave frame. ``body`` is empty for a heartbeat."""

    physical_offset: int
    body: bytes

    @property
    def is_heartbeat(self) -> bool:
        return not self.body

    @property
    def end_offset(self) -> int:
        return self.physical_offset + len(self.body)


def encode_report(max_offset: int) -> bytes:
    """The slave's 8-byte report of its max physical offset."""
    if max_offset < 0:
        raise ValueError(f"a slave reports a non-negative offset, not {max_offset}")
    return REPORT.pack(max_offset)


def encode_transfer_header(physical_offset: int, body_size: int) -> bytes:
    """The 12-byte header of a transfer frame (body_size 0: a heartbeat)."""
    if physical_offset < 0 or not 0 <= body_size <= MAX_TRANSFER_BODY_SIZE:
        raise ValueError(f"bad transfer header: offset {physical_offset}, body size {body_size}")
    return TRANSFER_HEADER.pack(physical_offset, body_size)


def first_transfer_offset(slave_request_offset: int, master_max_offset: int, mapped_file_size: int) -> int:
    """Where the master starts streaming to a slave whose first report was ``slave_request_offset``.

    Java DefaultHAConnection.WriteSocketService#run: a slave reporting 0 (an empty store) gets the
    start of the master's last commit-log file, not offset 0; any other slave gets what it asked for.
    """
    if slave_request_offset == 0:
        return max(master_max_offset - master_max_offset % mapped_file_size, 0)
    return slave_request_offset


class _Buffer:
    """Received bytes with a read offset (wsproto's Buffer): consumed bytes are dropped in bulk."""

    __slots__ = ("_buf", "_start")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._start = 0

    def __len__(self) -> int:
        return len(self._buf) - self._start

    def append(self, data: bytes | bytearray | memoryview) -> None:
        self._buf += data

    def peek(self, st: struct.Struct) -> tuple[int, ...] | None:
        if len(self) < st.size:
            return None
        return st.unpack_from(self._buf, self._start)

    def take(self, n: int) -> bytes:
        out = bytes(self._buf[self._start : self._start + n])
        self.skip(n)
        return out

    def skip(self, n: int) -> None:
        self._start += n
        if self._start == len(self._buf):
            self._buf.clear()
            self._start = 0
        elif self._start >= _MIN_COMPACT and self._start * 2 >= len(self._buf):
            del self._buf[: self._start]
            self._start = 0


class StreamDecoder:
    """What every HA stream decoder shares: a buffer of what arrived, and a first protocol error
    that stays (the connection is closed after it; feeding more raises it again)."""

    __slots__ = ("_buf", "_error")

    def __init__(self) -> None:
        self._buf = _Buffer()
        self._error: HAProtocolError | None = None

    def _fail(self, msg: str) -> HAProtocolError:
        self._error = HAProtocolError(msg)
        return self._error

    def _append(self, data: bytes | bytearray | memoryview) -> _Buffer:
        """``data`` added to the buffer, unless an earlier error stands."""
        if self._error is not None:
            raise self._error
        self._buf.append(data)
        return self._buf


class TransferDecoder(StreamDecoder):
    """Slave side: the master's byte stream -> TransferFrames. Java DefaultHAClient#dispatchReadRequest.

    ``feed`` returns the frames its bytes completed and keeps a partial frame buffered; it raises
    HAProtocolError for a negative offset or a body size outside [0, max_body_size].
    """

    __slots__ = ("max_body_size",)

    def __init__(self, max_body_size: int = MAX_TRANSFER_BODY_SIZE) -> None:
        super().__init__()
        self.max_body_size = max_body_size

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes | bytearray | memoryview) -> list[TransferFrame]:
        buf = self._append(data)
        frames: list[TransferFrame] = []
        while True:
            header = buf.peek(TRANSFER_HEADER)
            if header is None:
                break
            offset, size = header
            if offset < 0 or not 0 <= size <= self.max_body_size:
                raise self._fail(f"bad transfer header: physical offset {offset}, body size {size}")
            if len(buf) < TRANSFER_HEADER_SIZE + size:
                break
            buf.skip(TRANSFER_HEADER_SIZE)
            frames.append(TransferFrame(offset, buf.take(size)))
        return frames


class ReportDecoder(StreamDecoder):
    """Master side: the slave's reports -> the latest offset it reported.

    Java DefaultHAConnection.ReadSocketService#processReadEvent reads only the last whole report in
    what arrived; so does ``feed`` (None when no report completed). A negative offset raises
    HAProtocolError (Java would wait forever for data there).
    """

    __slots__ = ()

    def feed(self, data: bytes | bytearray | memoryview) -> int | None:
        buf = self._append(data)
        whole = len(buf) - len(buf) % REPORT_HEADER_SIZE
        if whole == 0:
            return None
        buf.skip(whole - REPORT_HEADER_SIZE)
        (offset,) = REPORT.unpack(buf.take(REPORT_HEADER_SIZE))
        if offset < 0:
            raise self._fail(f"slave reported a negative offset {offset}")
        return int(offset)


class CommitLogStreamCheck:
    """Refuses replicated bytes that cannot be commit-log records before the slave writes them.

    Java's slave appends whatever a frame carries; pyrmq walks the record heads the stream crosses
    (a record may be split over frames) and refuses a frame in which one is not a message or
    blank record of a plausible size whose PHYSICALOFFSET is its own position, or a blank that
    does not end its file. Record bodies and CRCs are not checked. The check only holds from a
    record boundary on: the slave's max offset after recovery, or the master's first offset for
    an empty slave (``reset``). ``check`` changes nothing when it raises.
    """

    #: enough of a message record's head to read PHYSICALOFFSET
    _HEAD = m.PHYSICALOFFSET_OFFSET + 8

    __slots__ = ("_head", "_next_record", "_prev", "_stream_end", "mapped_file_size")

    def __init__(self, mapped_file_size: int, offset: int) -> None:
        self.mapped_file_size = mapped_file_size
        self.reset(offset)

    def reset(self, offset: int) -> None:
        """Start over at ``offset``, which must be a record boundary."""
        self._stream_end = offset
        self._next_record = offset
        self._head = b""  # bytes already seen of the record head at _next_record
        self._prev = (offset, offset, b"")

    @property
    def stream_end(self) -> int:
        return self._stream_end

    def check(self, offset: int, body: bytes | bytearray | memoryview) -> None:
        if offset != self._stream_end:
            raise HAProtocolError(f"frame at {offset} does not continue the stream at {self._stream_end}")
        end = offset + len(body)
        nxt, head = self._next_record, self._head
        file_size = self.mapped_file_size
        while nxt < end:
            have = len(head)
            start_in_body = nxt + have - offset  # where the unseen part of the head begins in body
            need = self._HEAD - have
            head = head + bytes(body[start_in_body : start_in_body + need])
            if len(head) < 8:
                break  # the head continues in the next frame
            total, magic = m.peek_total_size_and_magic(head)
            remaining = file_size - nxt % file_size
            if magic == m.BLANK_MAGIC_CODE:
                if total != remaining:
                    raise HAProtocolError(f"blank record at {nxt} of size {total}; the file has {remaining} left")
            elif magic in (m.MESSAGE_MAGIC_CODE, m.MESSAGE_MAGIC_CODE_V2):
                if not m.MIN_RECORD_SIZE <= total <= remaining:
                    raise HAProtocolError(f"record at {nxt} of size {total}; the file has {remaining} left")
                if len(head) < self._HEAD:
                    break
                phy = m.peek_physical_offset(head)
                if phy != nxt:
                    raise HAProtocolError(f"record at {nxt} claims physical offset {phy}")
            else:
                raise HAProtocolError(f"no record at {nxt}: magic code {magic & 0xFFFFFFFF:#010x}")
            nxt += total
            head = b""
        self._prev = (self._stream_end, self._next_record, self._head)
        self._next_record, self._head, self._stream_end = nxt, head, end

    def undo(self) -> None:
        """Forget the last ``check`` (its bytes could not be written after all)."""
        self._stream_end, self._next_record, self._head = self._prev


__all__ = [
    "MAX_TRANSFER_BODY_SIZE",
    "REPORT_HEADER_SIZE",
    "TRANSFER_HEADER_SIZE",
    "CommitLogStreamCheck",
    "HAConnectionState",
    "HAProtocolError",
    "ReportDecoder",
    "StreamDecoder",
    "TransferDecoder",
    "TransferFrame",
    "encode_report",
    "encode_transfer_header",
    "first_transfer_offset",
]
