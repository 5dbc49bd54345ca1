"""SET_MESSAGE_REQUEST_MODE and QUERY_ASSIGNMENT (Java QueryAssignmentProcessor): a group switched
to POP gets every queue as queueId -1, PULL groups get Java's AVG allocation, the modes persist
in config/messageRequestMode.json and bad requests get Java's codes."""

from __future__ import annotations

import asyncio
import json

from support.fakes import FakeChannel

from pyrmq.broker.pop.allocate import allocate_averagely, allocate_averagely_by_circle, allocate_for_pop
from pyrmq.protocol.bodies.broker import ConsumerData, HeartbeatData, MessageQueue, SubscriptionData
from pyrmq.protocol.bodies.common import TopicConfig
from pyrmq.protocol.bodies.pop import (
    MessageRequestMode,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    SetMessageRequestModeRequestBody,
)
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.store.config import dumps_pretty


def call(broker, code, body: bytes):
    return asyncio.run(broker.call(RemotingCommand.request(code, {}, body), FakeChannel("127.0.0.1:7")))


def heartbeat(broker, cid: str, group="cg", topic="PopT"):
    hb = HeartbeatData(
        cid,
        [],
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
    ch = FakeChannel(f"127.0.0.1:{1000 + len(cid)}")
    r = asyncio.run(broker.call(RemotingCommand.request(RequestCode.HEART_BEAT, {}, hb.encode()), ch))
    assert r.code == ResponseCode.SUCCESS


def make_topic(broker, topic="PopT", queues=4):
    broker.c.topic_config_manager.update_topic_config(
        TopicConfig(topic_name=topic, read_queue_nums=queues, write_queue_nums=queues)
    )


def query(broker, cid="cid-a", topic="PopT", group="cg", strategy="AVG", model="CLUSTERING"):
    body = json.dumps(
        {"clientId": cid, "consumerGroup": group, "messageModel": model, "strategyName": strategy, "topic": topic}
    ).encode()
    r = call(broker, RequestCode.QUERY_ASSIGNMENT, body)
    assert r.code == ResponseCode.SUCCESS, r
    return QueryAssignmentResponseBody.decode(r.body).message_queue_assignments


def set_mode(broker, mode="POP", topic="PopT", group="cg", share=0):
    body = SetMessageRequestModeRequestBody(topic, group, MessageRequestMode[mode], share).encode()
    return call(broker, RequestCode.SET_MESSAGE_REQUEST_MODE, body)


def mqs(n, topic="PopT", broker="broker-t"):
    return [MessageQueue(topic, broker, i) for i in range(n)]


def test_pull_groups_get_javas_average_allocation(broker):
    make_topic(broker)
    heartbeat(broker, "cid-a")
    heartbeat(broker, "cid-b")
    got = query(broker, "cid-b")
    assert sorted((a.message_queue.queue_id, a.mode) for a in got) == [
        (2, MessageRequestMode.PULL),
        (3, MessageRequestMode.PULL),
    ]


def test_set_pop_mode_gives_every_queue_as_minus_one_and_persists(broker, make_broker):
    make_topic(broker)
    heartbeat(broker, "cid-a")
    r = set_mode(broker)
    assert (r.code, r.remark) == (ResponseCode.SUCCESS, None)
    got = query(broker, "cid-a")
    assert [(a.message_queue.topic, a.message_queue.broker_name, a.message_queue.queue_id, a.mode) for a in got] == [
        ("PopT", "broker-t", -1, MessageRequestMode.POP)
    ] * 4
    path = broker.c.message_request_mode_manager.path
    with open(path) as f:
        text = f.read()
    expected = {
        "messageRequestModeMap": {
            "PopT": {"cg": {"consumerGroup": "cg", "mode": "POP", "popShareQueueNum": 0, "topic": "PopT"}}
        }
    }
    assert text == dumps_pretty(expected)  # fastjson2 pretty, as Java's ConfigManager#persist
    broker.c.message_store.shutdown()
    again = make_broker()
    assert again.c.message_request_mode_manager.get_message_request_mode("PopT", "cg").mode is MessageRequestMode.POP


def test_retry_topic_is_always_pulled_and_cannot_be_set(broker):
    make_topic(broker, "%RETRY%cg", 1)
    heartbeat(broker, "cid-a")
    r = set_mode(broker, topic="%RETRY%cg")
    assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "retry topic is not allowed to set mode")
    assert [a.mode for a in query(broker, topic="%RETRY%cg")] == [MessageRequestMode.PULL]


def test_default_message_request_mode_pop(make_broker):
    b = make_broker(defaultMessageRequestMode="POP")
    make_topic(b)
    heartbeat(b, "cid-a")
    assert {a.mode for a in query(b)} == {MessageRequestMode.POP}


def test_bad_requests_get_javas_codes(broker):
    make_topic(broker)
    assert set_mode(broker, topic="Nope").code == ResponseCode.TOPIC_NOT_EXIST
    assert set_mode(broker, topic="Nope").remark == "topic[Nope] not exist"
    r = call(broker, RequestCode.SET_MESSAGE_REQUEST_MODE, b"{not json")
    assert r.code == ResponseCode.INVALID_PARAMETER
    # unknown topic, no consumer, unknown strategy: no assignment (null), the client keeps its own
    assert query(broker, topic="Nope") is None
    assert query(broker) is None
    heartbeat(broker, "cid-a")
    assert query(broker, strategy="NOPE") is None
    # broadcasting: every queue, whatever the consumers
    assert len(query(broker, model="BROADCASTING")) == 4


