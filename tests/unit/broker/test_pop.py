"""POP over remoting without sockets (Java PopMessageProcessor, AckMessageProcessor,
ChangeInvisibleTimeProcessor, PopReviveService): pops hand out each message once, checkpoints
and acks land in rmq_sys_REVIVE_LOG_<cluster> as Java writes them, unacked messages revive into
%RETRY%<group>_<topic> after their invisible time, FIFO pops block the queue until acked."""

from __future__ import annotations

import asyncio
import json

from support.fakes import FakeChannel

from pyrmq.broker.pop.revive_log import REVIVE_GROUP
from pyrmq.common.constants import TIMER_TOPIC, MessageConst
from pyrmq.protocol.bodies.common import TopicConfig
from pyrmq.protocol.bodies.pop import BatchAck, BatchAckMessageRequestBody
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ExtraInfo,
    PopMessageRequestHeader,
    build_extra_info,
    build_pop_retry_topic,
    parse_info,
)
from pyrmq.store import message as m
from pyrmq.store.pop import PopCheckPoint

TOPIC, GROUP = "PopT", "cg"
REVIVE = "rmq_sys_REVIVE_LOG_TestCluster"
RETRY = f"%RETRY%{GROUP}_{TOPIC}"


def setup(broker, queues=1, n=0, order=False):
    broker.c.topic_config_manager.update_topic_config(
        TopicConfig(topic_name=TOPIC, read_queue_nums=queues, write_queue_nums=queues, order=order)
    )
    for i in range(n):
        put(broker, f"m{i}".encode(), queue_id=i % queues)


def put(broker, body: bytes, queue_id=0, tags="TagA"):
    inner = m.MessageExtBrokerInner(
        topic=TOPIC, body=body, queue_id=queue_id, properties={MessageConst.TAGS: tags}, born_timestamp=broker.c.now()
    )
    assert broker.c.message_store.put_message(inner).put_message_status.name == "PUT_OK"


async def call(broker, code, ext, body=None, ch=None):
    return await broker.call(RemotingCommand.request(code, ext, body), ch or FakeChannel("127.0.0.1:7"))


def pop_ext(broker, queue_id=-1, max_nums=32, invisible=60_000, poll=0, order=False, init_mode=1, exp=None):
    h = PopMessageRequestHeader(
        consumer_group=GROUP,
        topic=TOPIC,
        queue_id=queue_id,
        max_msg_nums=max_nums,
        invisible_time=invisible,
        poll_time=poll,
        born_time=broker.c.now(),
        init_mode=init_mode,
        exp=exp,
        exp_type="TAG" if exp else None,
        order=order,
        attempt_id=None,
    )
    return h.to_ext_fields()


async def pop(broker, **kw):
    r = await call(broker, RequestCode.POP_MESSAGE, pop_ext(broker, **kw))
    msgs = list(m.decode_messages(r.body)) if r.code == ResponseCode.SUCCESS else []
    return r, msgs


def pop_ck(r, msg) -> str:
    """The POP_CK a Java client builds (MQClientAPIImpl#processPopResponse)."""
    if MessageConst.POP_CK in msg.properties:
        return msg.properties[MessageConst.POP_CK]
    key = f"0@{msg.queue_id}"
    start = int(parse_info(r.ext_fields["startOffsetInfo"])[key])
    ef = r.ext_fields
    return build_extra_info(
        start,
        int(ef["popTime"]),
        int(ef["invisibleTime"]),
        int(ef["reviveQid"]),
        msg.topic,
        "broker-t",
        msg.queue_id,
        msg.queue_offset,
    )


async def ack(broker, r, msg, topic=None):
    extra = pop_ck(r, msg)
    real = ExtraInfo.parse(extra).real_topic(TOPIC, GROUP)
    h = AckMessageRequestHeader(GROUP, topic or real, msg.queue_id, extra, msg.queue_offset)
    return await call(broker, RequestCode.ACK_MESSAGE, h.to_ext_fields())


def revive_records(broker) -> list[m.StoredMessage]:
    """What went to the revive topic: diverted to the timer until delivery, or delivered."""
    out = []
    store = broker.c.message_store
    for topic in (TIMER_TOPIC, REVIVE):
        for qid in store.get_queue_ids(topic):
            res = store.get_message("x", topic, qid, 0, 1000, None)
            out.extend(m.decode_message(b) for b in res.message_buffer_list)
            res.release()
    return [r for r in out if r.properties.get(MessageConst.REAL_TOPIC, r.topic) == REVIVE]


