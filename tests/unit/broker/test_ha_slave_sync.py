"""The master's answers to a slave's SlaveSynchronize (Java AdminBrokerProcessor#getAllConsumerOffset,
getAllDelayOffset, getTimerCheckPoint, getTimerMetrics, getAllMessageRequestMode): the shapes a
Java 5.5.0 slave decodes (compact fastjson of the managers' files; TimerCheckpoint#encode)."""

from __future__ import annotations

import asyncio
import json
import struct

from support.fakes import FakeChannel

from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.store.config import ConsumerOffsetSerializeWrapper, DelayOffsetSerializeWrapper


def call(broker, code):
    return asyncio.run(broker.call(RemotingCommand.request(code, {}), FakeChannel("127.0.0.1:1")))


def test_all_consumer_offset_is_the_offset_file_compact(broker):
    broker.c.consumer_offset_manager.commit_offset("h", "g1", "T", 2, 17)
    r = call(broker, RequestCode.GET_ALL_CONSUMER_OFFSET)
    assert r.code == ResponseCode.SUCCESS and r.remark is None
    # ConsumerOffsetManager#encode(false): compact fastjson, int keys unquoted, as consumerOffset.json
    assert r.body == (
        b'{"dataVersion":{"counter":0,"stateVersion":0,"timestamp":0},"groupTopicMap":{"g1":["T"]},'
        b'"offsetTable":{"T@g1":{2:17}},"pullOffsetTable":{}}'
    )
    assert ConsumerOffsetSerializeWrapper.decode(r.body).offset_table == {"T@g1": {2: 17}}


def test_all_delay_offset(broker):
    broker.c.schedule_message_service.offset_table.update({3: 5, 1: 9})
    r = call(broker, RequestCode.GET_ALL_DELAY_OFFSET)
    assert r.code == ResponseCode.SUCCESS
    # DelayOffsetSerializeWrapper (5.x: with dataVersion), levels in order
    assert r.body == b'{"dataVersion":{"counter":0,"stateVersion":0,"timestamp":0},"offsetTable":{1:9,3:5}}'
    assert DelayOffsetSerializeWrapper.decode(r.body).offset_table == {1: 9, 3: 5}


def test_timer_check_point_is_56_bytes(broker):
    cp = broker.c.timer_message_store.checkpoint
    cp.last_read_time_ms, cp.last_timer_queue_offset, cp.counter = 1_700_000_000_000, 42, 7
    r = call(broker, RequestCode.GET_TIMER_CHECK_POINT)
    assert r.code == ResponseCode.SUCCESS
    # TimerCheckpoint#encode: lastReadTimeMs, lastTimerLogFlushPos, lastTimerQueueOffset,
    # masterTimerQueueOffset, then DataVersion stateVersion, timestamp, counter; big-endian longs
    assert struct.unpack(">7q", r.body) == (1_700_000_000_000, 0, 42, 0, 0, cp.timestamp, 7)


def test_timer_metrics(broker):
    r = call(broker, RequestCode.GET_TIMER_METRICS)
    assert r.code == ResponseCode.SUCCESS
    tree = json.loads(r.body)
    assert list(tree) == ["dataVersion", "timingCount"] and tree["timingCount"] == {}


def test_timer_codes_without_the_timer_wheel(make_broker):
    b = make_broker(timerWheelEnable="false")
    r = call(b, RequestCode.GET_TIMER_CHECK_POINT)
    assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, "The checkpoint is null")
    r = call(b, RequestCode.GET_TIMER_METRICS)
    assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, "The timer message store is null")


def test_all_message_request_mode(broker):
    r = call(broker, RequestCode.GET_ALL_MESSAGE_REQUEST_MODE)
    assert r.code == ResponseCode.SUCCESS
    assert json.loads(r.body) == {"messageRequestModeMap": {}}