def test_query_assignment_body_reads_javas_json():
    body = b'{"clientId":"c","consumerGroup":"g","messageModel":"BROADCASTING","strategyName":"AVG","topic":"T"}'
    q = QueryAssignmentRequestBody.decode(body)
    assert (q.client_id, q.message_model.name, q.strategy_name) == ("c", "BROADCASTING", "AVG")


def test_allocation_strategies_match_java():
    cids = ["a", "b", "c"]
    assert [[mq.queue_id for mq in allocate_averagely(c, mqs(8), cids)] for c in cids] == [[0, 1, 2], [3, 4, 5], [6, 7]]
    assert [[mq.queue_id for mq in allocate_averagely_by_circle(c, mqs(8), cids)] for c in cids] == [
        [0, 3, 6],
        [1, 4, 7],
        [2, 5],
    ]
    assert allocate_averagely("z", mqs(8), cids) == []
    # share 1 of 4 consumers: its own queues plus the next consumer's
    four = ["a", "b", "c", "d"]
    assert [mq.queue_id for mq in allocate_for_pop(allocate_averagely, "d", mqs(8), four, 1)] == [6, 7, 0, 1]
    # more consumers than queues: one queue each, round robin
    five = ["a", "b", "c", "d", "e"]
    assert [mq.queue_id for mq in allocate_for_pop(allocate_averagely, "e", mqs(2), five, 1)] == [0]


def test_request_mode_file_round_trips_javas_bytes(tmp_path):
    """config/messageRequestMode.json as the 5.5.0 broker writes it (tests/golden/store/config)."""
    from support.fakes import GOLDEN_DIR

    from pyrmq.broker.pop.message_request_mode_manager import MessageRequestModeManager

    text = (GOLDEN_DIR / "store/config/java-5.5.0-pop/messageRequestMode.json").read_text()
    path = tmp_path / "messageRequestMode.json"
    path.write_text(text)
    mgr = MessageRequestModeManager(str(path))
    mgr.load()
    got = mgr.get_message_request_mode("PopModeT", "pop_mode_g")
    assert (got.mode, got.pop_share_queue_num) == (MessageRequestMode.POP, 2)
    assert mgr.encode() == text
    fresh = MessageRequestModeManager(None)
    fresh.set_message_request_mode("PopModeT", "pop_mode_g", got)
    fresh.set_message_request_mode(
        "PopModeT", "pull_mode_g", SetMessageRequestModeRequestBody("PopModeT", "pull_mode_g", MessageRequestMode.PULL)
    )
    assert fresh.encode() == text


def test_queues_of_every_broker_come_from_the_name_server(make_broker, clock):
    """Java TopicRouteInfoManager: the route's readable queues of all brokers, kept 30 s."""
    from pyrmq.broker.processor.query_assignment import QueryAssignmentProcessor
    from pyrmq.protocol.bodies.namesrv import QueueData, TopicRouteData
    from pyrmq.remoting.channel import RequestContext, call_handler

    asked = []

    class RouteClient:
        async def invoke(self, addr, cmd, timeout):
            asked.append((addr, cmd.code, cmd.ext_fields["topic"]))
            if cmd.ext_fields["topic"] != "PopT":
                return cmd.make_response(ResponseCode.TOPIC_NOT_EXIST, "No topic route info in name server")
            route = TopicRouteData(
                queue_datas=[QueueData("b1", 2, 2, 6), QueueData("b2", 1, 1, 6), QueueData("b3", 4, 4, 2)]
            )
            return cmd.make_response(ResponseCode.SUCCESS, None, body=route.encode())

    b = make_broker(namesrvAddr="10.0.0.1:9876")
    heartbeat(b, "cid-a")
    c = b.c
    proc = c.build(QueryAssignmentProcessor, {**c._dependencies(), "outer_client": RouteClient()})

    def ask(topic):
        body = QueryAssignmentRequestBody(topic, "cg", "cid-a", "AVG").encode()
        cmd = RemotingCommand.request(RequestCode.QUERY_ASSIGNMENT, {}, body)
        r = asyncio.run(call_handler(proc.query_assignment, RequestContext(FakeChannel(), None), cmd))
        return QueryAssignmentResponseBody.decode(r.body).message_queue_assignments

    got = ask("PopT")
    assert sorted((a.message_queue.broker_name, a.message_queue.queue_id) for a in got) == [
        ("b1", 0),
        ("b1", 1),
        ("b2", 0),
    ]  # b3 is write-only
    assert ask("PopT") is not None and len(asked) == 1  # cached
    clock.advance(30_001)
    ask("PopT")
    assert len(asked) == 2
    assert ask("Unknown") is None
    assert asked[-1] == ("10.0.0.1:9876", RequestCode.GET_ROUTEINFO_BY_TOPIC, "Unknown")
