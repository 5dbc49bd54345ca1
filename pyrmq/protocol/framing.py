"""Sans-IO frame decoder: bytes in, RemotingCommands out.

Java: remoting.netty.NettyDecoder (a LengthFieldBasedFrameDecoder over the
int32 length prefix) + RemotingCommand.decode. One bytearray with a read and a
write offset (after wsproto's Buffer); `get_buffer`/`buffer_updated` let an
asyncio.BufferedProtocol receive straight into it.

Invariant: `feed`/`buffer_updated` return commands or raise
RemotingProtocolError; anything else escaping is a bug. After an error the
decoder stays failed (the connection must be closed).
"""

from __future__ import annotations

import struct

from pyrmq.protocol.command import RemotingCommand, decode_frame
from pyrmq.protocol.errors import RemotingProtocolError

MAX_FRAME_LENGTH = 16 * 1024 * 1024  # NettyDecoder frameMaxLength, includes the 4-byte prefix (spec §1.2)

_LEN = struct.Struct(">i")
_MIN_READ = 64 * 1024  # a new read buffer's size
_MIN_FREE = 16 * 1024  # room a read is given at least, else the buffer is compacted or replaced
#: read buffers of _MIN_READ bytes given back by decoders that hold no partial frame: 5,000
#: connections that each kept theirs held 320 MiB; shared, the buffers in use are about as many
#: as the connections in the middle of a frame. list.append/pop are atomic, so decoders on
#: several threads can share it; a buffer is never resized, so a stale view cannot break it.
_POOL: list[bytearray] = []
_POOL_MAX = 256
_EMPTY = bytearray()  # never written: get_buffer takes a real buffer first


class FrameDecoder:
    """Splits a byte stream into frames and decodes each one.

    Growing never resizes the live bytearray (a new one is allocated), and
    compaction is a same-size slice move, so a memoryview handed out by
    `get_buffer` can never make a resize fail with BufferError.
    """

    __slots__ = ("_buf", "_end", "_error", "_need", "_start", "max_frame_length")

    def __init__(self, max_frame_length: int = MAX_FRAME_LENGTH) -> None:
        self.max_frame_length = max_frame_length
        self._buf = _EMPTY  # taken on a read, given back when no frame is pending: an idle connection holds nothing
        self._start = 0  # first unread byte
        self._end = 0  # one past the last received byte
        self._need = 0  # bytes the frame being received needs in total (0 = unknown)
        self._error: RemotingProtocolError | None = None

    @property
    def failed(self) -> bool:
        """A frame was malformed: the decoder refuses everything after it (the connection must close)."""
        return self._error is not None

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a decoded frame."""
        return self._end - self._start

    def feed(self, data: bytes | bytearray | memoryview) -> list[RemotingCommand]:
        """Add received bytes; return every command completed by them."""
        n = len(data)
        if n == 0:
            return self.buffer_updated(0)
        view = self.get_buffer(n)
        view[:n] = data
        del view
        return self.buffer_updated(n)

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        """A writable view of free space (asyncio.BufferedProtocol.get_buffer)."""
        if self._error is not None:
            raise self._error
        want = max(sizehint, _MIN_FREE, self._need - (self._end - self._start))
        buf = self._buf
        if len(buf) - self._end < want:
            pending = self._end - self._start
            if len(buf) >= pending + want:
                # compact in place: same-size slice move, never a resize
                if pending:
                    buf[0:pending] = buf[self._start : self._end]
            else:
                new = _take(max(_MIN_READ, pending + want))
                if pending:
                    new[0:pending] = buf[self._start : self._end]
                self._buf = buf = new
            self._start, self._end = 0, pending
        return memoryview(buf)[self._end :]

    def buffer_updated(self, nbytes: int) -> list[RemotingCommand]:
        """`nbytes` were written into the last `get_buffer` view; decode complete frames."""
        if self._error is not None:
            raise self._error
        self._end += nbytes
        try:
            return self._drain()
        except RemotingProtocolError as e:
            self._error = e
            raise

    def _drain(self) -> list[RemotingCommand]:
        buf = self._buf
        start, end = self._start, self._end
        out: list[RemotingCommand] = []
        max_len = self.max_frame_length
        while end - start >= 4:
            (length,) = _LEN.unpack_from(buf, start)
            if length < 4:
                raise RemotingProtocolError(f"frame length {length} is smaller than the header-length word")
            if length + 4 > max_len:
                # Netty compares length + prefix with frameMaxLength (TooLongFrameException)
                raise RemotingProtocolError(f"frame of {length + 4} bytes exceeds the limit of {max_len}")
            total = 4 + length
            if end - start < total:
                self._need = total
                break
            out.append(decode_frame(memoryview(buf)[start + 4 : start + total]))
            start += total
        else:
            self._need = 0
        if start == end:
            start = end = 0
            # nothing pending: the buffer goes back to the pool (or, if large, away)
            if len(buf) == _MIN_READ and len(_POOL) < _POOL_MAX:
                _POOL.append(buf)
            self._buf = _EMPTY
        self._start, self._end = start, end
        return out


def _take(size: int) -> bytearray:
    """A zero-offset buffer of at least `size` bytes: a pooled one when _MIN_READ will do."""
    if size <= _MIN_READ:
        try:
            return _POOL.pop()
        except IndexError:
            return bytearray(_MIN_READ)
    return bytearray(size)
