"""Delay levels, timer messages, CONSUMER_SEND_MSG_BACK, request-reply: processors and services
awaited directly on a tmp store. The controller, and through it the store, runs on the pinned
clock fixture, so due times are reached by advancing it, never by sleeping."""

from __future__ import annotations

import asyncio
import os
import struct

import pytest
from support.fakes import FakeChannel

from pyrmq.broker.client_manager import ClientChannelInfo
from pyrmq.broker.controller import BrokerController
from pyrmq.broker.processor.reply import ReplyMessageProcessor
from pyrmq.broker.processor.send import SendMessageProcessor
from pyrmq.broker.processor.send_msg_back import ConsumerSendMsgBackProcessor
from pyrmq.broker.schedule_message_service import ScheduleMessageService
from pyrmq.broker.timer_message_store import TimerMessageStore
from pyrmq.common.constants import RMQ_SYS_SCHEDULE_TOPIC, TIMER_TOPIC
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.remoting.channel import RequestContext, call_handler
from pyrmq.store import message as m
from pyrmq.store.config import DelayOffsetSerializeWrapper, load_config

from .conftest import make_config

SCHEDULE = RMQ_SYS_SCHEDULE_TOPIC


@pytest.fixture
def env(tmp_path, clock):
    made = []

    def factory(**props):
        props.setdefault("messageDelayLevel", "1s 2s 3s 4s 5s")
        c = BrokerController(make_config(tmp_path, **props), clock=clock)
        c.load()
        c.message_store.start()
        made.append(c)
        return c

    yield clock, factory
    for c in made:
        c.pull_request_hold_service.shutdown()
        c.message_store.shutdown()


def v2(topic, props, queue_id=1, reconsume=0):
    return {
        "a": "pg",
        "b": topic,
        "c": "TBW102",
        "d": "4",
        "e": str(queue_id),
        "f": "0",
        "g": "1700000000123",
        "h": "0",
        "i": m.message_properties_to_string(props),
        "j": str(reconsume),
        "k": "false",
        "m": "false",
    }


def call(proc_method, cmd, channel=None):
    return asyncio.run(call_handler(proc_method, RequestContext(channel or FakeChannel(), None), cmd))


def send(c, topic, props, body=b"hello", queue_id=1):
    r = call(
        c.build(SendMessageProcessor).send_message,
        RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, v2(topic, props, queue_id), body),
    )
    assert r.code == ResponseCode.SUCCESS, r
    return r


def stored_at(c, topic, queue_id, offset):
    phy, size, tags_code = c.message_store.get_consume_queue(topic, queue_id).get(offset)
    return c.message_store.look_message_by_offset(phy, size), tags_code


# ------------------------------------------------------------------ delay levels


def test_delay_message_is_diverted_to_schedule_queue_level_minus_1(env):
    _, factory = env
    c = factory()
    r = send(c, "DelayT", {"TAGS": "a", "DELAY": "2"})
    assert r.ext_fields["queueId"] == "1"  # the queue asked for, like Java
    msg, tags_code = stored_at(c, SCHEDULE, 1, 0)
    assert msg.topic == SCHEDULE and msg.queue_id == 1
    assert msg.properties["REAL_TOPIC"] == "DelayT" and msg.properties["REAL_QID"] == "1"
    assert msg.properties["DELAY"] == "2"
    assert tags_code == msg.store_timestamp + 2000  # the deliver time in the consume queue
    assert c.message_store.get_consume_queue("DelayT", 1) is None


def test_delay_level_above_max_is_clamped(env):
    _, factory = env
    c = factory()
    send(c, "DelayT", {"DELAY": "40"})
    msg, tags_code = stored_at(c, SCHEDULE, 4, 0)
    assert msg.properties["DELAY"] == "5" and tags_code == msg.store_timestamp + 5000


def test_default_delay_table_is_reported_by_the_config():
    from pyrmq.broker.config import BrokerConfig

    text = BrokerConfig().properties_text()
    assert "messageDelayLevel=1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h" in text.splitlines()


