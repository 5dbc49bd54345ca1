"""Admin codes of the broker (mqadmin / dashboard): groups, stats, runtime info, config, reset, relay."""

from __future__ import annotations

import asyncio

import orjson
import pytest
from support.fakes import FakeChannel

from pyrmq.common.properties import load_properties
from pyrmq.protocol.bodies.broker import ConsumerData, HeartbeatData, ProducerData, SubscriptionData
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.fastjson import lenient_loads
from pyrmq.store import message as m


@pytest.fixture
def admin(make_broker):
    def factory(**props):
        b = make_broker(**props)
        return b

    return factory


def call(b, code, ext=None, body=None, ch=None):
    return asyncio.run(b.call(RemotingCommand.request(code, ext or {}, body), ch or FakeChannel("127.0.0.1:7")))


def send(b, topic, queue_id=0, tags="tagA", keys="k"):
    ext = {
        "a": "pg",
        "b": topic,
        "c": "TBW102",
        "d": "4",
        "e": str(queue_id),
        "f": "0",
        "g": "1700000000000",
        "h": "0",
        "i": m.message_properties_to_string({"TAGS": tags, "KEYS": keys}),
        "j": "0",
        "k": "false",
        "m": "false",
        "n": "broker-t",
    }
    r = call(b, RequestCode.SEND_MESSAGE_V2, ext, b"payload")
    assert r.code == ResponseCode.SUCCESS, r
    return r


def heartbeat(b, ch, group="cg", topic="AT", version=479, producer=None):
    hb = HeartbeatData(
        "ip@" + group,
        [ProducerData(producer)] if producer else [],
        [
            ConsumerData(
                group,
                "CONSUME_PASSIVELY",
                "CLUSTERING",
                "CONSUME_FROM_LAST_OFFSET",
                [SubscriptionData.build(topic, "*")],
            )
        ],
    )
    cmd = RemotingCommand.request(RequestCode.HEART_BEAT, {}, hb.encode())
    cmd.version = version
    return asyncio.run(b.call(cmd, ch))


def create_topic(b, topic, n=2):
    r = call(
        b,
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        {
            "topic": topic,
            "defaultTopic": "TBW102",
            "readQueueNums": str(n),
            "writeQueueNums": str(n),
            "perm": "6",
            "topicFilterType": "SINGLE_TAG",
        },
    )
    assert r.code == ResponseCode.SUCCESS, r


def mq_table(body: bytes) -> dict:
    """A MessageQueue-keyed fastjson map -> {(topic, brokerName, queueId): value}."""
    text = body.decode()
    import re

    out = {}
    for mq, val in re.findall(r'(\{"brokerName":"[^"]*","queueId":\d+,"topic":"[^"]*"\}):(\{[^{}]*\}|-?\d+)', text):
        k = orjson.loads(mq)
        out[(k["topic"], k["brokerName"], k["queueId"])] = orjson.loads(val)
    return out


def test_subscription_group_create_list_delete_with_offsets(admin):
    b = admin()
    body = b'{"groupName":"G1","consumeBroadcastEnable":false,"consumeFromMinEnable":false,"retryMaxTimes":3}'
    assert call(b, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body).code == ResponseCode.SUCCESS
    bad = call(b, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, b'{"groupName":"bad group!"}')
    assert bad.code == ResponseCode.INVALID_PARAMETER and "illegal characters" in bad.remark
    r = call(b, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
    table = orjson.loads(r.body)["subscriptionGroupTable"]
    assert table["G1"]["retryMaxTimes"] == 3 and table["G1"]["consumeBroadcastEnable"] is False
    assert "TOOLS_CONSUMER" in table and int(r.ext_fields["totalGroupNum"]) == len(table)
    b.c.consumer_offset_manager.commit_offset("x", "G1", "AT", 0, 5)
    r = call(b, RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "G1", "cleanOffset": "true"})
    assert r.code == ResponseCode.SUCCESS
    assert "G1" not in b.c.subscription_group_manager.table
    assert b.c.consumer_offset_manager.query_offset("G1", "AT", 0) == -1
    # without cleanOffset Java 5.5.0's lite-group check re-creates the deleted group with the defaults
    call(b, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body)
    b.c.consumer_offset_manager.commit_offset("x", "G1", "AT", 0, 5)
    assert call(b, RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "G1"}).code == ResponseCode.SUCCESS
    assert b.c.subscription_group_manager.table["G1"].retry_max_times == 16
    assert b.c.consumer_offset_manager.query_offset("G1", "AT", 0) == 5


