"""QueryRoute and QueryAssignment. Java: ``proxy/grpc/v2/route/RouteActivity`` with the local
mode's ``LocalTopicRouteService``.

Local mode answers with the name servers' route of the topic (every broker that has it) and gives
each broker the gRPC endpoint of its own local-mode proxy: the host of the broker's registered
address with this endpoint's port (``ProxyTopicRouteData(routeData, grpcServerPort)``), so the
brokers of one cluster serve gRPC on the same port, each on its own host. Without a name server,
or for a topic the name servers do not know yet, the route is this broker's own topic config.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from collections.abc import Callable
from typing import Any

from pyrmq.common.attributes import TopicMessageType
from pyrmq.common.constants import is_readable, is_writeable
from pyrmq.grpc.proto import pb, spb
from pyrmq.grpc.status import Code, GrpcProxyError, ok, status
from pyrmq.grpc.validate import validate_group, validate_topic
from pyrmq.protocol.bodies.namesrv import BrokerData, QueueData, TopicRouteData
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.namesrv import GetRouteInfoRequestHeader

log = logging.getLogger("pyrmq.grpc")

MASTER_ID = 0
#: ProxyConfig#topicRouteServiceCacheRefreshSeconds: a route is read again after 20 s
ROUTE_REFRESH_S = 20.0
ROUTE_TIMEOUT_S = 3.0  # TopicRouteService's name-server call

#: RouteActivity#parseTopicMessageType
_ACCEPTED: dict[str, list[int]] = {
    TopicMessageType.NORMAL: [pb.NORMAL],
    TopicMessageType.FIFO: [pb.FIFO],
    TopicMessageType.TRANSACTION: [pb.TRANSACTION],
    TopicMessageType.DELAY: [pb.DELAY],
    TopicMessageType.MIXED: [pb.NORMAL, pb.FIFO, pb.DELAY, pb.TRANSACTION],
}


def topic_message_type(topic_config: Any) -> str:
    """Java TopicConfig#getTopicMessageType: the ``message.type`` attribute, NORMAL without one."""
    return (topic_config.attributes or {}).get("message.type") or TopicMessageType.NORMAL


def permission(perm: int) -> int:
    """RouteActivity#convertToPermission."""
    r, w = is_readable(perm), is_writeable(perm)
    if r and w:
        return pb.READ_WRITE
    if r:
        return pb.READ
    return pb.WRITE if w else pb.NONE


def address_scheme(host: str) -> int:
    """proxy/common/Address#buildScheme: IPv4, IPv6, else a domain name."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return pb.DOMAIN_NAME
    return pb.IPv4 if ip.version == 4 else pb.IPv6


def endpoints(address: str) -> pb.Endpoints:
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    return pb.Endpoints(scheme=address_scheme(host), addresses=[pb.Address(host=host, port=int(port))])


def broker_map(route: TopicRouteData, grpc_port: int) -> dict[str, dict[int, pb.Broker]]:
    """RouteActivity#buildBrokerMap over ProxyTopicRouteData(routeData, grpcServerPort): each
    broker id's registered host with the gRPC port."""
    brokers: dict[str, dict[int, pb.Broker]] = {}
    for bd in route.broker_datas or []:
        name = bd.broker_name or ""
        by_id: dict[int, pb.Broker] = {}
        for broker_id, addr in bd.broker_addrs.items():
            host = addr.rpartition(":")[0].strip("[]")
            by_id[int(broker_id)] = pb.Broker(name=name, id=int(broker_id), endpoints=endpoints(f"{host}:{grpc_port}"))
        brokers[name] = by_id
    return brokers


def queues_of(qd: QueueData, topic: Any, accepted: list[int], broker: pb.Broker) -> list[pb.MessageQueue]:
    """RouteActivity#genMessageQueueFromQueueData: read-only, write-only, read-write, then no-permission ids."""
    perm, rq, wq = qd.perm, qd.read_queue_nums, qd.write_queue_nums
    r = w = rw = n = 0
    if is_readable(perm) and is_writeable(perm):
        rw = min(wq, rq)
        r, w = rq - rw, wq - rw
    elif is_writeable(perm):
        w = wq
    elif is_readable(perm):
        r = rq
    else:
        n = max(1, max(wq, rq))
    queues = []
    qid = 0
    for count, perm_ in ((r, pb.READ), (w, pb.WRITE), (rw, pb.READ_WRITE), (n, pb.NONE)):
        for _ in range(count):
            queues.append(
                pb.MessageQueue(topic=topic, id=qid, permission=perm_, broker=broker, accept_message_types=accepted)
            )
            qid += 1
    return queues


