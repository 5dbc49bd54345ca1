"""A storm of broken connections at a permissive TLS port (the default): connections that close
at once, send a TLS record byte then garbage, break off a real handshake, stall after a
ClientHello, or send a plain frame too large; afterwards the server serves plain and TLS
requests, and every broken connection is gone (none left half-admitted)."""

from __future__ import annotations

import asyncio
import os
import random
import ssl

import pytest

from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.remoting.client import RemotingClient
from pyrmq.remoting.server import RemotingServer, RequestContext, handles
from pyrmq.remoting.tls import ServerTls, TlsConfig

pytestmark = pytest.mark.timeout(120)

CODE = int(RequestCode.GET_BROKER_CLUSTER_INFO)
CONNECTIONS = 400


class Answer:
    @handles(CODE)
    async def answer(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response(ResponseCode.SUCCESS, "ok")


def _client_hello() -> bytes:
    """The first flight of a real TLS client, taken from an in-memory handshake."""
    ctx = TlsConfig().client_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_side=False)
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    return outgoing.read()


async def _broken(port: int, kind: int, hello: bytes, rng: random.Random) -> None:
    try:
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return  # a full backlog may refuse some: that is the client's problem, not a crash
    try:
        if kind == 1:
            writer.write(b"\x16" + rng.randbytes(rng.randrange(1, 300)))
        elif kind == 2:
            writer.write(hello[: rng.randrange(1, len(hello))])  # a ClientHello cut short
        elif kind == 3:
            writer.write(hello)  # a whole ClientHello, then gone before the answer is read
        elif kind == 4:
            writer.write(b"\x7f\xff\xff\xff" + os.urandom(64))  # a plain frame far too large
        if kind:
            await writer.drain()
            await asyncio.sleep(rng.random() * 0.05)
    except OSError:
        pass
    finally:
        writer.close()


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])  # servers run on uvloop when it is installed
def test_storm_of_broken_connections_leaves_the_server_serving(loop: str) -> None:
    async def main() -> None:
        server = RemotingServer("127.0.0.1", 0, name="tls-storm", tls=ServerTls(TlsConfig()))
        server.register(Answer())
        await server.start()
        try:
            hello = _client_hello()
            rng = random.Random(14)
            for start in range(0, CONNECTIONS, 50):
                await asyncio.gather(*(_broken(server.port, i % 5, hello, rng) for i in range(start, start + 50)))
            for tls in (None, TlsConfig().client_context()):
                async with RemotingClient(tls=tls) as c:
                    reply = await c.invoke(f"127.0.0.1:{server.port}", RemotingCommand(code=CODE), 10)
                    assert (reply.code, reply.remark) == (ResponseCode.SUCCESS, "ok")
            async with asyncio.timeout(15):  # every broken connection closed, none stuck admitting
                while server.channels or server.admitting:
                    await asyncio.sleep(0.1)
        finally:
            await server.close()

    if loop == "uvloop":
        import uvloop  # the `fast` extra, installed by tools/test

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(main())
    else:
        asyncio.run(main())
