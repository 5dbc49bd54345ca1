"""QUERY_ASSIGNMENT (400) and SET_MESSAGE_REQUEST_MODE (401): server-side rebalance for 5.x clients,
which is how a group switches to POP. Java: ``broker/processor/QueryAssignmentProcessor``.

The topic's queues come from the name servers' route, as in Java (TopicRouteInfoManager: kept
for 30 s), so a group is assigned the queues of every broker; without a name server, or when none
answers, from this broker's own topic config.
"""

from __future__ import annotations

import logging
from typing import TypeVar

from pyrmq.broker.pop.allocate import STRATEGIES, allocate_for_pop
from pyrmq.common.constants import RETRY_GROUP_TOPIC_PREFIX, is_readable
from pyrmq.protocol.bodies.broker import MessageQueue
from pyrmq.protocol.bodies.namesrv import TopicRouteData
from pyrmq.protocol.bodies.pop import (
    MessageModel,
    MessageQueueAssignment,
    MessageRequestMode,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    SetMessageRequestModeRequestBody,
)
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.errors import InvalidParameter, NoPermission, SubscriptionGroupNotExist, TopicNotExist
from pyrmq.protocol.fastjson import BodyDecodeError, FastJsonBody
from pyrmq.protocol.headers.namesrv import GetRouteInfoRequestHeader
from pyrmq.remoting.server import RequestContext, handles
from pyrmq.store.lmq import LMQ_QUEUE_ID, is_lmq

log = logging.getLogger("pyrmq.broker.pop")

B = TypeVar("B", bound=FastJsonBody)
#: Java TopicRouteInfoManager refreshes its routes every 30 s
ROUTE_TTL_MS = 30_000
ROUTE_TIMEOUT_S = 3.0


