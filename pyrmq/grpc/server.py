"""The gRPC transport: a ``grpc.aio`` server in the broker's event loop, one servicer, thin.

Java: ``GrpcServer`` + ``GrpcMessagingApplication``: each RPC gets its context (client id,
remote address, SDK language/version from the request metadata) and goes to one activity
module; an error the activity raises becomes the response's Status, as the Java proxy's
``ResponseBuilder#buildStatus(Throwable)`` does, so a client always gets an answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from pyrmq.grpc import activities
from pyrmq.grpc.auth import GrpcAuth
from pyrmq.grpc.context import GrpcContext
from pyrmq.grpc.proto import spb, spb_grpc
from pyrmq.grpc.splice import INNER_HOST, SniffingListener
from pyrmq.grpc.status import Code, GrpcProxyError, from_error
from pyrmq.remoting.tls import TlsConfig, TlsMode, server_pem_pair

log = logging.getLogger("pyrmq.grpc")

GRPC_MAX_INBOUND_MESSAGE_SIZE = 130 * 1024 * 1024  # ProxyConfig#grpcMaxInboundMessageSize


class _MalformedRequestFilter(logging.Filter):
    """grpcio logs a request that is not valid protobuf with a traceback; the client already got
    its error status (UNKNOWN from grpcio), so one warning line says it."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and type(exc).__name__ == "DecodeError":
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.msg, record.args, record.exc_info, record.exc_text = f"malformed gRPC request: {exc}", (), None, None
        return True


_DECODE_FILTER = _MalformedRequestFilter()


def _no_client_id() -> GrpcProxyError:
    return GrpcProxyError(Code.CLIENT_ID_REQUIRED, "client id cannot be empty")


