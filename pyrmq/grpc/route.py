"""QueryRoute and QueryAssignment. Java: ``proxy/grpc/v2/route/RouteActivity``.

In local mode the Java proxy answers with the endpoints the client used (the SDK keeps talking to
the proxy); here the queues are this broker's, from its topic config: the route lists one
broker, this one, reached through the gRPC endpoint.
"""

from __future__ import annotations

from typing import Any

from pyrmq.common.attributes import TopicMessageType
from pyrmq.common.constants import is_readable, is_writeable
from pyrmq.grpc.proto import pb, spb
from pyrmq.grpc.status import Code, GrpcProxyError, ok, status
from pyrmq.grpc.validate import validate_group, validate_topic

MASTER_ID = 0

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


def endpoints(address: str) -> pb.Endpoints:
    host, _, port = address.rpartition(":")
    scheme = pb.IPv6 if ":" in host else pb.IPv4
    return pb.Endpoints(scheme=scheme, addresses=[pb.Address(host=host.strip("[]"), port=int(port))])


class RouteActivity:
    def __init__(self, controller: Any, address: Any) -> None:
        self.controller = controller
        self.address = address  # () -> "host:port" of the gRPC endpoint

    def broker(self, requested: Any = None) -> pb.Broker:
        """Local mode answers with the endpoints the client asked through (RouteActivity#convertToAddressList:
        its hosts, this endpoint's port), else this endpoint's own address."""
        own = endpoints(self.address())
        if requested is not None and len(requested.addresses) > 0:
            port = own.addresses[0].port
            own = pb.Endpoints(
                scheme=requested.scheme or own.scheme,
                addresses=[pb.Address(host=a.host, port=port) for a in requested.addresses],
            )
        return pb.Broker(name=self.controller.config["brokerName"], id=MASTER_ID, endpoints=own)

    def topic_config(self, topic: str) -> Any:
        tc = self.controller.topic_config_manager.select_topic_config(topic)
        if tc is None:  # Java: MQClientException TOPIC_NOT_EXIST from the route lookup
            raise GrpcProxyError(Code.TOPIC_NOT_FOUND, f"No topic route info in name server for the topic: {topic}")
        return tc

    async def query_route(self, ctx: Any, request: Any) -> Any:
        validate_topic(request.topic)
        tc = self.topic_config(request.topic.name)
        accepted = _ACCEPTED.get(topic_message_type(tc), [pb.MESSAGE_TYPE_UNSPECIFIED])
        broker = self.broker(request.endpoints)
        perm, rq, wq = tc.perm, tc.read_queue_nums, tc.write_queue_nums
        r = w = rw = n = 0
        if is_readable(perm) and is_writeable(perm):  # RouteActivity#genMessageQueueFromQueueData
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
                    pb.MessageQueue(
                        topic=request.topic, id=qid, permission=perm_, broker=broker, accept_message_types=accepted
                    )
                )
                qid += 1
        return spb.QueryRouteResponse(status=ok(), message_queues=queues)

    async def query_assignment(self, ctx: Any, request: Any) -> Any:
        validate_topic(request.topic)
        validate_group(request.group)
        tc = self.topic_config(request.topic.name)
        group = self.controller.subscription_group_manager.find_subscription_group_config(request.group.name)
        fifo = bool(group is not None and group.consume_message_orderly)
        if not (is_readable(tc.perm) and tc.read_queue_nums > 0):
            return spb.QueryAssignmentResponse(status=status(Code.FORBIDDEN, "no readable queue"))
        perm = permission(tc.perm)
        broker = self.broker(request.endpoints)
        ids = range(tc.read_queue_nums) if fifo else [-1]
        assignments = [
            pb.Assignment(message_queue=pb.MessageQueue(topic=request.topic, id=i, permission=perm, broker=broker))
            for i in ids
        ]
        return spb.QueryAssignmentResponse(status=ok(), assignments=assignments)


__all__ = ["RouteActivity", "endpoints", "permission", "topic_message_type"]
