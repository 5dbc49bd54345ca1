"""A broker controller over a tmp store, processors awaited directly (no sockets)."""

from __future__ import annotations

import asyncio

import pytest
from support.fakes import FakeChannel

from pyrmq.broker.config import BrokerConfig
from pyrmq.broker.controller import BrokerController
from pyrmq.protocol.command import RemotingCommand
from pyrmq.remoting.channel import RequestContext, call_handler


class Broker:
    """Controller + the one dispatch rule of the server (RemotingError -> its code)."""

    def __init__(self, controller: BrokerController) -> None:
        self.c = controller
        self.handlers = {}
        from pyrmq.remoting.channel import ProcessorTable

        table = ProcessorTable()
        for p in controller.main_port_processors():
            table.register(p)
        for p in controller.processors():
            table.register(p)
        self.table = table

    async def call(self, cmd: RemotingCommand, channel: FakeChannel | None = None) -> RemotingCommand | None:
        ch = channel or FakeChannel()
        handler = self.table.lookup(cmd.code)
        assert handler is not None, cmd.code
        return await call_handler(handler, RequestContext(ch, None), cmd)


def make_config(tmp_path, **props) -> BrokerConfig:
    base = {
        "brokerClusterName": "TestCluster",
        "brokerName": "broker-t",
        "brokerIP1": "127.0.0.1",
        "listenPort": "10911",
        "storePathRootDir": str(tmp_path / "store"),
        "mappedFileSizeCommitLog": str(1024 * 1024),
        "mappedFileSizeConsumeQueue": str(20 * 1000),
    }
    base.update({k: str(v) for k, v in props.items()})
    return BrokerConfig.from_properties(base)


@pytest.fixture
def make_broker(tmp_path, clock):
    made = []

    def factory(**props) -> Broker:
        c = BrokerController(make_config(tmp_path, **props), clock=clock)
        c.load()
        c.message_store.start()
        made.append(c)
        return Broker(c)

    yield factory
    for c in made:
        c.pull_request_hold_service.shutdown()
        c.message_store.shutdown()


@pytest.fixture
def broker(make_broker):
    return make_broker()


def run(coro):
    return asyncio.run(coro)