class NameServerRoutes:
    """The topic routes the name servers know, read again after ROUTE_REFRESH_S (Java
    TopicRouteService's cache). An unknown topic is not remembered, so a topic created a moment
    ago is found on the next call."""

    def __init__(self, controller: Any, now: Callable[[], float] = time.monotonic) -> None:
        self.controller = controller
        self.now = now
        self._cache: dict[str, tuple[float, TopicRouteData]] = {}

    async def get(self, topic: str) -> TopicRouteData | None:
        cached = self._cache.get(topic)
        if cached is not None and self.now() - cached[0] < ROUTE_REFRESH_S:
            return cached[1]
        client: Any = getattr(self.controller, "outer_client", None)
        ext = GetRouteInfoRequestHeader(topic=topic).to_ext_fields()
        for addr in self.controller.config.namesrv_addrs if client is not None else ():
            try:
                cmd = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, dict(ext))
                resp = await client.invoke(addr, cmd, ROUTE_TIMEOUT_S)
            except Exception as e:
                log.warning("gRPC route: route of %s from name server %s failed: %s", topic, addr, e)
                continue
            if resp.code != ResponseCode.SUCCESS or not resp.body:
                break
            route = TopicRouteData.decode(resp.body)
            self._cache[topic] = (self.now(), route)
            return route
        self._cache.pop(topic, None)
        return cached[1] if cached is not None else None  # Java's reload keeps the old route on failure


class RouteActivity:
    def __init__(self, controller: Any, address: Any) -> None:
        self.controller = controller
        self.address = address  # () -> "host:port" of the gRPC endpoint
        self.routes = NameServerRoutes(controller)

    def topic_config(self, topic: str) -> Any:
        tc = self.controller.topic_config_manager.select_topic_config(topic)
        if tc is None:  # Java: MQClientException TOPIC_NOT_EXIST from the route lookup
            raise GrpcProxyError(Code.TOPIC_NOT_FOUND, f"No topic route info in name server for the topic: {topic}")
        return tc

    def local_route(self, topic: str) -> tuple[QueueData, BrokerData] | None:
        """LocalTopicRouteService#toTopicRouteData: this broker's queues of the topic, or None."""
        tc = self.controller.topic_config_manager.select_topic_config(topic)
        if tc is None:
            return None
        cfg = self.controller.config
        name = cfg["brokerName"]
        qd = QueueData(name, tc.read_queue_nums, tc.write_queue_nums, tc.perm, tc.topic_sys_flag)
        return qd, BrokerData(cfg["brokerClusterName"], name, {MASTER_ID: self.controller.broker_addr})

    async def topic_route(self, topic: str) -> TopicRouteData:
        """The name servers' route, with this broker's own queues added when the name servers do
        not list them yet (a topic created since the last registration); TOPIC_NOT_FOUND when
        neither knows the topic."""
        route = await self.routes.get(topic)
        own = self.local_route(topic)
        if route is None or not route.queue_datas:
            if own is None:
                raise GrpcProxyError(Code.TOPIC_NOT_FOUND, f"No topic route info in name server for the topic: {topic}")
            return TopicRouteData(queue_datas=[own[0]], broker_datas=[own[1]])
        if own is not None and all(qd.broker_name != own[0].broker_name for qd in route.queue_datas):
            brokers = [bd for bd in route.broker_datas or [] if bd.broker_name != own[1].broker_name]
            return TopicRouteData(queue_datas=[*route.queue_datas, own[0]], broker_datas=[*brokers, own[1]])
        return route

    def grpc_port(self) -> int:
        return int(self.address().rpartition(":")[2])

    async def query_route(self, ctx: Any, request: Any) -> Any:
        validate_topic(request.topic)
        topic = request.topic.name
        route = await self.topic_route(topic)
        tc = self.controller.topic_config_manager.select_topic_config(topic)  # LocalMetadataService
        accepted = _ACCEPTED.get(topic_message_type(tc), []) if tc is not None else []
        brokers = broker_map(route, self.grpc_port())
        queues: list[pb.MessageQueue] = []
        for qd in route.queue_datas or []:
            by_id = brokers.get(qd.broker_name or "")
            if by_id is None:  # Java stops at the first queue data without broker data
                break
            for broker in by_id.values():
                queues.extend(queues_of(qd, request.topic, accepted or [pb.MESSAGE_TYPE_UNSPECIFIED], broker))
        return spb.QueryRouteResponse(status=ok(), message_queues=queues)

    async def query_assignment(self, ctx: Any, request: Any) -> Any:
        validate_topic(request.topic)
        validate_group(request.group)
        route = await self.topic_route(request.topic.name)
        group = self.controller.subscription_group_manager.find_subscription_group_config(request.group.name)
        fifo = bool(group is not None and group.consume_message_orderly)
        brokers = broker_map(route, self.grpc_port())
        assignments = []
        for qd in route.queue_datas or []:
            master = brokers.get(qd.broker_name or "", {}).get(MASTER_ID)
            if not (is_readable(qd.perm) and qd.read_queue_nums > 0) or master is None:
                continue
            perm = permission(qd.perm)
            for i in range(qd.read_queue_nums) if fifo else [-1]:
                mq = pb.MessageQueue(topic=request.topic, id=i, permission=perm, broker=master)
                assignments.append(pb.Assignment(message_queue=mq))
        if not assignments:
            return spb.QueryAssignmentResponse(status=status(Code.FORBIDDEN, "no readable queue"))
        return spb.QueryAssignmentResponse(status=ok(), assignments=assignments)


__all__ = ["NameServerRoutes", "RouteActivity", "broker_map", "endpoints", "permission", "topic_message_type"]
