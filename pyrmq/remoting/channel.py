"""One RocketMQ connection on asyncio, shared by the server and the client.

Java: remoting.netty.NettyRemotingAbstract (processRequestCommand,
processResponseCommand, invokeSyncImpl, invokeOnewayImpl) and the Netty
channel. Both ends of a RocketMQ connection send requests and responses on it,
matched by opaque, so the server's connections and the client's are the same
class: a BufferedProtocol that reads straight into a FrameDecoder, dispatches
requests to a ProcessorTable (one task each, responses in any order) and
completes pending futures with responses.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pyrmq.protocol.codes import ResponseCode
from pyrmq.protocol.command import FLAG_ONEWAY, FLAG_RESPONSE, RemotingCommand, encode_parts, next_opaque
from pyrmq.protocol.errors import RemotingError, RemotingProtocolError, RemotingSendRequestError, RemotingTimeout
from pyrmq.protocol.framing import MAX_FRAME_LENGTH, FrameDecoder

log = logging.getLogger("pyrmq.remoting")

Handler = Callable[["RequestContext", RemotingCommand], Awaitable["RemotingCommand | None"]]
CloseListener = Callable[["Channel"], Any]
#: takes a received request instead of the channel (the server's flow control); False = not taken
Dispatch = Callable[["Channel", RemotingCommand, int], bool]

#: Netty's default WriteBufferWaterMark (32 KiB low, 64 KiB high), used when the config says 0
DEFAULT_WRITE_BUFFER_LOW = 32 * 1024
DEFAULT_WRITE_BUFFER_HIGH = 64 * 1024
#: Run for every request before its handler (Java's RequestPipeline): a response short-circuits
#: the request (an ACL refusal, say), None lets it through to the processor table.
RequestCheck = Callable[["Channel", RemotingCommand], "RemotingCommand | None"]

_HANDLES_ATTR = "__remoting_codes__"


def error_response(cmd: RemotingCommand, exc: Exception) -> RemotingCommand:
    """The answer to ``cmd`` when its handler raised ``exc``: a RemotingError gives its code and
    remark; anything else is a bug, logged, answered SYSTEM_ERROR with its type and message."""
    if isinstance(exc, RemotingError):
        return cmd.make_response(exc.code, str(exc))
    log.error("handler for code %d failed", cmd.code, exc_info=exc)
    return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")


async def call_handler(handler: Handler, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand | None:
    """Run one handler the way the channel does (Java NettyRemotingAbstract#processRequestCommand):
    the one place where a processor's raised error becomes a response."""
    try:
        return await handler(ctx, cmd)
    except asyncio.CancelledError:
        raise
    except Exception as e:
        return error_response(cmd, e)


def handles(*codes: int) -> Callable[[Callable], Callable]:
    """Mark a processor method as the handler of one or more request codes."""

    def mark(fn: Callable) -> Callable:
        existing = getattr(fn, _HANDLES_ATTR, ())
        setattr(fn, _HANDLES_ATTR, tuple(existing) + tuple(int(c) for c in codes))
        return fn

    return mark


@dataclass(slots=True)
class RequestContext:
    """What a handler gets besides the command: the connection and the endpoint."""

    channel: Channel
    server: Any  # the RemotingServer (or RemotingClient) that owns the channel
    received_at_ms: int = 0


#: rpc latency hook (Java RemotingMetricsManager#rpcLatency): request code, response code,
#: is_long_polling, result ("success", "oneway", "write_channel_failed"), elapsed ms
RpcObserver = Callable[[int, int, bool, str, int], None]


class ProcessorTable:
    """Request code -> handler (Java NettyRemotingAbstract#processorTable)."""

    def __init__(self) -> None:
        self.handlers: dict[int, Handler] = {}
        self.default: Handler | None = None
        self._unsupported_logged: set[int] = set()
        self.rpc_observer: RpcObserver | None = None
        #: requests received and not answered yet, by code (the broker's processor watermark)
        self.in_flight: dict[int, int] = {}

    def observe_rpc(
        self, ctx: RequestContext, cmd: RemotingCommand, response: RemotingCommand, sent: bool, long_polling: bool
    ) -> None:
        """Report one answered request, as Java NettyRemotingAbstract#writeResponse does."""
        if self.rpc_observer is None:
            return
        if cmd.flag & FLAG_ONEWAY:
            result = "oneway"
        else:
            result = "success" if sent else "write_channel_failed"
        elapsed = max(int(time.time() * 1000) - ctx.received_at_ms, 0)
        self.rpc_observer(cmd.code, response.code, long_polling, result, elapsed)

    def log_unsupported(self, code: int, remote: object) -> None:
        """Java NettyRemotingAbstract#processRequestCommand logs an unsupported request type; here
        once per code and table (a client retrying an unknown code would flood the log)."""
        if code not in self._unsupported_logged:
            self._unsupported_logged.add(code)
            log.error("%s: request type %d not supported (logged once per code)", remote, code)

    def register(self, processor: Any) -> None:
        """Collect the `@handles` methods of `processor`; a code taken twice is a ValueError."""
        found = False
        for name, _ in inspect.getmembers(type(processor), callable):
            codes = getattr(getattr(type(processor), name), _HANDLES_ATTR, None)
            if not codes:
                continue
            method = getattr(processor, name)
            if not inspect.iscoroutinefunction(method):
                raise TypeError(f"{type(processor).__name__}.{name} must be async")
            for code in codes:
                if code in self.handlers:
                    raise ValueError(f"request code {code} already handled by {self.handlers[code]!r}")
                self.handlers[code] = method
            found = True
        if not found:
            raise ValueError(f"{type(processor).__name__} has no @handles methods")

    def register_handler(self, code: int, handler: Handler) -> None:
        code = int(code)
        if code in self.handlers:
            raise ValueError(f"request code {code} already handled by {self.handlers[code]!r}")
        self.handlers[code] = handler

    def register_default(self, handler: Handler) -> None:
        self.default = handler

    def lookup(self, code: int) -> Handler | None:
        return self.handlers.get(code, self.default)


def _format_addr(addr: Any) -> str:
    # Java RemotingHelper.parseChannelRemoteAddr: "ip:port"
    if isinstance(addr, tuple) and len(addr) >= 2:
        host, port = addr[0], addr[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return "" if addr is None else str(addr)


class Channel(asyncio.BufferedProtocol):
    """A connection: `remote_addr`, `send_oneway`, `invoke`, `close`, per-connection `attrs`."""

    def __init__(
        self,
        endpoint: Any,
        table: ProcessorTable,
        *,
        max_frame_length: int = MAX_FRAME_LENGTH,
        on_open: Callable[[Channel], None] | None = None,
        on_close: Callable[[Channel], None] | None = None,
        dispatch: Dispatch | None = None,
        write_buffer: tuple[int, int] | None = None,
    ) -> None:
        self.endpoint = endpoint
        self._dispatch = dispatch
        self._write_buffer = write_buffer  # (low, high) water marks; None = asyncio's defaults
        self.reading_paused = False
        self._held: deque[tuple[RemotingCommand, int, Callable[[], None] | None]] = deque()
        self.table = table
        self.decoder = FrameDecoder(max_frame_length)
        self.attrs: dict[str, Any] = {}
        self.remote_addr = ""
        self.local_addr = ""
        self.closed = False
        self.last_activity = time.monotonic()
        self.transport: asyncio.Transport | None = None
        self._on_open = on_open
        self._on_close = on_close
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self._tasks: set[asyncio.Task] = set()
        self._writable = asyncio.Event()
        self._writable.set()
        self._closed_event = asyncio.Event()
        self._discard: bytearray | None = None
        #: frames sent in this loop turn, written together by _flush (one syscall, not one each)
        self._out: list[bytes | memoryview] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return f"<Channel {self.local_addr}<->{self.remote_addr}{' closed' if self.closed else ''}>"

    # -- asyncio protocol -------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        with contextlib.suppress(RuntimeError):  # no running loop: send writes at once
            self._loop = asyncio.get_running_loop()
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.remote_addr = _format_addr(transport.get_extra_info("peername"))
        self.local_addr = _format_addr(transport.get_extra_info("sockname"))
        self.last_activity = time.monotonic()
        if self._write_buffer is not None:
            low, high = self._write_buffer
            transport.set_write_buffer_limits(high=high, low=low)  # type: ignore[attr-defined]
        if self._on_open is not None:
            self._on_open(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        if self.closed or self.decoder_failed:
            # drain and drop whatever still arrives on a connection we are closing
            if self._discard is None:
                self._discard = bytearray(64 * 1024)
            return memoryview(self._discard)
        return self.decoder.get_buffer(sizehint)

    @property
    def decoder_failed(self) -> bool:
        return self.decoder.failed

    def buffer_updated(self, nbytes: int) -> None:
        if self.closed or self.decoder_failed:
            return
        self.last_activity = time.monotonic()
        try:
            commands = self.decoder.buffer_updated(nbytes)
        except RemotingProtocolError as e:
            log.warning("closing %s: protocol error from %s: %s", self, self.remote_addr, e)
            self.close()
            return
        for cmd in commands:
            self._received(cmd)

    def eof_received(self) -> bool | None:
        return None  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._out.clear()
        self.reading_paused = False
        held, self._held = self._held, deque()
        for _cmd, _at, on_done in held:
            if on_done is not None:
                on_done()  # never run: the connection is gone
        self._writable.set()
        self._closed_event.set()
        if self._pending:
            err = RemotingSendRequestError(f"connection to {self.remote_addr} closed" + (f": {exc}" if exc else ""))
            pending, self._pending = self._pending, {}
            for fut in pending.values():
                if not fut.done():
                    fut.set_exception(err)
        if self._on_close is not None:
            self._on_close(self)

    def pause_writing(self) -> None:
        """Above the high water mark: stop reading too (Java NettyServerHandler#channelWritabilityChanged
        turns auto-read off), so a peer that does not read its answers cannot make us buffer more."""
        self._writable.clear()
        if self._write_buffer is not None and self.transport is not None and not self.reading_paused:
            self.reading_paused = True
            with contextlib.suppress(RuntimeError):
                self.transport.pause_reading()

    def resume_writing(self) -> None:
        self._writable.set()
        if self.reading_paused and self.transport is not None:
            self.reading_paused = False
            while self._held and not self.reading_paused:
                self.start_request(*self._held.popleft())
            with contextlib.suppress(RuntimeError):
                self.transport.resume_reading()

    # -- receiving ---------------------------------------------------------

    def _received(self, cmd: RemotingCommand) -> None:
        if cmd.flag & FLAG_RESPONSE:
            fut = self._pending.pop(cmd.opaque, None)
            if fut is None:
                log.debug("%s: response for unknown opaque %d (timed out?)", self, cmd.opaque)
            elif not fut.done():
                fut.set_result(cmd)
            return
        received_at_ms = int(time.time() * 1000)
        if self._dispatch is not None and self._dispatch(self, cmd, received_at_ms):
            return
        self.start_request(cmd, received_at_ms)

    def start_request(
        self, cmd: RemotingCommand, received_at_ms: int, on_done: Callable[[], None] | None = None
    ) -> None:
        """Run the request's handler in a task of its own (its answer is sent when it returns);
        `on_done` runs after. While the peer does not read its answers (above the high water mark)
        the request waits here, so its answer is not buffered too."""
        if self.reading_paused:
            self._held.append((cmd, received_at_ms, on_done))
            return
        task = asyncio.get_running_loop().create_task(self._process_request(cmd, received_at_ms))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if on_done is not None:
            task.add_done_callback(lambda _t: on_done())

    def answer(self, cmd: RemotingCommand, code: int, remark: str) -> None:
        """Answer a request without running it (busy, overload); one-way requests get nothing."""
        self._respond(
            cmd, cmd.make_response(code, remark), RequestContext(self, self.endpoint, int(time.time() * 1000))
        )

    async def _process_request(self, cmd: RemotingCommand, received_at_ms: int) -> None:
        """Java NettyRemotingAbstract#processRequestCommand: the one place that catches."""
        ctx = RequestContext(self, self.endpoint, received_at_ms)
        handler = self.table.lookup(cmd.code)
        response: RemotingCommand | None
        in_flight = self.table.in_flight
        in_flight[cmd.code] = in_flight.get(cmd.code, 0) + 1
        try:
            check: RequestCheck | None = getattr(self.endpoint, "request_check", None)
            if check is not None and (response := check(self, cmd)) is not None:
                pass
            elif handler is None:
                self.table.log_unsupported(cmd.code, self)
                response = cmd.make_response(
                    ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {cmd.code} not supported"
                )
            else:
                response = await call_handler(handler, ctx, cmd)
        finally:
            in_flight[cmd.code] -= 1
        self._respond(cmd, response, ctx)

    def _respond(self, cmd: RemotingCommand, response: RemotingCommand | None, ctx: RequestContext) -> None:
        if response is None:
            return
        if cmd.flag & FLAG_ONEWAY:
            self.table.observe_rpc(ctx, cmd, response, False, False)
            return  # one-way requests are never answered
        response.opaque = cmd.opaque
        response.flag |= FLAG_RESPONSE
        response.serialize_type = cmd.serialize_type
        self.table.observe_rpc(ctx, cmd, response, self.send(response), False)

    # -- sending -----------------------------------------------------------

    def send(self, cmd: RemotingCommand) -> bool:
        """Write one command; False if the connection is already closed."""
        transport = self.transport
        if self.closed or transport is None or transport.is_closing():
            log.debug("%s: dropping %r, connection closed", self, cmd)
            return False
        head, body = encode_parts(cmd)
        out = self._out
        if not out:
            if self._loop is None:
                transport.writelines((head,) if body is None else (head, body))
                self.last_activity = time.monotonic()
                return True
            # Netty's flush at the end of a read batch: the frames of every answer that is ready in
            # this loop turn go out in one write at the start of the next one, so a lone answer
            # waits only for the rest of the turn.
            self._loop.call_soon(self._flush)
        out.append(head)
        if body is not None:
            out.append(body)
        return True

    def _flush(self) -> None:
        """Write the frames collected since the last flush (see send); dropped once closing."""
        out, self._out = self._out, []
        transport = self.transport
        if not out or self.closed or transport is None or transport.is_closing():
            return
        transport.writelines(out)
        self.last_activity = time.monotonic()

    async def wait_writable(self) -> None:
        """Wait while the transport's write buffer is above its high-water mark."""
        await self._writable.wait()

    def send_oneway(self, cmd: RemotingCommand) -> bool:
        """Send a request that must not be answered (Java invokeOneway)."""
        cmd.flag = (cmd.flag | FLAG_ONEWAY) & ~FLAG_RESPONSE
        return self.send(cmd)

    async def invoke(self, cmd: RemotingCommand, timeout_s: float) -> RemotingCommand:
        """Send a request and wait for its response (Java invokeSync).

        Raises RemotingTimeout, or RemotingSendRequestError if the connection drops.
        """
        if self.closed:
            raise RemotingSendRequestError(f"connection to {self.remote_addr} is closed")
        cmd.flag &= ~(FLAG_RESPONSE | FLAG_ONEWAY)
        if cmd.opaque in self._pending:
            cmd.opaque = next_opaque()
        fut: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()
        self._pending[cmd.opaque] = fut
        try:
            if not self.send(cmd):
                raise RemotingSendRequestError(f"connection to {self.remote_addr} is closed")
            try:
                async with asyncio.timeout(timeout_s):
                    return await fut
            except TimeoutError:
                raise RemotingTimeout(
                    f"wait response on {self.remote_addr} timeout {int(timeout_s * 1000)}(ms), code {cmd.code}"
                ) from None
        finally:
            if self._pending.get(cmd.opaque) is fut:
                del self._pending[cmd.opaque]

    def close(self) -> None:
        """Close the connection; pending invokes fail, close listeners run once."""
        if self.transport is not None and not self.transport.is_closing():
            self._flush()  # what was sent before the close goes out first, as it did unbatched
            self.transport.close()

    def abort(self) -> None:
        self._out.clear()
        if self.transport is not None:
            self.transport.abort()

    async def wait_closed(self) -> None:
        await self._closed_event.wait()

    def cancel_tasks(self) -> None:
        for t in list(self._tasks):
            t.cancel()

    @property
    def pending_count(self) -> int:
        return len(self._pending)


def call_listener(listener: CloseListener, channel: Channel) -> None:
    """Run a close listener; a coroutine result is scheduled, errors are logged."""
    try:
        result = listener(channel)
        if inspect.isawaitable(result):
            task = asyncio.ensure_future(result)
            task.add_done_callback(_log_task_error)
    except Exception:
        log.exception("close listener %r failed for %s", listener, channel)


def _log_task_error(task: asyncio.Future) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("close listener failed", exc_info=task.exception())


__all__ = [
    "Channel",
    "ProcessorTable",
    "RequestContext",
    "call_listener",
    "handles",
]
