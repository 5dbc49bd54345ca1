"""PULL_MESSAGE: status -> code mapping, tag filtering, commit-offset piggyback, long polling."""

from __future__ import annotations

import asyncio

from support.fakes import FakeChannel

from pyrmq.protocol.bodies.broker import ConsumerData, HeartbeatData, SubscriptionData
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.store import message as m


def put(broker, topic="PullT", queue_id=0, tags="TagA", body=b"x", n=1):
    ext = {
        "a": "pg",
        "b": topic,
        "c": "TBW102",
        "d": "4",
        "e": str(queue_id),
        "f": "0",
        "g": "1",
        "h": "0",
        "i": m.message_properties_to_string({"TAGS": tags}),
        "n": "broker-t",
    }
    for _ in range(n):
        r = asyncio.run(broker.call(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, body)))
        assert r.code == ResponseCode.SUCCESS, r


def pull_ext(topic="PullT", queue_id=0, offset=0, sys_flag=0x4, sub="*", suspend_ms=0, commit=0, group="cg"):
    return {
        "consumerGroup": group,
        "topic": topic,
        "queueId": str(queue_id),
        "queueOffset": str(offset),
        "maxMsgNums": "32",
        "sysFlag": str(sys_flag),
        "commitOffset": str(commit),
        "suspendTimeoutMillis": str(suspend_ms),
        "subscription": sub,
        "subVersion": "0",
        "expressionType": "TAG",
    }


def pull(broker, ch=None, **kw):
    return asyncio.run(broker.call(RemotingCommand.request(RequestCode.PULL_MESSAGE, pull_ext(**kw)), ch))


def test_found_returns_stored_records_and_offsets(broker):
    put(broker, body=b"hello", n=3)
    r = pull(broker)
    assert (r.code, r.remark) == (ResponseCode.SUCCESS, "FOUND")
    ef = r.ext_fields
    assert (ef["nextBeginOffset"], ef["minOffset"], ef["maxOffset"], ef["suggestWhichBrokerId"]) == ("3", "0", "3", "0")
    msgs = m.decode_messages(r.body)
    assert [x.queue_offset for x in msgs] == [0, 1, 2] and all(x.body == b"hello" for x in msgs)


def test_statuses_map_to_codes(broker):
    r = pull(broker, topic="TBW102")  # existing topic, queue never written, offset 0
    assert (r.code, r.remark, r.ext_fields["nextBeginOffset"]) == (
        ResponseCode.PULL_NOT_FOUND,
        "NO_MATCHED_LOGIC_QUEUE",
        "0",
    )
    r = pull(broker, topic="TBW102", offset=5)
    assert r.code == ResponseCode.PULL_OFFSET_MOVED
    put(broker, n=2)
    r = pull(broker, offset=2)
    assert (r.code, r.remark, r.ext_fields["nextBeginOffset"]) == (
        ResponseCode.PULL_NOT_FOUND,
        "OFFSET_OVERFLOW_ONE",
        "2",
    )
    r = pull(broker, offset=9)
    # nextBeginOffset here is the store's choice (Java 5.x: max offset; the store still follows 4.9.x)
    assert (r.code, r.remark) == (ResponseCode.PULL_OFFSET_MOVED, "OFFSET_OVERFLOW_BADLY")


def test_check_errors(broker):
    assert pull(broker, topic="Nope").code == ResponseCode.TOPIC_NOT_EXIST
    put(broker)
    r = pull(broker, queue_id=7)
    assert r.code == ResponseCode.INVALID_PARAMETER and r.remark.startswith("queueId[7] is illegal, topic:[PullT]")
    r = pull(broker, sys_flag=0)  # no subscription flag and no heartbeat registration
    assert r.code == ResponseCode.SUBSCRIPTION_NOT_EXIST


def test_tag_filter_by_code_skips_and_retries(broker):
    put(broker, tags="TagB", n=2)
    put(broker, tags="TagA", n=1)
    r = pull(broker, sub="TagA")
    assert r.code == ResponseCode.SUCCESS
    assert [x.tags for x in m.decode_messages(r.body)] == ["TagA"]
    assert r.ext_fields["nextBeginOffset"] == "3"
    r = pull(broker, sub="TagC")
    assert (r.code, r.remark) == (ResponseCode.PULL_RETRY_IMMEDIATELY, "NO_MATCHED_MESSAGE")
    assert r.ext_fields["nextBeginOffset"] == "3"


def test_subscription_from_heartbeat(broker):
    put(broker, tags="TagB")
    put(broker, tags="TagA")
    hb = HeartbeatData(
        "cid-1",
        [],
        [
            ConsumerData(
                "cg",
                "CONSUME_PASSIVELY",
                "CLUSTERING",
                "CONSUME_FROM_LAST_OFFSET",
                [SubscriptionData.build("PullT", "TagA")],
            )
        ],
    )
    r = asyncio.run(
        broker.call(RemotingCommand.request(RequestCode.HEART_BEAT, {}, hb.encode()), FakeChannel("127.0.0.1:50001"))
    )
    assert r.code == ResponseCode.SUCCESS
    r = pull(broker, sys_flag=0x2 & 0)
    assert [x.tags for x in m.decode_messages(r.body)] == ["TagA"]


def test_commit_offset_piggyback(broker):
    put(broker, n=2)
    pull(broker, sys_flag=0x4 | 0x1, commit=1)
    assert broker.c.consumer_offset_manager.query_offset("cg", "PullT", 0) == 1