def test_get_one_subscription_group_config(admin):
    """GET_SUBSCRIPTIONGROUP_CONFIG (the dashboard's group config and state reads): the stored config
    as flat JSON; an unknown group is auto-created like Java's findSubscriptionGroupConfig, or
    SUBSCRIPTION_GROUP_NOT_EXIST when autoCreateSubscriptionGroup is off."""
    b = admin()
    body = b'{"groupName":"G2","consumeMessageOrderly":true,"retryMaxTimes":3,"retryQueueNums":2}'
    assert call(b, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body).code == ResponseCode.SUCCESS
    r = call(b, RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, {"group": "G2"})
    got = orjson.loads(r.body)
    assert r.code == ResponseCode.SUCCESS and got["groupName"] == "G2" and got["retryMaxTimes"] == 3
    assert got["consumeMessageOrderly"] is True and got["retryQueueNums"] == 2
    r = call(b, RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, {"group": "Fresh"})
    assert r.code == ResponseCode.SUCCESS and orjson.loads(r.body)["retryMaxTimes"] == 16
    assert "Fresh" in b.c.subscription_group_manager.table
    off = admin(autoCreateSubscriptionGroup="false")
    r = call(off, RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, {"group": "Missing"})
    assert r.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST and r.remark == "No group in this broker"
    r = call(off, RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, {})
    assert r.code != ResponseCode.SUCCESS and r.remark == "the custom field <group> is null"


def test_topic_stats_consume_stats_and_server_side_reset(admin):
    b = admin()
    create_topic(b, "AT", 2)
    for _ in range(3):
        send(b, "AT", 0)
    send(b, "AT", 1)
    b.c.subscription_group_manager.find_subscription_group_config("cg")
    b.c.consumer_offset_manager.commit_offset("x", "cg", "AT", 0, 2)
    r = call(b, RequestCode.GET_TOPIC_STATS_INFO, {"topic": "AT"})
    stats = mq_table(r.body)
    assert stats[("AT", "broker-t", 0)]["maxOffset"] == 3 and stats[("AT", "broker-t", 1)]["maxOffset"] == 1
    assert stats[("AT", "broker-t", 0)]["lastUpdateTimestamp"] > 0
    assert '"topicPutTps":' in r.body.decode() and "NaN" not in r.body.decode()
    assert call(b, RequestCode.GET_TOPIC_STATS_INFO, {"topic": "Nope"}).code == ResponseCode.TOPIC_NOT_EXIST

    r = call(b, RequestCode.GET_CONSUME_STATS, {"consumerGroup": "cg", "topic": "AT"})
    cs = mq_table(r.body)
    assert cs[("AT", "broker-t", 0)] == {
        "brokerOffset": 3,
        "consumerOffset": 2,
        "pullOffset": 2,
        "lastTimestamp": cs[("AT", "broker-t", 0)]["lastTimestamp"],
    }
    assert cs[("AT", "broker-t", 1)]["consumerOffset"] == 0
    # no topic: the topics the group has offsets for
    assert set(mq_table(call(b, RequestCode.GET_CONSUME_STATS, {"consumerGroup": "cg"}).body)) == set(cs)

    r = call(
        b,
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        {"topic": "AT", "group": "cg", "timestamp": "-1", "isForce": "true"},
    )
    assert r.code == ResponseCode.SUCCESS and r.body
    assert mq_table(r.body) == {("AT", "broker-t", 0): 3, ("AT", "broker-t", 1): 1}
    # a commit from the client is ignored until the reset has been delivered by a pull
    com = b.c.consumer_offset_manager
    assert com.has_offset_reset("AT", "cg", 0) and com.query_offset("cg", "AT", 0) == 3
    pull = {
        "consumerGroup": "cg",
        "topic": "AT",
        "queueId": "0",
        "queueOffset": "0",
        "maxMsgNums": "32",
        "sysFlag": "4",
        "commitOffset": "0",
        "suspendTimeoutMillis": "0",
        "subVersion": "0",
        "subscription": "*",
        "expressionType": "TAG",
    }
    p = call(b, RequestCode.PULL_MESSAGE, pull)
    assert p.code == ResponseCode.PULL_OFFSET_MOVED and p.ext_fields["nextBeginOffset"] == "3"
    assert not com.has_offset_reset("AT", "cg", 0)
    # one queue to an explicit offset, out of range refused
    r = call(
        b,
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        {"topic": "AT", "group": "cg", "timestamp": "0", "isForce": "true", "queueId": "0", "offset": "9"},
    )
    assert r.code == ResponseCode.SYSTEM_ERROR and "not in consume queue range [0-3]" in r.remark
    r = call(
        b,
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        {"topic": "AT", "group": "nogroup", "timestamp": "0", "isForce": "true"},
    )
    # containsSubscriptionGroup, no auto-create (Java 5.5.0: CODE 26 "Group X does not exist")
    assert r.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST and r.remark == "Group nogroup does not exist"
    assert not b.c.subscription_group_manager.contains("nogroup")
    r = call(
        b,
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        {"topic": "Nope", "group": "cg", "timestamp": "0", "isForce": "true"},
    )
    assert r.code == ResponseCode.TOPIC_NOT_EXIST


