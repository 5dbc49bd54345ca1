"""Pending pops survive a change of broker (issue 15): pops left unacked on pyrmq are revived by
the Java 5.5.0 broker started on pyrmq's store, and pops left unacked on that Java broker are
revived by pyrmq started on the store again.

The checkpoints and acks sit in rmq_sys_REVIVE_LOG_<cluster> (waiting in rmq_sys_wheel_timer
until their revive time) in Java's record format, and the revive group's offsets in
consumerOffset.json; whichever broker runs the revive service reads what the other wrote. The
pops and acks are sent with pyrmq's own remoting client, as the 5.x client sends them
(tests/compat/test_pop_java.py runs the official client).

A Java broker start and three revives take over a minute on a busy machine, more than this
suite's share of CI time: a reference run (PYRMQ_COMPAT_REFERENCE=1), like the other all-Java
hand-overs that do not fit the default run.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from support.requests import send_v2
from support.servers import JavaBroker

from pyrmq.common.constants import MessageConst
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.pop import AckMessageRequestHeader, PopMessageRequestHeader, build_extra_info, parse_info
from pyrmq.remoting.client import RemotingClient
from pyrmq.store import message as m

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.slow]

NAME = "pop-handover"
#: both brokers read the same files: the same file sizes (tests/compat/test_semantics_a_java.py)
STORE_CONF = {"mappedFileSizeCommitLog": 16 * 1024 * 1024, "mappedFileSizeConsumeQueue": 300000 * 20 // 100}
INVISIBLE_MS = 3000


async def _invoke(addr: str, cmd: RemotingCommand) -> RemotingCommand:
    client = RemotingClient()
    try:
        return await client.invoke(addr, cmd, 10)
    finally:
        await client.close()


def invoke(addr: str, cmd: RemotingCommand) -> RemotingCommand:
    return asyncio.run(_invoke(addr, cmd))


def pop(addr: str, topic: str, group: str) -> tuple[RemotingCommand, list[m.StoredMessage]]:
    h = PopMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=-1,
        max_msg_nums=32,
        invisible_time=INVISIBLE_MS,
        poll_time=0,
        born_time=int(time.time() * 1000),
        init_mode=1,
    )
    r = invoke(addr, RemotingCommand.request(RequestCode.POP_MESSAGE, h.to_ext_fields()))
    if r.code != ResponseCode.SUCCESS:
        return r, []
    return r, list(m.decode_messages(r.body))


def ack(addr: str, broker_name: str, r: RemotingCommand, msg: m.StoredMessage, topic: str, group: str) -> None:
    """The ack a 5.x client sends for a message of the topic itself (not a retry)."""
    ef = r.ext_fields
    start = int(parse_info(ef["startOffsetInfo"])[f"0@{msg.queue_id}"])
    extra = build_extra_info(
        start,
        int(ef["popTime"]),
        int(ef["invisibleTime"]),
        int(ef["reviveQid"]),
        topic,
        broker_name,
        msg.queue_id,
        msg.queue_offset,
    )
    h = AckMessageRequestHeader(group, topic, msg.queue_id, extra, msg.queue_offset)
    a = invoke(addr, RemotingCommand.request(RequestCode.ACK_MESSAGE, h.to_ext_fields()))
    assert a.code == ResponseCode.SUCCESS, a


def pop_until(addr: str, topic: str, group: str, want: set[bytes], timeout: float) -> list[m.StoredMessage]:
    got: list[m.StoredMessage] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and {x.body for x in got} < want:
        _, msgs = pop(addr, topic, group)
        got.extend(msgs)
        if not msgs:
            time.sleep(1)
    return got


@pytest.mark.reference
def test_pending_pops_move_between_pyrmq_and_java(pyrmq_namesrv, pyrmq_broker, java_harness, tmp_path_factory):
    ns = pyrmq_namesrv
    own = pyrmq_broker(ns.addr, name=NAME, fresh=True, **STORE_CONF)
    topic, group = f"PopHand_{uuid.uuid4().hex[:8]}", "pop_handover_g"
    for i in range(3):
        r = invoke(own.addr, send_v2(topic, NAME, f"h{i}".encode(), queues=1))
        assert r.code == ResponseCode.SUCCESS, r
    r, msgs = pop(own.addr, topic, group)
    assert sorted(x.body for x in msgs) == [b"h0", b"h1", b"h2"], r
    ack(own.addr, NAME, r, next(x for x in msgs if x.body == b"h0"), topic, group)
    own.stop()

    java = JavaBroker(
        ns.addr, tmp_path_factory.mktemp("java-on-pyrmq"), store_dir=own.store_dir, name=NAME, **STORE_CONF
    )
    try:
        revived = pop_until(java.addr, topic, group, {b"h1", b"h2"}, timeout=90)
        assert sorted(x.body for x in revived) == [b"h1", b"h2"], java.tail(40)
        for x in revived:  # out of %RETRY%<group>_<topic>, under the topic's name, counted once
            assert (x.topic, x.reconsume_times) == (topic, 1)
            assert MessageConst.POP_CK in x.properties
        # left unacked on Java: pyrmq revives them
    finally:
        java.stop()

    back = pyrmq_broker(ns.addr, name=NAME, store_dir=own.store_dir, fresh=True, **STORE_CONF)
    again = pop_until(back.addr, topic, group, {b"h1", b"h2"}, timeout=60)
    assert sorted(x.body for x in again) == [b"h1", b"h2"], back.tail(60)
    # (h0, acked on pyrmq before the first handover, would have failed both sorted lists)
    assert all(x.reconsume_times == 2 and x.topic == topic for x in again)
