"""A push consumer's messages (ReceiveMessage with auto_renew) stay invisible while it works on
them: the gRPC endpoint renews their receipt handles as the Java proxy does
(DefaultReceiptHandleManager), and the client's ack goes out with the latest handle."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

import pytest
from google.protobuf.duration_pb2 import Duration
from support.fakes import FakeChannel, ManualClock

from pyrmq.broker.client_manager import ClientChannelInfo
from pyrmq.grpc.activities import Activities
from pyrmq.grpc.proto import pb, spb
from pyrmq.grpc.receipt import ReceiptHandle
from pyrmq.grpc.renew import (
    INVISIBLE_WHEN_CLEAR_MS,
    MAX_RENEW_RETRY_TIMES,
    RENEW_MAX_MS,
    ReceiptHandleManager,
    TrackedHandle,
    renew_delay,
)
from pyrmq.protocol.bodies.broker import SubscriptionData
from pyrmq.protocol.bodies.common import TopicConfig
from pyrmq.store import message as m
from pyrmq.store.config import CustomizedRetryPolicy, ExponentialRetryPolicy, GroupRetryPolicy
from pyrmq.store.pop import ACK_TAG, AckMsg

T0 = 1_800_000_000_000


def _handle(pop_time: int, invisible: int = 60_000, offset: int = 7) -> str:
    return ReceiptHandle(0, pop_time, invisible, 1, "0", "b", 0, offset, 100, "").encode()


class _Broker:
    """change_invisible answers with a handle re-popped now; or raises, or refuses."""

    def __init__(self, now) -> None:
        self.now = now
        self.calls: list[tuple[str, int]] = []
        self.fail = False

    async def __call__(self, tracked: TrackedHandle, invisible: int) -> str | None:
        self.calls.append((tracked.message_id, invisible))
        if self.fail:
            raise OSError("broker away")
        return _handle(self.now(), invisible)


def test_renewal_schedule_handles_and_stops() -> None:
    clock = [T0]
    broker = _Broker(lambda: clock[0])
    online = {("c1", "g")}
    mgr = ReceiptHandleManager(broker, lambda c, g: (c, g) in online, lambda t: 9_000, now=lambda: clock[0])
    first = _handle(T0)
    mgr.add("c1", TrackedHandle("g", "T", "m1", first, 0, T0))

    async def go() -> None:
        clock[0] = T0 + 49_000  # visible in 11 s: not yet (renewAheadTimeMillis 10 s)
        await mgr.scan()
        assert broker.calls == []
        clock[0] = T0 + 51_000
        await mgr.scan()
        assert broker.calls == [("m1", 60_000)]  # RenewStrategyPolicy: 1 min, then 3, 5, 10, 30, 60
        tracked = next(iter(mgr.groups[("c1", "g")].values()))
        assert tracked.handle != first and tracked.renew_times == 1
        clock[0] += 51_000
        await mgr.scan()
        assert broker.calls[-1] == ("m1", 180_000)
        # the client's ack names the handle it holds; the latest one is what goes to the broker
        found = mgr.remove("c1", "g", "m1", first)
        assert found is tracked and ReceiptHandle.decode(found.handle).retrieve_time == clock[0]
        assert mgr.groups == {}

        # a client that left: its messages become visible in a second
        mgr.add("c1", TrackedHandle("g", "T", "m2", _handle(clock[0]), 0, clock[0]))
        online.clear()
        await mgr.scan()
        assert broker.calls[-1] == ("m2", INVISIBLE_WHEN_CLEAR_MS) and mgr.groups == {}

        # renewed for renewMaxTimeMillis: back for a retry with the group's policy delay
        online.add(("c1", "g"))
        mgr.add("c1", TrackedHandle("g", "T", "m3", _handle(clock[0]), 2, clock[0] - RENEW_MAX_MS))
        clock[0] += 55_000
        await mgr.scan()
        assert broker.calls[-1] == ("m3", 9_000) and mgr.groups == {}

        # a broker that keeps failing: retried, then given up after maxRenewRetryTimes
        mgr.add("c1", TrackedHandle("g", "T", "m4", _handle(clock[0]), 0, clock[0]))
        clock[0] += 55_000
        broker.fail = True
        for _ in range(MAX_RENEW_RETRY_TIMES):
            await mgr.scan()
        assert ("c1", "g") in mgr.groups
        await mgr.scan()
        assert mgr.groups == {}

    asyncio.run(go())


def test_renew_steps_and_retry_policies_are_javas() -> None:
    assert [renew_delay(n) for n in (-1, 0, 1, 2, 3, 4, 5, 6, 99)] == [
        60_000,
        60_000,
        180_000,
        300_000,
        600_000,
        1_800_000,
        3_600_000,
        3_600_000,
        3_600_000,
    ]
    custom = CustomizedRetryPolicy()  # index reconsumeTimes + 2: 10 s for a first retry
    assert [custom.next_delay_duration(n) for n in (0, 1, 15, 99)] == [10_000, 30_000, 7_200_000, 7_200_000]
    exp = ExponentialRetryPolicy(initial=1_000, max=60_000, multiplier=3)
    assert [exp.next_delay_duration(n) for n in (-1, 0, 2, 10)] == [1_000, 1_000, 9_000, 60_000]
    assert isinstance(GroupRetryPolicy(type="EXPONENTIAL").retry_policy(), CustomizedRetryPolicy)  # unset: default
    assert GroupRetryPolicy(type="EXPONENTIAL", exponential_retry_policy=exp).retry_policy() is exp


@pytest.fixture
def clock() -> ManualClock:
    """The broker's pop times near the wall clock: the endpoint checks handles against it."""
    return ManualClock(int(time.time() * 1000))