def test_client_side_reset_and_consumer_not_online(admin):
    b = admin(useServerSideResetOffset="false")
    create_topic(b, "AT", 1)
    send(b, "AT", 0)
    b.c.consumer_offset_manager.commit_offset("x", "cg", "AT", 0, 0)
    ext = {"topic": "AT", "group": "cg", "timestamp": "-1", "isForce": "false"}
    r = call(b, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ext)
    assert r.code == ResponseCode.CONSUMER_NOT_ONLINE and "Consumer not online" in r.remark
    ch = FakeChannel("127.0.0.1:9")
    heartbeat(b, ch)
    ch.sent.clear()
    r = call(b, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ext)
    assert r.code == ResponseCode.SUCCESS, r
    # not forced: the committed offset 0 is below the end (1), so the consumer keeps 0
    assert mq_table(r.body) == {("AT", "broker-t", 0): 0}
    pushed = [c for c in ch.sent if c.code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET]
    assert len(pushed) == 1 and pushed[0].is_oneway and pushed[0].ext_fields["group"] == "cg"


def test_runtime_info_keys(admin, clock):
    b = admin()
    r = call(b, RequestCode.GET_BROKER_RUNTIME_INFO)
    t = orjson.loads(r.body)["table"]
    assert t["earliestMessageTimeStamp"] == "-1" and float(t["commitLogDiskRatio"]) <= 1
    # UtilAll#getDiskPartitionSpaceUsedPercent: rounded up to whole percent (0.43, not 0.4271...)
    assert round(float(t["commitLogDiskRatio"]), 2) == float(t["commitLogDiskRatio"]), t["commitLogDiskRatio"]
    for k in ("putTps", "getTotalTps", "getTransferedTps", "getTransferredTps", "getFoundTps", "getMissTps"):
        toks = t[k].split(" ")
        assert len(toks) == 3 and all(float(x) >= 0 for x in toks), (k, t[k])
    for k in (
        "msgPutTotalYesterdayMorning",
        "msgPutTotalTodayMorning",
        "msgPutTotalTodayNow",
        "msgGetTotalYesterdayMorning",
        "msgGetTotalTodayMorning",
        "msgGetTotalTodayNow",
    ):
        assert int(t[k]) == 0
    assert t["brokerActive"] == "true" and t["brokerVersionDesc"].startswith("V5_")
    create_topic(b, "AT", 1)
    clock.advance(1000)
    send(b, "AT")
    send(b, "AT")
    clock.advance(2000)
    t = orjson.loads(call(b, RequestCode.GET_BROKER_RUNTIME_INFO).body)["table"]
    assert t["msgPutTotalTodayNow"] == "2" and t["putMessageTimesTotal"] == "2"
    assert float(t["putTps"].split(" ")[0]) > 0
    assert int(t["earliestMessageTimeStamp"]) > 0


