"""The official Python 5.x SDK (rocketmq-python-client, gRPC) against pyrmq's built-in endpoint.

One broker serves remoting and MessagingService v2 in one process (the Java proxy's local mode).
Messages a gRPC Producer sends are read back with a remoting pull, byte for byte with their tag,
keys and properties; a SimpleConsumer receives over POP, acks, and sees a message it did not ack
again once its invisible time (shortened with ChangeInvisibleDuration) is over.
"""

from __future__ import annotations

import asyncio
import time

import pytest
import rocketmq  # the grpc extra (tools/test installs it): missing, the test fails, never skips
from support.pyrmq_proc import PyrmqBroker
from support.requests import pull
from support.servers import PyrmqNamesrv

from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import CreateTopicRequestHeader
from pyrmq.remoting.client import RemotingClient
from pyrmq.store import message as m


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("grpc")
    ns = PyrmqNamesrv(work / "ns")
    try:
        b = PyrmqBroker(ns.addr, work / "broker", grpc_port=0)
        try:
            yield b
            assert "Traceback" not in b.tail(400)
        finally:
            b.stop()
    finally:
        ns.stop()


def _create_topic(addr: str, topic: str, queues: int) -> None:
    async def go() -> None:
        async with RemotingClient() as c:
            h = CreateTopicRequestHeader(topic=topic, read_queue_nums=queues, write_queue_nums=queues)
            r = await c.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, h.to_ext_fields()), 5)
            assert r.code == ResponseCode.SUCCESS, r

    asyncio.run(go())


def _config(broker: PyrmqBroker):
    return rocketmq.ClientConfiguration(broker.grpc_addr, rocketmq.Credentials(), request_timeout=10)


def _message(topic: str, body: bytes, tag: str, key: str = "", **props: str):
    msg = rocketmq.Message()
    msg.topic = topic
    msg.body = body
    msg.tag = tag
    if key:
        msg.keys = key  # the SDK's setter takes one key
    for k, v in props.items():
        msg.add_property(k, v)
    return msg


def test_producer_sends_and_a_remoting_pull_reads_the_same_messages(broker: PyrmqBroker) -> None:
    topic = "GrpcSendT"
    _create_topic(broker.addr, topic, 1)
    producer = rocketmq.Producer(_config(broker), (topic,))
    producer.startup()
    try:
        receipts = [
            producer.send(_message(topic, f"hello {i}".encode(), "TagG", f"k{i}", color="blue", n=str(i)))
            for i in range(3)
        ]
    finally:
        producer.shutdown()
    assert len({r.message_id for r in receipts}) == 3

    async def read() -> list[m.StoredMessage]:
        async with RemotingClient() as c:
            r = await c.invoke(broker.addr, pull(topic, "grpc-check", 0), 5)
            assert r.code == ResponseCode.SUCCESS, r
            return list(m.decode_messages(r.body))

    stored = asyncio.run(read())
    assert [x.body for x in stored] == [b"hello 0", b"hello 1", b"hello 2"]
    assert [x.queue_offset for x in stored] == [0, 1, 2]
    for i, x in enumerate(stored):
        assert x.tags == "TagG"
        assert x.keys == f"k{i}"
        assert x.properties["color"] == "blue" and x.properties["n"] == str(i)
        assert x.uniq_key == receipts[i].message_id  # the SDK's message id is the UNIQ_KEY
        assert x.properties["PGROUP"] == topic  # the Java proxy names the producer group after the topic


def test_unknown_topic_is_topic_not_found(broker: PyrmqBroker) -> None:
    """QueryRoute for a topic the broker does not have: Code.TOPIC_NOT_FOUND, as from the Java proxy."""
    import grpc
    from rocketmq.grpc_protocol import definition_pb2, service_pb2, service_pb2_grpc

    with grpc.insecure_channel(broker.grpc_addr) as channel:
        stub = service_pb2_grpc.MessagingServiceStub(channel)
        request = service_pb2.QueryRouteRequest(topic=definition_pb2.Resource(name="NoSuchGrpcTopic"))
        response = stub.QueryRoute(request, timeout=10)
        assert response.status.code == definition_pb2.Code.TOPIC_NOT_FOUND
        assert "NoSuchGrpcTopic" in response.status.message
        bad = stub.QueryRoute(
            service_pb2.QueryRouteRequest(topic=definition_pb2.Resource(name="bad topic")), timeout=10
        )
        assert bad.status.code == definition_pb2.Code.ILLEGAL_TOPIC


def test_simple_consumer_receives_acks_and_gets_an_unacked_message_again(broker: PyrmqBroker) -> None:
    topic, group = "GrpcPopT", "GrpcPopG"
    _create_topic(broker.addr, topic, 2)
    consumer = rocketmq.SimpleConsumer(
        _config(broker), group, {topic: rocketmq.FilterExpression("*")}, await_duration=5
    )
    consumer.startup()
    producer = rocketmq.Producer(_config(broker), (topic,))
    producer.startup()
    try:
        sent = {producer.send(_message(topic, f"pop {i}".encode(), "TagP", a=str(i))).message_id: i for i in range(4)}
        got: dict[str, object] = {}
        deadline = time.monotonic() + 20
        while len(got) < 4 and time.monotonic() < deadline:
            for msg in consumer.receive(16, 15):
                got[msg.message_id] = msg
        assert set(got) == set(sent)
        for mid, msg in got.items():
            assert msg.body == f"pop {sent[mid]}".encode()
            assert msg.tag == "TagP"
            assert msg.properties["a"] == str(sent[mid])
            assert msg.delivery_attempt == 1
        kept = next(mid for mid, i in sent.items() if i == 0)
        for mid, msg in got.items():
            if mid != kept:
                consumer.ack(msg)
        # the one not acked: visible again in 1 s instead of 15
        consumer.change_invisible_duration(got[kept], 1)
        again = []
        deadline = time.monotonic() + 25
        while not again and time.monotonic() < deadline:
            again = consumer.receive(16, 15)
        assert [x.message_id for x in again] == [kept]
        assert again[0].body == b"pop 0"
        assert again[0].delivery_attempt == 2
        consumer.ack(again[0])
    finally:
        producer.shutdown()
        consumer.shutdown()
