"""Front-end processes (remoting/frontend.py) beside a RemotingServer core: their lifetime.
What they forward is tested by running the whole of test_remoting_transport.py through one."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from pyrmq.protocol.codes import RequestCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.remoting.client import RemotingClient
from pyrmq.remoting.server import RemotingServer, RequestContext, handles

pytestmark = pytest.mark.timeout(60)


class Answer:
    @handles(RequestCode.SEND_MESSAGE)
    async def send(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response(remark=ctx.channel.remote_addr)


async def _until(cond, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not cond():
            await asyncio.sleep(0.02)


def test_a_killed_front_end_takes_only_its_connections_and_the_core_stops_the_others():
    async def main() -> None:
        server = RemotingServer("127.0.0.1", 0, name="test", frontends=2)
        server.accept_in_core = False
        server.register(Answer())
        closed: list[str] = []
        server.add_close_listener(lambda ch: closed.append(ch.remote_addr))
        await server.start()
        procs = [p for p, _link, _take in server._frontends]
        assert len(procs) == 2 and all(p.returncode is None for p in procs)
        clients = [RemotingClient(connect_timeout_s=3) for _ in range(8)]
        addr = f"127.0.0.1:{server.port}"
        try:
            for c in clients:  # each client its own connection; the kernel spreads them
                r = await c.invoke(addr, RemotingCommand.request(RequestCode.SEND_MESSAGE), 5)
                assert r.code == 0 and r.remark.startswith("127.0.0.1:")  # the client's own address
            assert len(server.channels) == 8
            by_link = [link.connections for _p, link, _t in server._frontends]
            assert sum(by_link) == 8
            victim = max(range(2), key=lambda i: by_link[i])
            os.kill(procs[victim].pid, signal.SIGKILL)
            await procs[victim].wait()
            await _until(lambda: len(server.channels) == 8 - by_link[victim])
            assert len(closed) == by_link[victim]
            # the survivor still serves: a client whose connection died reconnects through it
            for c in clients:
                r = await c.invoke(addr, RemotingCommand.request(RequestCode.SEND_MESSAGE), 5)
                assert r.code == 0
        finally:
            for c in clients:
                await c.close()
            await server.close()
        survivor = procs[1 - victim]
        assert survivor.returncode == 0  # it exited on the link's EOF

    asyncio.run(main())
