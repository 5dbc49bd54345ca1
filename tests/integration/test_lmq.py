"""Light message queues end to end with pyrmq's own client: a broker with enableLmq and
enableMultiDispatch queues a message sent to an ordinary topic also in each %LMQ% queue its
INNER_MULTI_DISPATCH names; each is pulled and popped (no topic config), long polls on it wake up,
and consumer offsets are kept for it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from support.pyrmq_proc import PyrmqBroker
from support.requests import pull, send_v2
from support.servers import PyrmqNamesrv

from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.pop import AckMessageRequestHeader, PopMessageRequestHeader, build_extra_info, parse_info
from pyrmq.remoting.client import RemotingClient
from pyrmq.store import message as m


def _bodies(r: RemotingCommand) -> list[bytes]:
    return [x.body for x in m.decode_messages(r.body)]


def _pop(topic: str, group: str, poll_ms: int = 0) -> RemotingCommand:
    h = PopMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=-1,
        max_msg_nums=32,
        invisible_time=60000,
        poll_time=poll_ms,
        born_time=int(time.time() * 1000),
        init_mode=0,  # ConsumeInitMode.MIN: a new group pops from the first message
        exp_type="TAG",
        exp="*",
    )
    return RemotingCommand.request(RequestCode.POP_MESSAGE, h.to_ext_fields())


def test_send_with_multi_dispatch_then_pull_and_pop_each_lmq(tmp_path: Path) -> None:
    ns = PyrmqNamesrv(tmp_path / "ns")
    try:
        broker = PyrmqBroker(ns.addr, tmp_path / "broker", enableLmq="true", enableMultiDispatch="true")
        try:
            asyncio.run(_scenario(broker.addr, broker.name))
            assert "Traceback" not in broker.tail(400)
            broker.stop()
            # Java's LmqConsumerOffsetManager file: the %LMQ% group's offset in lmqOffsetTable
            offsets = (broker.store_dir / "config" / "lmqConsumerOffset.json").read_text()
            assert '"lmqOffsetTable":{\n\t\t"%LMQ%r1@%LMQ%g":2\n\t}' in offsets
            assert '"%LMQ%r1@lmqg":{\n\t\t\t0:2\n\t\t}' in offsets
            assert not (broker.store_dir / "config" / "consumerOffset.json").exists()
        finally:
            broker.stop()
    finally:
        ns.stop()


async def _scenario(addr: str, broker_name: str) -> None:
    async with RemotingClient() as c:

        async def send(body: bytes, names: str) -> None:
            r = await c.invoke(addr, send_v2("LmqParent", broker_name, body, INNER_MULTI_DISPATCH=names), 5)
            assert r.code == ResponseCode.SUCCESS, r

        await send(b"m0", "%LMQ%r1,%LMQ%r2")
        await send(b"m1", "%LMQ%r2")
        await send(b"m2", "%LMQ%r1,%LMQ%r2")
        r1 = await c.invoke(addr, pull("%LMQ%r1", "lmqg", 0), 5)
        assert r1.code == ResponseCode.SUCCESS, r1
        assert _bodies(r1) == [b"m0", b"m2"]
        stored = list(m.decode_messages(r1.body))
        assert [x.properties["INNER_MULTI_QUEUE_OFFSET"] for x in stored] == ["0,0", "1,2"]
        assert [x.topic for x in stored] == ["LmqParent", "LmqParent"]  # the record is the parent topic's
        r2 = await c.invoke(addr, pull("%LMQ%r2", "%LMQ%g", 1), 5)
        assert r2.code == ResponseCode.SUCCESS and _bodies(r2) == [b"m1", b"m2"]
        # what LMQPullConsumer asks first: the LMQ's offsets
        for code, want in ((RequestCode.GET_MIN_OFFSET, "0"), (RequestCode.GET_MAX_OFFSET, "2")):
            q = {"topic": "%LMQ%r1", "queueId": "0"}
            r = await c.invoke(addr, RemotingCommand.request(code, q), 5)
            assert r.code == ResponseCode.SUCCESS and r.ext_fields["offset"] == want, (code, r)
        # the parent topic holds every message once (send_v2 writes queue 0)
        parent = await c.invoke(addr, pull("LmqParent", "lmqg", 0), 5)
        assert _bodies(parent) == [b"m0", b"m1", b"m2"]

        # a long poll on an LMQ wakes up when a message for it is dispatched
        held = asyncio.ensure_future(c.invoke(addr, pull("%LMQ%r1", "lmqg", 2, suspend_ms=10000), 15))
        await asyncio.sleep(0.3)
        assert not held.done()
        t0 = time.monotonic()
        await send(b"m3", "%LMQ%r1")
        got = await held
        assert time.monotonic() - t0 < 3
        assert got.code == ResponseCode.SUCCESS and _bodies(got) == [b"m3"]

        # consumer offsets of an LMQ, for an ordinary and an %LMQ% group
        for group in ("lmqg", "%LMQ%g"):
            upd = {"consumerGroup": group, "topic": "%LMQ%r1", "queueId": "0", "commitOffset": "2"}
            r = await c.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, upd), 5)
            assert r.code == ResponseCode.SUCCESS, (group, r)
            q = {"consumerGroup": group, "topic": "%LMQ%r1", "queueId": "0"}
            r = await c.invoke(addr, RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, q), 5)
            assert r.code == ResponseCode.SUCCESS and r.ext_fields["offset"] == "2", (group, r)

        # POP from an LMQ: the group pops what was not consumed yet
        popped = await c.invoke(addr, _pop("%LMQ%r2", "lmqpop"), 5)
        assert popped.code == ResponseCode.SUCCESS, popped
        assert _bodies(popped) == [b"m0", b"m1", b"m2"]
        # the offsets are the LMQ's (queue 0), which the Java client turns into each POP_CK
        ef = popped.ext_fields
        assert parse_info(ef["startOffsetInfo"]) == {"0@0": "0"}
        assert parse_info(ef["msgOffsetInfo"]) == {"0@0": "0,1,2"}
        extra = build_extra_info(
            0, int(ef["popTime"]), int(ef["invisibleTime"]), int(ef["reviveQid"]), "%LMQ%r2", broker_name, 0, 1
        )
        ack = AckMessageRequestHeader("lmqpop", "%LMQ%r2", 0, extra, 1)
        r = await c.invoke(addr, RemotingCommand.request(RequestCode.ACK_MESSAGE, ack.to_ext_fields()), 5)
        assert r.code == ResponseCode.SUCCESS, r

        # a POP long poll on an LMQ wakes up too
        held = asyncio.ensure_future(c.invoke(addr, _pop("%LMQ%r3", "lmqpop", poll_ms=10000), 15))
        await asyncio.sleep(0.3)
        assert not held.done()
        t0 = time.monotonic()
        await send(b"m4", "%LMQ%r3")
        got = await held
        assert time.monotonic() - t0 < 3
        assert got.code == ResponseCode.SUCCESS and _bodies(got) == [b"m4"]

        # CLEAN_UNUSED_TOPIC keeps the LMQs, which have no config (as Java's cleanUnusedTopic)
        r = await c.invoke(addr, RemotingCommand.request(RequestCode.CLEAN_UNUSED_TOPIC, {}), 5)
        assert r.code == ResponseCode.SUCCESS, r
        again = await c.invoke(addr, pull("%LMQ%r1", "lmqg", 0), 5)
        assert again.code == ResponseCode.SUCCESS and _bodies(again) == [b"m0", b"m2", b"m3"]
