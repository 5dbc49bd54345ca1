"""Transactions: half messages, END_TRANSACTION, op messages, check-back and discard (no sockets)."""

from __future__ import annotations

import asyncio

from support.fakes import FakeChannel

from pyrmq.broker.processor.end_transaction import EndTransactionProcessor
from pyrmq.common.constants import (
    CID_RMQ_SYS_TRANS,
    RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
)
from pyrmq.protocol.bodies.broker import HeartbeatData, ProducerData
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.remoting.channel import RequestContext, call_handler
from pyrmq.store import message as m

COMMIT, ROLLBACK, UNKNOWN = 0x8, 0xC, 0x0


def half_send(broker, topic="TxT", body=b"tx", pgroup="txg", born=None, extra=None, queue_id=1):
    props = {"TAGS": "TagT", "KEYS": "k", "TRAN_MSG": "true", "PGROUP": pgroup, **(extra or {})}
    ext = {
        "a": pgroup,
        "b": topic,
        "c": "TBW102",
        "d": "4",
        "e": str(queue_id),
        "f": "4",
        "g": str(born if born is not None else broker.c.now()),
        "h": "0",
        "i": m.message_properties_to_string(props),
        "j": "0",
        "k": "false",
        "m": "false",
        "n": "broker-t",
    }
    return asyncio.run(broker.call(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, body)))


def end_tx(broker, send_resp, kind, pgroup="txg", from_check=False, offsets=None):
    mid = m.decode_message_id(send_resp.ext_fields["msgId"])
    commit_log_offset, table_offset = offsets or (mid.offset, int(send_resp.ext_fields["queueOffset"]))
    ext = {
        "producerGroup": pgroup,
        "tranStateTableOffset": str(table_offset),
        "commitLogOffset": str(commit_log_offset),
        "commitOrRollback": str(kind),
        "fromTransactionCheck": "true" if from_check else "false",
        "msgId": send_resp.ext_fields.get("transactionId", "x"),
        "topic": "TxT",
    }
    proc = broker.c.build(EndTransactionProcessor)
    cmd = RemotingCommand.request(RequestCode.END_TRANSACTION, ext)
    return asyncio.run(call_handler(proc.end_transaction, RequestContext(FakeChannel(), None), cmd))


def records(broker, topic, qid=0):
    store = broker.c.message_store
    out = []
    r = store.get_message("t", topic, qid, 0, 100, None)
    for b in r.message_buffer_list:
        out.append(m.decode_message(b))
    r.release()
    return out


def register_producer(broker, ch, group="txg"):
    hb = HeartbeatData("ip@P", [ProducerData(group)], [])
    return asyncio.run(broker.call(RemotingCommand.request(RequestCode.HEART_BEAT, {}, hb.encode()), ch))


def check(broker):
    c = broker.c
    asyncio.run(
        c.transactional_message_service.check(
            int(c.config["transactionTimeOut"]),
            int(c.config["transactionCheckMax"]),
            c.transactional_message_check_listener,
        )
    )


def test_half_message_goes_to_half_topic_not_the_real_one(broker):
    r = half_send(broker)
    assert r.code == ResponseCode.SUCCESS, r
    assert r.ext_fields["queueId"] == "1"  # the queue asked for, as Java answers
    assert records(broker, "TxT", 1) == []
    (half,) = records(broker, RMQ_SYS_TRANS_HALF_TOPIC)
    assert half.properties["REAL_TOPIC"] == "TxT" and half.properties["REAL_QID"] == "1"
    assert half.properties["PGROUP"] == "txg" and half.properties["TRAN_MSG"] == "true"
    assert half.properties["__transactionId__"] == half.properties["UNIQ_KEY"] == r.ext_fields["transactionId"]
    assert m.MessageSysFlag.get_transaction_value(half.sys_flag) == m.MessageSysFlag.TRANSACTION_NOT_TYPE
    assert m.decode_message_id(r.ext_fields["msgId"]).offset == half.commit_log_offset


