"""HEART_BEAT / UNREGISTER_CLIENT / GET_CONSUMER_LIST_BY_GROUP, offsets, locks, queries, topics."""

from __future__ import annotations

import asyncio

from support.fakes import FakeChannel

from pyrmq.protocol.bodies.broker import (
    ConsumerData,
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    ProducerData,
    SubscriptionData,
)
from pyrmq.protocol.bodies.common import TopicConfigSerializeWrapper
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.store import message as m


def call(broker, code, ext=None, body=None, ch=None):
    return asyncio.run(broker.call(RemotingCommand.request(code, ext or {}, body), ch or FakeChannel("127.0.0.1:1")))


def heartbeat(broker, ch, client_id, group="cg", topics=("T1",)):
    subs = [SubscriptionData.build(t, "*") for t in topics]
    hb = HeartbeatData(
        client_id,
        [ProducerData("CLIENT_INNER_PRODUCER")],
        [ConsumerData(group, "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET", subs)],
    )
    return call(broker, RequestCode.HEART_BEAT, {}, hb.encode(), ch)


def test_heartbeat_registers_creates_retry_topic_and_notifies_members(broker):
    a, b = FakeChannel("127.0.0.1:2"), FakeChannel("127.0.0.1:3")
    r = heartbeat(broker, a, "ip@A")
    assert r.code == ResponseCode.SUCCESS and r.ext_fields["IS_SUPPORT_HEART_BEAT_V2"] == "true"
    assert broker.c.topic_config_manager.select_topic_config("%RETRY%cg").read_queue_nums == 1
    assert broker.c.subscription_group_manager.table["cg"].group_name == "cg"
    a.sent.clear()
    heartbeat(broker, b, "ip@B")
    notified = [c for c in a.sent + b.sent if c.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED]
    assert len(notified) == 2 and all(c.is_oneway and c.ext_fields == {"consumerGroup": "cg"} for c in notified)
    r = call(broker, RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "cg"})
    assert sorted(GetConsumerListByGroupResponseBody.decode(r.body).consumer_id_list) == ["ip@A", "ip@B"]
    # the same heartbeat again changes nothing: no notification
    a.sent.clear(), b.sent.clear()
    heartbeat(broker, b, "ip@B")
    assert a.sent == [] and b.sent == []
    # a member leaves: the rest are told
    r = call(broker, RequestCode.UNREGISTER_CLIENT, {"clientID": "ip@B", "consumerGroup": "cg"}, ch=b)
    assert r.code == ResponseCode.SUCCESS
    assert [c.code for c in a.sent] == [RequestCode.NOTIFY_CONSUMER_IDS_CHANGED]
    broker.c._channel_closed(a)
    r = call(broker, RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "cg"})
    assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, "no consumer for this group, cg")


def test_go_style_code_set_strings_are_accepted(broker):
    body = (
        b'{"clientID":"go@1","consumerDataSet":[{"groupName":"gg","consumeType":"CONSUME_PASSIVELY",'
        b'"messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":'
        b'[{"classFilterMode":false,"topic":"T","subString":"a || b","tagsSet":["a","b"],"codeSet":["97","98"],'
        b'"subVersion":1700000000000000000,"expressionType":"TAG"}],"unitMode":false}],"producerDataSet":[]}'
    )
    assert call(broker, RequestCode.HEART_BEAT, {}, body).code == ResponseCode.SUCCESS
    sub = broker.c.consumer_manager.find_subscription_data("gg", "T")
    assert sub.code_set == [m.java_string_hash("a"), m.java_string_hash("b")]


def test_channel_expiry(broker, clock):
    a = FakeChannel("127.0.0.1:4")
    heartbeat(broker, a, "ip@A")
    clock.advance(120_001)
    broker.c.scan_not_active_channel()
    assert a.closed and broker.c.consumer_manager.get_consumer_group_info("cg") is None