def test_schedule_delivers_when_due_and_persists_offsets(env):
    clock, factory = env
    c = factory()
    svc = c.schedule_message_service
    send(c, "DelayT", {"TAGS": "x", "KEYS": "k", "DELAY": "2", "UNIQ_KEY": "U1"}, b"one")
    send(c, "DelayT", {"DELAY": "2"}, b"two")

    async def go():
        svc.started = True
        wait = await svc.execute_on_time_up(2)
        assert 1.0 < wait <= 2.0  # sleeps until the head is due
        assert c.message_store.get_consume_queue("DelayT", 1) is None and svc.offset_table[2] == 0
        clock.advance(2100)
        await svc.execute_on_time_up(2)

    asyncio.run(go())
    assert svc.offset_table[2] == 2
    msg, tags_code = stored_at(c, "DelayT", 1, 0)
    assert msg.body == b"one" and msg.properties["DELAY"] == "2"  # Java keeps it in the stored string
    assert msg.properties["REAL_TOPIC"] == "DelayT" and msg.properties["UNIQ_KEY"] == "U1"
    assert msg.properties["KEYS"] == "k" and tags_code == m.java_string_hash("x")
    assert stored_at(c, "DelayT", 1, 1)[0].body == b"two"
    svc.persist()
    wrapper = load_config(c.store_config.store_path_root_dir, DelayOffsetSerializeWrapper)
    assert wrapper.offset_table == {2: 2}
    with open(os.path.join(c.store_config.store_path_root_dir, "config", "delayOffset.json")) as f:
        assert "2:2" in f.read().replace(" ", "")  # Java's unquoted int keys
    again = ScheduleMessageService(config=c.config, message_store=c.message_store, now=c.now)
    again.load()
    assert again.offset_table == {2: 2}


# ------------------------------------------------------------------ timer


def test_timer_message_round_trip_and_checkpoint(env):
    clock, factory = env
    c = factory()
    deliver = clock() + 3500
    send(c, "TimerT", {"TAGS": "t", "TIMER_DELIVER_MS": str(deliver)}, b"tick")
    msg, _ = stored_at(c, TIMER_TOPIC, 0, 0)
    assert msg.properties["TIMER_OUT_MS"] == str(deliver // 1000 * 1000)
    assert msg.properties["REAL_TOPIC"] == "TimerT" and msg.properties["REAL_QID"] == "1"
    tms = c.timer_message_store

    async def go():
        tms.started = True
        assert tms.enqueue() == 1
        wait = await tms.dequeue()
        assert 2.0 < wait <= 3.5
        clock.advance(3600)
        await tms.dequeue()

    asyncio.run(go())
    out, _ = stored_at(c, "TimerT", 1, 0)
    assert out.body == b"tick" and out.properties["REAL_TOPIC"] == "TimerT" and "TIMER_DEQUEUE_MS" in out.properties
    assert out.properties["TIMER_OUT_MS"] == str(deliver // 1000 * 1000)
    assert tms.low_water == 1
    tms.flush_checkpoint(force=True)
    path = os.path.join(c.store_config.store_path_root_dir, "config", "timercheck")
    data = open(path, "rb").read()
    assert len(data) == 4096
    _, _, last_q, master_q = struct.unpack(">4q", data[:32])
    assert last_q == master_q == 1
    again = TimerMessageStore(config=c.config, message_store=c.message_store, now=c.now)
    again.load()
    assert again.low_water == 1


def test_timer_rejections(env):
    clock, factory = env
    c = factory()
    proc = c.build(SendMessageProcessor)
    far = clock() + 4 * 86400 * 1000
    r = call(
        proc.send_message,
        RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, v2("TimerT", {"TIMER_DELIVER_MS": str(far)}), b"x"),
    )
    assert r.code == ResponseCode.MESSAGE_ILLEGAL and r.remark.startswith("timer message illegal")
    r = call(
        proc.send_message,
        RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, v2("TimerT", {"TIMER_DELAY_SEC": "soon"}), b"x"),
    )
    assert r.code == ResponseCode.MESSAGE_ILLEGAL
    c2 = factory(timerWheelEnable="false")
    r = call(
        c2.build(SendMessageProcessor).send_message,
        RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, v2("TimerT", {"TIMER_DELAY_SEC": "3"}), b"x"),
    )
    assert r.code == ResponseCode.SYSTEM_ERROR
    assert r.remark == "accurate timer message is not enabled, timerWheelEnable is false"


# ------------------------------------------------------------------ send back


def send_back(c, offset, group="G1", delay_level=0, max_times=None):
    ext = {
        "offset": str(offset),
        "group": group,
        "delayLevel": str(delay_level),
        "originTopic": "RT",
        "originMsgId": "x",
        "unitMode": "false",
    }
    if max_times is not None:
        ext["maxReconsumeTimes"] = str(max_times)
    cmd = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, ext)
    cmd.version = 400
    return call(c.build(ConsumerSendMsgBackProcessor).consumer_send_msg_back, cmd)


