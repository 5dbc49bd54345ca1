"""Two pyrmq brokers of one cluster, each serving gRPC (the Java proxy's local mode in each broker):
a 5.x SDK sees both brokers' queues through either endpoint, each with its own broker's endpoint.

Java's local mode (LocalTopicRouteService + ProxyTopicRouteData(route, grpcServerPort)) answers
with the name servers' route and gives every broker its registered host with the proxy's gRPC
port, so the brokers share the port on different hosts: here 127.0.0.1 and 127.0.0.2.
"""

from __future__ import annotations

import json
import time

import pytest
import rocketmq  # the grpc extra (tools/test installs it): missing, the test fails, never skips
from support import probe
from support.ports import free_port
from support.pyrmq_proc import PyrmqBroker
from support.servers import PyrmqNamesrv

from pyrmq.protocol.bodies.namesrv import TopicRouteData
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.headers.broker import CreateTopicRequestHeader

TOPIC, GROUP, FIFO_GROUP = "GrpcClusterT", "GrpcClusterG", "GrpcClusterFifoG"
QUEUES = {"127.0.0.1": 2, "127.0.0.2": 3}
META = (("x-mq-client-id", "raw-v2-client"),)  # every RPC needs one (CLIENT_ID_REQUIRED)


def _admin(addr: str, code: int, ext: dict[str, str], body: bytes = b"") -> None:
    r = probe.request(addr, code, ext, body=body)
    assert r.code == ResponseCode.SUCCESS, r


def _route_brokers(namesrv: str) -> int:
    r = probe.topic_route(namesrv, TOPIC)
    return len(TopicRouteData.decode(r.body).queue_datas or []) if r.code == ResponseCode.SUCCESS else 0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("grpc-cluster")
    port = free_port()  # one gRPC port for the cluster, as Java's local mode assumes
    ns = PyrmqNamesrv(work / "ns")
    brokers: list[PyrmqBroker] = []
    try:
        for i, host in enumerate(QUEUES):
            # each bound to its own host only (a broker binds 0.0.0.0 by default)
            brokers.append(PyrmqBroker(ns.addr, work / f"b{i}", grpc_port=port, host=host, bindAddress=host))
        for b in brokers:
            n = QUEUES[b.host]
            h = CreateTopicRequestHeader(topic=TOPIC, read_queue_nums=n, write_queue_nums=n)
            _admin(b.addr, RequestCode.UPDATE_AND_CREATE_TOPIC, h.to_ext_fields())
            group = json.dumps({"groupName": FIFO_GROUP, "consumeMessageOrderly": True}).encode()
            _admin(b.addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, group)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if _route_brokers(ns.addr) == 2:
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"{TOPIC} not on both brokers in the name server's route")
        yield brokers
        for b in brokers:
            assert "Traceback" not in b.tail(400)
    finally:
        for b in brokers:
            b.stop()
        ns.stop()


def _stub(addr: str):
    import grpc
    from rocketmq.grpc_protocol import service_pb2_grpc

    channel = grpc.insecure_channel(addr)
    return channel, service_pb2_grpc.MessagingServiceStub(channel)


def test_route_and_assignment_list_every_broker_with_its_endpoint(cluster: list[PyrmqBroker]) -> None:
    from rocketmq.grpc_protocol import definition_pb2 as pb
    from rocketmq.grpc_protocol import service_pb2 as spb

    names = {b.name: b.host for b in cluster}
    port = cluster[0].grpc_port
    for b in cluster:  # the same answer from either endpoint
        channel, stub = _stub(b.grpc_addr)
        with channel:
            asked = pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host="localhost", port=1)])
            r = stub.QueryRoute(
                spb.QueryRouteRequest(topic=pb.Resource(name=TOPIC), endpoints=asked), timeout=10, metadata=META
            )
            assert r.status.code == pb.Code.OK, r.status
            by_broker: dict[str, list[int]] = {}
            for q in r.message_queues:
                host = names[q.broker.name]
                assert q.broker.id == 0 and q.permission == pb.READ_WRITE
                assert list(q.accept_message_types) == [pb.NORMAL]
                # the broker's registered host with the cluster's gRPC port, not the host asked through
                assert q.broker.endpoints.scheme == pb.IPv4
                assert [(a.host, a.port) for a in q.broker.endpoints.addresses] == [(host, port)]
                by_broker.setdefault(host, []).append(q.id)
            assert {h: sorted(ids) for h, ids in by_broker.items()} == {h: list(range(n)) for h, n in QUEUES.items()}

            a = stub.QueryAssignment(
                spb.QueryAssignmentRequest(topic=pb.Resource(name=TOPIC), group=pb.Resource(name=GROUP)),
                timeout=10,
                metadata=META,
            )
            assert a.status.code == pb.Code.OK, a.status
            got = sorted((names[x.message_queue.broker.name], x.message_queue.id) for x in a.assignments)
            assert got == [("127.0.0.1", -1), ("127.0.0.2", -1)]
            fifo = stub.QueryAssignment(
                spb.QueryAssignmentRequest(topic=pb.Resource(name=TOPIC), group=pb.Resource(name=FIFO_GROUP)),
                timeout=10,
                metadata=META,
            )
            # an orderly group gets every readable queue of every broker
            got = sorted((names[x.message_queue.broker.name], x.message_queue.id) for x in fifo.assignments)
            assert got == sorted((h, i) for h, n in QUEUES.items() for i in range(n))


def test_python_sdk_sends_to_and_receives_from_both_brokers(cluster: list[PyrmqBroker]) -> None:
    """The SDK is given one broker's endpoint; the route sends it to both."""
    config = rocketmq.ClientConfiguration(cluster[0].grpc_addr, rocketmq.Credentials(), request_timeout=10)
    consumer = rocketmq.SimpleConsumer(config, GROUP, {TOPIC: rocketmq.FilterExpression("*")}, await_duration=2)
    consumer.startup()
    producer = rocketmq.Producer(config, (TOPIC,))
    producer.startup()
    try:
        receipts = []
        for i in range(10):
            msg = rocketmq.Message()
            msg.topic, msg.body, msg.tag = TOPIC, f"c{i}".encode(), "TagC"
            receipts.append(producer.send(msg))
        sent_to = {str(r.message_queue.endpoints) for r in receipts}
        port = cluster[0].grpc_port
        assert sent_to == {f"127.0.0.1:{port}", f"127.0.0.2:{port}"}  # round robin over all five queues
        got: dict[str, bytes] = {}
        from_hosts: set[str] = set()
        deadline = time.monotonic() + 30
        while len(got) < len(receipts) and time.monotonic() < deadline:
            for msg in consumer.receive(16, 15):
                got[msg.message_id] = msg.body
                from_hosts.add(str(msg.endpoints))
                consumer.ack(msg)
        assert got == {r.message_id: f"c{i}".encode() for i, r in enumerate(receipts)}
        assert from_hosts == sent_to
    finally:
        producer.shutdown()
        consumer.shutdown()
