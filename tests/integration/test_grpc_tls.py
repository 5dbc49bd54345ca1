"""The gRPC endpoint under each tls.server.mode, as the Java proxy: enforcing serves TLS only (test
mode's self-signed certificate), permissive both on one port (the official Python SDK with TLS on
and off against one broker), disabled plaintext only."""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import grpc
import pytest
import rocketmq
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb
from rocketmq.grpc_protocol import service_pb2_grpc
from support.grpc_sdk import current_loop, run
from support.pyrmq_proc import PyrmqBroker
from support.servers import PyrmqNamesrv

from pyrmq.grpc.server import GrpcEndpoint
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import CreateTopicRequestHeader
from pyrmq.remoting.client import RemotingClient
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
    return stub.QueryRoute(
        spb.QueryRouteRequest(topic=pb.Resource(name="TlsT")), timeout=5, metadata=(("x-mq-client-id", "tls-check"),)
    )


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


def test_permissive_mode_serves_tls_and_plaintext_on_one_port(caplog: pytest.LogCaptureFixture) -> None:
    """The first byte picks the inner port (a ClientHello: TLS); RPCs see the client's own address;
    a shutdown with a connection still open logs no error."""

    async def scenario() -> None:
        endpoint = GrpcEndpoint(_controller(TlsMode.PERMISSIVE), 0)
        await endpoint.start()
        try:
            assert endpoint.tls and endpoint.listener is not None
            addr = f"127.0.0.1:{endpoint.port}"
            cert = await asyncio.to_thread(ssl.get_server_certificate, ("127.0.0.1", endpoint.port))
            creds = grpc.ssl_channel_credentials(root_certificates=cert.encode())
            options = [("grpc.ssl_target_name_override", "localhost")]
            for _ in range(2):  # both kinds, interleaved, each on a fresh connection
                async with grpc.aio.secure_channel(addr, creds, options) as channel:
                    assert (await _query_route(channel)).status.code == pb.Code.TOPIC_NOT_FOUND
                    # grpcio's peer is the inner connection; the RPCs get the client's address
                    [(inner, client)] = endpoint.listener._peers.items()
                    assert endpoint._peer_of(inner) == client != inner and client.startswith("127.0.0.1:")
                async with grpc.aio.insecure_channel(addr) as channel:
                    assert (await _query_route(channel)).status.code == pb.Code.TOPIC_NOT_FOUND
            # a client that leaves at once; one that speaks neither TLS nor HTTP/2: grpcio closes
            # the inner connection and the splice closes the client's (EOF within the timeout)
            _, quiet = await asyncio.open_connection("127.0.0.1", endpoint.port)
            quiet.close()
            reader, writer = await asyncio.open_connection("127.0.0.1", endpoint.port)
            writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            await asyncio.wait_for(reader.read(), 5)
            writer.close()
            async with grpc.aio.insecure_channel(addr) as channel:  # still serving
                assert (await _query_route(channel)).status.code == pb.Code.TOPIC_NOT_FOUND
            # the splice forgets a connection once it closes
            for _ in range(50):
                if not endpoint.listener._splices:
                    break
                await asyncio.sleep(0.05)
            assert not endpoint.listener._splices and not endpoint.listener._peers
            _, silent = await asyncio.open_connection("127.0.0.1", endpoint.port)  # open at shutdown
            await asyncio.sleep(0.05)
        finally:
            await endpoint.shutdown()
        silent.close()

    asyncio.run(scenario())
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_disabled_mode_serves_plaintext_only() -> None:
    async def scenario() -> None:
        endpoint = GrpcEndpoint(_controller(TlsMode.DISABLED), 0)
        await endpoint.start()
        try:
            assert not endpoint.tls and endpoint.listener is None
            addr = f"127.0.0.1:{endpoint.port}"
            async with grpc.aio.insecure_channel(addr) as channel:
                assert (await _query_route(channel)).status.code == pb.Code.TOPIC_NOT_FOUND
            with pytest.raises((ssl.SSLError, ConnectionError)):
                await asyncio.to_thread(ssl.get_server_certificate, ("127.0.0.1", endpoint.port), timeout=5)
        finally:
            await endpoint.shutdown()

    asyncio.run(scenario())


def test_python_sdk_with_tls_on_and_off_against_one_permissive_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broker with the default tls.server.mode (permissive, test mode's certificate): the
    official Python SDK sends and receives with TLS on and off through the same gRPC port."""
    ns = PyrmqNamesrv(tmp_path / "ns")
    try:
        broker = PyrmqBroker(ns.addr, tmp_path / "broker", grpc_port=0)
        try:
            with current_loop():  # the SDK starts on this thread: support.grpc_sdk.current_loop
                _sdk_round_trips(broker, monkeypatch)
            assert "Traceback" not in broker.tail(400)
        finally:
            broker.stop()
    finally:
        ns.stop()


def _sdk_round_trips(broker: PyrmqBroker, monkeypatch: pytest.MonkeyPatch) -> None:
    topic, group = "GrpcTlsT", "GrpcTlsG"

    async def create_topic() -> None:
        async with RemotingClient() as c:
            h = CreateTopicRequestHeader(topic=topic, read_queue_nums=1, write_queue_nums=1)
            r = await c.invoke(
                broker.addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, h.to_ext_fields()), 5
            )
            assert r.code == ResponseCode.SUCCESS, r

    run(create_topic())
    # The SDK trusts the system CAs only (grpc.ssl_channel_credentials()); trust the broker's
    # self-signed certificate (CN=localhost) the same way, through that call.
    cert = ssl.get_server_certificate(("127.0.0.1", broker.grpc_port)).encode()
    monkeypatch.setattr(grpc, "ssl_channel_credentials", functools.partial(grpc.ssl_channel_credentials, cert))
    # The route names the broker by brokerIP1 (127.0.0.1), as Java's local mode does, and the SDK
    # checks the certificate's name (the Java SDK trusts any certificate): accept CN=localhost there.
    secure_channel = grpc.aio.secure_channel

    def named_localhost(target: str, credentials: Any, options: Any = None, *args: Any, **kwargs: Any) -> Any:
        options = [*(options or []), ("grpc.ssl_target_name_override", "localhost")]
        return secure_channel(target, credentials, options, *args, **kwargs)

    monkeypatch.setattr(grpc.aio, "secure_channel", named_localhost)
    config = rocketmq.ClientConfiguration(f"localhost:{broker.grpc_port}", rocketmq.Credentials(), request_timeout=10)
    for tls in (True, False):
        consumer = rocketmq.SimpleConsumer(
            config, group, {topic: rocketmq.FilterExpression("*")}, await_duration=5, tls_enable=tls
        )
        producer = rocketmq.Producer(config, (topic,), tls_enable=tls)
        consumer.startup()
        producer.startup()
        try:
            msg = rocketmq.Message()
            msg.topic, msg.body, msg.tag = topic, f"tls={tls}".encode(), "T"
            sent = producer.send(msg).message_id
            got = []
            deadline = time.monotonic() + 15
            while not got and time.monotonic() < deadline:
                got = consumer.receive(16, 15)
            assert [(x.message_id, x.body) for x in got] == [(sent, f"tls={tls}".encode())]
            consumer.ack(got[0])
        finally:
            producer.shutdown()
            consumer.shutdown()
