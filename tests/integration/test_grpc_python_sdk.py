"""The official Python 5.x SDK (rocketmq-python-client, gRPC) against pyrmq's built-in endpoint.

One broker serves remoting and MessagingService v2 in one process (the Java proxy's local mode).
Messages a gRPC Producer sends are read back with a remoting pull, byte for byte with their tag,
keys and properties; a SimpleConsumer receives over POP, acks, and sees a message it did not ack
again once its invisible time (shortened with ChangeInvisibleDuration) is over.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator

import pytest
import rocketmq  # the grpc extra (tools/test installs it): missing, the test fails, never skips
from support.grpc_sdk import current_loop, namespace_round_trip, run
from support.pyrmq_proc import PyrmqBroker
from support.requests import pull, send_v2
from support.servers import PyrmqNamesrv

from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import CreateTopicRequestHeader, SendMessageResponseHeader
from pyrmq.remoting.client import RemotingClient
from pyrmq.store import message as m


@pytest.fixture(autouse=True)
def _sdk_thread_loop() -> Iterator[None]:
    """The thread that starts SDK clients keeps a current event loop (support.grpc_sdk.current_loop)."""
    with current_loop():
        yield


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("grpc")
    ns = PyrmqNamesrv(work / "ns")
    try:
        # the transaction check runs every second on half messages older than one second
        b = PyrmqBroker(
            ns.addr,
            work / "broker",
            grpc_port=0,
            transactionCheckInterval=1000,
            transactionTimeOut=1000,
            recallMessageEnable="true",  # Java's default is false
        )
        try:
            yield b
            assert "Traceback" not in b.tail(400)
        finally:
            b.stop()
    finally:
        ns.stop()


def _create_topic(addr: str, topic: str, queues: int, message_type: str | None = None) -> None:
    attributes = f"+message.type={message_type}" if message_type else None

    async def go() -> None:
        async with RemotingClient() as c:
            h = CreateTopicRequestHeader(
                topic=topic, read_queue_nums=queues, write_queue_nums=queues, attributes=attributes
            )
            r = await c.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, h.to_ext_fields()), 5)
            assert r.code == ResponseCode.SUCCESS, r

    run(go())


def _create_group(addr: str, group: str, **config: object) -> None:
    async def go() -> None:
        async with RemotingClient() as c:
            body = json.dumps({"groupName": group, **config}).encode()
            r = await c.invoke(
                addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body), 5
            )
            assert r.code == ResponseCode.SUCCESS, r

    run(go())


def _call(addr: str, code: int, ext: dict[str, str]) -> RemotingCommand:
    async def go() -> RemotingCommand:
        async with RemotingClient() as c:
            return await c.invoke(addr, RemotingCommand.request(code, ext), 15)

    return run(go())


def _consumer_ids(addr: str, group: str) -> list[str]:
    r = _call(addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group})
    return json.loads(r.body)["consumerIdList"] if r.code == ResponseCode.SUCCESS else []


def _pull_all(addr: str, topic: str, queue_id: int = 0) -> list[m.StoredMessage]:
    async def go() -> list[m.StoredMessage]:
        async with RemotingClient() as c:
            r = await c.invoke(addr, pull(topic, "grpc-check", 0, queue_id=queue_id), 5)
            if r.code != ResponseCode.SUCCESS:
                return []
            return list(m.decode_messages(r.body))

    return run(go())


#: raw v2 calls carry a client id, as the SDKs do (x-mq-client-id)
META = (("x-mq-client-id", "raw-v2-client"),)
NAMESPACE_ACK_CODE = 50001  # INTERNAL_SERVER_ERROR


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

    stored = run(read())
    assert [x.body for x in stored] == [b"hello 0", b"hello 1", b"hello 2"]
    assert [x.queue_offset for x in stored] == [0, 1, 2]
    for i, x in enumerate(stored):
        assert x.tags == "TagG"
        assert x.keys == f"k{i}"
        assert x.properties["color"] == "blue" and x.properties["n"] == str(i)
        assert x.uniq_key == receipts[i].message_id  # the SDK's message id is the UNIQ_KEY
        assert x.properties["PGROUP"] == topic  # the Java proxy names the producer group after the topic


def test_bad_input_gets_the_java_proxys_codes(broker: PyrmqBroker) -> None:
    """Raw v2 requests: unknown and illegal topics, an empty and an oversize body, a reserved
    property, a malformed receipt handle, a request that is not protobuf; the endpoint keeps serving."""
    import grpc
    from rocketmq.grpc_protocol import definition_pb2 as pb
    from rocketmq.grpc_protocol import service_pb2 as spb
    from rocketmq.grpc_protocol import service_pb2_grpc

    topic = "GrpcBadT"
    _create_topic(broker.addr, topic, 1)
    with grpc.insecure_channel(broker.grpc_addr) as channel:
        stub = service_pb2_grpc.MessagingServiceStub(channel)

        def route(name: str) -> pb.Status:
            return stub.QueryRoute(
                spb.QueryRouteRequest(topic=pb.Resource(name=name)), timeout=10, metadata=META
            ).status

        # every RPC needs the SDK's client id (GrpcMessagingApplication#validateContext)
        anonymous = stub.QueryRoute(spb.QueryRouteRequest(topic=pb.Resource(name=topic)), timeout=10).status
        assert (anonymous.code, anonymous.message) == (pb.Code.CLIENT_ID_REQUIRED, "client id cannot be empty")

        unknown = route("NoSuchGrpcTopic")
        assert unknown.code == pb.Code.TOPIC_NOT_FOUND and "NoSuchGrpcTopic" in unknown.message
        assert route("bad topic").code == pb.Code.ILLEGAL_TOPIC
        assert route("TBW102").code == pb.Code.ILLEGAL_TOPIC  # a system topic
        asked = pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host="localhost", port=1)])
        found = stub.QueryRoute(
            spb.QueryRouteRequest(topic=pb.Resource(name=topic), endpoints=asked), timeout=10, metadata=META
        )
        assert found.status.code == pb.Code.OK and len(found.message_queues) == 1
        queue = found.message_queues[0]
        assert (queue.id, queue.permission, list(queue.accept_message_types)) == (0, pb.READ_WRITE, [pb.NORMAL])
        # local mode: the broker's registered host (brokerIP1) with the gRPC port, not the host asked through
        assert [(a.host, a.port) for a in queue.broker.endpoints.addresses] == [("127.0.0.1", broker.grpc_port)]

        def send(body: bytes, group: str = "", **props: str) -> pb.Status:
            sp = pb.SystemProperties(message_id="01AB", message_type=pb.NORMAL, message_group=group or None)
            msg = pb.Message(topic=pb.Resource(name=topic), body=body, system_properties=sp, user_properties=props)
            return stub.SendMessage(spb.SendMessageRequest(messages=[msg]), timeout=10, metadata=META).status

        assert send(b"").code == pb.Code.MESSAGE_BODY_EMPTY
        assert send(b"x" * (4 * 1024 * 1024 + 1)).code == pb.Code.MESSAGE_BODY_TOO_LARGE
        assert send(b"x", TAGS="t").code == pb.Code.ILLEGAL_MESSAGE_PROPERTY_KEY
        conflict = send(b"x", group="g1")  # a FIFO message to a NORMAL topic
        assert conflict.code == pb.Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
        assert (
            conflict.message == "TopicMessageType validate failed, the expected type is NORMAL, but actual type is FIFO"
        )
        ack = stub.AckMessage(
            spb.AckMessageRequest(
                group=pb.Resource(name="GrpcBadG"),
                topic=pb.Resource(name=topic),
                entries=[spb.AckMessageEntry(message_id="01AB", receipt_handle="not a handle")],
            ),
            timeout=10,
            metadata=META,
        )
        assert ack.entries[0].status.code == pb.Code.INVALID_RECEIPT_HANDLE
        garbage = channel.unary_unary(
            "/apache.rocketmq.v2.MessagingService/QueryRoute",
            request_serializer=lambda b: b,
            response_deserializer=lambda b: b,
        )
        with pytest.raises(grpc.RpcError) as e:
            garbage(b"\xff\xff\xff\xff", timeout=10)
        assert e.value.code() == grpc.StatusCode.UNKNOWN  # as the Java proxy (test_grpc_proxy_reference.py)
        assert send(b"still serving").code == pb.Code.OK


def test_unserved_rpcs_bad_bytes_and_recall_answer_as_the_java_proxy(broker: PyrmqBroker) -> None:
    """The Java proxy 5.5.0's answers (tests/compat/test_grpc_proxy_reference.py prints them): the
    offset RPCs are grpc-java's UNIMPLEMENTED; bytes that are not protobuf are UNKNOWN; RecallMessage
    checks the topic, its DELAY type and the handle before it asks the broker (RECALL_MESSAGE); the
    SDK's recall of a timer message keeps it from delivery."""
    import grpc
    from rocketmq.grpc_protocol import definition_pb2 as pb
    from rocketmq.grpc_protocol import service_pb2 as spb
    from rocketmq.grpc_protocol import service_pb2_grpc

    from pyrmq.common.recall_handle import RecallHandle

    delay = "GrpcRecallT"
    _create_topic(broker.addr, delay, 1, "DELAY")
    with grpc.insecure_channel(broker.grpc_addr) as channel:
        for method in ("PullMessage", "UpdateOffset", "GetOffset", "QueryOffset", "SyncLiteSubscription"):
            call = channel.unary_unary(
                f"/apache.rocketmq.v2.MessagingService/{method}",
                request_serializer=lambda b: b,
                response_deserializer=lambda b: b,
            )
            with pytest.raises(grpc.RpcError) as e:
                call(b"", timeout=10, metadata=META)
            assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED
            assert e.value.details() == f"Method apache.rocketmq.v2.MessagingService/{method} is unimplemented"
        garbage = channel.unary_unary(
            "/apache.rocketmq.v2.MessagingService/SendMessage",
            request_serializer=lambda b: b,
            response_deserializer=lambda b: b,
        )
        with pytest.raises(grpc.RpcError) as e:
            garbage(b"\xff\xff\xff\xff", timeout=10, metadata=META)
        assert e.value.code() == grpc.StatusCode.UNKNOWN  # grpc-java's answer too
        stub = service_pb2_grpc.MessagingServiceStub(channel)

        def recall(topic: str, handle: str) -> pb.Status:
            request = spb.RecallMessageRequest(topic=pb.Resource(name=topic), recall_handle=handle)
            return stub.RecallMessage(request, timeout=10, metadata=META).status

        # a Telemetry stream without client id: the status, then the stream ends (ResponseWriter#write)
        commands = [spb.TelemetryCommand(settings=pb.Settings()) for _ in range(2)]
        replies = list(stub.Telemetry(iter(commands), timeout=10))
        assert [(r.status.code, r.status.message) for r in replies] == [
            (pb.Code.CLIENT_ID_REQUIRED, "client id cannot be empty")
        ]
        blank = recall("", "x")
        assert (blank.code, blank.message) == (pb.Code.ILLEGAL_TOPIC, "The specified topic is blank")
        conflict = recall("NoSuchRecallT", "x")  # a topic this broker lacks is UNSPECIFIED
        assert conflict.code == pb.Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
        assert conflict.message == (
            "org.apache.rocketmq.proxy.common.ProxyException: TopicMessageType validate failed, "
            "the expected type is UNSPECIFIED, but actual type is DELAY"
        )
        bad = recall(delay, "not a handle")
        assert (bad.code, bad.message) == (pb.Code.INTERNAL_SERVER_ERROR, "recall handle is invalid")
        other = RecallHandle(delay, "another-broker", str(int(time.time() * 1000) + 60_000), "01AB").encode()
        refused = recall(delay, other)  # the broker's refusal (RecallMessageProcessor) is the status
        assert (refused.code, refused.message) == (
            pb.Code.INTERNAL_SERVER_ERROR,
            "recall failed, broker service not available",
        )

    # end to end with the SDK: a recalled timer message is never delivered, the other one is
    producer = rocketmq.Producer(_config(broker), (delay,))
    producer.startup()
    try:
        receipts = []
        for body in (b"recalled", b"kept"):
            msg = _message(delay, body, "TagR")
            msg.delivery_timestamp = int(time.time()) + 2
            receipts.append(producer.send(msg))
        assert all(r.recall_handle for r in receipts)
        assert producer.recall_message(delay, receipts[0].recall_handle) == receipts[0].message_id
    finally:
        producer.shutdown()
    deadline = time.monotonic() + 20
    stored: list[m.StoredMessage] = []
    while not stored and time.monotonic() < deadline:
        time.sleep(0.5)
        stored = _pull_all(broker.addr, delay)
    time.sleep(1.5)  # the recalled one was due in the same second
    assert [x.body for x in _pull_all(broker.addr, delay)] == [b"kept"]