def test_view_broker_stats_data(admin, clock):
    b = admin()
    r = call(b, RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": "TOPIC_PUT_NUMS", "statsKey": "AT"})
    assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, "The stats <TOPIC_PUT_NUMS> <AT> not exist")
    create_topic(b, "AT", 1)
    for _ in range(5):
        send(b, "AT")
    clock.advance(10_000)
    r = call(b, RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": "TOPIC_PUT_NUMS", "statsKey": "AT"})
    d = orjson.loads(r.body)
    assert d["statsMinute"]["sum"] == 5 and d["statsMinute"]["tps"] > 0 and d["statsMinute"]["avgpt"] == 1.0
    # Java samples hours and days on timers from the broker's start: nothing yet (the dashboard's day count)
    assert (d["statsHour"]["sum"], d["statsDay"]["sum"]) == (0, 0)
    clock.advance(600_000)
    d = orjson.loads(
        call(b, RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": "TOPIC_PUT_NUMS", "statsKey": "AT"}).body
    )
    assert (d["statsHour"]["sum"], d["statsDay"]["sum"]) == (5, 0)
    clock.advance(3_000_000)
    d = orjson.loads(
        call(b, RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": "TOPIC_PUT_NUMS", "statsKey": "AT"}).body
    )
    assert (d["statsHour"]["sum"], d["statsDay"]["sum"]) == (5, 5)


def test_update_broker_config_black_list_and_malformed(admin):
    b = admin()
    r = call(b, RequestCode.UPDATE_BROKER_CONFIG, {}, b"brokerConfigPath=/tmp/x\n")
    assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "Can not update config in black list.")
    r = call(b, RequestCode.UPDATE_BROKER_CONFIG, {}, b"defaultTopicQueueNums=abc\nflushIntervalCommitLog=x\n")
    assert r.code == ResponseCode.SUCCESS and b.c.config["defaultTopicQueueNums"] == 8
    r = call(b, RequestCode.UPDATE_BROKER_CONFIG, {}, b"defaultTopicQueueNums=5\nflushIntervalCommitLog=700\n")
    assert r.code == ResponseCode.SUCCESS
    text = call(b, RequestCode.GET_BROKER_CONFIG).body.decode()
    assert "defaultTopicQueueNums=5" in text.splitlines() and "flushIntervalCommitLog=700" in text.splitlines()
    # persisted like Java Configuration#persist: every setting, to brokerConfigPath (default under the store)
    saved = load_properties(open(b.c.config.config_path, encoding="utf-8").read())
    assert saved["defaultTopicQueueNums"] == "5" and saved["flushIntervalCommitLog"] == "700"
    assert b.c.config.config_path.endswith("config/broker.properties") and "flushDiskType" in saved


def test_update_broker_config_persists_to_the_config_file_and_back_to_default(admin, tmp_path):
    b = admin(flushDiskType="SYNC_FLUSH")
    conf = tmp_path / "broker.conf"
    b.c.config["brokerConfigPath"] = str(conf)
    r = call(b, RequestCode.UPDATE_BROKER_CONFIG, {}, b"flushDiskType=ASYNC_FLUSH\nmaxMessageSize=4MB\n")
    assert r.code == ResponseCode.SUCCESS
    assert not b.c.store_config.sync_flush  # set back to its default value: applied
    saved = load_properties(conf.read_text())
    assert saved["flushDiskType"] == "ASYNC_FLUSH" and saved["maxMessageSize"] == str(4 * 1024 * 1024)


def test_delete_topic_cleans_config_offsets_and_queues(admin):
    b = admin()
    create_topic(b, "DT", 1)
    send(b, "DT")
    b.c.consumer_offset_manager.commit_offset("x", "cg", "DT", 0, 1)
    r = call(b, RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "DT"})
    assert r.code == ResponseCode.SUCCESS
    assert b.c.topic_config_manager.select_topic_config("DT") is None
    assert b.c.consumer_offset_manager.query_offset("cg", "DT", 0) == -1
    assert b.c.message_store.get_max_offset_in_queue("DT", 0) == 0
    r = call(b, RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "TBW102"})
    assert r.code == ResponseCode.INVALID_PARAMETER and "conflict with system topic" in r.remark


