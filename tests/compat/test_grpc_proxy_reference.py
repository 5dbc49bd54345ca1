"""What the Java proxy 5.5.0 in local mode answers where pyrmq's gRPC endpoint follows it without an
SDK step to show it (reference runs, opt-in PYRMQ_COMPAT_REFERENCE=1; pyrmq's side is asserted with
the same values in tests/integration/test_grpc_cluster.py and test_grpc_python_sdk.py):

- the route of a topic on two brokers, asked through either broker's proxy: both brokers' queues,
  each broker at the host it registered with the asked proxy's own grpcServerPort
  (LocalTopicRouteService: ProxyTopicRouteData(route, grpcServerPort)), never the host asked through;
- a request that is not protobuf, the RPCs the proxy does not serve, a request without client id,
  RecallMessage's checks: their status;
- the SDK's namespace: not applied to names; a stored ``ns%topic`` is split into topic and namespace.
"""

from __future__ import annotations

import json
import time

import grpc
import pytest
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as spb
from rocketmq.grpc_protocol import service_pb2_grpc
from support import probe
from support.grpc_sdk import namespace_round_trip
from support.servers import JavaLocalProxy

from pyrmq.protocol.bodies.namesrv import TopicRouteData
from pyrmq.protocol.codes import RequestCode, ResponseCode

pytestmark = [pytest.mark.compat, pytest.mark.java]

TOPIC = "GrpcRefClusterT"
SERVICE = "/apache.rocketmq.v2.MessagingService/"
#: every RPC needs a client id (GrpcMessagingApplication#validateContext: CLIENT_ID_REQUIRED)
META = (("x-mq-client-id", "grpc-ref-client"),)


def _create_topic(addr: str, topic: str, queues: int) -> None:
    probe.create_topic(addr, topic, queues, timeout=15)


def _wait_route_brokers(namesrv: str, topic: str, n: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        r = probe.topic_route(namesrv, topic)
        if r.code == ResponseCode.SUCCESS and len(TopicRouteData.decode(r.body).queue_datas or []) == n:
            return
        time.sleep(0.3)
    raise AssertionError(f"{topic} not on {n} brokers in the name server's route")


def raw_status(addr: str, method: str, body: bytes) -> tuple[grpc.StatusCode, str]:
    """The gRPC status of one unary call with `body` as the request's bytes."""
    with grpc.insecure_channel(addr) as channel:
        call = channel.unary_unary(SERVICE + method, request_serializer=lambda b: b, response_deserializer=lambda b: b)
        try:
            call(body, timeout=15, metadata=META)
        except grpc.RpcError as e:
            return e.code(), e.details() or ""
    return grpc.StatusCode.OK, ""


@pytest.mark.reference
def test_java_local_mode_route_of_a_topic_on_two_brokers(java_namesrv, tmp_path_factory) -> None:
    proxies: list[JavaLocalProxy] = []
    try:
        for i in range(2):
            proxies.append(
                JavaLocalProxy(java_namesrv.addr, tmp_path_factory.mktemp(f"proxy{i}"), name=f"grpc-ref-{i}")
            )
        for i, p in enumerate(proxies):
            _create_topic(p.addr, TOPIC, 2 + i)
        _wait_route_brokers(java_namesrv.addr, TOPIC, 2)
        queues = {p.name: 2 + i for i, p in enumerate(proxies)}
        for p in proxies:
            with grpc.insecure_channel(p.grpc_addr) as channel:
                stub = service_pb2_grpc.MessagingServiceStub(channel)
                asked = pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host="localhost", port=1)])
                r = stub.QueryRoute(
                    spb.QueryRouteRequest(topic=pb.Resource(name=TOPIC), endpoints=asked), timeout=15, metadata=META
                )
                assert r.status.code == pb.Code.OK, r.status
                seen: dict[str, list[int]] = {}
                for q in r.message_queues:
                    assert q.broker.id == 0 and q.permission == pb.READ_WRITE
                    assert q.broker.endpoints.scheme == pb.IPv4
                    assert [(a.host, a.port) for a in q.broker.endpoints.addresses] == [("127.0.0.1", p.grpc_port)]
                    seen.setdefault(q.broker.name, []).append(q.id)
                assert {k: sorted(v) for k, v in seen.items()} == {k: list(range(n)) for k, n in queues.items()}
                a = stub.QueryAssignment(
                    spb.QueryAssignmentRequest(topic=pb.Resource(name=TOPIC), group=pb.Resource(name="GrpcRefG")),
                    timeout=15,
                    metadata=META,
                )
                assert a.status.code == pb.Code.OK, a.status
                assert sorted((x.message_queue.broker.name, x.message_queue.id) for x in a.assignments) == sorted(
                    (name, -1) for name in queues
                )
                for x in a.assignments:
                    endpoint = x.message_queue.broker.endpoints.addresses
                    assert [(e.host, e.port) for e in endpoint] == [("127.0.0.1", p.grpc_port)]
    finally:
        for p in proxies:
            p.stop()


