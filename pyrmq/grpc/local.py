"""The Java proxy's "local" mode: a remoting request handed to this broker's processors in-process.

Java: ``proxy/service/channel/SimpleChannel`` and ``LocalRemotingCommand``: the proxy builds the
request the remote path would send and calls the broker's processor with a channel of its own;
a held request (POP long polling) answers later through that channel's write. Here the channel's
``send`` completes the future the RPC awaits.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pyrmq.protocol.codes import ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.remoting.channel import RequestContext, call_handler


class LocalChannel:
    """What the broker's processors use of a channel: the remote address, `attrs`, `closed`, `send`."""

    def __init__(self, remote_addr: str, local_addr: str) -> None:
        self.remote_addr = remote_addr
        self.local_addr = local_addr
        self.closed = False
        self.last_activity = time.monotonic()
        self.transport = None
        host, _, port = remote_addr.rpartition(":")
        #: the send processor's born host cache: the SDK's address, as Java's local channel has it
        self.attrs: dict[str, Any] = {"_peer": (host.strip("[]") or "127.0.0.1", int(port) if port.isdigit() else 0)}
        self._answer: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()

    def send(self, cmd: RemotingCommand) -> None:
        """A held request's late answer (Java SimpleChannel#writeAndFlush on the local channel)."""
        if not self._answer.done():
            self._answer.set_result(cmd)

    async def answer(self, timeout: float) -> RemotingCommand:
        try:
            return await asyncio.wait_for(asyncio.shield(self._answer), timeout)
        finally:
            self.closed = True

    def close(self) -> None:
        self.closed = True

    def __repr__(self) -> str:
        return f"<LocalChannel {self.remote_addr}>"


class LocalInvoker:
    """Calls the broker's main-port processor table (the one that also serves pull and POP)."""

    def __init__(self, controller: Any) -> None:
        self.controller = controller

    def _handler(self, code: int) -> Any:
        server = self.controller.server
        return None if server is None else server.table.handlers.get(code)

    async def invoke(
        self, cmd: RemotingCommand, remote_addr: str, local_addr: str = "", timeout: float = 30.0
    ) -> RemotingCommand:
        """The broker's answer to `cmd`; a held request waits up to `timeout` seconds for it."""
        handler = self._handler(cmd.code)
        if handler is None:
            return cmd.make_response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f"request type {cmd.code} not supported")
        channel = LocalChannel(remote_addr, local_addr)
        server = self.controller.server
        ctx = RequestContext(channel=channel, server=server, received_at_ms=int(time.time() * 1000))  # type: ignore[arg-type]
        response = await call_handler(handler, ctx, cmd)
        if response is not None:
            channel.close()
            return response
        try:
            return await channel.answer(timeout)
        except TimeoutError:
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, "no answer from the broker in time")


__all__ = ["LocalChannel", "LocalInvoker"]
