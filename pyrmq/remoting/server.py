"""asyncio remoting server: accept connections, dispatch requests by code.

Java: remoting.netty.NettyRemotingServer. Processors are plain objects whose
`@handles(code)` methods are collected by `register`; an unknown code is
answered REQUEST_CODE_NOT_SUPPORTED, a RemotingError with its own code, any
other exception SYSTEM_ERROR (channel.py, the one place that catches).
Connections idle (no read and no write) for `idle_seconds` are closed, like
Java's IdleStateHandler with serverChannelMaxIdleTimeSeconds = 120.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from pyrmq.protocol.framing import MAX_FRAME_LENGTH
from pyrmq.remoting.channel import (
    Channel,
    CloseListener,
    Handler,
    ProcessorTable,
    RequestCheck,
    RequestContext,
    call_listener,
    handles,
)

log = logging.getLogger("pyrmq.remoting.server")

__all__ = ["Channel", "RemotingServer", "RequestContext", "handles"]


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
    ) -> None:
        self.host = host
        self.port = port
        self.name = name
        self.max_frame_length = max_frame_length
        self.idle_seconds = idle_seconds
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
            self._make_channel, self.host, self.port, reuse_address=True, start_serving=serving
        )
        sock = self._server.sockets[0]
        self.port = sock.getsockname()[1]
        if self.idle_seconds and self.idle_seconds > 0:
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
            on_open=self.channels.add,
            on_close=self._channel_closed,
        )

    def _channel_closed(self, channel: Channel) -> None:
        if channel not in self.channels:
            return
        self.channels.discard(channel)
        log.debug("%s: connection %s closed", self.name, channel.remote_addr)
        for listener in self._close_listeners:
            call_listener(listener, channel)

    async def _idle_sweeper(self) -> None:
        interval = min(1.0, self.idle_seconds / 4)
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for ch in list(self.channels):
                if not ch.closed and now - ch.last_activity >= self.idle_seconds:
                    log.info("%s: closing idle connection %s", self.name, ch.remote_addr)
                    ch.close()

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