@pytest.mark.reference
def test_java_proxy_status_of_bad_bytes_and_unserved_rpcs(java_namesrv, tmp_path_factory) -> None:
    proxy = JavaLocalProxy(java_namesrv.addr, tmp_path_factory.mktemp("proxy"), name="grpc-ref-status")
    try:
        for method in ("QueryRoute", "SendMessage", "Heartbeat"):  # not protobuf: UNKNOWN, no description
            assert raw_status(proxy.grpc_addr, method, b"\xff\xff\xff\xff") == (grpc.StatusCode.UNKNOWN, "")
        for method in ("PullMessage", "UpdateOffset", "GetOffset", "QueryOffset"):
            assert raw_status(proxy.grpc_addr, method, b"") == (
                grpc.StatusCode.UNIMPLEMENTED,
                f"Method apache.rocketmq.v2.MessagingService/{method} is unimplemented",
            )
        with grpc.insecure_channel(proxy.grpc_addr) as channel:
            stub = service_pb2_grpc.MessagingServiceStub(channel)
            anonymous = stub.QueryRoute(spb.QueryRouteRequest(topic=pb.Resource(name=TOPIC)), timeout=15).status
            assert (anonymous.code, anonymous.message) == (pb.Code.CLIENT_ID_REQUIRED, "client id cannot be empty")
            # served in 5.5.0 (lite topics): the topic is checked first
            sync = stub.SyncLiteSubscription(spb.SyncLiteSubscriptionRequest(), timeout=15, metadata=META).status
            assert (sync.code, sync.message) == (pb.Code.ILLEGAL_TOPIC, "The specified topic is blank")
            recall = stub.RecallMessage(spb.RecallMessageRequest(), timeout=15, metadata=META).status
            assert (recall.code, recall.message) == (pb.Code.ILLEGAL_TOPIC, "The specified topic is blank")
            r = spb.RecallMessageRequest(topic=pb.Resource(name="NoSuchT"), recall_handle="x")
            conflict = stub.RecallMessage(r, timeout=15, metadata=META).status
            assert conflict.code == pb.Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
            assert conflict.message == (
                "org.apache.rocketmq.proxy.common.ProxyException: TopicMessageType validate failed, "
                "the expected type is UNSPECIFIED, but actual type is DELAY"
            )
    finally:
        proxy.stop()


@pytest.mark.reference
def test_java_proxy_ignores_the_sdk_namespace(java_namesrv, tmp_path_factory) -> None:
    """The same scenario as test_grpc_python_sdk.py's namespace test, with the same expectations."""
    proxy = JavaLocalProxy(java_namesrv.addr, tmp_path_factory.mktemp("proxy"), name="grpc-ref-ns")
    try:
        plain, wrapped, group = "GrpcNsT", "ns2%GrpcNsT2", "GrpcNsG"
        for topic in (plain, wrapped):
            _create_topic(proxy.addr, topic, 1)
        body = json.dumps({"groupName": group}).encode()
        r = probe.request(proxy.addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, timeout=15, body=body)
        assert r.code == ResponseCode.SUCCESS, r
        _wait_route_brokers(java_namesrv.addr, wrapped, 1)
        got = namespace_round_trip(proxy.grpc_addr, (plain, wrapped), group, "ns1")
        assert got == {plain: (plain, "", "ok"), wrapped: ("GrpcNsT2", "ns2", "50001")}
    finally:
        proxy.stop()