def test_push_consumer_message_renewed_then_acked_with_the_latest_handle(make_broker, clock) -> None:
    b = make_broker()
    c = b.c
    topic, group = "RenewT", "renew-g"
    c.topic_config_manager.update_topic_config(TopicConfig(topic_name=topic, read_queue_nums=1, write_queue_nums=1))
    inner = m.MessageExtBrokerInner(topic=topic, body=b"slow", queue_id=0, properties={"UNIQ_KEY": "U1"})
    assert c.message_store.put_message(inner).is_ok()
    channel = FakeChannel("127.0.0.1:9")
    c.consumer_manager.register_consumer(
        group,
        ClientChannelInfo(channel, "cid-1"),
        "CONSUME_PASSIVELY",
        "CLUSTERING",
        "CONSUME_FROM_LAST_OFFSET",
        [SubscriptionData.build(topic, "*")],
    )
    c.server = SimpleNamespace(table=b.table)  # the local invoker's processor table
    ctx = SimpleNamespace(
        client_id="cid-1", remote_addr="127.0.0.1:9", remaining_ms=30_000, client_version="5.0.7", language="JAVA"
    )

    async def go() -> None:
        consumer = Activities(c, lambda: "127.0.0.1:8081").consumer
        request = spb.ReceiveMessageRequest(
            group=pb.Resource(name=group),
            message_queue=pb.MessageQueue(topic=pb.Resource(name=topic)),
            filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"),
            batch_size=8,
            auto_renew=True,
            long_polling_timeout=Duration(seconds=5),
        )
        got = [r async for r in consumer.receive_message(ctx, request)]
        msgs = [r.message for r in got if r.HasField("message")]
        assert [x.body for x in msgs] == [b"slow"]
        held = msgs[0].system_properties.receipt_handle
        assert ReceiptHandle.decode(held).invisible_time == 60_000  # the proxy's default with auto_renew

        clock.advance(51_000)
        consumer.renewal.now = clock.now
        await consumer.renewal.scan()
        (tracked,) = consumer.renewal.groups[("cid-1", group)].values()
        renewed = ReceiptHandle.decode(tracked.handle)
        assert renewed.retrieve_time == clock.now() and renewed.invisible_time == 60_000

        ack = spb.AckMessageRequest(
            group=pb.Resource(name=group),
            topic=pb.Resource(name=topic),
            entries=[spb.AckMessageEntry(message_id=msgs[0].system_properties.message_id, receipt_handle=held)],
        )
        answer = await consumer.ack_message(ctx, ack)
        assert answer.status.code == pb.OK, answer
        assert consumer.renewal.groups == {}
        # the renewal acked the first checkpoint (Java ackOrigin); the client's ack names the
        # renewed checkpoint's pop time, so it cancels that one (with the held handle it would not)
        store = c.message_store
        acks = []
        for name in ("rmq_sys_wheel_timer", f"rmq_sys_REVIVE_LOG_{c.config['brokerClusterName']}"):
            for qid in store.get_queue_ids(name):
                res = store.get_message("x", name, qid, 0, 100, None)
                acks += [m.decode_message(x) for x in res.message_buffer_list]
                res.release()
        pops = [AckMsg.decode(x.body).pop_time for x in acks if x.tags == ACK_TAG]
        assert pops == [ReceiptHandle.decode(held).retrieve_time, renewed.retrieve_time]

    asyncio.run(go())