def test_sdk_namespace_is_not_applied_and_a_stored_namespace_is_split_off(broker: PyrmqBroker) -> None:
    """The Java proxy ignores the SDK's namespace (x-mq-namespace, resource_namespace): names are
    used as given; a message's topic is its stored name with a ``ns%`` prefix split off into
    resource_namespace (GrpcConverter#buildResource), so the SDK acks it with the bare name, a topic
    that does not exist. The Java proxy's answers are the same (test_grpc_proxy_reference.py)."""
    plain, wrapped = "GrpcNsT", "ns2%GrpcNsT2"
    _create_topic(broker.addr, plain, 1)
    _create_topic(broker.addr, wrapped, 1)
    got = namespace_round_trip(broker.grpc_addr, (plain, wrapped), "GrpcNsG", "ns1")
    assert got == {plain: (plain, "", "ok"), wrapped: ("GrpcNsT2", "ns2", str(NAMESPACE_ACK_CODE))}
    for topic in (plain, wrapped):  # stored under the names as given, not "ns1%..."
        stored = _call(broker.addr, RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": "0"})
        assert stored.code == ResponseCode.SUCCESS and stored.ext_fields["offset"] == "1", stored


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
        assert _consumer_ids(broker.addr, group) == [consumer.client_id]  # registered as Java's proxy does
        running = _call(
            broker.addr,
            RequestCode.GET_CONSUMER_RUNNING_INFO,
            {"consumerGroup": group, "clientId": consumer.client_id, "jstackEnable": "false"},
        )
        # without jstackEnable the Java proxy relays nothing and the call times out (here at once)
        assert running.code == ResponseCode.CONSUME_MSG_TIMEOUT, running
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
    assert _consumer_ids(broker.addr, group) == []  # NotifyClientTermination unregistered it


def test_fifo_group_and_delayed_delivery(broker: PyrmqBroker) -> None:
    """A message group lands in one queue in send order and an orderly group receives it in that
    order; a message with a delivery timestamp is not in its topic before that time."""
    fifo, group, delay = "GrpcFifoT", "GrpcFifoG", "GrpcDelayT"
    _create_topic(broker.addr, fifo, 4, "FIFO")
    _create_topic(broker.addr, delay, 1, "DELAY")
    _create_group(broker.addr, group, consumeMessageOrderly=True)
    consumer = rocketmq.SimpleConsumer(_config(broker), group, {fifo: rocketmq.FilterExpression("*")}, await_duration=5)
    consumer.startup()
    producer = rocketmq.Producer(_config(broker), (fifo, delay))
    producer.startup()
    try:
        sent = []
        for i in range(3):
            msg = _message(fifo, f"f{i}".encode(), "TagF")
            msg.message_group = "order-1"
            sent.append(producer.send(msg).message_id)
        got = []
        deadline = time.monotonic() + 20
        while len(got) < 3 and time.monotonic() < deadline:
            batch = consumer.receive(16, 15)
            got += batch
            for x in batch:
                consumer.ack(x)
        assert [x.message_id for x in got] == sent
        assert [x.body for x in got] == [b"f0", b"f1", b"f2"]
        assert {x.message_group for x in got} == {"order-1"}

        due = int(time.time()) + 3
        msg = _message(delay, b"later", "TagD")
        msg.delivery_timestamp = due
        producer.send(msg)
        assert _pull_all(broker.addr, delay) == []  # waiting in the timer
        deadline = time.monotonic() + 20
        stored: list[m.StoredMessage] = []
        while not stored and time.monotonic() < deadline:
            time.sleep(0.5)
            stored = _pull_all(broker.addr, delay)
        assert [x.body for x in stored] == [b"later"]
        assert time.time() >= due - 1  # the timer's slots are timerPrecisionMs (1 s) wide
        assert stored[0].properties["TIMER_DELIVER_MS"] == str(due * 1000)
    finally:
        producer.shutdown()
        consumer.shutdown()


class _CommitAll(rocketmq.TransactionChecker):
    def __init__(self) -> None:
        self.checked: list[str] = []

    def check(self, message):
        self.checked.append(message.message_id)
        return rocketmq.TransactionResolution.COMMIT


def test_transactions_commit_rollback_and_check_back(broker: PyrmqBroker) -> None:
    """EndTransaction commits or rolls back a half message; one left open is checked over the
    Telemetry stream (RecoverOrphanedTransactionCommand) and committed by the checker."""
    topic = "GrpcTxT"
    _create_topic(broker.addr, topic, 1, "TRANSACTION")
    checker = _CommitAll()
    producer = rocketmq.Producer(_config(broker), (topic,), checker=checker)
    producer.startup()
    try:
        for body, end in ((b"commit", "commit"), (b"rollback", "rollback"), (b"open", None)):
            tx = producer.begin_transaction()
            producer.send(_message(topic, body, "TagT"), transaction=tx)
            if end == "commit":
                tx.commit()
            elif end == "rollback":
                tx.rollback()
        deadline = time.monotonic() + 25
        bodies: list[bytes] = []
        while len(bodies) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
            bodies = [x.body for x in _pull_all(broker.addr, topic)]
        assert sorted(bodies) == [b"commit", b"open"]  # "open" committed by the check-back
        assert len(checker.checked) >= 1
    finally:
        producer.shutdown()


class _AlwaysFails(rocketmq.MessageListener):
    def __init__(self) -> None:
        self.attempts: list[int] = []
        self.lock = threading.Lock()

    def consume(self, message):
        with self.lock:
            self.attempts.append(message.delivery_attempt)
        return rocketmq.ConsumeResult.FAILURE


def test_push_consumer_retries_then_the_message_goes_to_the_dlq(broker: PyrmqBroker) -> None:
    """A PushConsumer whose listener always fails: redelivered after the group's backoff, and
    after retryMaxTimes+1 attempts moved to %DLQ%<group> (the proxy's PopMessageResultFilterImpl)."""
    topic, group = "GrpcPushT", "GrpcPushG"
    _create_topic(broker.addr, topic, 1)
    _create_group(
        broker.addr,
        group,
        retryMaxTimes=1,
        groupRetryPolicy={"type": "CUSTOMIZED", "customizedRetryPolicy": {"next": [1000, 1000, 1000]}},
    )
    listener = _AlwaysFails()
    consumer = rocketmq.PushConsumer(_config(broker), group, listener, {topic: rocketmq.FilterExpression("*")})
    consumer.startup()
    producer = rocketmq.Producer(_config(broker), (topic,))
    producer.startup()
    try:
        message_id = producer.send(_message(topic, b"poison", "TagX")).message_id
        dlq: list[m.StoredMessage] = []
        deadline = time.monotonic() + 30
        while not dlq and time.monotonic() < deadline:
            time.sleep(0.5)
            dlq = _pull_all(broker.addr, f"%DLQ%{group}")
        assert [x.body for x in dlq] == [b"poison"]
        assert dlq[0].uniq_key == message_id
        assert listener.attempts[:2] == [1, 2]  # delivered twice (retryMaxTimes 1), then no more
        time.sleep(1.5)
        assert len(listener.attempts) == 2
    finally:
        producer.shutdown()
        consumer.shutdown()


def test_running_info_and_verify_message_over_telemetry(broker: PyrmqBroker) -> None:
    """GET_CONSUMER_RUNNING_INFO with jstackEnable to a gRPC consumer: a PrintThreadStackTraceCommand
    on its Telemetry stream, its ThreadStackTrace answer as the ConsumerRunningInfo's jstack;
    CONSUME_MESSAGE_DIRECTLY: a VerifyMessageCommand with the stored message, the client's
    VerifyMessageResult as a ConsumeMessageDirectlyResult."""
    import grpc
    from rocketmq.grpc_protocol import definition_pb2 as pb
    from rocketmq.grpc_protocol import service_pb2 as spb
    from rocketmq.grpc_protocol import service_pb2_grpc

    group, client_id, topic = "GrpcJstackG", "raw-client-1", "GrpcJstackT"
    _create_topic(broker.addr, topic, 1)

    async def scenario() -> None:
        async with grpc.aio.insecure_channel(broker.grpc_addr) as channel:
            stub = service_pb2_grpc.MessagingServiceStub(channel)
            outgoing: asyncio.Queue = asyncio.Queue()

            async def commands():
                while (item := await outgoing.get()) is not None:
                    yield item

            call = stub.Telemetry(commands(), metadata=(("x-mq-client-id", client_id), ("x-mq-language", "PYTHON")))
            subscription = pb.Subscription(
                group=pb.Resource(name=group),
                subscriptions=[pb.SubscriptionEntry(topic=pb.Resource(name="GrpcJstackT"))],
            )
            await outgoing.put(
                spb.TelemetryCommand(settings=pb.Settings(client_type=pb.SIMPLE_CONSUMER, subscription=subscription))
            )
            settings = await call.read()
            assert settings.status.code == pb.Code.OK and settings.settings.subscription.receive_batch_size == 32

            async def ask(code: int, ext: dict[str, str]) -> RemotingCommand:
                async with RemotingClient() as c:
                    return await c.invoke(broker.addr, RemotingCommand.request(code, ext), 15)

            ext = {"consumerGroup": group, "clientId": client_id, "jstackEnable": "true"}
            asking = asyncio.create_task(ask(RequestCode.GET_CONSUMER_RUNNING_INFO, ext))
            order = await call.read()
            nonce = order.print_thread_stack_trace_command.nonce
            assert nonce
            await outgoing.put(
                spb.TelemetryCommand(
                    status=pb.Status(code=pb.Code.OK),
                    thread_stack_trace=spb.ThreadStackTrace(nonce=nonce, thread_stack_trace="main: waiting"),
                )
            )
            r = await asking
            assert r.code == ResponseCode.SUCCESS, r
            assert json.loads(r.body)["jstack"] == "main: waiting"

            async with RemotingClient() as c:
                sent = await c.invoke(broker.addr, send_v2(topic, broker.name, b"verify me"), 5)
            offset_msg_id = SendMessageResponseHeader.from_command(sent).msg_id
            ext = {"consumerGroup": group, "clientId": client_id, "msgId": offset_msg_id, "topic": topic}
            asking = asyncio.create_task(ask(RequestCode.CONSUME_MESSAGE_DIRECTLY, ext))
            verify = (await call.read()).verify_message_command
            assert verify.message.body == b"verify me" and verify.message.topic.name == topic
            await outgoing.put(
                spb.TelemetryCommand(
                    status=pb.Status(code=pb.Code.FAILED_TO_CONSUME_MESSAGE),
                    verify_message_result=spb.VerifyMessageResult(nonce=verify.nonce),
                )
            )
            r = await asking
            assert r.code == ResponseCode.SUCCESS, r
            result = json.loads(r.body)
            assert (result["consumeResult"], result["remark"]) == ("CR_LATER", "from gRPC client")
            await outgoing.put(None)
            call.cancel()

    run(scenario())
