"""Broker metrics (metricsExporterType=PROM): what sends, pulls, DLQ and requests do to the series."""

from __future__ import annotations

import asyncio

from support.fakes import FakeChannel
from support.prom import parse, parse_protobuf

from pyrmq.broker.metrics import message_type, processor_of
from pyrmq.protocol.bodies.broker import ConsumerData, HeartbeatData, SubscriptionData
from pyrmq.protocol.codes import LanguageCode, RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import ConsumerSendMsgBackRequestHeader
from pyrmq.remoting.channel import RequestContext
from pyrmq.store import message as m


def send(b, topic="MT", props=None, body=b"hello", queue_id=0, born=1):
    ext = {
        "a": "pg",
        "b": topic,
        "c": "TBW102",
        "d": "4",
        "e": str(queue_id),
        "f": "0",
        "g": str(born),
        "h": "0",
        "i": m.message_properties_to_string(props or {"TAGS": "a"}),
        "n": "broker-t",
    }
    r = asyncio.run(b.call(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, body)))
    assert r.code == ResponseCode.SUCCESS, r
    return r


def pull(b, topic="MT", group="mg", offset=0, ch=None):
    ext = {
        "consumerGroup": group,
        "topic": topic,
        "queueId": "0",
        "queueOffset": str(offset),
        "maxMsgNums": "32",
        "sysFlag": "4",
        "commitOffset": "0",
        "suspendTimeoutMillis": "0",
        "subscription": "*",
        "subVersion": "0",
        "expressionType": "TAG",
    }
    return asyncio.run(b.call(RemotingCommand.request(RequestCode.PULL_MESSAGE, ext), ch))


def heartbeat(b, ch, group="mg", topic="MT"):
    consumer = ConsumerData(
        group, "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET", [SubscriptionData.build(topic, "*")]
    )
    cmd = RemotingCommand.request(RequestCode.HEART_BEAT, {}, HeartbeatData("ip@1", [], [consumer]).encode())
    cmd.version = 513
    cmd.language = LanguageCode.JAVA
    r = asyncio.run(b.call(cmd, ch))
    assert r.code == ResponseCode.SUCCESS


def scrape(b):
    return parse(b.c.broker_metrics.render())


def test_off_by_default_no_instruments(broker):
    send(broker)
    assert broker.c.broker_metrics.enabled is False
    assert scrape(broker).names() == {"target_info"}


def test_sends_and_pulls_move_java_named_counters(make_broker):
    b = make_broker(metricsExporterType="PROM")
    base = {"cluster": "TestCluster", "node_id": "broker-t", "node_type": "broker", "otel_scope_name": "broker-meter"}
    send(b, body=b"x" * 100)
    send(b, body=b"y" * 100)
    r = pull(b)
    assert r.code == ResponseCode.SUCCESS
    s = scrape(b)
    labels = {**base, "topic": "MT", "message_type": "normal", "is_system": "false"}
    assert s.series("rocketmq_messages_in_total") == {tuple(sorted(labels.items())): 2.0}
    stored = len(r.body)
    assert s.total("rocketmq_throughput_in_total") == stored  # the records' bytes, as wroteBytes
    assert s.total("rocketmq_messages_out_total", consumer_group="mg", topic="MT") == 2
    assert s.total("rocketmq_throughput_out_total", consumer_group="mg") == stored
    assert s.total("rocketmq_message_size_count") == 2
    assert s.total("rocketmq_message_size_bucket", le="1024.0") == 2
    assert s.types["rocketmq_messages_in_total"] == "counter"
    assert s.types["rocketmq_message_size"] == "histogram"
    assert s.helps["rocketmq_messages_in_total"] == "default view for counter."
    assert s.total("rocketmq_topic_number") == len(b.c.topic_config_manager.topic_config_table)
    assert s.total("rocketmq_broker_permission") == 6


def test_protobuf_scrape_carries_the_text_scrape(make_broker):
    """A scraper asking for protobuf gets the same families and series as the text format (the
    broker's default views' help included); counters and histograms at the same values (gauges
    such as the disk's free space are read again)."""
    b = make_broker(metricsExporterType="PROM")
    send(b)
    assert pull(b).code == ResponseCode.SUCCESS
    bm = b.c.broker_metrics
    text, pb = parse(bm.render()), parse_protobuf(bm.render_protobuf())
    assert pb.types == text.types and pb.helps == text.helps
    assert pb.samples.keys() == text.samples.keys()
    moving = {n for n, t in text.types.items() if t == "gauge"}
    assert {k: v for k, v in pb.samples.items() if k[0] not in moving} == {
        k: v for k, v in text.samples.items() if k[0] not in moving
    }
    assert pb.helps["rocketmq_messages_in_total"] == "default view for counter."