def test_query_and_update_consumer_offset(broker):
    q = {"consumerGroup": "cg", "topic": "T1", "queueId": "0"}
    r = call(broker, RequestCode.QUERY_CONSUMER_OFFSET, q)
    assert r.code == ResponseCode.QUERY_NOT_FOUND  # the queue has no message
    put = {"a": "pg", "b": "T1", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0"}
    assert call(broker, RequestCode.SEND_MESSAGE_V2, put, b"x").code == ResponseCode.SUCCESS
    r = call(broker, RequestCode.QUERY_CONSUMER_OFFSET, q)
    assert (r.code, r.ext_fields) == (ResponseCode.SUCCESS, {"offset": "0"})  # young queue: from 0
    r = call(broker, RequestCode.UPDATE_CONSUMER_OFFSET, {**q, "consumerGroup": "unknown", "commitOffset": "1"})
    assert r.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
    broker.c.subscription_group_manager.find_subscription_group_config("cg")
    r = call(broker, RequestCode.UPDATE_CONSUMER_OFFSET, {**q, "commitOffset": "1"})
    assert r.code == ResponseCode.SUCCESS
    assert call(broker, RequestCode.QUERY_CONSUMER_OFFSET, q).ext_fields == {"offset": "1"}
    r = call(broker, RequestCode.GET_MAX_OFFSET, {"topic": "T1", "queueId": "0"})
    assert r.ext_fields == {"offset": "1"}
    assert call(broker, RequestCode.GET_MIN_OFFSET, {"topic": "T1", "queueId": "0"}).ext_fields == {"offset": "0"}
    # persisted in the Java format and read back
    broker.c.consumer_offset_manager.persist()
    text = open(broker.c.consumer_offset_manager.path).read()
    # Java 5.5.0's fastjson2 pretty form: the queue id is a bare integer key
    assert '\t"offsetTable":{\n\t\t"T1@cg":{\n\t\t\t0:1\n\t\t}\n\t}' in text
    from pyrmq.broker.consumer_offset_manager import ConsumerOffsetManager

    again = ConsumerOffsetManager(broker.c.consumer_offset_manager.path)
    again.load()
    assert again.query_offset("cg", "T1", 0) == 1


def test_lock_batch_expiry(broker, clock):
    mqs = [MessageQueue("T", "broker-t", i) for i in range(3)]
    body = LockBatchRequestBody("g", "c1", False, mqs).encode()
    r = call(broker, RequestCode.LOCK_BATCH_MQ, None, body)
    assert LockBatchResponseBody.decode(r.body).lock_ok_mq_set == mqs
    body2 = LockBatchRequestBody("g", "c2", False, mqs[:2]).encode()
    assert LockBatchResponseBody.decode(call(broker, RequestCode.LOCK_BATCH_MQ, None, body2).body).lock_ok_mq_set == []
    clock.advance(60_001)  # c1's locks expired
    assert (
        LockBatchResponseBody.decode(call(broker, RequestCode.LOCK_BATCH_MQ, None, body2).body).lock_ok_mq_set
        == mqs[:2]
    )
    # unlock only releases the caller's own locks
    call(broker, RequestCode.UNLOCK_BATCH_MQ, None, LockBatchRequestBody("g", "c1", False, mqs).encode())
    assert set(broker.c.rebalance_lock_manager.mq_lock_table["g"]) == set(mqs[:2])
    assert "lockOKMQSet" in r.body.decode()


def test_view_and_query_message(broker):
    put = {
        "a": "pg",
        "b": "QT",
        "c": "TBW102",
        "d": "4",
        "e": "0",
        "f": "0",
        "g": "1",
        "h": "0",
        "i": m.message_properties_to_string({"KEYS": "order-1", "UNIQ_KEY": "U-1"}),
    }
    r = call(broker, RequestCode.SEND_MESSAGE_V2, put, b"q")
    off = m.decode_message_id(r.ext_fields["msgId"]).offset
    v = call(broker, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(off)})
    assert v.code == ResponseCode.SUCCESS and m.decode_message(v.body).body == b"q"
    v = call(broker, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": "999999"})
    assert (v.code, v.remark) == (ResponseCode.SYSTEM_ERROR, "can not find message by the offset, 999999")
    q = {"topic": "QT", "key": "order-1", "maxNum": "32", "beginTimestamp": "0", "endTimestamp": str(2**62)}
    r = call(broker, RequestCode.QUERY_MESSAGE, q)
    assert r.code == ResponseCode.SUCCESS and next(iter(m.decode_messages(r.body))).body == b"q"
    assert set(r.ext_fields) == {"indexLastUpdateTimestamp", "indexLastUpdatePhyoffset"}
    r = call(broker, RequestCode.QUERY_MESSAGE, {**q, "key": "U-1", "_UNIQUE_KEY_QUERY": "true"})
    assert r.code == ResponseCode.SUCCESS
    r = call(broker, RequestCode.QUERY_MESSAGE, {**q, "key": "none"})
    assert r.code == ResponseCode.QUERY_NOT_FOUND


def test_create_topic_and_list_all(broker):
    r = call(
        broker,
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        {"topic": "Made", "readQueueNums": "3", "writeQueueNums": "3", "perm": "6", "topicFilterType": "SINGLE_TAG"},
    )
    assert r.code == ResponseCode.SUCCESS
    r = call(broker, RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "TBW102"})
    assert r.code == ResponseCode.INVALID_PARAMETER
    r = call(broker, RequestCode.GET_ALL_TOPIC_CONFIG)
    w = TopicConfigSerializeWrapper.decode(r.body)
    assert w.topic_config_table["Made"].read_queue_nums == 3 and "SELF_TEST_TOPIC" in w.topic_config_table
    # persisted to topics.json and loaded by a fresh manager
    from pyrmq.broker.topic_config_manager import TopicConfigManager

    tcm = TopicConfigManager(broker.c.config, broker.c.topic_config_manager.path, now=lambda: 0)
    tcm.load()
    assert tcm.select_topic_config("Made").write_queue_nums == 3


def test_consumer_connection_list(broker):
    from pyrmq.protocol.bodies.broker import ConsumerConnection

    r = call(broker, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "cg"})
    assert (r.code, r.remark) == (ResponseCode.CONSUMER_NOT_ONLINE, "the consumer group[cg] not online")
    heartbeat(broker, FakeChannel("127.0.0.1:9"), "ip@A", topics=("T1", "T2"))
    r = call(broker, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "cg"})
    cc = ConsumerConnection.decode(r.body)
    assert [(c.client_id, c.client_addr, c.language) for c in cc.connection_set] == [("ip@A", "127.0.0.1:9", "JAVA")]
    assert sorted(cc.subscription_table) == ["T1", "T2"] and cc.message_model == "CLUSTERING"
    assert b'"connectionSet"' in r.body and b'"subscriptionTable"' in r.body