def test_connections_who_consumes_and_producer_info(admin):
    b = admin()
    create_topic(b, "AT", 1)
    ch = FakeChannel("127.0.0.1:11")
    heartbeat(b, ch, producer="PG")
    r = call(b, RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "PG"})
    conns = orjson.loads(r.body)["connectionSet"]
    assert conns == [{"clientAddr": "127.0.0.1:11", "clientId": "ip@cg", "language": "JAVA", "version": 479}]
    r = call(b, RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "none"})
    assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, "the producer group[none] not exist")
    assert orjson.loads(call(b, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": "AT"}).body) == {"groupList": ["cg"]}
    info = orjson.loads(call(b, RequestCode.GET_ALL_PRODUCER_INFO).body)["data"]
    assert info["PG"][0]["remoteIP"] == "127.0.0.1:11"
    sys_topics = orjson.loads(call(b, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER).body)["topicList"]
    assert "TBW102" in sys_topics and "SCHEDULE_TOPIC_XXXX" in sys_topics
    # what Java's TopicConfigManager adds at start: cluster/broker-name topics too (exportMetadata drops them)
    cluster = b.c.config["brokerClusterName"]
    assert {cluster, "broker-t", f"{cluster}_REPLY_TOPIC", "RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC"} <= set(sys_topics)
    assert "AT" not in sys_topics
    r = call(
        b,
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        {"topic": cluster, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG"},
    )
    assert (r.code, r.remark) == (
        ResponseCode.INVALID_PARAMETER,
        f"The topic[{cluster}] is conflict with system topic.",
    )


def test_consumer_running_info_and_consume_directly_are_relayed(admin):
    b = admin()
    create_topic(b, "AT", 1)
    mid = send(b, "AT").ext_fields["msgId"]
    answer = RemotingCommand.response(ResponseCode.SUCCESS, None, None, b'{"properties":{}}')
    ch = FakeChannel("127.0.0.1:12", answer)
    heartbeat(b, ch)
    r = call(
        b, RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "cg", "clientId": "ip@cg", "jstackEnable": "false"}
    )
    assert r.code == ResponseCode.SUCCESS and r.body == b'{"properties":{}}'
    assert ch.invoked[-1].code == RequestCode.GET_CONSUMER_RUNNING_INFO
    r = call(
        b,
        RequestCode.CONSUME_MESSAGE_DIRECTLY,
        {"consumerGroup": "cg", "clientId": "ip@cg", "msgId": mid, "topic": "AT"},
    )
    assert r.code == ResponseCode.SUCCESS
    fwd = ch.invoked[-1]
    assert fwd.ext_fields["brokerName"] == "broker-t" and fwd.ext_fields["topicSysFlag"] == "0"
    assert m.decode_message_id(mid).offset == 0 and b"payload" in fwd.body  # the stored record rides along
    r = call(b, RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "cg", "clientId": "other"})
    assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, "The Consumer <cg> <other> not online")
    ch.answer = None
    r = call(b, RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "cg", "clientId": "ip@cg"})
    assert r.code == ResponseCode.CONSUME_MSG_TIMEOUT