def test_every_pull_notes_its_next_offset_in_the_pull_offset_table(broker):
    """Java tryCommitOffset: commitPullOffset(nextBeginOffset) on each pull, found or not, with or
    without the commit flag; the consumer offset itself moves only with the flag."""
    offsets = broker.c.consumer_offset_manager
    put(broker, n=3)
    assert offsets.query_pull_offset("cg", "PullT", 0) == -1
    pull(broker)
    assert (offsets.query_pull_offset("cg", "PullT", 0), offsets.query_offset("cg", "PullT", 0)) == (3, -1)
    r = pull(broker, queue_id=1)  # an empty queue: PULL_NOT_FOUND, next offset 0
    assert r.code == ResponseCode.PULL_NOT_FOUND
    assert offsets.query_pull_offset("cg", "PullT", 1) == 0
    assert offsets.pull_offset_table == {"PullT@cg": {0: 3, 1: 0}}


def test_long_poll_answered_when_message_arrives(broker):
    put(broker)
    ch = FakeChannel("127.0.0.1:50001")

    async def scenario():
        r = await broker.call(
            RemotingCommand.request(RequestCode.PULL_MESSAGE, pull_ext(offset=1, sys_flag=0x6, suspend_ms=30000)), ch
        )
        assert r is None  # held
        assert broker.c.pull_request_hold_service.held_count == 1
        assert ch.sent == []
        await broker.call(
            RemotingCommand.request(
                RequestCode.SEND_MESSAGE_V2,
                {
                    "a": "pg",
                    "b": "PullT",
                    "c": "TBW102",
                    "d": "4",
                    "e": "0",
                    "f": "0",
                    "g": "1",
                    "h": "0",
                    "i": m.message_properties_to_string({"TAGS": "TagA"}),
                },
                b"late",
            )
        )
        for _ in range(50):
            if ch.sent:
                break
            await asyncio.sleep(0.01)
        return ch.sent

    sent = asyncio.run(scenario())
    assert len(sent) == 1 and sent[0].code == ResponseCode.SUCCESS and sent[0].is_response
    assert [x.body for x in m.decode_messages(sent[0].body)] == [b"late"]
    assert broker.c.pull_request_hold_service.held_count == 0


def test_long_poll_not_woken_by_unmatched_tag_and_times_out(broker):
    put(broker)
    ch = FakeChannel("127.0.0.1:50001")

    async def scenario():
        loop = asyncio.get_running_loop()
        r = await broker.call(
            RemotingCommand.request(
                RequestCode.PULL_MESSAGE, pull_ext(offset=1, sys_flag=0x6, sub="TagA", suspend_ms=300)
            ),
            ch,
        )
        assert r is None
        put_ext = {
            "a": "pg",
            "b": "PullT",
            "c": "TBW102",
            "d": "4",
            "e": "0",
            "f": "0",
            "g": "1",
            "h": "0",
            "i": m.message_properties_to_string({"TAGS": "TagZ"}),
        }
        await broker.call(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, put_ext, b"z"))
        await asyncio.sleep(0.05)
        assert ch.sent == []  # not matched: still held
        t0 = loop.time()
        while not ch.sent and loop.time() - t0 < 2:
            await asyncio.sleep(0.02)
        return ch.sent

    sent = asyncio.run(scenario())
    # the re-run at timeout scans the unmatched entry and answers without suspending again
    assert len(sent) == 1 and sent[0].code == ResponseCode.PULL_RETRY_IMMEDIATELY
    assert sent[0].ext_fields["nextBeginOffset"] == "2"


def test_suggest_which_broker_id_on_a_master(make_broker):
    """Java composeResponseHeader: slaveReadEnable sends the group to its brokerId, a consumer far behind
    (accessMessageInMemoryMaxRatio 0 makes any lag 'far') to whichBrokerWhenConsumeSlowly."""
    plain = make_broker()
    put(plain, n=2)
    assert pull(plain).ext_fields["suggestWhichBrokerId"] == "0"
    reading = make_broker(slaveReadEnable="true", accessMessageInMemoryMaxRatio="0")
    sg = reading.c.subscription_group_manager.find_subscription_group_config("cg")
    sg.which_broker_when_consume_slowly = 2
    r = pull(reading)
    assert (r.code, r.ext_fields["suggestWhichBrokerId"]) == (ResponseCode.SUCCESS, "2")
    r = pull(reading, offset=2)  # caught up: no lag, so the group's own brokerId
    assert (r.code, r.ext_fields["suggestWhichBrokerId"]) == (ResponseCode.PULL_NOT_FOUND, "0")
    sg.broker_id = 1
    assert pull(reading, offset=2).ext_fields["suggestWhichBrokerId"] == "1"


def test_slave_sends_a_caught_up_consumer_back_to_its_master(make_broker):
    """A slave (slaveReadEnable) answers FOUND data but suggests the master; anything else is
    PULL_RETRY_IMMEDIATELY instead of a held pull, so the client turns to the master at once."""
    slave = make_broker(brokerRole="SLAVE", brokerId="1", slaveReadEnable="true")
    r = pull(slave, topic="TBW102", suspend_ms=1000, sys_flag=0x4 | 0x2)
    assert (r.code, r.ext_fields["suggestWhichBrokerId"]) == (ResponseCode.PULL_RETRY_IMMEDIATELY, "0")
    slave.c.pull_processor.min_broker_id_in_group = 1  # the master is gone (acting-master bookkeeping)
    r = pull(slave, topic="TBW102", sys_flag=0x4)
    assert (r.code, r.ext_fields["suggestWhichBrokerId"]) == (ResponseCode.PULL_NOT_FOUND, "0")
