"""The master's answers to a slave's SlaveSynchronize (Java AdminBrokerProcessor#getAllConsumerOffset,
getAllDelayOffset, getTimerCheckPoint, getTimerMetrics, getAllMessageRequestMode): the shapes a
Java 5.5.0 slave decodes (compact fastjson of the managers' files; TimerCheckpoint#encode)."""

from __future__ import annotations

import asyncio
import json
import os
import struct

import pytest
from support.fakes import FakeChannel

from pyrmq.broker.controller import BrokerController
from pyrmq.broker.subscription_group_manager import SubscriptionGroupConfig
from pyrmq.protocol.bodies.common import TopicConfig
from pyrmq.protocol.bodies.pop import MessageRequestMode, SetMessageRequestModeRequestBody
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.store.config import ConsumerOffsetSerializeWrapper, DelayOffsetSerializeWrapper

from .conftest import Broker, make_config


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


class RoutedClient:
    """RemotingClient.invoke answered by the master's processors (no sockets)."""

    def __init__(self, master) -> None:
        self.master = master
        self.asked: list[int] = []

    async def invoke(self, addr, cmd, timeout_s=3):
        assert addr == "10.0.0.1:10911"
        self.asked.append(cmd.code)
        return await self.master.call(cmd, FakeChannel("127.0.0.1:2"))


@pytest.fixture
def master_and_slave(tmp_path, clock):
    made = []

    def one(name, **props):
        c = BrokerController(make_config(tmp_path / name, **props), clock=clock)
        c.load()
        c.message_store.start()
        made.append(c)
        return c

    master = Broker(one("m"))
    slave = one("s", brokerId=1, brokerRole="SLAVE")
    yield master, slave
    for c in made:
        c.pull_request_hold_service.shutdown()
        c.message_store.shutdown()


def test_slave_takes_the_masters_metadata(master_and_slave):
    master, slave = master_and_slave
    m = master.c
    m.topic_config_manager.update_topic_config(
        TopicConfig(topic_name="OnMaster", read_queue_nums=3, write_queue_nums=3)
    )
    m.subscription_group_manager.update_subscription_group_config(SubscriptionGroupConfig(group_name="gm"))
    m.consumer_offset_manager.commit_offset("h", "gm", "OnMaster", 1, 33)
    m.schedule_message_service.offset_table[2] = 4
    m.message_request_mode_manager.set_message_request_mode(
        "OnMaster", "gm", SetMessageRequestModeRequestBody("OnMaster", "gm", MessageRequestMode.POP, 2)
    )
    cp = m.timer_message_store.checkpoint
    cp.last_read_time_ms, cp.master_timer_queue_offset, cp.counter = 1_700_000_001_000, 12, 5
    slave.slave_synchronize.client = client = RoutedClient(master)
    slave.slave_synchronize.master_addr = "10.0.0.1:10911"

    async def sync():
        await slave.slave_synchronize.sync_all()
        await slave.slave_synchronize.sync_timer_check_point()

    asyncio.run(sync())
    assert client.asked == [
        RequestCode.GET_ALL_TOPIC_CONFIG,
        RequestCode.GET_ALL_CONSUMER_OFFSET,
        RequestCode.GET_ALL_DELAY_OFFSET,
        RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
        RequestCode.GET_ALL_MESSAGE_REQUEST_MODE,
        RequestCode.GET_TIMER_CHECK_POINT,
    ]
    s = slave
    assert s.topic_config_manager.select_topic_config("OnMaster").read_queue_nums == 3
    assert set(s.topic_config_manager.topic_config_table) == set(m.topic_config_manager.topic_config_table)
    # the master's version, bumped once (Java assignNewOne then updateDataVersion)
    assert s.topic_config_manager.data_version.counter == m.topic_config_manager.data_version.counter + 1
    assert s.subscription_group_manager.contains("gm")
    assert s.consumer_offset_manager.query_offset("gm", "OnMaster", 1) == 33
    assert s.schedule_message_service.offset_table[2] == 4
    got = s.message_request_mode_manager.get_message_request_mode("OnMaster", "gm")
    assert (got.mode, got.pop_share_queue_num) == (MessageRequestMode.POP, 2)
    scp = s.timer_message_store.checkpoint
    assert (scp.last_read_time_ms, scp.master_timer_queue_offset, scp.counter) == (1_700_000_001_000, 12, 5)
    # persisted: a restarted slave has them
    with open(s.consumer_offset_manager.path) as f:
        assert '"OnMaster@gm"' in f.read()
    with open(os.path.join(s.store_config.store_path_root_dir, "config", "delayOffset.json")) as f:
        assert DelayOffsetSerializeWrapper.decode(f.read()).offset_table == {2: 4}


def test_slave_does_not_sync_from_itself(master_and_slave):
    master, slave = master_and_slave
    slave.slave_synchronize.client = client = RoutedClient(master)
    slave.slave_synchronize.master_addr = slave.broker_addr
    asyncio.run(slave.slave_synchronize.sync_all())
    assert client.asked == []