def test_broker_consume_stats(admin):
    b = admin()
    create_topic(b, "AT", 1)
    send(b, "AT")
    send(b, "AT")
    b.c.subscription_group_manager.find_subscription_group_config("cg")
    b.c.consumer_offset_manager.commit_offset("x", "cg", "AT", 0, 1)
    r = call(b, RequestCode.GET_BROKER_CONSUME_STATS, {"isOrder": "false"})
    text = r.body.decode()
    obj = lenient_loads(r.body)
    assert obj["totalDiff"] == 1 and obj["brokerAddr"] == b.c.broker_addr
    assert '"cg":[{"consumeTps":' in text


def _topic_request(topic: str, attributes: str | None) -> dict[str, str]:
    ext = {"topic": topic, "readQueueNums": "4", "writeQueueNums": "4", "perm": "6", "topicFilterType": "SINGLE_TAG"}
    if attributes is not None:
        ext["attributes"] = attributes
    return ext


def test_topic_attributes_are_stored_without_their_sign_and_get_topic_config_is_flat(admin):
    """The dashboard's NORMAL topic showed as UNSPECIFIED: the stored map kept "+message.type"."""
    b = admin()
    r = call(b, RequestCode.UPDATE_AND_CREATE_TOPIC, _topic_request("AttrT", "+message.type=NORMAL"))
    assert r.code == ResponseCode.SUCCESS, r
    assert b.c.topic_config_manager.select_topic_config("AttrT").attributes == {"message.type": "NORMAL"}
    r = call(b, RequestCode.GET_TOPIC_CONFIG, {"topic": "AttrT"})
    got = orjson.loads(r.body)  # Java TopicConfigAndQueueMapping: the TopicConfig fields at the top level
    assert (got["topicName"], got["readQueueNums"], got["attributes"]) == ("AttrT", 4, {"message.type": "NORMAL"})
    r = call(b, RequestCode.UPDATE_AND_CREATE_TOPIC, _topic_request("AttrT", "+queue.type=BatchCQ"))
    assert (r.code, r.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "attempt to update an unchangeable attribute. key: queue.type",
    )
    r = call(b, RequestCode.UPDATE_AND_CREATE_TOPIC, _topic_request("AttrT", "message.type=FIFO"))
    assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, "add/alter attribute format is wrong: message.type")
    r = call(b, RequestCode.UPDATE_AND_CREATE_TOPIC, _topic_request("AttrT", "-message.type"))
    assert r.code == ResponseCode.SUCCESS and b.c.topic_config_manager.select_topic_config("AttrT").attributes == {}
    r = call(b, RequestCode.UPDATE_AND_CREATE_TOPIC, _topic_request("MixedT", "+message.type=MIXED"))
    assert (r.code, r.remark) == (ResponseCode.INVALID_PARAMETER, "MIXED message type is not supported.")
    assert b.c.topic_config_manager.select_topic_config("MixedT") is None
    mixed = admin(enableMixedMessageType="true")
    r = call(mixed, RequestCode.UPDATE_AND_CREATE_TOPIC, _topic_request("MixedT", "+message.type=MIXED"))
    assert r.code == ResponseCode.SUCCESS, r


def test_signed_attribute_keys_from_older_stores_are_read_plain(admin, tmp_path):
    b = admin()
    tcm = b.c.topic_config_manager
    call(b, RequestCode.UPDATE_AND_CREATE_TOPIC, _topic_request("OldT", None))
    tcm.select_topic_config("OldT").attributes = {"+message.type": "FIFO", "-reserve.time": ""}
    tcm.persist()
    again = admin()
    assert again.c.topic_config_manager.select_topic_config("OldT").attributes == {"message.type": "FIFO"}