def test_message_type_label_follows_the_properties():
    assert message_type({"TRAN_MSG": "true"}) == "transaction"
    assert message_type({"__SHARDINGKEY": "k"}) == "fifo"
    assert message_type({"DELAY": "3"}) == "delay"
    assert message_type({"TIMER_DELAY_SEC": "10"}) == "delay"
    assert message_type({"TAGS": "a"}) == "normal"


def test_lag_ready_and_inflight_for_a_subscribed_group(make_broker, clock):
    b = make_broker(metricsExporterType="PROM")
    ch = FakeChannel()
    for _ in range(3):
        send(b)
    heartbeat(b, ch)
    s = scrape(b)
    # no committed offset yet: Java counts from the queue's max offset, so nothing lags
    assert s.total("rocketmq_consumer_lag_messages", consumer_group="mg", topic="MT") == 0
    b.c.consumer_offset_manager.commit_offset("c", "mg", "MT", 0, 1)
    b.c.consumer_offset_manager.commit_pull_offset("c", "mg", "MT", 0, 2)
    clock.advance(5000)
    s = scrape(b)
    assert s.total("rocketmq_consumer_lag_messages", consumer_group="mg", is_retry="false") == 2
    assert s.total("rocketmq_consumer_inflight_messages", consumer_group="mg") == 1
    assert s.total("rocketmq_consumer_ready_messages", consumer_group="mg") == 1
    assert s.total("rocketmq_consumer_lag_latency_milliseconds", consumer_group="mg") >= 5000
    conns = s.series("rocketmq_consumer_connections", consumer_group="mg")
    assert list(conns.values()) == [1.0]
    assert dict(next(iter(conns))).items() >= {"language": "java", "version": "v5_5_0", "consume_mode": "push"}.items()


def test_send_back_beyond_max_times_counts_send_to_dlq(make_broker):
    b = make_broker(metricsExporterType="PROM")
    r = send(b)
    offset = int(r.ext_fields["queueOffset"])
    assert offset == 0
    pulled = pull(b)
    phy = next(iter(m.decode_messages(pulled.body))).commit_log_offset
    h = ConsumerSendMsgBackRequestHeader(offset=phy, group="mg", delay_level=-1, origin_topic="MT")
    r = asyncio.run(b.call(RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, h.to_ext_fields())))
    assert r.code == ResponseCode.SUCCESS, r
    s = scrape(b)
    assert s.total("rocketmq_send_to_dlq_messages_total", consumer_group="mg", topic="MT", is_system="false") == 1
    # the DLQ put itself is not an incoming message of a user topic
    assert s.series("rocketmq_messages_in_total", topic="%DLQ%mg") == {}


def test_rpc_latency_and_watermark_from_the_processor_table(make_broker, clock):
    b = make_broker(metricsExporterType="PROM")
    mgr = b.c.broker_metrics
    mgr.watch(b.table)
    ctx = RequestContext(FakeChannel(), None, received_at_ms=0)
    cmd = RemotingCommand.request(RequestCode.PULL_MESSAGE, {})
    import time

    ctx.received_at_ms = int(time.time() * 1000) - 50
    b.table.observe_rpc(ctx, cmd, cmd.make_response(ResponseCode.PULL_NOT_FOUND, None), True, True)
    b.table.in_flight[RequestCode.SEND_MESSAGE_V2] = 2
    s = scrape(b)
    series = s.series("rocketmq_rpc_latency_milliseconds_count", request_code="pull_message")
    assert list(series.values()) == [1.0]
    assert (
        dict(next(iter(series))).items()
        >= {
            "response_code": "pull_not_found",
            "is_long_polling": "true",
            "result": "success",
            "protocol_type": "remoting",
        }.items()
    )
    assert s.total("rocketmq_rpc_latency_milliseconds_bucket", request_code="pull_message", le="10.0") == 0
    assert s.total("rocketmq_rpc_latency_milliseconds_bucket", request_code="pull_message", le="100.0") == 1
    assert s.total("rocketmq_processor_watermark", processor="send") == 2
    assert (
        processor_of(RequestCode.HEART_BEAT) == "heartbeat" and processor_of(RequestCode.GET_BROKER_CONFIG) == "admin"
    )


def test_a_group_with_a_committed_offset_and_no_pull_offset_is_ready_from_it(make_broker):
    """Java's queryPullOffset falls back to the consumer offset: a group whose offset was only
    committed (a POP push consumer's, or any after a restart: pull offsets are not persisted)
    has what lies beyond it ready, none in flight."""
    b = make_broker(metricsExporterType="PROM")
    for _ in range(3):
        send(b)
    heartbeat(b, FakeChannel())
    b.c.consumer_offset_manager.commit_offset("c", "mg", "MT", 0, 1)
    s = scrape(b)
    assert s.total("rocketmq_consumer_lag_messages", consumer_group="mg") == 2
    assert s.total("rocketmq_consumer_ready_messages", consumer_group="mg") == 2
    assert s.total("rocketmq_consumer_inflight_messages", consumer_group="mg") == 0


