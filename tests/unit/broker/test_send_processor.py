"""SEND_MESSAGE / _V2 / SEND_BATCH_MESSAGE: checks, codes, remarks, response header, stored record."""

from __future__ import annotations

import asyncio

from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand, decode_frame, encode
from pyrmq.store import message as m


def v2(topic="SendT", queue_id=-1, props=None, batch=False, **over):
    ext = {
        "a": "pg",
        "b": topic,
        "c": "TBW102",
        "d": "4",
        "e": str(queue_id),
        "f": "0",
        "g": "1700000000123",
        "h": "7",
        "i": m.message_properties_to_string(props or {"TAGS": "TagA"}),
        "j": "0",
        "k": "false",
        "m": "true" if batch else "false",
        "n": "broker-t",
    }
    ext.update(over)
    return ext


def send(broker, ext, body=b"hello", code=RequestCode.SEND_MESSAGE_V2):
    return asyncio.run(broker.call(RemotingCommand.request(code, ext, body)))


def test_send_v2_auto_creates_topic_and_answers_header(broker):
    r = send(broker, v2(queue_id=2, props={"TAGS": "TagA", "KEYS": "k1", "UNIQ_KEY": "UNIQ-1"}))
    assert r.code == ResponseCode.SUCCESS, r
    ef = r.ext_fields
    assert ef["MSG_REGION"] == "DefaultRegion" and ef["TRACE_ON"] == "true"
    assert ef["queueId"] == "2" and ef["queueOffset"] == "0" and ef["transactionId"] == "UNIQ-1"
    tc = broker.c.topic_config_manager.select_topic_config("SendT")
    assert (tc.read_queue_nums, tc.write_queue_nums, tc.perm) == (4, 4, 6)
    # msgId is the offsetMsgId: store host 127.0.0.1:10911 + commit-log offset
    mid = m.decode_message_id(ef["msgId"])
    stored = broker.c.message_store.look_message_by_offset(mid.offset)
    assert stored.topic == "SendT" and stored.body == b"hello" and stored.flag == 7
    assert stored.properties["CLUSTER"] == "TestCluster" and stored.properties["UNIQ_KEY"] == "UNIQ-1"
    assert stored.born_timestamp == 1700000000123 and stored.queue_id == 2


def test_send_v1_header_and_broker_made_uniq_key(broker):
    ext = {
        "producerGroup": "pg",
        "topic": "SendV1",
        "defaultTopic": "TBW102",
        "defaultTopicQueueNums": "4",
        "queueId": "0",
        "sysFlag": "0",
        "bornTimestamp": "1",
        "flag": "0",
        "properties": m.message_properties_to_string({"TAGS": "x"}),
        "reconsumeTimes": "0",
        "unitMode": "false",
        "batch": "false",
        "bname": "broker-t",
    }
    r = send(broker, ext, code=RequestCode.SEND_MESSAGE)
    assert r.code == ResponseCode.SUCCESS, r
    assert len(r.ext_fields["transactionId"]) == 32  # UNIQ_KEY made by the broker
    r2 = send(broker, ext, code=RequestCode.SEND_MESSAGE)
    assert r2.ext_fields["queueOffset"] == "1"


def test_forbidden_and_invalid_topics(broker):
    r = send(broker, v2(topic="SCHEDULE_TOPIC_XXXX"))
    assert (r.code, r.remark) == (
        ResponseCode.NO_PERMISSION,
        "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden.",
    )
    assert r.ext_fields["MSG_REGION"] == "DefaultRegion"
    r = send(broker, v2(topic="bad topic"))
    assert r.code == ResponseCode.INVALID_PARAMETER
    assert r.remark == "The specified topic: bad topic, contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    r = send(broker, v2(topic="T" * 128))
    assert r.code == ResponseCode.INVALID_PARAMETER and "longer than topic max length: 127" in r.remark


def test_topic_not_exist_when_auto_create_off(make_broker):
    b = make_broker(autoCreateTopicEnable="false")
    assert b.c.topic_config_manager.select_topic_config("TBW102") is None
    r = send(b, v2(topic="NoAuto"))
    assert r.code == ResponseCode.TOPIC_NOT_EXIST
    assert r.remark.startswith("topic[NoAuto] not exist, apply first please!\nSee https://rocketmq.apache.org")


def test_queue_id_out_of_range_and_body_too_big(make_broker):
    b = make_broker(maxMessageSize=1000)
    assert send(b, v2(queue_id=0)).code == ResponseCode.SUCCESS
    r = send(b, v2(queue_id=4))
    assert r.code == ResponseCode.INVALID_PARAMETER and r.remark.startswith(
        "request queueId[4] is illegal, TopicConfig [topicName=SendT"
    )
    r = send(b, v2(queue_id=0), body=b"x" * 1001)
    assert r.code == ResponseCode.MESSAGE_ILLEGAL
    assert "msg body length limit 1000B" in r.remark


def test_no_write_permission_on_topic_is_not_checked_but_broker_perm_is_for_order_topics(broker):
    # Java msgCheck only refuses writes when the *broker* is not writable and the topic is ordered
    from pyrmq.protocol.bodies.common import TopicConfig

    broker.c.topic_config_manager.update_topic_config(TopicConfig("Ord", 2, 2, 6, order=True))
    broker.c.config["brokerPermission"] = 4
    r = send(broker, v2(topic="Ord", queue_id=0))
    assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "the broker[127.0.0.1] sending message is forbidden")


def test_batch_elements_keep_their_own_properties(broker):
    elems = [
        m.BatchElement(
            body=f"b{i}".encode(), flag=0, properties=m.message_properties_to_string({"UNIQ_KEY": f"U{i}", "TAGS": "t"})
        )
        for i in range(3)
    ]
    body = m.encode_batch_body(elems)
    r = send(
        broker,
        v2(topic="BatchT", queue_id=1, batch=True, props={"WAIT": "true"}),
        body=body,
        code=RequestCode.SEND_BATCH_MESSAGE,
    )
    assert r.code == ResponseCode.SUCCESS, r
    ids = r.ext_fields["msgId"].split(",")
    assert len(ids) == 3 and r.ext_fields["queueOffset"] == "0"
    got = [broker.c.message_store.look_message_by_offset(m.decode_message_id(i).offset) for i in ids]
    assert [g.body for g in got] == [b"b0", b"b1", b"b2"]
    assert [g.properties["UNIQ_KEY"] for g in got] == ["U0", "U1", "U2"]
    assert all(g.properties["CLUSTER"] == "TestCluster" for g in got)
    assert [g.queue_offset for g in got] == [0, 1, 2]


def test_batch_to_retry_topic_is_illegal(broker):
    r = send(broker, v2(topic="%RETRY%g1", queue_id=0, batch=True), body=b"", code=RequestCode.SEND_BATCH_MESSAGE)
    assert r.code == ResponseCode.MESSAGE_ILLEGAL


def test_retry_send_over_max_reconsume_goes_to_dlq(broker):
    r = send(broker, v2(topic="%RETRY%grp", queue_id=0, j="17", l="16"))
    assert r.code == ResponseCode.SUCCESS, r
    stored = broker.c.message_store.look_message_by_offset(m.decode_message_id(r.ext_fields["msgId"]).offset)
    assert stored.topic == "%DLQ%grp"
    assert broker.c.topic_config_manager.select_topic_config("%DLQ%grp").read_queue_nums == 1


def test_response_survives_the_codec(broker):
    r = send(broker, v2(queue_id=1))
    r.opaque = 0x01020304
    back = decode_frame(encode(r)[4:])
    assert back.ext_fields == r.ext_fields and back.code == ResponseCode.SUCCESS
