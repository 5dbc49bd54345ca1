"""Scenarios with the official Python 5.x SDK (rocketmq-python-client) that run the same against
pyrmq's gRPC endpoint and the Java proxy, so a test can assert one answer for both."""

from __future__ import annotations

import time


def namespace_round_trip(grpc_addr: str, topics: tuple[str, ...], group: str, namespace: str) -> dict:
    """Send one message to each topic with the SDK's `namespace` set, receive and ack them: for
    each topic, the received message's (topic, namespace) and the ack's outcome ("ok" or the
    SDK's error code)."""
    import rocketmq

    config = rocketmq.ClientConfiguration(grpc_addr, rocketmq.Credentials(), namespace=namespace, request_timeout=10)
    subscriptions = {t: rocketmq.FilterExpression("*") for t in topics}
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