async def deliver_timer(broker):
    tms = broker.c.timer_message_store
    tms.start()
    tms.enqueue()
    await tms.dequeue()
    await tms.shutdown()


async def revive_all(broker) -> int:
    await deliver_timer(broker)
    svc = broker.c.pop_services.revive_service
    n = 0
    for qid in range(8):
        n += await svc.revive_queue(qid)
    return n


def test_pop_hands_out_each_message_once_and_writes_javas_checkpoint(broker, clock):
    setup(broker, queues=2, n=4)

    async def go():
        r, msgs = await pop(broker)
        assert (r.code, r.remark) == (ResponseCode.SUCCESS, "FOUND")
        assert sorted(x.body for x in msgs) == [b"m0", b"m1", b"m2", b"m3"]
        ef = r.ext_fields
        assert (ef["popTime"], ef["invisibleTime"], ef["restNum"]) == (str(clock()), "60000", "0")
        starts = parse_info(ef["startOffsetInfo"])
        assert starts == {"0@0": "0", "0@1": "0"}
        assert parse_info(ef["msgOffsetInfo"]) == {"0@0": "0,1", "0@1": "0,1"}
        again, more = await pop(broker)
        assert (again.code, again.remark, more) == (ResponseCode.POLLING_TIMEOUT, "NO_MESSAGE_IN_QUEUE", [])
        return ef

    ef = asyncio.run(go())
    com = broker.c.consumer_offset_manager
    assert (com.query_offset(GROUP, TOPIC, 0), com.query_offset(GROUP, TOPIC, 1)) == (2, 2)
    cks = [x for x in revive_records(broker) if x.tags == "ck"]
    assert len(cks) == 2
    ck_rec = cks[0]
    ck = json.loads(ck_rec.body)
    pop_time = int(ef["popTime"])
    # PopCheckPoint as fastjson2 writes it in 5.5.0 (short names, reviveTime, sp)
    assert (
        ck_rec.body
        == (
            f'{{"bm":0,"bn":"broker-t","c":"cg","d":[0,1],"it":60000,"n":2,"pt":{pop_time},"q":{ck["q"]},'
            f'"reviveTime":{pop_time + 60000},"ro":0,"so":0,"sp":false,"t":"PopT"}}'
        ).encode()
    )
    props = ck_rec.properties
    assert props[MessageConst.TIMER_DELIVER_MS] == str(pop_time + 60000 - 1000)
    assert props[MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX] == f"PopT@{ck['q']}@0@cg@{pop_time}@broker-t@ck"
    assert props[MessageConst.REAL_QUEUE_ID] == ef["reviveQid"]


def test_unacked_messages_revive_into_the_retry_topic_and_are_popped_again(broker, clock):
    setup(broker, n=3)

    async def go():
        r, msgs = await pop(broker, invisible=10_000)
        assert len(msgs) == 3
        acked = [x for x in msgs if x.body != b"m1"]
        for x in acked:
            a = await ack(broker, r, x)
            assert (a.code, a.remark) == (ResponseCode.SUCCESS, None)
        assert await revive_all(broker) == 0  # not yet due
        clock.advance(10_000 + 2_001)
        assert await revive_all(broker) == 1
        com = broker.c.consumer_offset_manager
        assert any(com.query_offset(REVIVE_GROUP, REVIVE, q) >= 0 for q in range(8))
        assert broker.c.topic_config_manager.select_topic_config(RETRY).read_queue_nums == 1
        r2, again = await pop(broker, invisible=10_000)
        assert [x.body for x in again] == [b"m1"]
        x = again[0]
        # the retry message goes out under the topic's name with its own checkpoint info
        assert (x.topic, x.reconsume_times) == (TOPIC, 1)
        assert x.properties[MessageConst.ORIGIN_GROUP] == GROUP
        assert x.properties[MessageConst.FIRST_POP_TIME] == r.ext_fields["popTime"]
        extra = ExtraInfo.parse(x.properties[MessageConst.POP_CK])
        assert (extra.retry, extra.queue_id, extra.queue_offset) == ("1", 0, 0)
        assert parse_info(r2.ext_fields["startOffsetInfo"]) == {"1@0": "0"}
        a = await ack(broker, r2, x)
        assert a.code == ResponseCode.SUCCESS
        clock.advance(10_000 + 2_001)
        assert await revive_all(broker) == 1  # the acked retry checkpoint is handled, nothing revives
        _, none = await pop(broker)
        assert none == []

    asyncio.run(go())