class MessagingServicer(spb_grpc.MessagingServiceServicer):
    """MessagingService v2: every unary RPC answers a Status, never an exception."""

    def __init__(
        self, acts: activities.Activities, peer_of: Callable[[str], str] = str, auth: GrpcAuth | None = None
    ) -> None:
        self.acts = acts
        self.peer_of = peer_of  # the client's address behind permissive mode's splice
        self.auth = auth  # the broker's users and ACLs (None: auth off)

    def _context(self, ctx: Any) -> GrpcContext:
        gctx = GrpcContext.of(ctx)
        gctx.remote_addr = self.peer_of(gctx.remote_addr)
        return gctx

    def _validate(self, gctx: GrpcContext, request: Any) -> None:
        """GrpcMessagingApplication#addExecutor before every RPC and Telemetry command: the
        request pipeline (authentication, then authorization), then validateContext."""
        if self.auth is not None:
            self.auth.check(gctx, request)
        if not gctx.client_id.strip():
            raise _no_client_id()

    async def _unary(
        self, fn: Callable[[GrpcContext, Any], Awaitable[Any]], response_cls: Any, request: Any, ctx: Any
    ) -> Any:
        gctx = self._context(ctx)
        try:
            self._validate(gctx, request)
            return await fn(gctx, request)
        except Exception as e:  # Java: ResponseBuilder#buildStatus(Throwable) in the activity's future
            if not isinstance(e, activities.GrpcProxyError):
                log.exception("gRPC %s failed", response_cls.__name__)
            return response_cls(status=from_error(e))

    async def QueryRoute(self, request: Any, context: Any) -> Any:
        return await self._unary(self.acts.query_route, spb.QueryRouteResponse, request, context)

    async def Heartbeat(self, request: Any, context: Any) -> Any:
        return await self._unary(self.acts.heartbeat, spb.HeartbeatResponse, request, context)

    async def SendMessage(self, request: Any, context: Any) -> Any:
        return await self._unary(self.acts.send_message, spb.SendMessageResponse, request, context)

    async def QueryAssignment(self, request: Any, context: Any) -> Any:
        return await self._unary(self.acts.query_assignment, spb.QueryAssignmentResponse, request, context)

    async def AckMessage(self, request: Any, context: Any) -> Any:
        return await self._unary(self.acts.ack_message, spb.AckMessageResponse, request, context)

    async def ChangeInvisibleDuration(self, request: Any, context: Any) -> Any:
        return await self._unary(
            self.acts.change_invisible_duration, spb.ChangeInvisibleDurationResponse, request, context
        )

    async def ForwardMessageToDeadLetterQueue(self, request: Any, context: Any) -> Any:
        return await self._unary(
            self.acts.forward_to_dlq, spb.ForwardMessageToDeadLetterQueueResponse, request, context
        )

    async def NotifyClientTermination(self, request: Any, context: Any) -> Any:
        return await self._unary(
            self.acts.notify_client_termination, spb.NotifyClientTerminationResponse, request, context
        )

    async def ReceiveMessage(self, request: Any, context: Any) -> AsyncIterator[Any]:
        gctx = self._context(context)
        try:
            self._validate(gctx, request)
            async for response in self.acts.receive_message(gctx, request):
                yield response
        except Exception as e:
            if not isinstance(e, activities.GrpcProxyError):
                log.exception("gRPC ReceiveMessage failed")
            yield spb.ReceiveMessageResponse(status=from_error(e))

    async def RecallMessage(self, request: Any, context: Any) -> Any:
        return await self._unary(self.acts.recall_message, spb.RecallMessageResponse, request, context)

    # Not served, as grpc-java answers a method its service does not override (the Java proxy 5.5.0
    # leaves the offset RPCs out; it serves SyncLiteSubscription for lite topics, which pyrmq has not)
    async def PullMessage(self, request: Any, context: Any) -> None:
        await _unimplemented(context, "PullMessage")

    async def UpdateOffset(self, request: Any, context: Any) -> Any:
        await _unimplemented(context, "UpdateOffset")

    async def GetOffset(self, request: Any, context: Any) -> Any:
        await _unimplemented(context, "GetOffset")

    async def QueryOffset(self, request: Any, context: Any) -> Any:
        await _unimplemented(context, "QueryOffset")

    async def SyncLiteSubscription(self, request: Any, context: Any) -> Any:
        await _unimplemented(context, "SyncLiteSubscription")

    async def EndTransaction(self, request: Any, context: Any) -> Any:
        return await self._unary(self.acts.end_transaction, spb.EndTransactionResponse, request, context)

    async def Telemetry(self, request_iterator: Any, context: Any) -> AsyncIterator[Any]:
        """Replies to the client's commands and the broker's check requests share the stream."""
        gctx = self._context(context)
        channel = self.acts.open_stream(gctx)
        failed: list[activities.GrpcProxyError] = []

        async def read() -> None:
            try:
                async for command in request_iterator:
                    if self.auth is not None:  # Java: a refused command's status, the stream goes on
                        try:
                            self.auth.check(gctx, command)
                        except activities.GrpcProxyError as e:
                            channel.put(spb.TelemetryCommand(status=from_error(e)))
                            continue
                    if not gctx.client_id.strip():  # Java: the status, then the stream completes
                        channel.put(spb.TelemetryCommand(status=from_error(_no_client_id())))
                        return
                    reply = await self.acts.telemetry(gctx, command, channel)
                    if reply is not None:
                        channel.put(reply)
            except activities.GrpcProxyError as e:
                failed.append(e)
            except Exception:
                log.exception("gRPC Telemetry failed")
            finally:
                self.acts.clients.stream_closed(channel)

        reader = asyncio.create_task(read())
        try:
            async for command in channel.commands():
                yield command
            if failed:  # ClientActivity#processTelemetryException
                e = failed[0]
                code = grpc.StatusCode.INVALID_ARGUMENT if 40000 <= e.code < 50000 else grpc.StatusCode.INTERNAL
                await context.abort(code, f"process client telemetryCommand failed. {e.message}")
        finally:
            reader.cancel()
            self.acts.clients.stream_closed(channel)


async def _unimplemented(context: Any, method: str) -> None:
    """grpc-java's ServerCalls#asyncUnimplementedUnaryCall status."""
    await context.abort(
        grpc.StatusCode.UNIMPLEMENTED, f"Method apache.rocketmq.v2.MessagingService/{method} is unimplemented"
    )


def _log_tls_failure(future: asyncio.Future[int]) -> None:
    if not future.cancelled() and (e := future.exception()) is not None:
        log.error("gRPC endpoint: TLS cannot be served (plaintext still is): %s: %s", type(e).__name__, e)