def test_metrics_label_and_delta_aggregation(make_broker):
    b = make_broker(metricsExporterType="PROM", metricsLabel="region:eu,bad,zone:z1", metricsInDelta="true")
    s = scrape(b)
    (labels,) = s.series("rocketmq_broker_permission")
    assert dict(labels).items() >= {"region": "eu", "zone": "z1", "aggregation": "delta"}.items()


def test_a_pull_consumer_without_heartbeat_is_in_the_lag_series(make_broker):
    """Java's consumerCompensationTable: a pull carrying its subscription makes the group visible."""
    b = make_broker(metricsExporterType="PROM")
    for _ in range(4):
        send(b)
    assert scrape(b).series("rocketmq_consumer_lag_messages") == {}
    assert pull(b, group="pullg").code == ResponseCode.SUCCESS
    b.c.consumer_offset_manager.commit_offset("c", "pullg", "MT", 0, 1)
    s = scrape(b)
    assert s.total("rocketmq_consumer_lag_messages", consumer_group="pullg", topic="MT") == 3
    assert b.c.consumer_manager.get_consumer_group_info("pullg") is None  # no heartbeat: not a live consumer


def test_topic_and_group_creation_are_timed_with_their_outcome(make_broker):
    b = make_broker(metricsExporterType="PROM")
    ok = {"topic": "NewT", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6", "topicFilterType": "SINGLE_TAG"}
    r = asyncio.run(b.call(RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, ok)))
    assert r.code == ResponseCode.SUCCESS
    bad = {**ok, "topic": "bad topic!"}
    r = asyncio.run(b.call(RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, bad)))
    assert r.code == ResponseCode.INVALID_PARAMETER
    group = b'{"groupName":"NewG","consumeEnable":true}'
    r = asyncio.run(b.call(RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, group)))
    assert r.code == ResponseCode.SUCCESS
    s = scrape(b)
    topic_times = "rocketmq_topic_create_execution_time_milliseconds_count"
    assert s.total(topic_times, invocation_status="success", is_system="false") == 1
    assert s.total(topic_times, invocation_status="failure") == 1
    assert s.total("rocketmq_consumer_group_create_execution_time_milliseconds_count", invocation_status="success") == 1


def test_delayed_messages_count_in_as_delay_when_sent_and_when_delivered(make_broker, clock):
    """Java: the send counts under SCHEDULE_TOPIC_XXXX (the hook rewrote the topic), the delivery
    out of it (SCHEDULE_CONSUMER) and in to the real topic, both message_type=delay."""
    b = make_broker(metricsExporterType="PROM")
    send(b, topic="DelayM", props={"DELAY": "1"})
    svc = b.c.schedule_message_service

    async def deliver():
        svc.started = True
        clock.advance(1100)
        await svc.execute_on_time_up(1)

    asyncio.run(deliver())
    s = scrape(b)
    assert _by_topic(s, "rocketmq_messages_in_total", message_type="delay") == {"SCHEDULE_TOPIC_XXXX": 1, "DelayM": 1}
    out = s.series("rocketmq_messages_out_total", consumer_group="SCHEDULE_CONSUMER", is_system="true")
    assert list(out.values()) == [1.0]


def _by_topic(s, name, **match):
    return {dict(k)["topic"]: v for k, v in s.series(name, **match).items()}


def test_timer_messages_count_when_read_and_when_delivered(make_broker, clock):
    b = make_broker(metricsExporterType="PROM")
    send(b, topic="TimerM", props={"TIMER_DELAY_MS": "3000"}, born=clock.now())
    send(b, topic="TimerM", props={"TIMER_DELAY_SEC": "7200"}, born=clock.now())
    timer = b.c.timer_message_store
    assert timer.enqueue() == 2
    labels = {"topic": "TimerM", "storage_type": "local", "storage_medium": "disk"}
    s = scrape(b)
    assert s.total("rocketmq_timing_messages", **labels) == 2  # Java TimerMetrics' count by real topic
    # Java's set latency: delivery time - born time, in whole seconds (buckets 60 s ... 3 days)
    assert s.total("rocketmq_delay_message_latency_seconds_count", **labels) == 2
    assert s.total("rocketmq_delay_message_latency_seconds_bucket", le="60.0", **labels) == 1
    assert s.total("rocketmq_delay_message_latency_seconds_bucket", le="3600.0", **labels) == 1
    assert s.total("rocketmq_delay_message_latency_seconds_bucket", le="43200.0", **labels) == 2

    async def deliver():
        timer.started = True
        clock.advance(3100)
        await timer.dequeue()

    asyncio.run(deliver())
    s = scrape(b)
    assert s.total("rocketmq_timing_messages", **labels) == 1  # the 2-hour one still waits
    assert s.total("rocketmq_timer_enqueue_total", **labels) == 2
    assert s.total("rocketmq_timer_dequeue_total", **labels) == 1
    assert s.total("rocketmq_messages_in_total", topic="rmq_sys_wheel_timer", message_type="delay") == 2
