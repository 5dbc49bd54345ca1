"""asyncio remoting server: accept connections, dispatch requests by code.

Java: remoting.netty.NettyRemotingServer. Processors are plain objects whose
`@handles(code)` methods are collected by `register`; an unknown code is
answered REQUEST_CODE_NOT_SUPPORTED, a RemotingError with its own code, any
other exception SYSTEM_ERROR (channel.py, the one place that catches).
Connections idle (no read and no write) for `idle_seconds` are closed, like
Java's IdleStateHandler with serverChannelMaxIdleTimeSeconds = 120; a connection that stopped in
the middle of a frame for `half_open_seconds` is closed too (Java closes it only when idle, but
its frame buffer is then held all that time), and past `max_connections` a new connection is
closed at once. `write_buffer` (low, high) water marks stop reading a peer that does not read
its answers; `dispatch` (flow_dispatch.FlowDispatcher) queues requests under flow control.
Each accepted connection is admitted by its first byte when TLS is on (tls.py's ServerTls:
TLS handshake or plain remoting, refused per the TLS mode) before it becomes a Channel, so the
accept loop is pyrmq's own rather than asyncio.Server's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import ssl
import sys
import time
from typing import Any

from pyrmq.protocol.framing import MAX_FRAME_LENGTH
from pyrmq.remoting.channel import (
    DEFAULT_WRITE_BUFFER_HIGH,
    DEFAULT_WRITE_BUFFER_LOW,
    Channel,
    CloseListener,
    Dispatch,
    Handler,
    ProcessorTable,
    RequestCheck,
    RequestContext,
    call_listener,
    handles,
)
from pyrmq.remoting.forwarded import CoreLink
from pyrmq.remoting.tls import ServerTls, TlsMode

log = logging.getLogger("pyrmq.remoting.server")

__all__ = ["Channel", "RemotingServer", "RequestContext", "frontends_from_env", "handles", "water_marks"]

#: a connection stuck in the middle of a frame this long is dropped (no Java counterpart);
#: PYRMQ_HALF_OPEN_SECONDS changes it for every pyrmq server
HALF_OPEN_SECONDS = 30.0


def _env_number(name: str, default: float) -> float:
    try:
        return max(0.0, float(os.environ.get(name, default)))
    except ValueError:
        log.warning("%s=%r is not a number: %s used", name, os.environ[name], default)
        return default


def max_connections_from_env() -> int:
    """PYRMQ_MAX_CONNECTIONS: connections a server keeps open at once (0 or unset = no limit)."""
    return int(_env_number("PYRMQ_MAX_CONNECTIONS", 0))


def frontends_from_env() -> int:
    """PYRMQ_FRONTENDS: front-end processes beside a broker's main port (0 or unset = none)."""
    return int(_env_number("PYRMQ_FRONTENDS", 0))


def water_marks(low: int, high: int) -> tuple[int, int]:
    """NettyRemotingServer applies writeBufferLow/HighWaterMark only when both are > 0; else
    Netty's defaults (32 KiB, 64 KiB)."""
    if low > 0 and high > 0:
        return low, max(low, high)
    return DEFAULT_WRITE_BUFFER_LOW, DEFAULT_WRITE_BUFFER_HIGH


