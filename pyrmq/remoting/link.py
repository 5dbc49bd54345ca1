"""The link between a broker's front-end processes and its core: a sans-IO codec.

A front-end (remoting/frontend.py) accepts client connections on the broker's port and pumps
their bytes to the core over one Unix socket; the core runs each client's connection as if it
were its own (remoting/forwarded.py). One link message says what happened on one client
connection:

    u32 length (of what follows) | u8 kind | u32 connection id | payload

OPEN carries "peer address\\nlocal address", DATA the connection's bytes as they came (or go),
the others nothing. docs/multicore.md has the layout this belongs to.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

_HEAD = struct.Struct(">IBI")
HEAD_SIZE = _HEAD.size  # 9
#: a DATA message carries at most this much; longer writes are cut into several messages
MAX_PAYLOAD = 1 << 20


class LinkKind(enum.IntEnum):
    OPEN = 1  # front-end -> core: a client connected
    DATA = 2  # either way: the connection's bytes
    CLOSE = 3  # either way: the connection is (to be) closed
    PAUSE_READING = 4  # core -> front-end: stop reading the client (the core's write buffer is full)
    RESUME_READING = 5
    PAUSE_WRITING = 6  # front-end -> core: the client does not read; the core's channel stops too
    RESUME_WRITING = 7
    READY = 8  # front-end -> core: accepting (connection id 0)


class LinkProtocolError(Exception):
    """The peer sent something that is not a link message: the link is closed."""


@dataclass(frozen=True, slots=True)
class LinkMessage:
    kind: LinkKind
    conn: int
    payload: bytes = b""


def encode(kind: LinkKind, conn: int, payload: bytes | bytearray | memoryview = b"") -> list[bytes | memoryview]:
    """The parts of one or more messages (DATA longer than MAX_PAYLOAD is cut) for writelines."""
    n = len(payload)
    if n <= MAX_PAYLOAD:
        head = _HEAD.pack(n + 5, kind, conn)
        return [head, payload] if n else [head]  # type: ignore[list-item]
    view = memoryview(payload)
    parts: list[bytes | memoryview] = []
    for start in range(0, n, MAX_PAYLOAD):
        chunk = view[start : start + MAX_PAYLOAD]
        parts += (_HEAD.pack(len(chunk) + 5, kind, conn), chunk)
    return parts


def encode_open(conn: int, peer: str, local: str) -> list[bytes | memoryview]:
    return encode(LinkKind.OPEN, conn, f"{peer}\n{local}".encode())


def decode_open(payload: bytes) -> tuple[str, str]:
    peer, _, local = payload.decode("utf-8", "replace").partition("\n")
    return peer, local


class LinkDecoder:
    """Bytes in, LinkMessages out; a partial message waits for the rest."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes | bytearray | memoryview) -> list[LinkMessage]:
        buf = self._buf
        buf += data
        out: list[LinkMessage] = []
        pos, end = 0, len(buf)
        while end - pos >= HEAD_SIZE:
            length, kind, conn = _HEAD.unpack_from(buf, pos)
            if length < 5 or length - 5 > MAX_PAYLOAD:
                raise LinkProtocolError(f"link message of length {length}")
            if end - pos < 4 + length:
                break
            try:
                k = LinkKind(kind)
            except ValueError:
                raise LinkProtocolError(f"unknown link message kind {kind}") from None
            out.append(LinkMessage(k, conn, bytes(buf[pos + HEAD_SIZE : pos + 4 + length])))
            pos += 4 + length
        if pos:
            del buf[:pos]
        return out

    @property
    def buffered(self) -> int:
        return len(self._buf)


__all__ = [
    "HEAD_SIZE",
    "MAX_PAYLOAD",
    "LinkDecoder",
    "LinkKind",
    "LinkMessage",
    "LinkProtocolError",
    "decode_open",
    "encode",
    "encode_open",
]