def test_change_invisible_time_moves_the_revive(broker, clock):
    setup(broker, n=1)

    async def go():
        r, (x,) = await pop(broker, invisible=60_000)
        h = ChangeInvisibleTimeRequestHeader(GROUP, TOPIC, 0, pop_ck(r, x), x.queue_offset, 5_000)
        c = await call(broker, RequestCode.CHANGE_MESSAGE_INVISIBLETIME, h.to_ext_fields())
        assert c.code == ResponseCode.SUCCESS
        assert (c.ext_fields["popTime"], c.ext_fields["invisibleTime"]) == (str(clock()), "5000")
        assert c.ext_fields["reviveQid"] == r.ext_fields["reviveQid"]
        clock.advance(5_000 + 2_001)
        await revive_all(broker)
        _, again = await pop(broker)
        assert [m_.body for m_ in again] == [b"m0"]  # long before the first 60 s

    asyncio.run(go())


def test_batch_ack(broker, clock):
    setup(broker, n=3)

    async def go():
        r, msgs = await pop(broker, invisible=10_000)
        assert len(msgs) == 3
        ef = r.ext_fields
        back = BatchAck(
            consumer_group=GROUP,
            topic=TOPIC,
            retry="0",
            start_offset=0,
            queue_id=0,
            revive_queue_id=int(ef["reviveQid"]),
            pop_time=int(ef["popTime"]),
            invisible_time=10_000,
            bit_set=BatchAck.encode_bits([0, 2]),
        )
        body = BatchAckMessageRequestBody(broker_name="broker-t", acks=[back]).encode()
        a = await call(broker, RequestCode.BATCH_ACK_MESSAGE, {}, body)
        assert a.code == ResponseCode.SUCCESS
        rec = [x for x in revive_records(broker) if x.tags == "bAck"]
        assert json.loads(rec[0].body)["aol"] == [0, 2]
        clock.advance(12_001)
        await revive_all(broker)
        _, again = await pop(broker)
        assert [x.body for x in again] == [b"m1"]
        empty = await call(broker, RequestCode.BATCH_ACK_MESSAGE, {}, b'{"acks":[]}')
        assert empty.code == ResponseCode.NO_MESSAGE

    asyncio.run(go())


def test_orderly_pop_blocks_the_queue_until_acked(broker, clock):
    setup(broker, n=3, order=True)

    async def go():
        r, msgs = await pop(broker, queue_id=0, order=True, max_nums=2)
        assert [x.body for x in msgs] == [b"m0", b"m1"]
        assert r.ext_fields["reviveQid"] == "999"
        assert parse_info(r.ext_fields["orderCountInfo"]) == {"0@0": "0"}
        _, blocked = await pop(broker, queue_id=0, order=True)
        assert blocked == []  # the queue waits for the acks
        a = await ack(broker, r, msgs[0])
        assert a.code == ResponseCode.SUCCESS
        assert broker.c.consumer_offset_manager.query_offset(GROUP, TOPIC, 0) == 1
        _, still = await pop(broker, queue_id=0, order=True)
        assert still == []
        clock.advance(60_001)  # m1 visible again: handed out again with its count
        r2, again = await pop(broker, queue_id=0, order=True)
        assert [x.body for x in again] == [b"m1", b"m2"]
        counts = parse_info(r2.ext_fields["orderCountInfo"])
        assert counts["0@qo0%1"] == "1"
        for x in again:
            assert (await ack(broker, r2, x)).code == ResponseCode.SUCCESS
        assert broker.c.consumer_offset_manager.query_offset(GROUP, TOPIC, 0) == 3

    asyncio.run(go())


def test_long_polling_pop_is_answered_when_a_message_arrives(broker, clock):
    setup(broker)

    async def go():
        ch = FakeChannel("127.0.0.1:9")
        r = await call(broker, RequestCode.POP_MESSAGE, pop_ext(broker, poll=30_000), ch=ch)
        assert r is None  # held
        n = await call(broker, RequestCode.POLLING_INFO, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "-1"})
        assert n.ext_fields["pollingNum"] == "1"
        put(broker, b"late")
        for _ in range(50):
            await asyncio.sleep(0.01)
            if ch.sent:
                break
        (resp,) = ch.sent
        assert resp.code == ResponseCode.SUCCESS
        assert [x.body for x in m.decode_messages(resp.body)] == [b"late"]

    asyncio.run(go())


