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
"""

from __future__ import annotations

import asyncio
import logging
import os
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

log = logging.getLogger("pyrmq.remoting.server")

__all__ = ["Channel", "RemotingServer", "RequestContext", "handles", "water_marks"]

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
        backlog: int = 1024,
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
        self._server: asyncio.Server | None = None
        self._idle_task: asyncio.Task | None = None

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
        registered processors that needed the port."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self._make_channel, self.host, self.port, reuse_address=True, start_serving=serving, backlog=self.backlog
        )
        sock = self._server.sockets[0]
        self.port = sock.getsockname()[1]
        if (self.idle_seconds and self.idle_seconds > 0) or self.half_open_seconds > 0:
            self._idle_task = loop.create_task(self._idle_sweeper())
        log.info("%s remoting server listening on %s:%d", self.name, self.host, self.port)

    async def start_serving(self) -> None:
        if self._server is not None:
            await self._server.start_serving()

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

    def _channel_opened(self, channel: Channel) -> None:
        if self.max_connections > 0 and len(self.channels) >= self.max_connections:
            self.refused_connections += 1
            if self.refused_connections % 1000 == 1:
                log.warning(
                    "%s: %d connections open, the limit: closing %s (%d refused so far)",
                    self.name,
                    len(self.channels),
                    channel.remote_addr,
                    self.refused_connections,
                )
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
        if self._server is not None:
            self._server.close()
        channels = list(self.channels)
        for ch in channels:
            ch.cancel_tasks()
            ch.close()
        if channels:
            await asyncio.wait([asyncio.ensure_future(ch.wait_closed()) for ch in channels], timeout=2)
        for ch in channels:
            if not ch.closed:
                ch.abort()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> RemotingServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
