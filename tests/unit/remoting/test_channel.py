"""Channel dispatch and flow control over an in-memory transport (no sockets)."""

from __future__ import annotations

import asyncio

import pytest

from pyrmq.protocol.codes import RequestCode, ResponseCode, SerializeType
from pyrmq.protocol.command import RemotingCommand, encode
from pyrmq.protocol.errors import NoPermission, RemotingSendRequestError
from pyrmq.protocol.framing import FrameDecoder
from pyrmq.remoting.channel import Channel, ProcessorTable, handles


class MemoryTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.out = bytearray()
        self.closing = False
        self.writes = 0  # write/writelines calls: one per flush of the channel

    def write(self, data) -> None:
        assert not self.closing, "write after close"
        self.writes += 1
        self.out += data

    def writelines(self, parts) -> None:
        assert not self.closing, "write after close"
        self.writes += 1
        for p in parts:
            self.out += p

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def get_extra_info(self, name, default=None):
        return {"peername": ("10.0.0.7", 51234), "sockname": ("10.0.0.1", 9876)}.get(name, default)


class Proc:
    @handles(RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.GET_BROKER_CLUSTER_INFO)
    async def both(self, ctx, cmd):
        return RemotingCommand.response(remark=f"{cmd.code}@{ctx.channel.remote_addr}")

    @handles(RequestCode.DELETE_TOPIC_IN_NAMESRV)
    async def denied(self, ctx, cmd):
        raise NoPermission("no")


def make_channel() -> tuple[Channel, MemoryTransport]:
    table = ProcessorTable()
    table.register(Proc())
    ch = Channel(endpoint="ep", table=table)
    tr = MemoryTransport()
    ch.connection_made(tr)
    return ch, tr


def feed(ch: Channel, data: bytes) -> None:
    buf = ch.get_buffer(len(data))
    buf[: len(data)] = data
    del buf
    ch.buffer_updated(len(data))


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_dispatch_fixes_up_responses():
    async def t():
        ch, tr = make_channel()
        assert ch.remote_addr == "10.0.0.7:51234" and ch.local_addr == "10.0.0.1:9876"
        a = RemotingCommand(code=RequestCode.GET_BROKER_CLUSTER_INFO, opaque=11, serialize_type=SerializeType.ROCKETMQ)
        b = RemotingCommand(code=RequestCode.DELETE_TOPIC_IN_NAMESRV, opaque=12)
        c = RemotingCommand(code=RequestCode.GET_ROUTEINFO_BY_TOPIC, opaque=13)
        c.mark_oneway()
        feed(ch, encode(a) + encode(b) + encode(c))
        await settle()
        got = {r.opaque: r for r in FrameDecoder().feed(bytes(tr.out))}
        assert set(got) == {11, 12}  # the one-way request got nothing
        assert got[11].is_response and got[11].serialize_type == SerializeType.ROCKETMQ
        assert got[11].remark == "106@10.0.0.7:51234"
        assert (got[12].code, got[12].remark) == (ResponseCode.NO_PERMISSION, "no")

    asyncio.run(t())


def test_flow_control_event():
    async def t():
        ch, _ = make_channel()
        await asyncio.wait_for(ch.wait_writable(), 1)
        ch.pause_writing()
        waiter = asyncio.ensure_future(ch.wait_writable())
        await settle()
        assert not waiter.done()
        ch.resume_writing()
        await asyncio.wait_for(waiter, 1)

    asyncio.run(t())


def test_protocol_error_closes_and_drops_the_rest():
    async def t():
        ch, tr = make_channel()
        feed(ch, b"\x00\x00\x00\x01garbage")
        assert tr.closing and ch.decoder_failed
        feed(ch, encode(RemotingCommand(code=RequestCode.GET_ROUTEINFO_BY_TOPIC)))  # ignored
        await settle()
        assert tr.out == b""

    asyncio.run(t())


def test_connection_lost_fails_pending_and_calls_on_close_once():
    async def t():
        closed = []
        ch = Channel(endpoint=None, table=ProcessorTable(), on_close=closed.append)
        tr = MemoryTransport()
        ch.connection_made(tr)
        inv = asyncio.ensure_future(ch.invoke(RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE), 5))
        await settle()
        assert ch.pending_count == 1
        sent = FrameDecoder().feed(bytes(tr.out))[0]
        ch.connection_lost(None)
        with pytest.raises(RemotingSendRequestError):
            await inv
        assert closed == [ch] and ch.closed
        assert not ch.send(sent)  # writes after close are dropped

    asyncio.run(t())


