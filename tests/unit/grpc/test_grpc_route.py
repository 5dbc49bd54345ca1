"""The route activity's answer from a name-server route and this broker's topic config
(Java RouteActivity over LocalTopicRouteService / ProxyTopicRouteData(route, grpcServerPort))."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from pyrmq.grpc.proto import pb, spb
from pyrmq.grpc.route import RouteActivity
from pyrmq.grpc.status import GrpcProxyError
from pyrmq.protocol.bodies.namesrv import BrokerData, QueueData, TopicRouteData
from pyrmq.protocol.codes import ResponseCode
from pyrmq.protocol.command import RemotingCommand


class _Config(dict):
    namesrv_addrs = ["127.0.0.1:9876"]


class _Names:
    """An outer client whose name server knows `route` (None: TOPIC_NOT_EXIST)."""

    def __init__(self, route: TopicRouteData | None) -> None:
        self.route = route
        self.calls = 0

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        self.calls += 1
        if self.route is None:
            return RemotingCommand.response(ResponseCode.TOPIC_NOT_EXIST, "no route")
        return RemotingCommand.response(ResponseCode.SUCCESS, body=self.route.encode())


def _activity(route: TopicRouteData | None, local_queues: int | None) -> tuple[RouteActivity, _Names]:
    tc = (
        None
        if local_queues is None
        else SimpleNamespace(
            read_queue_nums=local_queues, write_queue_nums=local_queues, perm=6, topic_sys_flag=0, attributes={}
        )
    )
    names = _Names(route)
    controller: Any = SimpleNamespace(
        config=_Config(brokerName="b-local", brokerClusterName="C"),
        outer_client=names,
        broker_addr="10.0.0.1:10911",
        topic_config_manager=SimpleNamespace(select_topic_config=lambda topic: tc),
        subscription_group_manager=SimpleNamespace(find_subscription_group_config=lambda group: None),
    )
    return RouteActivity(controller, lambda: "0.0.0.0:8181"), names


def _route(*brokers: tuple[str, str, int]) -> TopicRouteData:
    return TopicRouteData(
        queue_datas=[QueueData(name, n, n, 6, 0) for name, _, n in brokers],
        broker_datas=[BrokerData("C", name, {0: addr}) for name, addr, _ in brokers],
    )


def _queues(activity: RouteActivity) -> list[tuple[str, int, str, int]]:
    req = spb.QueryRouteRequest(topic=pb.Resource(name="T"))
    r = asyncio.run(activity.query_route(None, req))
    assert r.status.code == pb.Code.OK, r.status
    out = []
    for q in r.message_queues:
        (a,) = q.broker.endpoints.addresses
        out.append((q.broker.name, q.id, a.host, a.port))
    return out


def test_every_broker_of_the_route_at_its_host_with_this_endpoints_port() -> None:
    act, _ = _activity(_route(("b-local", "10.0.0.1:10911", 1), ("b-other", "10.0.0.2:10911", 2)), 1)
    assert _queues(act) == [
        ("b-local", 0, "10.0.0.1", 8181),
        ("b-other", 0, "10.0.0.2", 8181),
        ("b-other", 1, "10.0.0.2", 8181),
    ]


def test_own_queues_added_while_the_name_server_lags_and_alone_without_a_route() -> None:
    act, _ = _activity(_route(("b-other", "10.0.0.2:10911", 1)), 2)
    assert _queues(act) == [
        ("b-other", 0, "10.0.0.2", 8181),
        ("b-local", 0, "10.0.0.1", 8181),
        ("b-local", 1, "10.0.0.1", 8181),
    ]
    act, names = _activity(None, 1)
    assert _queues(act) == [("b-local", 0, "10.0.0.1", 8181)]
    act, names = _activity(None, None)
    with pytest.raises(GrpcProxyError, match="No topic route info in name server for the topic: T"):
        _queues(act)
    calls = names.calls
    with pytest.raises(GrpcProxyError):  # an unknown topic is asked again, not remembered
        _queues(act)
    assert names.calls == calls + 1


def test_a_known_route_is_kept_for_20_seconds() -> None:
    act, names = _activity(_route(("b-local", "10.0.0.1:10911", 1)), 1)
    _queues(act)
    _queues(act)
    assert names.calls == 1