def test_notification_and_peek(broker):
    setup(broker, n=2)

    async def go():
        ext = {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "-1", "pollTime": "0", "bornTime": "0"}
        n = await call(broker, RequestCode.NOTIFICATION, ext)
        assert (n.code, n.ext_fields["hasMsg"]) == (ResponseCode.SUCCESS, "true")
        p = await call(
            broker,
            RequestCode.PEEK_MESSAGE,
            {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "0", "maxMsgNums": "32"},
        )
        assert (p.code, p.remark) == (ResponseCode.SUCCESS, "FOUND")
        assert [x.body for x in m.decode_messages(p.body)] == [b"m0", b"m1"]
        _, msgs = await pop(broker)
        assert len(msgs) == 2  # peeking took nothing
        n = await call(broker, RequestCode.NOTIFICATION, ext)
        assert n.ext_fields["hasMsg"] == "false"
        n = await call(broker, RequestCode.NOTIFICATION, {**ext, "topic": "Nope"})
        assert (n.code, n.remark) == (ResponseCode.TOPIC_NOT_EXIST, None)  # Java sets no remark here

    asyncio.run(go())


def test_bad_requests_get_javas_codes(broker):
    setup(broker, n=1)

    async def go():
        r = await call(broker, RequestCode.POP_MESSAGE, pop_ext(broker, max_nums=33))
        assert (r.code, r.remark) == (
            ResponseCode.INVALID_PARAMETER,
            "the broker[127.0.0.1] pop message's num is greater than 32",
        )
        ext = pop_ext(broker)
        ext["topic"] = "Nope"
        r = await call(broker, RequestCode.POP_MESSAGE, ext)
        assert r.code == ResponseCode.TOPIC_NOT_EXIST and r.remark.startswith("topic[Nope] not exist")
        ext = pop_ext(broker)
        del ext["invisibleTime"]
        r = await call(broker, RequestCode.POP_MESSAGE, ext)
        assert r.code == ResponseCode.INVALID_PARAMETER
        h = AckMessageRequestHeader(GROUP, TOPIC, 5, "0 1 2 3 0 b 0", 0)
        r = await call(broker, RequestCode.ACK_MESSAGE, h.to_ext_fields())
        assert r.code == ResponseCode.MESSAGE_ILLEGAL
        h = AckMessageRequestHeader(GROUP, TOPIC, 0, "0 1 2 3 0 b 0", 99)
        r = await call(broker, RequestCode.ACK_MESSAGE, h.to_ext_fields())
        assert (r.code, r.remark) == (ResponseCode.NO_MESSAGE, "offset is illegal, key:PopT@0, commit:99, store:0~1")
        h = AckMessageRequestHeader(GROUP, TOPIC, 0, "garbage", 0)
        r = await call(broker, RequestCode.ACK_MESSAGE, h.to_ext_fields())
        assert r.code == ResponseCode.SYSTEM_ERROR
        r = await call(broker, RequestCode.BATCH_ACK_MESSAGE, {}, b"{nope")
        assert r.code == ResponseCode.INVALID_PARAMETER

    asyncio.run(go())


def test_checkpoint_json_reads_java_and_old_names():
    ck = PopCheckPoint.decode(
        b'{"bm":1,"bn":"b","c":"cg","d":[0,3],"it":60000,"n":2,"pt":5,"q":1,"reviveTime":60005,"ro":0,'
        b'"so":7,"sp":false,"t":"T"}'
    )
    assert (ck.start_offset, ck.num, ck.index_of_ack(10), ck.ack_offset_by_index(1), ck.revive_time) == (
        7,
        2,
        1,
        10,
        60005,
    )
    old = PopCheckPoint.decode(b'{"startOffset":7,"num":2,"popTime":5,"invisibleTime":1,"topic":"T","cId":"g"}')
    assert (old.index_of_ack(8), old.cid) == (1, "g")
    assert BatchAck.encode_bits([0, 2, 9]) == "BQI="  # Java BitSet{0,2,9}.toByteArray(), base64
    assert BatchAck(bit_set="BQI=").bits() == [0, 2, 9]