def test_commit_delivers_and_writes_op(broker):
    r = half_send(broker, body=b"commit-me")
    e = end_tx(broker, r, COMMIT)
    assert e.code == ResponseCode.SUCCESS, e
    (real,) = records(broker, "TxT", 1)
    (half,) = records(broker, RMQ_SYS_TRANS_HALF_TOPIC)
    assert real.body == b"commit-me" and real.properties["TAGS"] == "TagT"
    assert m.MessageSysFlag.get_transaction_value(real.sys_flag) == m.MessageSysFlag.TRANSACTION_COMMIT_TYPE
    assert real.prepared_transaction_offset == half.commit_log_offset
    assert real.properties["UNIQ_KEY"] == half.properties["UNIQ_KEY"]
    (op,) = records(broker, RMQ_SYS_TRANS_OP_HALF_TOPIC)
    assert op.tags == "d" and op.body == f"{half.queue_offset},".encode()


def test_rollback_never_delivers(broker):
    r = half_send(broker)
    assert end_tx(broker, r, ROLLBACK).code == ResponseCode.SUCCESS
    assert records(broker, "TxT", 1) == []
    (op,) = records(broker, RMQ_SYS_TRANS_OP_HALF_TOPIC)
    assert op.body == b"0,"


def test_unknown_is_not_answered_and_wrong_fields_are_refused(broker):
    r = half_send(broker)
    assert end_tx(broker, r, UNKNOWN) is None
    assert end_tx(broker, r, COMMIT, pgroup="other").remark == "The producer group wrong"
    off = m.decode_message_id(r.ext_fields["msgId"]).offset
    assert end_tx(broker, r, COMMIT, offsets=(off, 5)).remark == "The transaction state table offset wrong"
    bad = end_tx(broker, r, COMMIT, offsets=(off + 1, 0))
    assert bad.code == ResponseCode.SYSTEM_ERROR
    assert records(broker, "TxT", 1) == [] and records(broker, RMQ_SYS_TRANS_OP_HALF_TOPIC) == []


def test_check_back_asks_a_live_producer_then_applies_its_answer(make_broker):
    broker = make_broker(transactionTimeOut=1000)
    ch = FakeChannel("127.0.0.1:777")
    register_producer(broker, ch)
    r = half_send(broker, born=broker.c.now() - 5000)
    broker.c.now.advance(10)  # the broker's clock, pinned by the fixture
    check(broker)
    (req,) = [c for c in ch.sent if c.code == RequestCode.CHECK_TRANSACTION_STATE]
    assert req.is_oneway
    halves = records(broker, RMQ_SYS_TRANS_HALF_TOPIC)
    assert len(halves) == 2  # put back with TRANSACTION_CHECK_TIMES=1
    renewed = halves[1]
    assert renewed.properties["TRANSACTION_CHECK_TIMES"] == "1"
    ef = req.ext_fields
    assert int(ef["commitLogOffset"]) == renewed.commit_log_offset and ef["tranStateTableOffset"] == "1"
    assert ef["msgId"] == ef["transactionId"] == r.ext_fields["transactionId"]
    assert ef["offsetMsgId"] == m.create_message_id(("127.0.0.1", 10911), renewed.commit_log_offset)
    body = m.decode_message(req.body)  # the producer's listener sees the real topic and queue
    assert body.topic == "TxT" and body.queue_id == 1 and body.body == b"tx"
    assert broker.c.consumer_offset_manager.query_offset(CID_RMQ_SYS_TRANS, RMQ_SYS_TRANS_HALF_TOPIC, 0) == 1
    # the producer answers the check: commit
    e = end_tx(broker, r, COMMIT, from_check=True, offsets=(renewed.commit_log_offset, renewed.queue_offset))
    assert e.code == ResponseCode.SUCCESS
    assert [x.body for x in records(broker, "TxT", 1)] == [b"tx"]
    ch.sent.clear()
    check(broker)  # the op message closes it: no more checks
    assert [c for c in ch.sent if c.code == RequestCode.CHECK_TRANSACTION_STATE] == []
    assert broker.c.consumer_offset_manager.query_offset(CID_RMQ_SYS_TRANS, RMQ_SYS_TRANS_HALF_TOPIC, 0) == 2
    assert broker.c.consumer_offset_manager.query_offset(CID_RMQ_SYS_TRANS, RMQ_SYS_TRANS_OP_HALF_TOPIC, 0) == 1


