"""RECALL_MESSAGE (370): a timer message taken back before its delivery time is never delivered.

A `pyrmq broker` with recallMessageEnable; pyrmq's own client sends two timer messages (the send
answers carry a recall handle, SendMessageResponseHeader.recallHandle), recalls one, and after the
delivery time pulls the topic: only the other arrives. The refusals are Java's codes and remarks
(RecallMessageProcessor).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from support.pyrmq_proc import PyrmqBroker
from support.requests import pull, send_v2
from support.servers import PyrmqNamesrv

from pyrmq.common.constants import MessageConst
from pyrmq.common.recall_handle import RecallHandle
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import CreateTopicRequestHeader, RecallMessageRequestHeader
from pyrmq.remoting.client import RemotingClient
from pyrmq.store import message as m

BROKER = "recall-broker"
TOPIC = "RecallTopic"


def _recall(topic: str, handle: str) -> RemotingCommand:
    h = RecallMessageRequestHeader(topic=topic, recall_handle=handle, producer_group="pg")
    return RemotingCommand.request(RequestCode.RECALL_MESSAGE, h.to_ext_fields())


def _run(tmp_path: Path, scenario, **conf) -> None:
    ns = PyrmqNamesrv(tmp_path / "ns")
    try:
        broker = PyrmqBroker(ns.addr, tmp_path / "broker", name=BROKER, **conf)
        try:
            asyncio.run(scenario(broker.addr))
        finally:
            broker.stop()
    finally:
        ns.stop()


async def _create_topic(c: RemotingClient, addr: str) -> None:
    create = CreateTopicRequestHeader(topic=TOPIC, read_queue_nums=1, write_queue_nums=1).to_ext_fields()
    r = await c.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, create), 5)
    assert r.code == ResponseCode.SUCCESS, r


async def _send_timer(c: RemotingClient, addr: str, body: bytes, deliver_ms: int) -> RemotingCommand:
    r = await c.invoke(addr, send_v2(TOPIC, BROKER, body, queues=1, TIMER_DELIVER_MS=str(deliver_ms)), 5)
    assert r.code == ResponseCode.SUCCESS, r
    return r


def test_a_recalled_timer_message_is_not_delivered(tmp_path: Path) -> None:
    async def scenario(addr: str) -> None:
        async with RemotingClient() as c:
            await _create_topic(c, addr)
            deliver = int(time.time() * 1000) + 3000
            kept = await _send_timer(c, addr, b"kept", deliver)
            taken = await _send_timer(c, addr, b"recalled", deliver)
            handle = RecallHandle.decode(taken.ext_fields["recallHandle"])
            # the handle names the real topic, this broker, the slot + 1 ms and the message's UNIQ_KEY
            assert (handle.topic, handle.broker_name) == (TOPIC, BROKER)
            assert int(handle.timestamp) % 1000 == 1 and abs(int(handle.timestamp) - deliver) <= 1000
            assert handle.message_id != RecallHandle.decode(kept.ext_fields["recallHandle"]).message_id
            # a plain message has no handle
            plain = await c.invoke(addr, send_v2(TOPIC, BROKER, b"plain", queues=1), 5)
            assert plain.code == ResponseCode.SUCCESS and "recallHandle" not in plain.ext_fields

            r = await c.invoke(addr, _recall(TOPIC, taken.ext_fields["recallHandle"]), 5)
            assert (r.code, r.ext_fields["msgId"]) == (ResponseCode.SUCCESS, handle.message_id), r

            bodies: list[bytes] = []
            deadline = time.monotonic() + 15
            while b"kept" not in bodies:
                assert time.monotonic() < deadline, f"the kept timer message never arrived: {bodies}"
                r = await c.invoke(addr, pull(TOPIC, "recall-g", 0), 5)
                if r.code == ResponseCode.SUCCESS:
                    bodies = [x.body for x in m.decode_messages(r.body)]
                await asyncio.sleep(0.2)
            await asyncio.sleep(1.5)  # a second slot later: the recalled one stays away
            r = await c.invoke(addr, pull(TOPIC, "recall-g", 0), 5)
            got = [(x.body, x.properties.get(MessageConst.REAL_TOPIC)) for x in m.decode_messages(r.body)]
            assert sorted(b for b, _ in got) == [b"kept", b"plain"], got

    _run(tmp_path, scenario, recallMessageEnable="true")


def test_recall_refusals_are_javas(tmp_path: Path) -> None:
    async def scenario(addr: str) -> None:
        async with RemotingClient() as c:
            await _create_topic(c, addr)
            now = int(time.time() * 1000)
            sent = await _send_timer(c, addr, b"x", now + 60_000)
            good = sent.ext_fields["recallHandle"]
            h = RecallHandle.decode(good)

            async def refusal(topic: str, handle: str) -> tuple[int, str]:
                r = await c.invoke(addr, _recall(topic, handle), 5)
                return r.code, r.remark

            assert await refusal("NoSuchTopic", good) == (
                ResponseCode.TOPIC_NOT_EXIST,
                "recall failed, the topic[NoSuchTopic] not exist",
            )
            assert await refusal(TOPIC, "not*base64") == (ResponseCode.ILLEGAL_OPERATION, "recall handle is invalid")
            v2 = RecallHandle(TOPIC, BROKER, h.timestamp, h.message_id).encode().replace("djE", "djI", 1)
            assert await refusal(TOPIC, v2) == (ResponseCode.ILLEGAL_OPERATION, "recall handle is invalid")
            other = RecallHandle("OtherTopic", BROKER, h.timestamp, h.message_id).encode()
            assert await refusal(TOPIC, other) == (ResponseCode.ILLEGAL_OPERATION, "recall failed, topic not match")
            elsewhere = RecallHandle(TOPIC, "broker-b", h.timestamp, h.message_id).encode()
            assert await refusal(TOPIC, elsewhere) == (
                ResponseCode.ILLEGAL_OPERATION,
                "recall failed, broker service not available",
            )
            for stamp in (str(now - 1000), "soon", str(now + 4 * 24 * 3600 * 1000)):
                late = RecallHandle(TOPIC, BROKER, stamp, h.message_id).encode()
                assert await refusal(TOPIC, late) == (
                    ResponseCode.ILLEGAL_OPERATION,
                    "recall failed, timestamp invalid",
                )

    _run(tmp_path, scenario, recallMessageEnable="true")


def test_recall_is_off_by_default(tmp_path: Path) -> None:
    async def scenario(addr: str) -> None:
        async with RemotingClient() as c:
            await _create_topic(c, addr)
            sent = await _send_timer(c, addr, b"x", int(time.time() * 1000) + 60_000)
            r = await c.invoke(addr, _recall(TOPIC, sent.ext_fields["recallHandle"]), 5)
            assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "recall failed, operation is forbidden")

    _run(tmp_path, scenario)