class RemotingServer:
    """Listens on host:port (port 0 = any free port; `.port` is the bound one)."""

    def __init__(
        self,
        host: str = "0.0.0.0",
        port: int = 0,
        *,
        name: str = "namesrv",
        max_frame_length: int = MAX_FRAME_LENGTH,
        idle_seconds: float = 120,
        half_open_seconds: float | None = None,
        max_connections: int | None = None,
        write_buffer: tuple[int, int] | None = None,
        dispatch: Dispatch | None = None,
        tls: ServerTls | None = None,
        backlog: int = 1024,
        frontends: int = 0,
    ) -> None:
        self.host = host
        self.port = port
        self.name = name
        self.max_frame_length = max_frame_length
        self.idle_seconds = idle_seconds
        self.half_open_seconds = (
            half_open_seconds
            if half_open_seconds is not None
            else _env_number("PYRMQ_HALF_OPEN_SECONDS", HALF_OPEN_SECONDS)
        )
        # 0 = no limit (Java has none); PYRMQ_MAX_CONNECTIONS sets it for every pyrmq server
        self.max_connections = max_connections if max_connections is not None else max_connections_from_env()
        self.write_buffer = write_buffer
        self.dispatch = dispatch
        self.backlog = backlog  # Java serverSocketBacklog (1024; asyncio's own default is 100)
        self.refused_connections = 0
        self.table = ProcessorTable()
        self.channels: set[Channel] = set()
        self._close_listeners: list[CloseListener] = []
        #: called with (channel, request) before every handler; see channel.RequestCheck
        self.request_check: RequestCheck | None = None
        self.tls = tls or ServerTls()
        self._sockets: list[socket.socket] = []
        self._accept_loops: list[asyncio.Task] = []
        self._admitting: set[asyncio.Task] = set()  # accepted, first byte or TLS handshake pending
        self._idle_task: asyncio.Task | None = None
        #: front-end processes accepting on the same sockets (remoting/frontend.py; docs/multicore.md)
        self.frontends = frontends
        #: False: only the front-ends accept (the core then does request work alone)
        self.accept_in_core = True
        self._frontends: list[tuple[asyncio.subprocess.Process, CoreLink, socket.socket]] = []

    def register(self, processor: Any) -> None:
        """Collect `processor`'s @handles methods; a duplicate code raises ValueError."""
        self.table.register(processor)

    def register_handler(self, code: int, handler: Handler) -> None:
        self.table.register_handler(code, handler)

    def register_default(self, handler: Handler) -> None:
        """Fallback for codes no processor handles (Java defaultRequestProcessor)."""
        self.table.register_default(handler)

    def add_close_listener(self, callback: CloseListener) -> None:
        """`callback(channel)` runs once when a connection closes (sync or async)."""
        self._close_listeners.append(callback)

    async def start(self, *, serving: bool = True) -> None:
        """Bind (``self.port`` is then the real port, also when 0 was asked) and, with
        ``serving``, accept connections; else ``start_serving()`` does, once the owner has
        registered processors that needed the port. A TLS setting that cannot be used
        raises TlsConfigError here, before binding."""
        self.tls.prepare()
        loop = asyncio.get_running_loop()
        self._sockets = _bind(self.host, self.port, self.backlog)
        self.port = self._sockets[0].getsockname()[1]
        if serving:
            await self.start_serving()
        if self.frontends > 0:
            await self._start_frontends()
        if (self.idle_seconds and self.idle_seconds > 0) or self.half_open_seconds > 0:
            self._idle_task = loop.create_task(self._idle_sweeper())
        self.tls.start_watching()
        log.info("%s remoting server listening on %s:%d (TLS %s)", self.name, self.host, self.port, self.tls.mode)

    async def start_serving(self) -> None:
        if self._accept_loops or not self._sockets or (self.frontends > 0 and not self.accept_in_core):
            return
        loop = asyncio.get_running_loop()
        for sock in self._sockets:
            self._accept_loops.append(loop.create_task(self._accept_loop(sock), name=f"{self.name}-accept"))

    async def _start_frontends(self) -> None:
        """Spawn the front-end processes; each accepts on the listening sockets and forwards its
        connections' bytes to this process over a Unix socket pair. TLS connections are handed
        back to this process (a second socket pair, SCM_RIGHTS) and admitted here."""
        if self.tls.mode is TlsMode.ENFORCING:
            log.warning("%s: TLS is enforced and front-ends pass TLS to the core: serving from one process", self.name)
            return
        loop = asyncio.get_running_loop()
        listen_fds = [s.fileno() for s in self._sockets]
        for i in range(self.frontends):
            mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            take, give = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
            argv = [sys.executable, "-m", "pyrmq.remoting.frontend", "--link-fd", str(theirs.fileno())]
            argv += ["--handoff-fd", str(give.fileno()), "--listen-fds", ",".join(map(str, listen_fds))]
            argv += ["--tls-mode", str(self.tls.mode)]
            if self.idle_seconds and self.idle_seconds > 0:
                argv += ["--idle-seconds", str(self.idle_seconds)]
            if self.write_buffer is not None:
                argv += ["--write-buffer", "%d,%d" % self.write_buffer]
            try:
                proc = await asyncio.create_subprocess_exec(
                    *argv, pass_fds=[theirs.fileno(), give.fileno(), *listen_fds]
                )
            except BaseException:
                mine.close()
                take.close()
                raise
            finally:
                theirs.close()
                give.close()
            name = f"{self.name} front-end {i + 1}"
            _, link = await loop.create_unix_connection(lambda n=name: CoreLink(self._make_channel, n), sock=mine)  # type: ignore[misc]
            take.setblocking(False)
            loop.add_reader(take.fileno(), self._take_handed_off, take)
            self._frontends.append((proc, link, take))
        for proc, link, _take in self._frontends:
            # started means serving: a broker prints its boot line only after this
            ready = asyncio.ensure_future(link.ready.wait())
            gone = asyncio.ensure_future(proc.wait())
            try:
                await asyncio.wait((ready, gone), timeout=60, return_when=asyncio.FIRST_COMPLETED)
            finally:
                ready.cancel()
                gone.cancel()
            if not link.ready.is_set():
                raise OSError(f"a front-end process did not start (exit status {proc.returncode})")
        log.info("%s: %d front-end processes accepting on port %d", self.name, len(self._frontends), self.port)

    def _take_handed_off(self, take: socket.socket) -> None:
        """A front-end passed us a TLS connection: admit it as if we had accepted it."""
        try:
            _msg, fds, _flags, _addr = socket.recv_fds(take, 16, 4)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            log.warning("%s: front-end hand-off socket: %s", self.name, e)
            return
        for fd in fds:
            self._take(socket.socket(fileno=fd))

    def _take(self, conn: socket.socket) -> None:
        """An accepted connection: refused past the limit, else admitted in a task of its own."""
        if self._over_limit():
            self._refuse(_peer(conn))
            conn.close()
            return
        task = asyncio.get_running_loop().create_task(self._admit(conn))
        self._admitting.add(task)
        task.add_done_callback(self._admitting.discard)

    async def _stop_frontends(self) -> None:
        running, self._frontends = self._frontends, []
        loop = asyncio.get_running_loop()
        for _proc, link, take in running:
            loop.remove_reader(take.fileno())
            take.close()
            if link.transport is not None:
                link.transport.close()
        for proc, _link, _take in running:
            try:
                await asyncio.wait_for(proc.wait(), 5)
            except TimeoutError:
                proc.kill()
                await proc.wait()

    @property
    def admitting(self) -> int:
        """Connections accepted but not yet channels (waiting for a first byte or a handshake)."""
        return len(self._admitting)

    async def _accept_loop(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _addr = await loop.sock_accept(listener)
            except (ConnectionAbortedError, BlockingIOError, InterruptedError):
                continue
            except OSError as e:  # EMFILE and the like: asyncio's server also waits and goes on
                log.error("%s: accept failed: %s", self.name, e)
                await asyncio.sleep(0.1)
                continue
            self._take(conn)

    async def _admit(self, conn: socket.socket) -> None:
        """Peek at the first byte (Java TlsModeHandler) and hand the socket to a Channel,
        through a TLS handshake when it starts one; a refused connection is closed."""
        loop = asyncio.get_running_loop()
        conn.setblocking(False)
        peer = _peer(conn)
        try:
            if self.tls.mode is TlsMode.DISABLED:
                # Java peeks here too and closes a TLS hello; the frame decoder refuses one as well
                # (its length is far past the limit), so the peek is skipped.
                await loop.connect_accepted_socket(self._make_channel, conn)
                return
            first = await _peek_first_byte(loop, conn, self.idle_seconds if self.idle_seconds > 0 else None)
            if first is None:
                conn.close()
                return
            use_tls = self.tls.admits(first)
            if use_tls is None:
                log.warning(
                    "%s: closing %s: %s connection while TLS is %s",
                    self.name,
                    peer,
                    "a TLS" if first == 0x16 else "an insecure",
                    self.tls.mode,
                )
                conn.close()
                return
            await loop.connect_accepted_socket(
                self._make_channel,
                conn,
                ssl=await self.tls.context_async() if use_tls else None,
                ssl_handshake_timeout=10 if use_tls else None,
            )
        except asyncio.CancelledError:
            conn.close()
            raise
        except (OSError, ssl.SSLError, TimeoutError, ValueError) as e:
            log.warning("%s: connection from %s dropped before it opened: %s: %s", self.name, peer, type(e).__name__, e)
            conn.close()

    def _make_channel(self) -> Channel:
        return Channel(
            self,
            self.table,
            max_frame_length=self.max_frame_length,
            on_open=self._channel_opened,
            on_close=self._channel_closed,
            dispatch=self.dispatch,
            write_buffer=self.write_buffer,
        )

    def _over_limit(self) -> bool:
        """At the connection limit: channels and connections still being admitted count."""
        return self.max_connections > 0 and len(self.channels) + len(self._admitting) >= self.max_connections

    def _refuse(self, peer: str) -> None:
        self.refused_connections += 1
        if self.refused_connections % 1000 == 1:
            log.warning(
                "%s: %d connections open, the limit: closing %s (%d refused so far)",
                self.name,
                len(self.channels) + len(self._admitting),
                peer,
                self.refused_connections,
            )

    def _channel_opened(self, channel: Channel) -> None:
        if self.max_connections > 0 and len(self.channels) >= self.max_connections:
            self._refuse(channel.remote_addr)
            channel.abort()
            return
        self.channels.add(channel)

    def _channel_closed(self, channel: Channel) -> None:
        if channel not in self.channels:
            return
        self.channels.discard(channel)
        log.debug("%s: connection %s closed", self.name, channel.remote_addr)
        for listener in self._close_listeners:
            call_listener(listener, channel)

    async def _idle_sweeper(self) -> None:
        limits = [t for t in (self.idle_seconds, self.half_open_seconds) if t and t > 0]
        interval = min(1.0, min(limits) / 4)
        while True:
            await asyncio.sleep(interval)
            self.close_stale(time.monotonic())

    def close_stale(self, now: float) -> int:
        """Close idle connections and those stuck in the middle of a frame; how many."""
        closed = 0
        idle, half_open = self.idle_seconds, self.half_open_seconds
        for ch in list(self.channels):
            if ch.closed:
                continue
            quiet = now - ch.last_activity
            if idle and idle > 0 and quiet >= idle:
                log.info("%s: closing idle connection %s", self.name, ch.remote_addr)
            elif half_open > 0 and quiet >= half_open and ch.decoder.buffered and not ch.reading_paused:
                log.info(
                    "%s: closing %s, %d bytes of a frame then nothing", self.name, ch.remote_addr, ch.decoder.buffered
                )
            else:
                continue
            ch.abort()
            closed += 1
        return closed

    async def close(self) -> None:
        """Stop listening, close every connection, cancel in-flight handlers."""
        if self._idle_task is not None:
            self._idle_task.cancel()
            self._idle_task = None
        self.tls.stop_watching()
        accepting = [*self._accept_loops, *self._admitting]
        self._accept_loops = []
        for task in accepting:
            task.cancel()
        for sock in self._sockets:
            sock.close()
        self._sockets = []
        await self._stop_frontends()
        if accepting:
            await asyncio.wait(accepting, timeout=2)
        channels = list(self.channels)
        for ch in channels:
            ch.cancel_tasks()
            ch.close()
        if channels:
            await asyncio.wait([asyncio.ensure_future(ch.wait_closed()) for ch in channels], timeout=2)
        for ch in channels:
            if not ch.closed:
                ch.abort()

    async def __aenter__(self) -> RemotingServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _bind(host: str, port: int, backlog: int) -> list[socket.socket]:
    """Listening sockets for every address of ``host`` (as asyncio's create_server binds);
    with port 0 the first one's port is used for the others."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    seen: set[tuple] = set()
    try:
        for family, kind, proto, _name, addr in infos:
            if (family, addr) in seen:
                continue
            seen.add((family, addr))
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if sockets[0] is not sock and port == 0:
                addr = (addr[0], sockets[0].getsockname()[1], *addr[2:])
            sock.bind(addr)
            sock.listen(backlog)
            sock.setblocking(False)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


async def _peek_first_byte(loop: asyncio.AbstractEventLoop, conn: socket.socket, timeout: float | None) -> int | None:
    """The first byte the peer sent, left unread; None if it closed or stayed silent ``timeout`` s."""
    readable = loop.create_future()

    def ready() -> None:
        if not readable.done():
            readable.set_result(None)

    loop.add_reader(conn.fileno(), ready)
    try:
        async with asyncio.timeout(timeout):
            while True:
                try:
                    data = conn.recv(1, socket.MSG_PEEK)
                except (BlockingIOError, InterruptedError):
                    await readable
                    readable = loop.create_future()
                    continue
                return data[0] if data else None
    except TimeoutError:
        return None
    finally:
        with contextlib.suppress(ValueError, OSError):
            loop.remove_reader(conn.fileno())


def _peer(conn: socket.socket) -> str:
    try:
        host, port = conn.getpeername()[:2]
    except OSError:
        return "?"
    return f"{host}:{port}"
