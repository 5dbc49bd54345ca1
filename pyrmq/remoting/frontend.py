"""A front-end process: accepts client connections on the server's listening sockets (inherited
from the core) and pumps their bytes to and from the core over one link (remoting/link.py).

It runs no RocketMQ code: the core decodes, dispatches and answers every request as if the
connection were its own (remoting/forwarded.py). What it takes off the core is the accepting,
the socket reads and writes and their system calls; the later steps of docs/multicore.md move
request work here too. It exits when the link closes (the core stopped or died), closing its
clients' connections, so a broker is never half up.

    python -m pyrmq.remoting.frontend --link-fd N --handoff-fd M --listen-fds A[,B]
        [--tls-mode disabled|permissive] [--idle-seconds S] [--write-buffer LOW,HIGH]

TLS stays in the core: with tlsServerMode permissive a front-end peeks at a new connection's
first byte, as the core's own accept does, and hands a TLS handshake's socket to the core over a
second Unix socket (SCM_RIGHTS); the core admits it as if it had accepted it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import logging
import socket
import sys
from typing import cast

from pyrmq.remoting.link import LinkDecoder, LinkKind, LinkMessage, LinkProtocolError, encode, encode_open
from pyrmq.remoting.tls import HANDSHAKE_MAGIC

log = logging.getLogger("pyrmq.remoting.frontend")


def _addr(addr: object) -> str:
    if isinstance(addr, tuple) and len(addr) >= 2:
        host, port = addr[0], addr[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return ""


class ClientPump(asyncio.Protocol):
    """One client connection: its bytes to the core, the core's to it."""

    def __init__(self, front: FrontEnd, conn: int) -> None:
        self.front = front
        self.conn = conn
        self.transport: asyncio.Transport | None = None
        self.paused_by_core = False
        self.closed_by_core = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # a socket transport (asyncio's or uvloop's)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.front.write_buffer is not None:
            low, high = self.front.write_buffer
            transport.set_write_buffer_limits(high=high, low=low)
        self.front.pumps[self.conn] = self
        self.front.send_parts(
            encode_open(
                self.conn, _addr(transport.get_extra_info("peername")), _addr(transport.get_extra_info("sockname"))
            )
        )
        if self.front.link_paused:
            transport.pause_reading()

    def data_received(self, data: bytes) -> None:
        self.front.send_parts(encode(LinkKind.DATA, self.conn, data))

    def eof_received(self) -> bool | None:
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.front.pumps.pop(self.conn, None)
        if not self.closed_by_core:
            self.front.send_parts(encode(LinkKind.CLOSE, self.conn))

    def pause_writing(self) -> None:
        self.front.send_parts(encode(LinkKind.PAUSE_WRITING, self.conn))

    def resume_writing(self) -> None:
        self.front.send_parts(encode(LinkKind.RESUME_WRITING, self.conn))

    def update_reading(self) -> None:
        t = self.transport
        if t is None or t.is_closing():
            return
        with contextlib.suppress(RuntimeError):
            if self.paused_by_core or self.front.link_paused:
                t.pause_reading()
            else:
                t.resume_reading()