def test_response_matched_by_opaque():
    async def t():
        ch, _tr = make_channel()
        r1 = asyncio.ensure_future(ch.invoke(RemotingCommand(code=1, opaque=100), 5))
        r2 = asyncio.ensure_future(ch.invoke(RemotingCommand(code=2, opaque=200), 5))
        await settle()
        feed(ch, encode(RemotingCommand(code=0, opaque=200, flag=1, remark="second")))
        feed(ch, encode(RemotingCommand(code=0, opaque=999, flag=1, remark="stray")))  # ignored
        feed(ch, encode(RemotingCommand(code=0, opaque=100, flag=1, remark="first")))
        assert (await r1).remark == "first" and (await r2).remark == "second"
        assert ch.pending_count == 0

    asyncio.run(t())


def test_unsupported_code_answered_every_time_and_logged_once_per_code(caplog):
    """Java logs ' request type N not supported'; pyrmq logs each code once per processor table,
    for all connections sharing it, and answers every request REQUEST_CODE_NOT_SUPPORTED."""

    async def t():
        ch, tr = make_channel()
        other = Channel(endpoint="ep", table=ch.table)
        other_tr = MemoryTransport()
        other.connection_made(other_tr)
        with caplog.at_level("ERROR", logger="pyrmq.remoting"):
            feed(ch, encode(RemotingCommand(code=9999, opaque=1)) + encode(RemotingCommand(code=9999, opaque=2)))
            feed(other, encode(RemotingCommand(code=9999, opaque=3)) + encode(RemotingCommand(code=9998, opaque=4)))
            await settle()
        answers = list(FrameDecoder().feed(bytes(tr.out))) + list(FrameDecoder().feed(bytes(other_tr.out)))
        assert sorted(r.opaque for r in answers) == [1, 2, 3, 4]
        assert {r.code for r in answers} == {ResponseCode.REQUEST_CODE_NOT_SUPPORTED}
        assert all(r.remark == f" request type {9999 if r.opaque < 4 else 9998} not supported" for r in answers)
        logged = [r.getMessage() for r in caplog.records if "not supported" in r.getMessage()]
        assert len(logged) == 2
        assert any("request type 9999" in m for m in logged) and any("request type 9998" in m for m in logged)

    asyncio.run(t())


def test_answers_ready_in_one_loop_turn_go_out_in_one_write():
    """Responses finished in the same loop turn are written together (one syscall, not one each);
    a lone response is written at the start of the next turn, in order, bodies included."""

    async def t():
        ch, tr = make_channel()
        reqs = [RemotingCommand(code=RequestCode.GET_BROKER_CLUSTER_INFO, opaque=i) for i in range(1, 6)]
        feed(ch, b"".join(encode(r) for r in reqs))
        await settle()
        got = FrameDecoder().feed(bytes(tr.out))
        assert [r.opaque for r in got] == [1, 2, 3, 4, 5]
        assert tr.writes == 1
        ch.send(RemotingCommand.response(remark="lone", body=b"payload"))
        assert tr.writes == 1  # not yet: the rest of this turn may add more
        await asyncio.sleep(0)
        assert tr.writes == 2
        lone = FrameDecoder().feed(bytes(tr.out))[-1]
        assert (lone.remark, lone.body) == ("lone", b"payload")

    asyncio.run(t())


def test_close_writes_what_was_sent_before_it():
    """An answer sent just before close (a refusal, say) still goes out, before the close."""

    async def t():
        ch, tr = make_channel()
        assert ch.send(RemotingCommand.response(remark="bye"))
        ch.close()
        assert tr.closing
        assert FrameDecoder().feed(bytes(tr.out))[0].remark == "bye"
        await settle()  # the flush scheduled by send finds the transport closing: nothing more
        assert tr.writes == 1
        assert not ch.send(RemotingCommand.response(remark="late"))

    asyncio.run(t())


def test_abort_and_connection_lost_drop_unwritten_frames():
    async def t():
        ch, tr = make_channel()
        ch.send(RemotingCommand.response(remark="x"))
        ch.connection_lost(None)
        await settle()
        assert tr.writes == 0 and tr.out == b""

    asyncio.run(t())


def test_send_without_a_running_loop_writes_at_once():
    ch = Channel(endpoint=None, table=ProcessorTable())
    tr = MemoryTransport()
    ch.connection_made(tr)
    assert ch.send(RemotingCommand.response(remark="sync"))
    assert FrameDecoder().feed(bytes(tr.out))[0].remark == "sync"