def test_order_info_file_matches_javas(tmp_path):
    """config/consumerOrderInfo.json: the same pops, acks and visible-time changes on pyrmq's
    manager give the bytes the 5.5.0 QueueLevelConsumerManager wrote, orderCountInfo too."""
    from support.fakes import GOLDEN_DIR, ManualClock

    from pyrmq.broker.pop.order_info import ConsumerOrderInfoManager
    from pyrmq.protocol.headers.pop import OffsetInfo

    text = (GOLDEN_DIR / "store/config/java-5.5.0-pop/consumerOrderInfo.json").read_text()
    clock = ManualClock(1795786672070)  # the "l" Java stamped
    mgr = ConsumerOrderInfoManager(str(tmp_path / "consumerOrderInfo.json"), now=clock)
    info = OffsetInfo()
    mgr.update("attempt-1", False, "PopO", "og", 1, 1700000000000, 60000, [5, 6, 9], info)
    mgr.update("attempt-2", False, "PopO", "og", 1, 1700000070000, 60000, [6, 9], info)
    assert mgr.commit_and_next("PopO", "og", 1, 6, 1700000070000) == 9
    mgr.update_next_visible_time("PopO", "og", 1, 9, 1700000070000, 1700000090000)
    mgr.update(None, False, "PopO", "og", 0, 1700000000000, 30000, [3], info)
    assert OffsetInfo.join(info.order_count) == "0 1 0;0 qo1%6 1;0 qo1%9 1;0 1 1;0 0 0"
    assert mgr.encode() == text
    assert mgr.persist()
    again = ConsumerOrderInfoManager(str(tmp_path / "consumerOrderInfo.json"), now=clock)
    again.load()
    assert again.encode() == text
    again.now = ManualClock(1700000089999)
    assert again.check_block("other", "PopO", "og", 1, 60000)  # 9 is invisible until 1700000090000
    again.now = ManualClock(1700000090000)
    assert not again.check_block("other", "PopO", "og", 1, 60000)


def test_revive_follows_the_special_services(broker):
    """Java changeSpecialServiceStatus -> setPopReviveServiceStatus: a master revives until its
    special services stop (a slave acting as master starts them)."""
    svc = broker.c.pop_services.revive_service
    special = broker.c.acting_master_service.special_services
    assert svc.should_run  # brokerId 0

    async def go():
        special.running = True
        await special.change(False)

    asyncio.run(go())
    assert not svc.should_run


def test_popped_messages_count_out_with_is_retry(make_broker):
    from support.prom import parse

    b = make_broker(metricsExporterType="PROM")
    setup(b, queues=2, n=3)
    r, msgs = asyncio.run(pop(b))
    assert r.code == ResponseCode.SUCCESS and len(msgs) == 3
    s = parse(b.c.broker_metrics.render())
    labels = {"topic": TOPIC, "consumer_group": GROUP, "is_retry": "false", "is_system": "false"}
    assert s.total("rocketmq_messages_out_total", **labels) == 3
    assert s.total("rocketmq_throughput_out_total", **labels) == sum(x.store_size for x in msgs)


def test_pop_metrics_count_revive_records_retries_and_lag(make_broker, clock):
    """Java PopMetricsManager's series: checkpoints and acks written (by type and put status) and
    read back by the revive service (by revive queue), messages put back for retry, each revive
    queue's lag; the buffer gauges at 0 as with Java's pop buffer off."""
    from support.prom import parse

    broker = make_broker(metricsExporterType="PROM")
    setup(broker, n=3)

    def scrape():
        return parse(broker.c.broker_metrics.render())

    async def go():
        r, msgs = await pop(broker, invisible=10_000)
        qid = r.ext_fields["reviveQid"]
        for x in msgs[:2]:
            assert (await ack(broker, r, x)).code == ResponseCode.SUCCESS
        s = scrape()
        put = "rocketmq_pop_revive_in_message_total"
        assert s.total(put, consumer_group=GROUP, topic=TOPIC, revive_message_type="CK", put_status="PUT_OK") == 1
        assert s.total(put, consumer_group=GROUP, topic=TOPIC, revive_message_type="ACK", put_status="PUT_OK") == 2
        assert s.total("rocketmq_pop_revive_out_message_total") == 0
        assert s.total("rocketmq_pop_offset_buffer_size") == s.total("rocketmq_pop_checkpoint_buffer_size") == 0
        assert s.total("rocketmq_pop_revive_lag_milliseconds") == 0  # no pass has run yet (Java: 0 then)
        await deliver_timer(broker)
        clock.advance(10_000 + 2_001)
        await deliver_timer(broker)
        svc = broker.c.pop_services.revive_service
        assert await svc.revive_queue(int(qid)) == 1
        s = scrape()
        got = "rocketmq_pop_revive_out_message_total"
        assert s.total(got, queue_id=qid, revive_message_type="CK", consumer_group=GROUP) == 1
        assert s.total(got, queue_id=qid, revive_message_type="ACK", topic=TOPIC) == 2
        retry = "rocketmq_pop_revive_retry_messages_total"
        assert s.series(retry) and s.total(retry, consumer_group=GROUP, topic=TOPIC, put_status="PUT_OK") == 1
        # Java's reviveOffset is the last handled checkpoint's: the two acks after it count as lag
        assert s.total("rocketmq_pop_revive_lag_milliseconds", queue_id=qid) == 2
        assert s.total("rocketmq_pop_revive_latency_milliseconds", queue_id=qid) >= 2_001
        assert s.types["rocketmq_pop_revive_latency_milliseconds"] == "gauge"
        assert s.total("rocketmq_pop_buffer_scan_time_consume_milliseconds_count") == 0  # no buffer, no scan

    asyncio.run(go())


