"""asyncio remoting client: one reused connection per address.

Java: remoting.netty.NettyRemotingClient (invokeSync, invokeOneway, the
channel table). Connections open on demand and reopen after a drop; pending
requests are matched by opaque and all fail with one error when their
connection is lost. Requests the peer sends us on the same connection (e.g. a
broker's CHECK_TRANSACTION_STATE) go to processors registered like on the
server.
With an SSL context (tls.py's TlsConfig.client_context, Java's useTLS) every
connection is TLS.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
from collections.abc import Callable
from typing import Any

from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.errors import RemotingConnectError
from pyrmq.protocol.framing import MAX_FRAME_LENGTH
from pyrmq.remoting.channel import Channel, Handler, ProcessorTable

log = logging.getLogger("pyrmq.remoting.client")

__all__ = ["RemotingClient", "parse_addr"]


def parse_addr(addr: str) -> tuple[str, int]:
    """ "host:port" or "[v6]:port" -> (host, port)."""
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"bad address {addr!r}, expected host:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


class RemotingClient:
    def __init__(
        self,
        *,
        connect_timeout_s: float = 3,
        max_frame_length: int = MAX_FRAME_LENGTH,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.connect_timeout_s = connect_timeout_s
        self.tls = tls
        self.max_frame_length = max_frame_length
        self.table = ProcessorTable()
        self._channels: dict[str, Channel] = {}
        self._connecting: dict[str, asyncio.Future[Channel]] = {}
        self._closed = False
        #: applied to every request this client sends (Java RPCHook#doBeforeRequest), e.g. the
        #: ACL signature of pyrmq.auth.signature.sign_request
        self.rpc_hook: Callable[[RemotingCommand], None] | None = None

    def register(self, processor: Any) -> None:
        self.table.register(processor)

    def register_handler(self, code: int, handler: Handler) -> None:
        self.table.register_handler(code, handler)

    def register_default(self, handler: Handler) -> None:
        self.table.register_default(handler)

    async def get_channel(self, addr: str) -> Channel:
        """The open connection to `addr`, connecting if needed (concurrent callers share one)."""
        ch = self._channels.get(addr)
        if ch is not None and not ch.closed:
            return ch
        if self._closed:
            raise RemotingConnectError("client is closed")
        fut = self._connecting.get(addr)
        if fut is None:
            fut = asyncio.ensure_future(self._connect(addr))
            self._connecting[addr] = fut
            fut.add_done_callback(functools.partial(self._connect_done, addr))
        return await asyncio.shield(fut)

    def _connect_done(self, addr: str, _fut: asyncio.Future[Channel]) -> None:
        self._connecting.pop(addr, None)

    async def _connect(self, addr: str) -> Channel:
        host, port = parse_addr(addr)
        loop = asyncio.get_running_loop()

        def factory() -> Channel:
            return Channel(self, self.table, max_frame_length=self.max_frame_length, on_close=self._channel_closed)

        try:
            async with asyncio.timeout(self.connect_timeout_s):
                _transport, ch = await loop.create_connection(
                    factory, host, port, ssl=self.tls, server_hostname=host if self.tls else None
                )
        except (OSError, TimeoutError) as e:  # ssl.SSLError is an OSError
            raise RemotingConnectError(f"connect to {addr} failed: {str(e) or type(e).__name__}") from None
        self._channels[addr] = ch
        ch.attrs["addr"] = addr
        return ch

    def _channel_closed(self, ch: Channel) -> None:
        addr = ch.attrs.get("addr")
        if addr is not None and self._channels.get(addr) is ch:
            del self._channels[addr]

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout_s: float = 3) -> RemotingCommand:
        """Send `cmd` to `addr` and wait for the response (Java invokeSync)."""
        ch = await self.get_channel(addr)
        if self.rpc_hook is not None:
            self.rpc_hook(cmd)
        return await ch.invoke(cmd, timeout_s)

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand) -> None:
        """Send `cmd` as one-way (flag bit 1); no response comes back."""
        ch = await self.get_channel(addr)
        if self.rpc_hook is not None:
            self.rpc_hook(cmd)
        ch.send_oneway(cmd)

    def close_channel(self, addr: str) -> None:
        ch = self._channels.pop(addr, None)
        if ch is not None:
            ch.close()

    async def close(self) -> None:
        self._closed = True
        channels = list(self._channels.values())
        self._channels.clear()
        for ch in channels:
            ch.cancel_tasks()
            ch.close()
        if channels:
            await asyncio.wait([asyncio.ensure_future(ch.wait_closed()) for ch in channels], timeout=2)

    async def __aenter__(self) -> RemotingClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
