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
from pyrmq.grpc.context import GrpcContext
from pyrmq.grpc.proto import spb, spb_grpc
from pyrmq.grpc.status import from_error
from pyrmq.remoting.tls import TlsMode, server_pem_pair

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


class MessagingServicer(spb_grpc.MessagingServiceServicer):
    """MessagingService v2: every unary RPC answers a Status, never an exception."""

    def __init__(self, acts: activities.Activities) -> None:
        self.acts = acts

    async def _unary(
        self, fn: Callable[[GrpcContext, Any], Awaitable[Any]], response_cls: Any, request: Any, ctx: Any
    ) -> Any:
        gctx = GrpcContext.of(ctx)
        try:
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
        gctx = GrpcContext.of(context)
        try:
            async for response in self.acts.receive_message(gctx, request):
                yield response
        except Exception as e:
            if not isinstance(e, activities.GrpcProxyError):
                log.exception("gRPC ReceiveMessage failed")
            yield spb.ReceiveMessageResponse(status=from_error(e))

    async def EndTransaction(self, request: Any, context: Any) -> Any:
        return await self._unary(self.acts.end_transaction, spb.EndTransactionResponse, request, context)

    async def Telemetry(self, request_iterator: Any, context: Any) -> AsyncIterator[Any]:
        """Replies to the client's commands and the broker's check requests share the stream."""
        gctx = GrpcContext.of(context)
        channel = self.acts.open_stream(gctx)
        failed: list[activities.GrpcProxyError] = []

        async def read() -> None:
            try:
                async for command in request_iterator:
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


class GrpcEndpoint:
    """A server for ``pyrmq.startup.run_servers``: start() binds, shutdown() stops with a short grace."""

    def __init__(self, controller: Any, port: int) -> None:
        self.controller = controller
        self.host = controller.host or "0.0.0.0"
        self.requested_port = port
        self.port = port
        self.server: grpc.aio.Server | None = None
        self.tls = False

    @property
    def address(self) -> str:
        host = self.controller.config.broker_ip if self.host in ("0.0.0.0", "::", "") else self.host
        return f"{host}:{self.port}"

    async def start(self) -> None:
        logging.getLogger("grpc._cython.cygrpc").addFilter(_DECODE_FILTER)  # once: a set of filters
        server = grpc.aio.server(options=[("grpc.max_receive_message_length", GRPC_MAX_INBOUND_MESSAGE_SIZE)])
        acts = activities.Activities(self.controller, lambda: self.address)
        spb_grpc.add_MessagingServiceServicer_to_server(MessagingServicer(acts), server)
        host = f"[{self.host}]" if ":" in self.host else self.host
        tls = self.controller.tls.with_config_file()
        self.tls = tls.server_mode is TlsMode.ENFORCING  # PERMISSIVE (plaintext and TLS): see docs/grpc.md
        if self.tls:
            cert, key = server_pem_pair(tls)
            port = server.add_secure_port(f"{host}:{self.requested_port}", grpc.ssl_server_credentials([(key, cert)]))
        else:
            port = server.add_insecure_port(f"{host}:{self.requested_port}")
        if port == 0:
            raise OSError(f"cannot listen for gRPC on {self.host}:{self.requested_port}")
        self.port = port
        await server.start()
        self.server = server
        log.info("gRPC endpoint (MessagingService v2) on %s%s", self.address, " (TLS)" if self.tls else "")

    async def shutdown(self) -> None:
        if self.server is not None:
            await self.server.stop(grace=1.0)
            self.server = None


__all__ = ["GrpcEndpoint", "MessagingServicer"]