class FrontEnd(asyncio.Protocol):
    """The front-end's end of the link, and its accept loops."""

    def __init__(
        self,
        listeners: list[socket.socket],
        write_buffer: tuple[int, int] | None = None,
        *,
        handoff: socket.socket | None = None,
        peek_tls: bool = False,
        idle_seconds: float | None = None,
    ) -> None:
        self.listeners = listeners
        self.write_buffer = write_buffer
        self.handoff = handoff
        self.peek_tls = peek_tls and handoff is not None
        self.idle_seconds = idle_seconds
        self.pumps: dict[int, ClientPump] = {}
        self.link: asyncio.Transport | None = None
        self.link_paused = False  # the core does not read the link fast enough: stop reading clients
        self._decoder = LinkDecoder()
        self._ids = itertools.count(1)
        self.done = asyncio.Event()
        self._accepts: list[asyncio.Task] = []
        self._admitting: set[asyncio.Task] = set()

    # -- the link ------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.link = transport  # type: ignore[assignment]
        loop = asyncio.get_running_loop()
        self._accepts = [loop.create_task(self._accept_loop(s)) for s in self.listeners]
        self.send_parts(encode(LinkKind.READY, 0))

    def send_parts(self, parts: list[bytes | memoryview]) -> None:
        link = self.link
        if link is not None and not link.is_closing():
            link.writelines(parts)

    def data_received(self, data: bytes) -> None:
        try:
            messages = self._decoder.feed(data)
        except LinkProtocolError as e:
            log.error("link from the core: %s; exiting", e)
            if self.link is not None:
                self.link.close()
            return
        for m in messages:
            self._on_message(m)

    def _on_message(self, m: LinkMessage) -> None:
        pump = self.pumps.get(m.conn)
        if pump is None or pump.transport is None:
            return
        if m.kind is LinkKind.DATA:
            pump.transport.write(m.payload)
        elif m.kind is LinkKind.CLOSE:
            pump.closed_by_core = True
            pump.transport.close()
        elif m.kind is LinkKind.PAUSE_READING:
            pump.paused_by_core = True
            pump.update_reading()
        elif m.kind is LinkKind.RESUME_READING:
            pump.paused_by_core = False
            pump.update_reading()

    def pause_writing(self) -> None:
        self.link_paused = True
        for pump in list(self.pumps.values()):
            pump.update_reading()

    def resume_writing(self) -> None:
        self.link_paused = False
        for pump in list(self.pumps.values()):
            pump.update_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        for task in [*self._accepts, *self._admitting]:
            task.cancel()
        for pump in list(self.pumps.values()):
            pump.closed_by_core = True
            if pump.transport is not None:
                pump.transport.abort()
        self.pumps.clear()
        self.done.set()

    # -- accepting -----------------------------------------------------------

    async def _accept_loop(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _ = await loop.sock_accept(listener)
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                continue
            except OSError as e:  # EMFILE and the like
                log.error("accept failed: %s", e)
                await asyncio.sleep(0.1)
                continue
            if self.peek_tls:
                task = loop.create_task(self._admit(conn))
                self._admitting.add(task)
                task.add_done_callback(self._admitting.discard)
            else:
                await self._pump(conn)

    async def _pump(self, conn: socket.socket) -> None:
        conn_id = next(self._ids)
        try:
            await asyncio.get_running_loop().connect_accepted_socket(lambda: ClientPump(self, conn_id), conn)
        except OSError as e:
            log.warning("connection dropped before it opened: %s", e)
            conn.close()

    async def _admit(self, conn: socket.socket) -> None:
        """A TLS handshake goes to the core, plain remoting is pumped here."""
        from pyrmq.remoting.server import _peek_first_byte

        conn.setblocking(False)
        loop = asyncio.get_running_loop()
        try:
            first = await _peek_first_byte(loop, conn, self.idle_seconds)
        except OSError:
            first = None
        if first is None:
            conn.close()
        elif first == HANDSHAKE_MAGIC:
            await self._hand_off(conn)
        else:
            await self._pump(conn)

    async def _hand_off(self, conn: socket.socket) -> None:
        assert self.handoff is not None
        try:
            for _ in range(100):
                try:
                    socket.send_fds(self.handoff, [b"c"], [conn.fileno()])
                    break
                except BlockingIOError:
                    await asyncio.sleep(0.01)
            else:
                log.warning("the core takes no TLS connection; dropping one")
        except OSError as e:
            log.warning("handing a TLS connection to the core failed: %s", e)
        finally:
            conn.close()


async def serve(
    link_fd: int,
    listen_fds: list[int],
    write_buffer: tuple[int, int] | None,
    handoff_fd: int | None = None,
    tls_mode: str = "disabled",
    idle_seconds: float | None = None,
) -> None:
    loop = asyncio.get_running_loop()
    listeners = [socket.socket(fileno=fd) for fd in listen_fds]
    for s in listeners:
        s.setblocking(False)
    link_sock = socket.socket(fileno=link_fd)
    link_sock.setblocking(False)
    handoff = socket.socket(fileno=handoff_fd) if handoff_fd is not None else None
    if handoff is not None:
        handoff.setblocking(False)
    front = FrontEnd(
        listeners, write_buffer, handoff=handoff, peek_tls=tls_mode == "permissive", idle_seconds=idle_seconds
    )
    await loop.create_unix_connection(lambda: front, sock=link_sock)
    await front.done.wait()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="pyrmq-frontend", description=__doc__)
    p.add_argument("--link-fd", type=int, required=True)
    p.add_argument("--listen-fds", required=True)
    p.add_argument("--handoff-fd", type=int, help="where TLS connections are handed to the core")
    p.add_argument("--tls-mode", default="disabled", choices=["disabled", "permissive"])
    p.add_argument("--idle-seconds", type=float, default=0, help="wait this long for a first byte (0: no limit)")
    p.add_argument("--write-buffer", default="", help="LOW,HIGH water marks of client sockets")
    p.add_argument("--log-level", default="WARNING")
    a = p.parse_args(argv)
    logging.basicConfig(level=a.log_level, format="%(asctime)s %(levelname)s %(name)s - %(message)s")
    wb = tuple(int(x) for x in a.write_buffer.split(",")) if a.write_buffer else None
    from pyrmq.remoting.loop import install_uvloop_if_available

    install_uvloop_if_available()
    asyncio.run(
        serve(
            a.link_fd,
            [int(x) for x in a.listen_fds.split(",")],
            wb,  # type: ignore[arg-type]
            a.handoff_fd,
            a.tls_mode,
            a.idle_seconds or None,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
