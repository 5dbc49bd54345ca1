"""Bad input to the POP requests never escapes as an unexpected exception: any header values and
bodies get an answer with a response code (Java's for what it checks), never a crash or a hang,
and the broker keeps popping afterwards."""

from __future__ import annotations

import asyncio
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.fakes import FakeChannel

from pyrmq.protocol.bodies.common import TopicConfig
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand

from .conftest import Broker

CODES = [
    RequestCode.POP_MESSAGE,
    RequestCode.ACK_MESSAGE,
    RequestCode.BATCH_ACK_MESSAGE,
    RequestCode.CHANGE_MESSAGE_INVISIBLETIME,
    RequestCode.PEEK_MESSAGE,
    RequestCode.NOTIFICATION,
    RequestCode.POLLING_INFO,
    RequestCode.QUERY_ASSIGNMENT,
    RequestCode.SET_MESSAGE_REQUEST_MODE,
]
KEYS = [
    "consumerGroup",
    "topic",
    "queueId",
    "maxMsgNums",
    "invisibleTime",
    "pollTime",
    "bornTime",
    "initMode",
    "expType",
    "exp",
    "order",
    "attemptId",
    "extraInfo",
    "offset",
    "suspend",
]
VALUES = st.one_of(
    st.sampled_from(["PopT", "cg", "-1", "0", "1", "33", "999", "true", "TAG", "a||b", "0 1 2 3 0 b 0 0", ""]),
    st.integers(-(2**63), 2**63 - 1).map(str),
    st.text(max_size=20),
)
BODIES = st.one_of(
    st.none(),
    st.binary(max_size=64),
    st.sampled_from([b"{}", b'{"acks":[{"t":"PopT","c":"cg","r":"7","b":"!!"}]}', b'{"topic":"PopT","mode":"NOPE"}']),
)
VALID = {
    "consumerGroup": "cg",
    "topic": "PopT",
    "queueId": "-1",
    "maxMsgNums": "8",
    "invisibleTime": "60000",
    "bornTime": "0",
    "initMode": "1",
    "extraInfo": "0 1700000000000 60000 0 0 broker-t 0 0",
    "offset": "0",
}
#: what call_handler writes for an exception that is not a RemotingError (a bug)
UNEXPECTED = re.compile(r"^[A-Za-z_]+(Error|Exception): ")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(code=st.sampled_from(CODES), ext=st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=10), body=BODIES)
def test_any_pop_request_gets_an_answer(broker: Broker, code, ext, body):
    broker.c.topic_config_manager.topic_config_table.setdefault(
        "PopT", TopicConfig(topic_name="PopT", read_queue_nums=2, write_queue_nums=2)
    )
    # a valid request of every kind, some of its fields replaced; nothing waits (pollTime 0)
    ext = {**VALID, **ext, "pollTime": "0"}

    async def go():
        r = await asyncio.wait_for(broker.call(RemotingCommand.request(code, ext, body), FakeChannel()), 5)
        peek = {"consumerGroup": "cg", "topic": "PopT", "queueId": "-1", "maxMsgNums": "1"}
        after = await broker.call(RemotingCommand.request(RequestCode.PEEK_MESSAGE, peek), FakeChannel())
        assert after.code in (ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND), after  # still serving
        return r

    r = asyncio.run(go())
    assert r is not None
    assert isinstance(r.code, int)
    if r.code == ResponseCode.SYSTEM_ERROR:
        assert not UNEXPECTED.match(r.remark or ""), r.remark
