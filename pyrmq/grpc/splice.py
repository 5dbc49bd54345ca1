"""The permissive gRPC port: TLS and plaintext on one port, told apart by the first byte.

Java: the proxy's netty pipeline peeks at each connection (``ProtocolNegotiator``/``TlsModeHandler``
in permissive mode) and adds the SSL handler for a TLS handshake. grpcio serves a port either
with TLS or without, so pyrmq's public port is this asyncio listener: it reads the first byte,
opens a connection to one of two grpcio ports on 127.0.0.1 (TLS for a ClientHello, plaintext
otherwise) and copies bytes both ways until either side closes. The client's own address is
kept per inner connection, so the RPCs still see it (``peer_of``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket

from pyrmq.remoting.tls import HANDSHAKE_MAGIC

log = logging.getLogger("pyrmq.grpc.splice")

INNER_HOST = "127.0.0.1"
FIRST_BYTE_TIMEOUT_S = 10.0  # a gRPC client speaks first (ClientHello or the HTTP/2 preface)
CHUNK = 64 * 1024


def _addr(sockname: object) -> str:
    """``host:port`` as grpcio's ``context.peer()`` names it (IPv6 in brackets)."""
    if isinstance(sockname, tuple) and len(sockname) >= 2:
        host = str(sockname[0]).removeprefix("::ffff:")  # an IPv4 client on a dual-stack socket
        return f"[{host}]:{sockname[1]}" if ":" in host else f"{host}:{sockname[1]}"
    return str(sockname)


async def _pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    """One direction: read, write, wait for the writer's buffer to drain (back-pressure)."""
    with contextlib.suppress(OSError):
        while data := await src.read(CHUNK):
            dst.write(data)
            await dst.drain()


class SniffingListener:
    """Accepts on the public port and splices each connection to ``tls_port`` or ``plain_port``."""

    def __init__(self, host: str, port: int, tls_port: asyncio.Future[int], plain_port: int) -> None:
        self.host = host
        self.requested_port = port
        self.tls_port = tls_port  # the TLS server may still be starting (test mode's key)
        self.plain_port = plain_port
        self.port = port
        self.first_byte_timeout = FIRST_BYTE_TIMEOUT_S
        self._server: asyncio.Server | None = None
        self._splices: set[asyncio.Task[None]] = set()
        self._peers: dict[str, str] = {}  # the inner connection's local address -> the client's

    async def start(self) -> int:
        if ":" in self.host:  # IPv6: dual-stack as grpcio binds "[::]" (asyncio would set IPV6_V6ONLY)
            sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
                sock.bind((self.host, self.requested_port))
            except OSError:
                sock.close()
                raise
            self._server = await asyncio.start_server(self._accepted, sock=sock)
        else:
            self._server = await asyncio.start_server(self._accepted, self.host, self.requested_port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    def peer_of(self, inner: str) -> str:
        """The client's address for an inner connection's (grpcio's peer) ``host:port``."""
        return self._peers.get(inner, inner)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._splices):
            task.cancel()
        if self._splices:
            await asyncio.gather(*self._splices, return_exceptions=True)

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._splices.add(task)
        try:
            await self._splice(reader, writer)
        except asyncio.CancelledError:  # close(): ends here, as a cancelled handler is logged as an error
            pass
        finally:
            self._splices.discard(task)
            writer.close()

    async def _splice(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = _addr(writer.get_extra_info("peername"))
        try:
            first = await asyncio.wait_for(reader.read(1), self.first_byte_timeout)
        except (OSError, TimeoutError):
            return
        if not first:
            return
        try:
            port = await asyncio.shield(self.tls_port) if first[0] == HANDSHAKE_MAGIC else self.plain_port
            inner_reader, inner_writer = await asyncio.open_connection(INNER_HOST, port)
        except (OSError, ValueError) as e:  # ValueError: TlsConfigError building the TLS server
            log.warning("gRPC: closing %s: no inner port for it: %s: %s", peer, type(e).__name__, e)
            return
        inner = _addr(inner_writer.get_extra_info("sockname"))
        self._peers[inner] = peer
        pumps = [
            asyncio.ensure_future(_pump(reader, inner_writer)),
            asyncio.ensure_future(_pump(inner_reader, writer)),
        ]
        try:
            inner_writer.write(first)
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)  # one side closed: close both
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            self._peers.pop(inner, None)
            inner_writer.close()


__all__ = ["SniffingListener"]