def test_pop_group_lag_counts_popped_unacked_messages_and_its_retry_topic(make_broker, clock):
    """Java ConsumerLagCalculator with isPop: the consumer offset moves at pop time, popped and
    unacked messages count as lag and in flight; the retry topic has series of its own (is_retry)."""
    from support.prom import parse

    from pyrmq.protocol.bodies.broker import ConsumerData, HeartbeatData, SubscriptionData

    broker = make_broker(metricsExporterType="PROM")
    setup(broker, n=3)
    consumer = ConsumerData(
        GROUP, "CONSUME_POP", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET", [SubscriptionData.build(TOPIC, "*")]
    )
    hb = RemotingCommand.request(RequestCode.HEART_BEAT, {}, HeartbeatData("ip@1", [], [consumer]).encode())
    hb.version = 513

    def series(name, retry):
        s = parse(broker.c.broker_metrics.render())
        return s.total(name, consumer_group=GROUP, topic=TOPIC, is_retry=retry)

    async def go():
        assert (await broker.call(hb, FakeChannel("127.0.0.1:7"))).code == ResponseCode.SUCCESS
        r, msgs = await pop(broker, invisible=10_000)
        assert len(msgs) == 3
        assert (await ack(broker, r, msgs[0])).code == ResponseCode.SUCCESS
        assert series("rocketmq_consumer_lag_messages", "false") == 2  # offset at 3, two not acked
        assert series("rocketmq_consumer_inflight_messages", "false") == 2
        assert series("rocketmq_consumer_ready_messages", "false") == 0
        assert series("rocketmq_consumer_lag_messages", "true") == 0  # no retry topic yet
        clock.advance(10_000 + 2_001)
        assert await revive_all(broker) == 1  # the two unacked messages go to the retry topic
        assert series("rocketmq_consumer_inflight_messages", "false") == 0
        assert series("rocketmq_consumer_lag_messages", "false") == 0
        assert series("rocketmq_consumer_lag_messages", "true") == 2
        assert series("rocketmq_consumer_ready_messages", "true") == 2
        _, again = await pop(broker, invisible=10_000)
        assert len(again) == 2
        assert series("rocketmq_consumer_inflight_messages", "true") == 2
        assert series("rocketmq_consumer_ready_messages", "true") == 0

    asyncio.run(go())


def test_a_group_known_only_from_pop_requests_is_a_pop_group_in_the_lag_series(make_broker):
    """Java PopMessageProcessor compensates the consumer info (CONSUME_POP) and the subscriptions
    (topic and POP retry topic) of every POP request: a group with no heartbeat (the proxy's simple
    consumers, the client's own POP calls) gets POP lag series, its retry topic's included."""
    from support.prom import parse

    broker = make_broker(metricsExporterType="PROM")
    setup(broker, n=3)

    def series(name, retry):
        s = parse(broker.c.broker_metrics.render())
        return s.series(name, consumer_group=GROUP, topic=TOPIC, is_retry=retry)

    async def go():
        assert not series("rocketmq_consumer_lag_messages", "false")
        r, msgs = await pop(broker, invisible=10_000)
        assert len(msgs) == 3
        assert (await ack(broker, r, msgs[0])).code == ResponseCode.SUCCESS
        info = broker.c.consumer_manager.get_consumer_group_info(GROUP, True)
        assert info is not None and info.consume_type == "CONSUME_POP"
        assert set(info.subscription_table) == {TOPIC, build_pop_retry_topic(TOPIC, GROUP)}
        assert list(series("rocketmq_consumer_lag_messages", "false").values()) == [2]
        assert list(series("rocketmq_consumer_inflight_messages", "false").values()) == [2]
        assert list(series("rocketmq_consumer_lag_messages", "true").values()) == [0]

    asyncio.run(go())