def test_send_back_retry_ladder_then_dlq(env):
    _, factory = env
    c = factory(messageDelayLevel="1s 2s 3s 4s 5s 6s 7s 8s")
    r = send(c, "RT", {"TAGS": "a", "UNIQ_KEY": "U1", "color": "red"}, b"body")
    first_id = r.ext_fields["msgId"]
    offset = m.decode_message_id(first_id).offset
    assert send_back(c, offset).code == ResponseCode.SUCCESS
    sched, _ = stored_at(c, SCHEDULE, 2, 0)  # level 3 + reconsumeTimes 0
    assert sched.properties["REAL_TOPIC"] == "%RETRY%G1" and sched.properties["DELAY"] == "3"
    assert sched.properties["RETRY_TOPIC"] == "RT" and sched.properties["ORIGIN_MESSAGE_ID"] == first_id
    assert sched.reconsume_times == 1 and sched.body == b"body" and sched.properties["color"] == "red"
    tc = c.topic_config_manager.select_topic_config("%RETRY%G1")
    assert tc is not None and tc.read_queue_nums == 1
    # the retried record (reconsumeTimes 1) sent back again: level 4, origin id kept
    assert send_back(c, sched.commit_log_offset).code == ResponseCode.SUCCESS
    again, _ = stored_at(c, SCHEDULE, 3, 0)
    assert again.reconsume_times == 2 and again.properties["ORIGIN_MESSAGE_ID"] == first_id
    # reconsumeTimes 2 >= maxReconsumeTimes 2: DLQ, no delay
    assert send_back(c, again.commit_log_offset, max_times=2).code == ResponseCode.SUCCESS
    dlq, _ = stored_at(c, "%DLQ%G1", 0, 0)
    assert dlq.reconsume_times == 3 and dlq.properties["DELAY"] == "0" and dlq.properties["RETRY_TOPIC"] == "RT"
    assert dlq.properties["ORIGIN_MESSAGE_ID"] == first_id and dlq.properties["UNIQ_KEY"] == "U1"
    assert c.topic_config_manager.select_topic_config("%DLQ%G1").perm == 6


def test_send_back_group_retry_max_times_and_bad_offset(env):
    _, factory = env
    c = factory()
    r = send(c, "RT", {"TAGS": "a"})
    sg = c.subscription_group_manager.find_subscription_group_config("G2")
    sg.retry_max_times = 0
    assert send_back(c, m.decode_message_id(r.ext_fields["msgId"]).offset, group="G2").code == ResponseCode.SUCCESS
    assert stored_at(c, "%DLQ%G2", 0, 0)[0].reconsume_times == 1
    bad = send_back(c, 10**9, group="G2")
    assert bad.code == ResponseCode.SYSTEM_ERROR and bad.remark == f"look message by offset failed, {10**9}"
    assert send_back(c, 0, delay_level=-1, group="G3").code == ResponseCode.SUCCESS
    assert c.message_store.get_consume_queue("%DLQ%G3", 0) is not None


# ------------------------------------------------------------------ request-reply


def test_reply_is_pushed_to_the_requester_and_stored(env):
    _, factory = env
    c = factory()
    requester = FakeChannel("127.0.0.1:50001", answer=lambda cmd: cmd.make_response(ResponseCode.SUCCESS, None))
    c.producer_manager.register_producer("pg", ClientChannelInfo(requester, "req-client-1", 0, 0, c.now()))
    props = {"REPLY_TO_CLIENT": "req-client-1", "CORRELATION_ID": "corr-1", "MSG_TYPE": "reply"}
    cmd = RemotingCommand.request(RequestCode.SEND_REPLY_MESSAGE_V2, v2("TestCluster_REPLY_TOPIC", props, 0), b"pong")
    r = call(c.build(ReplyMessageProcessor).send_reply_message, cmd)
    assert r.code == ResponseCode.SUCCESS, r
    (push,) = requester.invoked
    assert push.code == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT and push.body == b"pong"
    pp = m.string_to_message_properties(push.ext_fields["properties"])
    assert pp["CORRELATION_ID"] == "corr-1" and "PUSH_REPLY_TIME" in pp
    assert push.ext_fields["topic"] == "TestCluster_REPLY_TOPIC" and push.ext_fields["storeHost"] == "127.0.0.1:10911"
    stored, _ = stored_at(c, "TestCluster_REPLY_TOPIC", 0, 0)
    assert stored.body == b"pong" and r.ext_fields["msgId"] != "0"


def test_reply_without_requester_fails_with_java_remark(env):
    _, factory = env
    c = factory()
    props = {"REPLY_TO_CLIENT": "gone", "CORRELATION_ID": "c"}
    cmd = RemotingCommand.request(
        RequestCode.SEND_REPLY_MESSAGE,
        {
            "producerGroup": "pg",
            "topic": "TestCluster_REPLY_TOPIC",
            "defaultTopic": "TBW102",
            "defaultTopicQueueNums": "4",
            "queueId": "0",
            "sysFlag": "0",
            "bornTimestamp": "1",
            "flag": "0",
            "properties": m.message_properties_to_string(props),
        },
        b"x",
    )
    r = call(c.build(ReplyMessageProcessor).send_reply_message, cmd)
    assert r.code == ResponseCode.SYSTEM_ERROR
    assert r.remark == "push reply message fail, channel of <gone> not found."
