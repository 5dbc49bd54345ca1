"""Where a broker's own puts go when it may not write its store: the escape bridge.

Java: ``broker/failover/EscapeBridge`` (putMessage / putMessageToRemoteBroker /
transformSendResult2PutResult), ``topic/TopicRouteInfoManager`` (routes from the name server,
``tryToFindTopicPublishInfo``, ``findBrokerAddressInPublish``) and
``out/BrokerOuterAPI#sendMessageToSpecificBroker`` (SEND_MESSAGE_V2 with a producer-like header).

The delay levels and the timer deliver due messages through ``put_message``. A master (broker
id 0) puts into its own store. A slave acting as master may not (its store only takes what its
master replicates): with ``enableRemoteEscape`` the message is sent to the master of another
broker group that has a writable queue of the topic; without it the put fails with
SERVICE_NOT_AVAILABLE and the caller retries later, like Java.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyrmq.broker.put import await_put
from pyrmq.common.constants import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    MASTER_ID,
    RMQ_SYS_TRANS_HALF_TOPIC,
    MessageConst,
    is_writeable,
)
from pyrmq.protocol.bodies.namesrv import TopicRouteData
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import SendMessageRequestHeaderV2
from pyrmq.protocol.headers.namesrv import GetRouteInfoRequestHeader
from pyrmq.store import message as m
from pyrmq.store.results import PutMessageResult, PutMessageStatus

if TYPE_CHECKING:
    from pyrmq.broker.config import BrokerConfig

log = logging.getLogger("pyrmq.broker.escape")

#: EscapeBridge.SEND_TIMEOUT
SEND_TIMEOUT_S = 3.0
#: how long a fetched route is used before asking again (Java refreshes its table every 30 s)
ROUTE_TTL_MS = 30000
#: the queue count BrokerOuterAPI#buildSendMessageRequestHeaderV2 sends with TBW102
DEFAULT_TOPIC_QUEUE_NUMS = 8

#: a remote send's response code -> the put status (transformSendResult2PutResult)
_SEND_STATUS = {
    ResponseCode.SUCCESS: PutMessageStatus.PUT_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: PutMessageStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: PutMessageStatus.SLAVE_NOT_AVAILABLE,
}


#: PutMessageResult#isOk for a remote put
_REMOTE_OK = frozenset(
    {
        PutMessageStatus.PUT_OK,
        PutMessageStatus.FLUSH_DISK_TIMEOUT,
        PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
        PutMessageStatus.SLAVE_NOT_AVAILABLE,
    }
)


def build_transactional_message_from_half(half: m.MessageExtBrokerInner) -> m.MessageExtBrokerInner:
    """Java TransactionalMessageUtil#buildTransactionalMessageFromHalfMessage: a half message back
    to its real topic and queue as a prepared message (TRAN_MSG=true, the prepared sys flag)."""
    props = dict(half.properties)
    props[MessageConst.TRANSACTION_PREPARED] = "true"
    props[MessageConst.WAIT_STORE_MSG_OK] = "false"
    props.pop(MessageConst.TRANSACTION_PREPARED_QUEUE_OFFSET, None)
    qid = props.pop(MessageConst.REAL_QUEUE_ID, "")
    return m.MessageExtBrokerInner(
        topic=props.get(MessageConst.REAL_TOPIC, ""),
        body=half.body,
        queue_id=int(qid) if qid.isdigit() else 0,
        flag=half.flag,
        properties=props,
        sys_flag=half.sys_flag | m.MessageSysFlag.TRANSACTION_PREPARED_TYPE,
        born_timestamp=half.born_timestamp,
        born_host=half.born_host,
        reconsume_times=half.reconsume_times,
    )


@dataclass(frozen=True, slots=True)
class PublishQueue:
    broker_name: str
    queue_id: int


@dataclass(slots=True)
class TopicPublishInfo:
    """The writable queues of a topic on brokers that have a master (Java
    MQClientInstance#topicRouteData2TopicPublishInfo), and each broker name's master address."""

    queues: list[PublishQueue]
    master_addrs: dict[str, str]
    fetched_ms: int

    @classmethod
    def of(cls, route: TopicRouteData, now_ms: int) -> TopicPublishInfo:
        masters = {
            bd.broker_name: bd.broker_addrs[MASTER_ID]
            for bd in route.broker_datas or []
            if bd.broker_name and MASTER_ID in bd.broker_addrs
        }
        queues: list[PublishQueue] = []
        for qd in sorted(route.queue_datas or [], key=lambda q: q.broker_name or ""):
            if qd.broker_name in masters and is_writeable(qd.perm):
                queues.extend(PublishQueue(qd.broker_name, i) for i in range(qd.write_queue_nums))
        return cls(queues, masters, now_ms)


class EscapeBridge:
    def __init__(
        self,
        *,
        config: BrokerConfig,
        message_store: Any,
        client: Any,
        now: Callable[[], int],
    ) -> None:
        self.config = config
        self.message_store = message_store
        self.client = client
        self.now = now
        self.inner_producer_group = f"InnerProducerGroup_{config['brokerName']}_{config['brokerId']}"
        self._routes: dict[str, TopicPublishInfo] = {}
        self._index = itertools.count()

    async def put_message(self, msg: m.MessageExtBrokerInner) -> PutMessageResult:
        """Java EscapeBridge#putMessage."""
        cfg = self.config
        if int(cfg["brokerId"]) == MASTER_ID:  # Java peekMasterBroker
            return await await_put(self.message_store.put_message_async(msg))
        if cfg["enableSlaveActingMaster"] and cfg["enableRemoteEscape"]:
            try:
                return await self.put_message_to_remote_broker(msg)
            except Exception as e:
                log.error("sendMessageInFailover to remote failed: %s", e)
                return PutMessageResult(PutMessageStatus.PUT_TO_REMOTE_BROKER_FAIL, remote_put=True, error=str(e))
        log.warning(
            "Put message failed, enableSlaveActingMaster=%s, enableRemoteEscape=%s.",
            cfg["enableSlaveActingMaster"],
            cfg["enableRemoteEscape"],
        )
        return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE)

    async def escape_message(self, msg: m.MessageExtBrokerInner) -> bool:
        """Java TransactionalMessageBridge#escapeMessage: put, and tell whether it went through."""
        result = await self.put_message(msg)
        if result.remote_put and result.put_message_status in _REMOTE_OK:
            return True
        if result.is_ok():
            return True
        log.error("Escaping message failed, topic: %s, queueId: %d", msg.topic, msg.queue_id)
        return False

    async def put_message_to_remote_broker(self, msg: m.MessageExtBrokerInner) -> PutMessageResult:
        """Java putMessageToRemoteBroker(msg, null): a queue of another broker name, picked round
        robin, gets the message as a SEND_MESSAGE_V2 that does not wait for the store (WAIT=false).
        A half message goes as the prepared message it was sent as."""
        if msg.topic == RMQ_SYS_TRANS_HALF_TOPIC:
            msg = build_transactional_message_from_half(msg)
        own = self.config["brokerName"]
        # the property map, not the stored string: a due delayed message's string still has DELAY
        # (Java messageTimeUp), its map does not (BrokerOuterAPI sends the map)
        props = dict(msg.properties)
        props[MessageConst.WAIT_STORE_MSG_OK] = "false"
        info = await self.publish_info(msg.topic)
        queues = [q for q in info.queues if q.broker_name != own] if info else []
        if not queues:
            log.warning("putMessageToRemoteBroker: no route info of topic %s when escaping message", msg.topic)
            return PutMessageResult(PutMessageStatus.PUT_TO_REMOTE_BROKER_FAIL, remote_put=True)
        assert info is not None
        q = queues[next(self._index) % len(queues)]
        addr = info.master_addrs[q.broker_name]
        header = SendMessageRequestHeaderV2(
            a=props.get(MessageConst.PRODUCER_GROUP) or self.inner_producer_group,
            b=msg.topic,
            c=AUTO_CREATE_TOPIC_KEY_TOPIC,
            d=DEFAULT_TOPIC_QUEUE_NUMS,
            e=q.queue_id,
            f=msg.sys_flag,
            g=msg.born_timestamp,
            h=msg.flag,
            i=m.message_properties_to_string(props),
            j=msg.reconsume_times,
            m=False,
        )
        cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header.to_ext_fields(), msg.body)
        begin = self.now()
        resp = await self.client.invoke(addr, cmd, SEND_TIMEOUT_S)
        status = _SEND_STATUS.get(resp.code)
        if status is not PutMessageStatus.PUT_OK:
            log.error(
                "Escaping failed! cost %dms, Topic: %s, Broker: %s, code %d %s",
                self.now() - begin,
                msg.topic,
                q.broker_name,
                resp.code,
                resp.remark,
            )
            self._routes.pop(msg.topic, None)
            return PutMessageResult(status or PutMessageStatus.PUT_TO_REMOTE_BROKER_FAIL, remote_put=True)
        log.debug("escaped %s to %s (%s) queue %d", msg.topic, q.broker_name, addr, q.queue_id)
        return PutMessageResult(PutMessageStatus.PUT_OK, remote_put=True)

    async def publish_info(self, topic: str) -> TopicPublishInfo | None:
        """The topic's publish info, from the name servers when not known or older than
        ROUTE_TTL_MS (Java TopicRouteInfoManager#tryToFindTopicPublishInfo)."""
        now = self.now()
        info = self._routes.get(topic)
        if info is not None and now - info.fetched_ms < ROUTE_TTL_MS:
            return info
        ext = GetRouteInfoRequestHeader(topic=topic).to_ext_fields()
        for addr in self.config.namesrv_addrs:
            try:
                resp = await self.client.invoke(
                    addr, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, dict(ext)), SEND_TIMEOUT_S
                )
            except Exception as e:
                log.warning("get route of %s from name server %s failed: %s", topic, addr, e)
                continue
            if resp.code != ResponseCode.SUCCESS or not resp.body:  # no route: kept too, so a level
                info = TopicPublishInfo([], {}, now)  # retrying every 100 ms does not ask each time
            else:
                info = TopicPublishInfo.of(TopicRouteData.decode(resp.body), now)
            self._routes[topic] = info
            return info
        return None
