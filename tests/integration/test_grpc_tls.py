"""The gRPC endpoint with tls.server.mode=enforcing: TLS only (test mode's self-signed certificate),
as the Java proxy under the same TLS settings; a plaintext client is refused."""

from __future__ import annotations

import asyncio
import ssl
from types import SimpleNamespace

import grpc
import pytest
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb
from rocketmq.grpc_protocol import service_pb2_grpc

from pyrmq.grpc.server import GrpcEndpoint
from pyrmq.remoting.tls import TlsConfig, TlsMode


def _controller(mode: TlsMode) -> SimpleNamespace:
    """The broker parts the endpoint and a route lookup touch; the topic is unknown to it."""
    return SimpleNamespace(
        host="127.0.0.1",
        tls=TlsConfig(server_mode=mode),  # tls.test.mode.enable: a self-signed certificate
        config={"brokerName": "b"},
        topic_config_manager=SimpleNamespace(select_topic_config=lambda topic: None),
    )


def _query_route(channel: grpc.aio.Channel) -> spb.QueryRouteResponse:
    stub = service_pb2_grpc.MessagingServiceStub(channel)
    return stub.QueryRoute(spb.QueryRouteRequest(topic=pb.Resource(name="TlsT")), timeout=5)


def test_enforcing_mode_serves_tls_only() -> None:
    async def scenario() -> None:
        endpoint = GrpcEndpoint(_controller(TlsMode.ENFORCING), 0)
        await endpoint.start()
        try:
            assert endpoint.tls
            addr = f"127.0.0.1:{endpoint.port}"
            cert = await asyncio.to_thread(ssl.get_server_certificate, ("127.0.0.1", endpoint.port))
            creds = grpc.ssl_channel_credentials(root_certificates=cert.encode())
            options = [("grpc.ssl_target_name_override", "localhost")]  # the certificate's CN
            async with grpc.aio.secure_channel(addr, creds, options) as channel:
                r = await _query_route(channel)
                assert r.status.code == pb.Code.TOPIC_NOT_FOUND
            async with grpc.aio.insecure_channel(addr) as channel:
                with pytest.raises(grpc.aio.AioRpcError) as e:
                    await _query_route(channel)
                assert e.value.code() == grpc.StatusCode.UNAVAILABLE
        finally:
            await endpoint.shutdown()

    asyncio.run(scenario())


def test_permissive_mode_serves_plaintext() -> None:
    async def scenario() -> None:
        endpoint = GrpcEndpoint(_controller(TlsMode.PERMISSIVE), 0)
        await endpoint.start()
        try:
            assert not endpoint.tls
            async with grpc.aio.insecure_channel(f"127.0.0.1:{endpoint.port}") as channel:
                assert (await _query_route(channel)).status.code == pb.Code.TOPIC_NOT_FOUND
        finally:
            await endpoint.shutdown()

    asyncio.run(scenario())
