"""Scenarios with the official Python 5.x SDK (rocketmq-python-client) that run the same against
pyrmq's gRPC endpoint and the Java proxy, so a test can assert one answer for both."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


@contextlib.contextmanager
def current_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """Give the calling thread a current event loop while SDK clients start and run.

    The Python SDK registers its route callback after sending QueryRoute; when the answer comes
    first (a busy machine), the callback runs on the thread that called `startup()`, and grpc.aio
    creates the Telemetry call there, asking that thread for its current loop. After `asyncio.run`
    a thread has none, so the stream is never opened and a PushConsumer's startup fails after its
    10 s wait for settings. A plain script never runs into it (its main thread gets a loop on
    demand). A loop that is already current is kept; one made here is closed on exit."""
    policy = asyncio.get_event_loop_policy()
    try:
        loop = policy.get_event_loop()
    except RuntimeError:
        loop = None
    if loop is not None and not loop.is_closed():
        yield loop
        return
    loop = policy.new_event_loop()
    policy.set_event_loop(loop)
    try:
        yield loop
    finally:
        policy.set_event_loop(None)
        loop.close()


def run(coro: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run` that leaves the thread's current loop in place (see `current_loop`)."""
    return asyncio.get_event_loop_policy().get_event_loop().run_until_complete(coro)


def namespace_round_trip(grpc_addr: str, topics: tuple[str, ...], group: str, namespace: str) -> dict:
    """Send one message to each topic with the SDK's `namespace` set, receive and ack them: for
    each topic, the received message's (topic, namespace) and the ack's outcome ("ok" or the
    SDK's error code)."""
    import rocketmq

    config = rocketmq.ClientConfiguration(grpc_addr, rocketmq.Credentials(), namespace=namespace, request_timeout=10)
    subscriptions = {t: rocketmq.FilterExpression("*") for t in topics}
    with current_loop():
        consumer = rocketmq.SimpleConsumer(config, group, subscriptions, await_duration=2)
        consumer.startup()
        producer = rocketmq.Producer(config, topics)
        producer.startup()
        try:
            sent = {}
            for t in topics:
                msg = rocketmq.Message()
                msg.topic, msg.body, msg.tag = t, t.encode(), "TagN"
                sent[producer.send(msg).message_id] = t
            got: dict[str, tuple] = {}
            deadline = time.monotonic() + 30
            while len(got) < len(topics) and time.monotonic() < deadline:
                for msg in consumer.receive(16, 15):
                    try:
                        consumer.ack(msg)
                        acked = "ok"
                    except Exception as e:  # the SDK's exception carries the status code
                        acked = str(getattr(e, "code", e))
                    got[sent[msg.message_id]] = (msg.topic, msg.namespace, acked)
            return got
        finally:
            producer.shutdown()
            consumer.shutdown()
