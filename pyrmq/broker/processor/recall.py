"""RECALL_MESSAGE (370, 5.5.0): take a timer message back before its delivery time.

Java: ``broker/processor/RecallMessageProcessor``. The handle (``pyrmq.common.recall_handle``) names
the topic, this broker, the message's delivery slot and its UNIQ_KEY; the broker puts a delete
marker (property TIMER_DEL_UNIQKEY = ``realTopic+uniqKey``, body "0", tag ``_RECALL_TAG_``) into the
same timer slot, and the timer store drops the message whose key it names when the slot is due
(``TimerMessageStore``). Off unless ``recallMessageEnable``, as in Java.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyrmq.broker.put import await_put
from pyrmq.broker.timer_message_store import timer_delete_key
from pyrmq.common.constants import RETRY_GROUP_TOPIC_PREFIX, MessageConst, is_writeable
from pyrmq.common.java_lang import hashmap_order
from pyrmq.common.recall_handle import RecallHandle
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import RecallMessageRequestHeader
from pyrmq.remoting.server import RequestContext, handles
from pyrmq.store import message as m
from pyrmq.store.results import PutMessageStatus
from pyrmq.store.store_config import BrokerRole

if TYPE_CHECKING:
    from pyrmq.broker.config import BrokerConfig
    from pyrmq.broker.stats import BrokerStatsManager
    from pyrmq.broker.topic_config_manager import TopicConfigManager
    from pyrmq.common.clock import Clock
    from pyrmq.store.message_store import MessageStore

RECALL_MESSAGE_TAG = "_RECALL_TAG_"
_UNAVAILABLE = "recall failed, broker service not available"
#: statuses Java answers SUCCESS for (the marker is stored)
_STORED = frozenset(
    {
        PutMessageStatus.PUT_OK,
        PutMessageStatus.FLUSH_DISK_TIMEOUT,
        PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
        PutMessageStatus.SLAVE_NOT_AVAILABLE,
    }
)


def recall_handle_of(msg: m.MessageExtBrokerInner, broker_name: str) -> str | None:
    """SendMessageProcessor#attachRecallHandle: a put timer message's handle (its slot + 1 ms,
    since the slot was rounded down), none for other messages and retry topics."""
    props = msg.properties
    out_ms = props.get(MessageConst.TIMER_OUT_MS)
    if out_ms is None:  # the common case on the send path: one lookup
        return None
    real_topic, uniq = props.get(MessageConst.REAL_TOPIC), props.get(MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
    if real_topic is None or real_topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return None
    try:
        stamp = str(int(out_ms) + 1)
    except ValueError:
        return None
    return RecallHandle(real_topic, broker_name, stamp, uniq or "null").encode()


class RecallMessageProcessor:
    def __init__(
        self,
        *,
        config: BrokerConfig,
        topic_config_manager: TopicConfigManager,
        message_store: MessageStore,
        broker_stats: BrokerStatsManager,
        now: Clock,
    ) -> None:
        self.config = config
        self.topic_config_manager = topic_config_manager
        self.message_store = message_store
        self.broker_stats = broker_stats
        self.now = now

    def _answer(self, cmd: RemotingCommand, code: int, remark: str | None, msg_id: str | None = None):
        ext = {"MSG_REGION": self.config["regionId"]}
        if msg_id is not None:
            ext["msgId"] = msg_id
        return cmd.make_response(code, remark, ext)

    @handles(RequestCode.RECALL_MESSAGE)
    async def recall_message(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = RecallMessageRequestHeader.from_ext_fields(cmd.ext_fields)
        cfg = self.config
        if not cfg["recallMessageEnable"]:
            return self._answer(cmd, ResponseCode.NO_PERMISSION, "recall failed, operation is forbidden")
        if cfg.store.broker_role is BrokerRole.SLAVE:
            return self._answer(cmd, ResponseCode.SLAVE_NOT_AVAILABLE, _UNAVAILABLE)
        now = self.now()
        if now < int(cfg["startAcceptSendRequestTimeStamp"]):
            return self._answer(cmd, ResponseCode.SERVICE_NOT_AVAILABLE, _UNAVAILABLE)
        if not is_writeable(int(cfg["brokerPermission"])) and not cfg["allowRecallWhenBrokerNotWriteable"]:
            return self._answer(cmd, ResponseCode.SERVICE_NOT_AVAILABLE, _UNAVAILABLE)
        if self.topic_config_manager.select_topic_config(h.topic) is None:
            return self._answer(cmd, ResponseCode.TOPIC_NOT_EXIST, f"recall failed, the topic[{h.topic}] not exist")
        try:
            handle = RecallHandle.decode(h.recall_handle)
        except ValueError as e:
            return self._answer(cmd, ResponseCode.ILLEGAL_OPERATION, str(e))
        if h.topic != handle.topic:
            return self._answer(cmd, ResponseCode.ILLEGAL_OPERATION, "recall failed, topic not match")
        if cfg["brokerName"] != handle.broker_name:
            return self._answer(cmd, ResponseCode.ILLEGAL_OPERATION, _UNAVAILABLE)
        try:
            time_left = int(handle.timestamp) - now
        except ValueError:  # NumberUtils.toLong(..., -1)
            time_left = -1 - now
        if time_left <= 0 or time_left >= int(cfg["timerMaxDelaySec"]) * 1000:
            return self._answer(cmd, ResponseCode.ILLEGAL_OPERATION, "recall failed, timestamp invalid")
        msg = self._marker(ctx, h, handle, now)
        result = await await_put(self.message_store.put_message_async(msg))
        status = result.put_message_status if result is not None else None
        if status not in _STORED:
            return self._answer(cmd, ResponseCode.SYSTEM_ERROR, "recall failed, execute error")
        amr = result.append_message_result
        if status is PutMessageStatus.PUT_OK and amr is not None:
            self.broker_stats.on_topic_put(msg.topic, max(amr.msg_num, 1), amr.wrote_bytes)
        return self._answer(cmd, ResponseCode.SUCCESS, None, handle.message_id)

    def _marker(
        self, ctx: RequestContext, h: RecallMessageRequestHeader, handle: RecallHandle, now: int
    ) -> m.MessageExtBrokerInner:
        """RecallMessageProcessor#buildMessage: the delete marker, put like a timer message."""
        props = {
            MessageConst.TIMER_DEL_UNIQKEY: timer_delete_key(handle.topic, handle.message_id),
            MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: handle.message_id,
            MessageConst.TIMER_DELIVER_MS: handle.timestamp,
            MessageConst.BORN_TIMESTAMP: str(now),
            MessageConst.TRACE_CONTEXT: "",
            MessageConst.TAGS: RECALL_MESSAGE_TAG,
        }
        if h.producer_group is not None:
            props[MessageConst.PRODUCER_GROUP] = h.producer_group
        msg = m.MessageExtBrokerInner(topic=handle.topic, body=b"0", queue_id=0)
        msg.properties = hashmap_order(props)
        msg.born_timestamp = now
        peer = ctx.channel.transport.get_extra_info("peername") if ctx.channel.transport is not None else None
        msg.born_host = (peer[0], peer[1]) if isinstance(peer, tuple) else ("127.0.0.1", 0)
        msg.store_host = (self.config.broker_ip, int(self.config["listenPort"]))
        return msg
