"""The core's side of a front-end link: each forwarded client connection becomes an ordinary
Channel whose transport writes into the link.

The Channel code (framing, dispatch, flow control, write batching, idle sweeps, close
listeners) runs unchanged: ForwardedTransport gives it what an asyncio socket transport gives
(write, writelines, close, abort, pause/resume reading, the peer's address), and the link's
DATA messages are fed into it as socket reads would be. The front-end reports back-pressure
from the client's socket (PAUSE_WRITING / RESUME_WRITING); pausing reading is sent to the
front-end, which stops reading that client.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from pyrmq.remoting.link import LinkDecoder, LinkKind, LinkMessage, LinkProtocolError, decode_open, encode

log = logging.getLogger("pyrmq.remoting.link")


def _split_addr(addr: str) -> tuple[str, int] | None:
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


class ForwardedTransport(asyncio.Transport):
    """One client connection held by a front-end, as the core's Channel sees it."""

    def __init__(self, link: CoreLink, conn: int, peer: str, local: str, protocol: asyncio.BaseProtocol) -> None:
        super().__init__()
        self._link = link
        self.conn = conn
        self._extra = {"peername": _split_addr(peer), "sockname": _split_addr(local), "socket": None}
        self._protocol = protocol
        self._closing = False
        self._lost = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        value = self._extra.get(name)
        return default if value is None else value

    def is_closing(self) -> bool:
        return self._closing

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._protocol

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._protocol = protocol

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._closing and data:
            self._link.send(LinkKind.DATA, self.conn, data)

    def writelines(self, list_of_data: Any) -> None:
        if self._closing:
            return
        parts = list(list_of_data)
        if len(parts) == 1:
            self.write(parts[0])
        elif parts:
            self._link.send(LinkKind.DATA, self.conn, b"".join(parts))

    def can_write_eof(self) -> bool:
        return False

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        """The front-end applies the water marks to the client's socket (its own settings)."""

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None:
        if not self._closing:
            self._link.send(LinkKind.PAUSE_READING, self.conn)

    def resume_reading(self) -> None:
        if not self._closing:
            self._link.send(LinkKind.RESUME_READING, self.conn)

    def is_reading(self) -> bool:
        return not self._closing

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        self._link.send(LinkKind.CLOSE, self.conn)
        asyncio.get_running_loop().call_soon(self.connection_lost, None)

    def abort(self) -> None:
        self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        """The connection is over (closed by either side, or the link is gone): once."""
        if self._lost:
            return
        self._lost = True
        self._closing = True
        self._link.forget(self.conn)
        self._protocol.connection_lost(exc)

    def feed(self, data: bytes) -> None:
        """Bytes the client sent, as a socket read delivers them."""
        if self._closing:
            return
        protocol = self._protocol
        if isinstance(protocol, asyncio.BufferedProtocol):
            view, pos, n = memoryview(data), 0, len(data)
            while pos < n and not self._closing:
                buf = memoryview(protocol.get_buffer(n - pos))
                k = min(len(buf), n - pos)
                buf[:k] = view[pos : pos + k]
                protocol.buffer_updated(k)
                pos += k
        else:
            protocol.data_received(data)  # type: ignore[attr-defined]


class CoreLink(asyncio.Protocol):
    """The core's end of one front-end's link. ``make_protocol`` is the server's channel factory."""

    def __init__(self, make_protocol: Callable[[], asyncio.BaseProtocol], name: str = "front-end") -> None:
        self._make_protocol = make_protocol
        self.name = name
        self._decoder = LinkDecoder()
        self._conns: dict[int, ForwardedTransport] = {}
        self.transport: asyncio.Transport | None = None
        self.ready = asyncio.Event()

    @property
    def connections(self) -> int:
        return len(self._conns)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def send(self, kind: LinkKind, conn: int, payload: bytes | bytearray | memoryview = b"") -> None:
        t = self.transport
        if t is not None and not t.is_closing():
            t.writelines(encode(kind, conn, payload))

    def forget(self, conn: int) -> None:
        self._conns.pop(conn, None)

    def data_received(self, data: bytes) -> None:
        try:
            messages = self._decoder.feed(data)
        except LinkProtocolError as e:
            log.error("%s link: %s; closing it", self.name, e)
            if self.transport is not None:
                self.transport.close()
            return
        for m in messages:
            self._on_message(m)

    def _on_message(self, m: LinkMessage) -> None:
        kind = m.kind
        if kind is LinkKind.DATA:
            t = self._conns.get(m.conn)
            if t is not None:
                t.feed(m.payload)
        elif kind is LinkKind.OPEN:
            peer, local = decode_open(m.payload)
            protocol = self._make_protocol()
            t = ForwardedTransport(self, m.conn, peer, local, protocol)
            self._conns[m.conn] = t
            protocol.connection_made(t)
        elif kind is LinkKind.CLOSE:
            t = self._conns.get(m.conn)
            if t is not None:
                t._closing = True  # the client is gone: nothing more goes out
                t.connection_lost(None)
        elif kind is LinkKind.READY:
            self.ready.set()
        elif kind is LinkKind.PAUSE_WRITING:
            t = self._conns.get(m.conn)
            if t is not None:
                t.get_protocol().pause_writing()
        elif kind is LinkKind.RESUME_WRITING:
            t = self._conns.get(m.conn)
            if t is not None:
                t.get_protocol().resume_writing()
        else:
            log.warning("%s link: unexpected %s for connection %d", self.name, kind.name, m.conn)

    def connection_lost(self, exc: Exception | None) -> None:
        """The front-end is gone: so are its clients' connections."""
        for t in list(self._conns.values()):
            t._closing = True
            t.connection_lost(exc)
        self._conns.clear()


__all__ = ["CoreLink", "ForwardedTransport"]