def test_young_half_message_is_not_checked(make_broker):
    broker = make_broker(transactionTimeOut=60000)
    ch = FakeChannel()
    register_producer(broker, ch)
    half_send(broker)
    broker.c.now.advance(10)  # the broker's clock, pinned by the fixture
    check(broker)
    assert ch.sent == [] and len(records(broker, RMQ_SYS_TRANS_HALF_TOPIC)) == 1


def test_check_immunity_time_postpones_the_check(make_broker):
    broker = make_broker(transactionTimeOut=100)
    ch = FakeChannel()
    register_producer(broker, ch)
    half_send(broker, born=broker.c.now() - 2000, extra={"CHECK_IMMUNITY_TIME_IN_SECONDS": "60"})
    broker.c.now.advance(10)  # the broker's clock, pinned by the fixture
    check(broker)
    assert ch.sent == []
    halves = records(broker, RMQ_SYS_TRANS_HALF_TOPIC)
    assert len(halves) == 2 and halves[1].properties["TRAN_PREPARED_QUEUE_OFFSET"] == "0"


def test_checked_too_often_is_discarded_to_trans_check_max_time_topic(make_broker):
    broker = make_broker(transactionTimeOut=100, transactionCheckMax=2)
    ch = FakeChannel()
    register_producer(broker, ch)
    half_send(broker, born=broker.c.now() - 5000)
    for _ in range(3):
        broker.c.now.advance(10)  # the broker's clock, pinned by the fixture
        check(broker)
    checks = [c for c in ch.sent if c.code == RequestCode.CHECK_TRANSACTION_STATE]
    assert len(checks) == 2
    (dead,) = records(broker, RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC)
    assert dead.properties["REAL_TOPIC"] == "TxT" and dead.properties["TRANSACTION_CHECK_TIMES"] == "2"
    assert broker.c.topic_config_manager.select_topic_config(RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC) is not None


def test_no_producer_online_keeps_checking_later(make_broker):
    broker = make_broker(transactionTimeOut=100)
    half_send(broker, born=broker.c.now() - 5000)
    broker.c.now.advance(10)  # the broker's clock, pinned by the fixture
    check(broker)
    ch = FakeChannel()
    register_producer(broker, ch)  # a producer of the group (re)started meanwhile
    broker.c.now.advance(10)  # the broker's clock, pinned by the fixture
    check(broker)
    assert len([c for c in ch.sent if c.code == RequestCode.CHECK_TRANSACTION_STATE]) == 1


def test_reject_transaction_message(make_broker):
    broker = make_broker(rejectTransactionMessage="true")
    r = half_send(broker)
    assert r.code == ResponseCode.NO_PERMISSION and "transaction message is forbidden" in r.remark


def test_transaction_metrics_count_halves_commits_and_rollbacks(make_broker, clock):
    from support.prom import parse

    b = make_broker(metricsExporterType="PROM")
    first, second, third = (half_send(b, born=clock() - 7000) for _ in range(3))
    s = parse(b.c.broker_metrics.render())
    assert s.total("rocketmq_half_messages", topic="TxT") == 3
    assert end_tx(b, first, COMMIT).code == ResponseCode.SUCCESS
    assert end_tx(b, second, ROLLBACK).code == ResponseCode.SUCCESS
    s = parse(b.c.broker_metrics.render())
    assert s.total("rocketmq_half_messages", topic="TxT") == 1
    assert s.total("rocketmq_commit_messages_total", topic="TxT") == 1
    assert s.total("rocketmq_rollback_messages_total", topic="TxT") == 1
    # Java records the seconds since the half was born, in buckets of 5 s .. 24 h
    assert s.total("rocketmq_finish_message_latency_milliseconds_sum", topic="TxT") == 7
    assert s.total("rocketmq_finish_message_latency_milliseconds_bucket", topic="TxT", le="60.0") == 1
    assert s.total("rocketmq_finish_message_latency_milliseconds_bucket", topic="TxT", le="5.0") == 0
    assert third.code == ResponseCode.SUCCESS