class GrpcEndpoint:
    """A server for ``pyrmq.startup.run_servers``: start() binds, shutdown() stops with a short grace."""

    def __init__(self, controller: Any, port: int) -> None:
        self.controller = controller
        self.host = controller.host or "0.0.0.0"
        self.requested_port = port
        self.port = port
        self.server: grpc.aio.Server | None = None
        self.listener: SniffingListener | None = None  # permissive mode's public port
        self.tls_server: grpc.aio.Server | None = None  # permissive mode's inner TLS server
        self._tls_port: asyncio.Future[int] | None = None  # ... and its port, once it serves
        self.mode = TlsMode.DISABLED
        self.tls = False  # serves TLS (enforcing: only TLS; permissive: TLS and plaintext)
        self.activities: activities.Activities | None = None

    @property
    def address(self) -> str:
        host = self.controller.config.broker_ip if self.host in ("0.0.0.0", "::", "") else self.host
        return f"{host}:{self.port}"

    def _new_server(self, servicer: MessagingServicer) -> grpc.aio.Server:
        server = grpc.aio.server(options=[("grpc.max_receive_message_length", GRPC_MAX_INBOUND_MESSAGE_SIZE)])
        spb_grpc.add_MessagingServiceServicer_to_server(servicer, server)
        return server

    async def start(self) -> None:
        logging.getLogger("grpc._cython.cygrpc").addFilter(_DECODE_FILTER)  # once: a set of filters
        self.activities = activities.Activities(self.controller, lambda: self.address)
        self.activities.consumer.renewal.start()
        servicer = MessagingServicer(
            self.activities, self._peer_of, GrpcAuth.of(getattr(self.controller, "auth", None))
        )
        tls = self.controller.tls.with_config_file()
        self.mode = tls.server_mode
        self.tls = self.mode is not TlsMode.DISABLED
        if self.mode is TlsMode.PERMISSIVE:
            await self._start_permissive(servicer, tls)
        else:
            server = self._new_server(servicer)
            host = f"[{self.host}]" if ":" in self.host else self.host
            address = f"{host}:{self.requested_port}"
            if self.tls:
                cert, key = await asyncio.to_thread(server_pem_pair, tls)  # test mode makes an RSA key
                port = server.add_secure_port(address, grpc.ssl_server_credentials([(key, cert)]))
            else:
                port = server.add_insecure_port(address)
            if port == 0:
                raise OSError(f"cannot listen for gRPC on {self.host}:{self.requested_port}")
            await server.start()
            self.server = server
            self.port = port
        log.info("gRPC endpoint (MessagingService v2) on %s (TLS %s)", self.address, self.mode)

    async def _start_permissive(self, servicer: MessagingServicer, tls: TlsConfig) -> None:
        """Both on one port, as the Java proxy (splice.py): a plaintext grpcio server now, the TLS
        one once its key is ready (test mode's is made off the loop, as the remoting ports do;
        configured files are read before the port opens, so a bad one fails the start)."""
        server = self._new_server(servicer)
        plain_port = server.add_insecure_port(f"{INNER_HOST}:0")
        if plain_port == 0:
            raise OSError(f"cannot listen for gRPC on {INNER_HOST}")
        await server.start()
        self.server = server
        self._tls_port = asyncio.ensure_future(self._start_tls_server(servicer, tls))
        self._tls_port.add_done_callback(_log_tls_failure)
        try:
            if not tls.test_mode_enable:
                await asyncio.shield(self._tls_port)
            self.listener = SniffingListener(self.host, self.requested_port, self._tls_port, plain_port)
            self.port = await self.listener.start()
        except BaseException:
            await self.shutdown()
            raise

    async def _start_tls_server(self, servicer: MessagingServicer, tls: TlsConfig) -> int:
        cert, key = await asyncio.to_thread(server_pem_pair, tls)
        server = self._new_server(servicer)
        port = server.add_secure_port(f"{INNER_HOST}:0", grpc.ssl_server_credentials([(key, cert)]))
        if port == 0:
            raise OSError(f"cannot listen for gRPC with TLS on {INNER_HOST}")
        await server.start()
        self.tls_server = server
        return port

    def _peer_of(self, inner: str) -> str:
        return self.listener.peer_of(inner) if self.listener is not None else inner

    async def shutdown(self) -> None:
        if self.listener is not None:
            await self.listener.close()
            self.listener = None
        if self._tls_port is not None:
            self._tls_port.cancel()
            await asyncio.gather(self._tls_port, return_exceptions=True)
            self._tls_port = None
        for server in (self.tls_server, self.server):
            if server is not None:
                await server.stop(grace=1.0)
        self.server = self.tls_server = None
        if self.activities is not None:
            await self.activities.consumer.renewal.shutdown()
            self.activities = None


__all__ = ["GrpcEndpoint", "MessagingServicer"]