class QueryAssignmentProcessor:
    def __init__(
        self,
        *,
        config,
        topic_config_manager,
        subscription_group_manager,
        consumer_manager,
        message_request_mode_manager,
        outer_client,
        now,
    ) -> None:
        self.config = config
        self.outer_client = outer_client
        self.now = now
        self._routes: dict[str, tuple[int, list[MessageQueue] | None]] = {}
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self.consumer_manager = consumer_manager
        self.modes = message_request_mode_manager

    @handles(RequestCode.SET_MESSAGE_REQUEST_MODE)
    async def set_message_request_mode(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        body = _decode(SetMessageRequestModeRequestBody, cmd)
        topic = body.topic or ""
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            raise NoPermission("retry topic is not allowed to set mode")
        if self.topic_config_manager.select_topic_config(topic) is None:
            raise TopicNotExist(f"topic[{topic}] not exist")
        group = body.consumer_group or ""
        if self.subscription_group_manager.find_subscription_group_config(group) is None:
            raise SubscriptionGroupNotExist("subscription group does not exist")
        self.modes.set_message_request_mode(topic, group, body)
        self.modes.persist()
        log.info("message request mode of %s on %s set to %s", group, topic, body.mode.name)
        return cmd.make_response(ResponseCode.SUCCESS)

    @handles(RequestCode.QUERY_ASSIGNMENT)
    async def query_assignment(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        req = _decode(QueryAssignmentRequestBody, cmd)
        topic, group = req.topic or "", req.consumer_group or ""
        mode = self.modes.get_message_request_mode(topic, group)
        if mode is None:
            mode = SetMessageRequestModeRequestBody(topic=topic, consumer_group=group)
            if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):  # a retry topic is always pulled
                mode.mode = MessageRequestMode[str(self.config["defaultMessageRequestMode"]).upper()]
            if mode.mode is MessageRequestMode.POP:
                mode.pop_share_queue_num = int(self.config["defaultPopShareQueueNum"])
        queues = await self._load_balance(req, mode, ctx)
        assignments = None if queues is None else [MessageQueueAssignment(mq, mode.mode) for mq in queues]
        body = QueryAssignmentResponseBody(assignments).encode()
        return cmd.make_response(ResponseCode.SUCCESS, None, body=body)

    async def subscribe_info(self, topic: str) -> list[MessageQueue] | None:
        """The topic's readable queues on every broker, None for a topic the name servers do not
        know (Java TopicRouteInfoManager#getTopicSubscribeInfo)."""
        if is_lmq(topic):  # a light queue has one queue
            return [MessageQueue(topic, self.config["brokerName"], LMQ_QUEUE_ID)]
        now = self.now()
        cached = self._routes.get(topic)
        if cached is not None and now - cached[0] < ROUTE_TTL_MS:
            return cached[1]
        ext = GetRouteInfoRequestHeader(topic=topic).to_ext_fields()
        for addr in self.config.namesrv_addrs if self.outer_client is not None else ():
            try:
                resp = await self.outer_client.invoke(
                    addr, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, dict(ext)), ROUTE_TIMEOUT_S
                )
            except Exception as e:
                log.warning("get route of %s from name server %s failed: %s", topic, addr, e)
                continue
            queues = None
            if resp.code == ResponseCode.SUCCESS and resp.body:
                route = TopicRouteData.decode(resp.body)
                queues = [
                    MessageQueue(topic, qd.broker_name, i)
                    for qd in route.queue_datas or []
                    if is_readable(qd.perm)
                    for i in range(qd.read_queue_nums)
                ]
            self._routes[topic] = (now, queues)
            return queues
        return self.local_subscribe_info(topic)

    def local_subscribe_info(self, topic: str) -> list[MessageQueue] | None:
        """This broker's readable queues of the topic: the answer without a name server."""
        name = self.config["brokerName"]
        tc = self.topic_config_manager.select_topic_config(topic)
        if tc is None:
            return None
        if not is_readable(tc.perm):
            return []
        return [MessageQueue(topic, name, i) for i in range(tc.read_queue_nums)]

    async def _load_balance(
        self, req: QueryAssignmentRequestBody, mode: SetMessageRequestModeRequestBody, ctx: RequestContext
    ) -> list[MessageQueue] | None:
        """Java doLoadBalance: None = no valid answer (the client keeps what it has)."""
        topic, group = req.topic or "", req.consumer_group or ""
        mq_set = await self.subscribe_info(topic)
        if mq_set is None:
            if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                log.warning("QueryLoad: no assignment for group[%s], the topic[%s] does not exist.", group, topic)
            return None
        if req.message_model is MessageModel.BROADCASTING or not self.config["serverLoadBalancerEnable"]:
            return mq_set
        info = self.consumer_manager.get_consumer_group_info(group)
        if info is None:
            log.warning("QueryLoad: no assignment for group[%s] topic[%s], get consumer id list failed", group, topic)
            return None
        cid_all = sorted(info.all_client_ids())
        mq_all = sorted(mq_set, key=lambda mq: (mq.topic, mq.broker_name, mq.queue_id))
        strategy = STRATEGIES.get(req.strategy_name or "")
        if strategy is None:
            log.warning("QueryLoad: unsupported strategy [%s], %s", req.strategy_name, ctx.channel.remote_addr)
            return None
        cid = req.client_id or ""
        if not cid or not mq_all or not cid_all:  # Java's strategies throw; the answer is null
            log.error("QueryLoad: no assignment for group[%s] topic[%s], nothing to allocate", group, topic)
            return None
        if mode.mode is MessageRequestMode.POP:
            return allocate_for_pop(strategy, cid, mq_all, cid_all, mode.pop_share_queue_num)
        return strategy(cid, mq_all, cid_all)


def _decode(cls: type[B], cmd: RemotingCommand) -> B:
    try:
        return cls.decode(cmd.body or b"")
    except BodyDecodeError as e:
        raise InvalidParameter(f"{cls.__name__} is not readable: {e}") from None
