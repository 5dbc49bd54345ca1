"""Real RemotingServer on 127.0.0.1:0 with RemotingClient and raw sockets."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from pyrmq.protocol.codes import RequestCode, ResponseCode, SerializeType
from pyrmq.protocol.command import RemotingCommand, encode
from pyrmq.protocol.errors import RemotingSendRequestError, RemotingTimeout, TopicNotExist
from pyrmq.protocol.framing import FrameDecoder
from pyrmq.remoting.client import RemotingClient
from pyrmq.remoting.server import Channel, RemotingServer, RequestContext, handles

pytestmark = pytest.mark.timeout(30)


class EchoProcessor:
    """Test processor: a few codes with distinct behaviours."""

    def __init__(self) -> None:
        self.oneway_seen: asyncio.Queue[RemotingCommand] = asyncio.Queue()
        self.release_slow = asyncio.Event()
        self.channels: list[Channel] = []

    @handles(RequestCode.GET_ROUTEINFO_BY_TOPIC)
    async def route(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        topic = cmd.ext("topic")
        if topic == "missing":
            raise TopicNotExist(f"No topic route info in name server for the topic: {topic}")
        return cmd.make_response(body=f"route:{topic}".encode(), ext_fields={"peer": ctx.channel.remote_addr})

    @handles(RequestCode.PULL_MESSAGE)
    async def slow(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        await self.release_slow.wait()
        return cmd.make_response(remark="slow")

    @handles(RequestCode.SEND_MESSAGE)
    async def fast(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        self.release_slow.set()
        return cmd.make_response(remark="fast")

    @handles(RequestCode.UPDATE_CONSUMER_OFFSET)
    async def oneway(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        await self.oneway_seen.put(cmd)
        return cmd.make_response()  # must be dropped: the request is one-way

    @handles(RequestCode.HEART_BEAT)
    async def boom(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        raise RuntimeError("kaboom")

    @handles(RequestCode.REGISTER_BROKER)
    async def remember(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        self.channels.append(ctx.channel)
        ctx.channel.attrs["registered"] = True
        return cmd.make_response()


#: the layout every test here runs in: connections held by the server itself, or by a front-end
#: process that forwards their bytes (remoting/frontend.py; the core does the rest unchanged)
_LAYOUT = {"frontends": 0}


@pytest.fixture(autouse=True, params=["one-process", "front-end"])
def layout(request):
    _LAYOUT["frontends"] = 1 if request.param == "front-end" else 0
    yield request.param
    _LAYOUT["frontends"] = 0


def run(test: Callable[..., Awaitable[Any]], **server_kw: Any) -> Any:
    async def main() -> Any:
        server = RemotingServer("127.0.0.1", 0, name="test", frontends=_LAYOUT["frontends"], **server_kw)
        server.accept_in_core = False  # with a front-end, every connection goes through it
        proc = EchoProcessor()
        server.register(proc)
        await server.start()
        client = RemotingClient(connect_timeout_s=2)
        try:
            async with asyncio.timeout(20):
                return await test(server, client, proc, f"127.0.0.1:{server.port}")
        finally:
            await client.close()
            await server.close()

    return asyncio.run(main())


def test_request_response_both_serialize_types():
    async def t(server, client, proc, addr):
        for st in (SerializeType.JSON, SerializeType.ROCKETMQ):
            req = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicTest"})
            req.serialize_type = st
            resp = await client.invoke(addr, req, 3)
            assert resp.is_response
            assert resp.code == ResponseCode.SUCCESS
            assert resp.opaque == req.opaque
            assert resp.serialize_type == st  # answered in the request's type
            assert resp.body == b"route:TopicTest"
            host, port = resp.ext("peer").split(":")
            assert host == "127.0.0.1" and int(port) > 0

    run(t)


def test_remoting_error_maps_to_its_code():
    async def t(server, client, proc, addr):
        req = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "missing"})
        resp = await client.invoke(addr, req, 3)
        assert resp.code == ResponseCode.TOPIC_NOT_EXIST == 17
        assert resp.remark == "No topic route info in name server for the topic: missing"

    run(t)


def test_out_of_order_responses():
    async def t(server, client, proc, addr):
        slow = asyncio.ensure_future(client.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE), 5))
        await asyncio.sleep(0.05)
        assert not slow.done()
        fast = await client.invoke(addr, RemotingCommand.request(RequestCode.SEND_MESSAGE), 5)
        assert fast.remark == "fast"
        slow_resp = await slow
        assert slow_resp.remark == "slow"
        assert len(server.channels) == 1  # both over the same connection

    run(t)


def test_oneway_gets_no_reply():
    async def t(server, client, proc, addr):
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        oneway = RemotingCommand(code=RequestCode.UPDATE_CONSUMER_OFFSET, opaque=41, ext_fields={"q": "1"})
        oneway.mark_oneway()
        writer.write(encode(oneway))
        seen = await asyncio.wait_for(proc.oneway_seen.get(), 3)
        assert seen.is_oneway and seen.ext("q") == "1"
        await asyncio.sleep(0.05)  # the handler has returned a response object by now
        writer.write(encode(RemotingCommand(code=RequestCode.SEND_MESSAGE, opaque=42)))
        dec = FrameDecoder()
        got: list[RemotingCommand] = []
        while not got:
            got += dec.feed(await asyncio.wait_for(reader.read(65536), 3))
        assert [c.opaque for c in got] == [42] and dec.buffered == 0
        writer.close()

    run(t)


def test_unknown_code_and_handler_exception():
    async def t(server, client, proc, addr):
        resp = await client.invoke(addr, RemotingCommand.request(9999), 3)
        assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED == 3
        assert resp.remark == " request type 9999 not supported"
        resp = await client.invoke(addr, RemotingCommand.request(RequestCode.HEART_BEAT), 3)
        assert resp.code == ResponseCode.SYSTEM_ERROR == 1
        assert "kaboom" in resp.remark
        # the connection survives both
        resp = await client.invoke(addr, RemotingCommand.request(RequestCode.SEND_MESSAGE), 3)
        assert resp.code == 0

    run(t)


def test_default_handler():
    async def t(server, client, proc, addr):
        async def fallback(ctx, cmd):
            return cmd.make_response(remark=f"default {cmd.code}")

        server.register_default(fallback)
        resp = await client.invoke(addr, RemotingCommand.request(4242), 3)
        assert resp.code == 0 and resp.remark == "default 4242"

    run(t)


def test_garbage_closes_only_that_connection():
    async def t(server, client, proc, addr):
        # a healthy client connection first
        assert (await client.invoke(addr, RemotingCommand.request(RequestCode.SEND_MESSAGE), 3)).code == 0
        closed: list[Channel] = []
        server.add_close_listener(closed.append)
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        # frame length 12, header-length word says serialize type 7
        writer.write(struct.pack(">iI", 12, (7 << 24) | 4) + b"abcdefgh")
        await writer.drain()
        assert await asyncio.wait_for(reader.read(), 3) == b""  # server closed it
        writer.close()
        for _ in range(100):
            if closed:
                break
            await asyncio.sleep(0.01)
        assert len(closed) == 1
        assert (await client.invoke(addr, RemotingCommand.request(RequestCode.SEND_MESSAGE), 3)).code == 0
        assert len(server.channels) == 1

    run(t)


def test_raw_socket_frames_split_and_pipelined():
    """A plain socket writes two frames in odd chunks; both answered in order of completion."""

    async def t(server, client, proc, addr):
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        a = RemotingCommand(code=RequestCode.GET_ROUTEINFO_BY_TOPIC, opaque=0x01020304, ext_fields={"topic": "A"})
        b = RemotingCommand(
            code=RequestCode.GET_ROUTEINFO_BY_TOPIC,
            opaque=0x05060708,
            ext_fields={"topic": "B"},
            serialize_type=SerializeType.ROCKETMQ,
        )
        data = encode(a) + encode(b)
        for i in range(0, len(data), 7):
            writer.write(data[i : i + 7])
            await writer.drain()
        dec = FrameDecoder()
        got: dict[int, RemotingCommand] = {}
        while len(got) < 2:
            chunk = await asyncio.wait_for(reader.read(65536), 3)
            assert chunk
            for c in dec.feed(chunk):
                got[c.opaque] = c
        assert got[0x01020304].body == b"route:A" and got[0x01020304].serialize_type == 0
        assert got[0x05060708].body == b"route:B" and got[0x05060708].serialize_type == 1
        writer.close()

    run(t)


def test_server_to_client_invoke_and_oneway():
    class ClientSide:
        def __init__(self) -> None:
            self.notified: asyncio.Queue[RemotingCommand] = asyncio.Queue()

        @handles(RequestCode.GET_CONSUMER_RUNNING_INFO)
        async def running_info(self, ctx, cmd):
            return cmd.make_response(body=b"running:" + cmd.ext("consumerGroup").encode())

        @handles(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED)
        async def notify(self, ctx, cmd):
            await self.notified.put(cmd)

    async def t(server, client, proc, addr):
        side = ClientSide()
        client.register(side)
        assert (await client.invoke(addr, RemotingCommand.request(RequestCode.REGISTER_BROKER), 3)).code == 0
        server_ch = proc.channels[0]
        assert server_ch.attrs["registered"] is True
        assert server_ch.local_addr == addr
        resp = await server_ch.invoke(
            RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "CG"}), 3
        )
        assert resp.is_response and resp.body == b"running:CG"
        # a code the client does not handle
        resp = await server_ch.invoke(RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE), 3)
        assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        server_ch.send_oneway(RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"g": "CG"}))
        n = await asyncio.wait_for(side.notified.get(), 3)
        assert n.is_oneway and n.ext("g") == "CG"

    run(t)


def test_invoke_timeout_and_connection_drop_fail_pending():
    async def t(server, client, proc, addr):
        with pytest.raises(RemotingTimeout):
            await client.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE), 0.1)
        ch = await client.get_channel(addr)
        assert ch.pending_count == 0  # timeout removed the entry
        fut1 = asyncio.ensure_future(client.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE), 5))
        fut2 = asyncio.ensure_future(client.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE), 5))
        await asyncio.sleep(0.05)
        assert ch.pending_count == 2
        for sch in list(server.channels):
            sch.close()
        for fut in (fut1, fut2):
            with pytest.raises(RemotingSendRequestError):
                await fut
        # the next invoke reconnects on demand
        resp = await client.invoke(addr, RemotingCommand.request(RequestCode.SEND_MESSAGE), 3)
        assert resp.code == 0
        assert (await client.get_channel(addr)) is not ch

    run(t)


def test_close_listener_fires_once_per_connection():
    async def t(server, client, proc, addr):
        calls: list[str] = []
        async_calls: list[str] = []

        async def async_listener(ch: Channel) -> None:
            async_calls.append(ch.remote_addr)

        server.add_close_listener(lambda ch: calls.append(ch.remote_addr))
        server.add_close_listener(async_listener)
        await client.invoke(addr, RemotingCommand.request(RequestCode.REGISTER_BROKER), 3)
        client_addr = proc.channels[0].remote_addr
        client.close_channel(addr)
        for _ in range(200):
            if calls and async_calls:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        assert calls == [client_addr] and async_calls == [client_addr]

    run(t)


def test_idle_connection_is_closed():
    async def t(server, client, proc, addr):
        closed: list[Channel] = []
        server.add_close_listener(closed.append)
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        # stays open while active
        for _ in range(3):
            writer.write(encode(RemotingCommand.request(RequestCode.SEND_MESSAGE)))
            await writer.drain()
            await asyncio.sleep(0.1)
        assert not closed
        data = await asyncio.wait_for(reader.read(), 5)  # then idles until the server closes
        assert len(closed) == 1
        assert len(FrameDecoder().feed(data)) == 3
        writer.close()

    run(t, idle_seconds=0.6)


def test_duplicate_code_registration_fails():
    class Other:
        @handles(RequestCode.SEND_MESSAGE)
        async def again(self, ctx, cmd):
            return None

    server = RemotingServer("127.0.0.1", 0)
    server.register(EchoProcessor())
    with pytest.raises(ValueError, match="already handled"):
        server.register(Other())


def test_oversized_frame_closes_connection():
    async def t(server, client, proc, addr):
        s = socket.create_connection(("127.0.0.1", server.port), timeout=3)
        s.sendall(struct.pack(">i", 2048))  # over the 1 KiB limit configured below
        s.settimeout(3)
        assert await asyncio.get_running_loop().run_in_executor(None, s.recv, 10) == b""
        s.close()

    run(t, max_frame_length=1024)
