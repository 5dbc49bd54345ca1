"""`pyrmq dev` serves the gRPC endpoint (here on a free port, never 8081 in tests) and says where;
`pyrmq broker` with grpcServerPort set but without the grpc extra refuses with one readable line."""

from __future__ import annotations

import asyncio
import sys
import time

import grpc
import pytest
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb
from rocketmq.grpc_protocol import service_pb2_grpc

from pyrmq.broker import startup
from pyrmq.broker.config import BrokerConfig
from pyrmq.testing.process import PyrmqDevProcess


def test_dev_serves_grpc_and_prints_its_address(tmp_path) -> None:
    dev = PyrmqDevProcess(store_dir=tmp_path / "store", grpc_port=0, python=sys.executable).start()
    try:
        addr = f"127.0.0.1:{dev.grpc_port}"
        deadline = time.monotonic() + 15  # ready = registered, which can come before the printed line
        while f"grpc {addr}" not in dev.tail() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert f"grpc {addr}" in dev.tail()
        with grpc.insecure_channel(addr) as channel:
            stub = service_pb2_grpc.MessagingServiceStub(channel)
            r = stub.QueryRoute(
                spb.QueryRouteRequest(topic=pb.Resource(name="NotCreatedT")),
                timeout=10,
                metadata=(("x-mq-client-id", "dev-check"),),
            )
            assert r.status.code == pb.Code.TOPIC_NOT_FOUND
    finally:
        assert dev.stop() == 0


def test_broker_refuses_grpc_without_the_extra(tmp_path, monkeypatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("pyrmq.grpc.config.grpc_missing", lambda: "grpc is not installed; install the grpc extra")
    cfg = BrokerConfig.from_properties({"grpcServerPort": "0", "storePathRootDir": str(tmp_path / "s")})
    assert asyncio.run(startup.serve(cfg)) == 1
    err = capsys.readouterr().err
    assert "grpcServerPort=0 is set but the gRPC endpoint cannot start: grpc is not installed" in err
