"""Codes 1007 and 1008 on a broker (Java AdminBrokerProcessor#getBrokerEpochCache and
#notifyBrokerRoleChanged): outside controller mode 1007 is Java's SYSTEM_ERROR and 1008 a no-op
SUCCESS; in controller mode 1007 answers the epoch file as an EpochEntryCache and 1008 hands the
header and the SyncStateSet to the ReplicasManager."""

from __future__ import annotations

import asyncio

from support.fakes import FakeChannel

from pyrmq.broker.processor.replicas import ReplicasProcessor
from pyrmq.ha.epoch import EpochFileCache
from pyrmq.protocol.bodies.controller import EpochEntryCache, SyncStateSet
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.controller import NotifyBrokerRoleChangedRequestHeader
from pyrmq.remoting.server import RequestContext

from .conftest import make_config


class FakeStore:
    def get_max_phy_offset(self) -> int:
        return 124234


class FakeHA:
    def __init__(self) -> None:
        self.epoch_cache = EpochFileCache()


class FakeReplicas:
    def __init__(self) -> None:
        self.ha = FakeHA()
        self.ha.epoch_cache.append_entry(1, 0)
        self.ha.epoch_cache.append_entry(2, 124000)
        self.changes: list[tuple] = []

    async def change_broker_role(self, *args) -> None:
        self.changes.append(args)


def call(processor, cmd: RemotingCommand) -> RemotingCommand:
    handler = {
        RequestCode.GET_BROKER_EPOCH_CACHE: processor.get_broker_epoch_cache,
        RequestCode.NOTIFY_BROKER_ROLE_CHANGED: processor.notify_broker_role_changed,
    }[cmd.code]
    return asyncio.run(handler(RequestContext(FakeChannel("127.0.0.1:1"), None), cmd))


def notify() -> RemotingCommand:
    header = NotifyBrokerRoleChangedRequestHeader("127.0.0.1:20911", 2, 3, 2)
    body = SyncStateSet({2}, 3).encode()
    return RemotingCommand.request(RequestCode.NOTIFY_BROKER_ROLE_CHANGED, header.to_ext_fields(), body)


def test_outside_controller_mode(tmp_path):
    p = ReplicasProcessor(config=make_config(tmp_path), message_store=FakeStore(), replicas_manager=None)
    r = call(p, RemotingCommand.request(RequestCode.GET_BROKER_EPOCH_CACHE, {}))
    assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, "this request only for controllerMode ")
    assert call(p, notify()).code == ResponseCode.SUCCESS


def test_in_controller_mode(tmp_path):
    rm = FakeReplicas()
    config = make_config(tmp_path, enableControllerMode="true", brokerId="2")
    p = ReplicasProcessor(config=config, message_store=FakeStore(), replicas_manager=rm)
    r = call(p, RemotingCommand.request(RequestCode.GET_BROKER_EPOCH_CACHE, {}))
    assert r.code == ResponseCode.SUCCESS
    cache = EpochEntryCache.decode(r.body)
    assert (cache.cluster_name, cache.broker_name, cache.broker_id, cache.max_offset) == (
        "TestCluster",
        "broker-t",
        2,
        124234,
    )
    assert [(e.epoch, e.start_offset, e.end_offset) for e in cache.epoch_list] == [
        (1, 0, 124000),
        (2, 124000, (1 << 63) - 1),
    ]
    assert call(p, notify()).code == ResponseCode.SUCCESS
    assert rm.changes == [(2, "127.0.0.1:20911", 2, 3, {2})]
    bad = RemotingCommand.request(RequestCode.NOTIFY_BROKER_ROLE_CHANGED, {}, b"{not json")
    assert call(p, bad).code == ResponseCode.SYSTEM_ERROR
