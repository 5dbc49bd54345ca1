"""SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320).

Java: ``broker/processor/SendMessageProcessor`` (sendMessage, sendBatchMessage,
handleRetryAndDLQ, handlePutMessageResult) and ``AbstractSendMessageProcessor``
(msgCheck, the MSG_REGION/TRACE_ON ext fields of every answer). Whether the
body is a batch is decided by the header's ``batch`` flag, not the code (spec
§4.1). SEND_OK is answered only once the store acknowledged the put under the
flush mode: the store's future is awaited without blocking the loop.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyrmq.broker.processor import REJECT_REQUEST_REMARK
from pyrmq.broker.processor.recall import recall_handle_of
from pyrmq.broker.put import await_put
from pyrmq.broker.stats import record_put
from pyrmq.common.constants import (
    DLQ_GROUP_TOPIC_PREFIX,
    FAQ_SUGGEST,
    NOT_ALLOWED_SEND_TOPIC_SET,
    PERM_READ,
    PERM_WRITE,
    RETRY_GROUP_TOPIC_PREFIX,
    MessageConst,
    is_writeable,
    validate_topic,
)
from pyrmq.common.java_lang import hashmap_order
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.errors import SystemBusy
from pyrmq.protocol.headers.broker import SendMessageRequestHeader, SendMessageRequestHeaderV2
from pyrmq.protocol.version import MQVersion
from pyrmq.remoting.server import RequestContext, handles
from pyrmq.store import message as m
from pyrmq.store.commitlog import MessageExtBatch
from pyrmq.store.results import AppendMessageStatus, PutMessageResult, PutMessageStatus

if TYPE_CHECKING:
    from pyrmq.broker.config import BrokerConfig
    from pyrmq.broker.metrics import BrokerMetricsManager
    from pyrmq.broker.rebalance_lock_manager import RebalanceLockManager
    from pyrmq.broker.stats import BrokerStatsManager
    from pyrmq.broker.subscription_group_manager import SubscriptionGroupManager
    from pyrmq.broker.topic_config_manager import TopicConfigManager
    from pyrmq.broker.transaction.transactional_message_service import TransactionalMessageService
    from pyrmq.common.clock import Clock
    from pyrmq.store.message_store import MessageStore

log = logging.getLogger("pyrmq.broker.send")

DLQ_NUMS_PER_GROUP = 1

_PROPERTY_CLUSTER = MessageConst.CLUSTER
_PROPERTY_UNIQ = MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX
_PROPERTY_TRAN = MessageConst.TRANSACTION_PREPARED
_NAME_SEP = m.NAME_VALUE_SEPARATOR
_PROP_SEP = m.PROPERTY_SEPARATOR

#: store status -> (response code, remark or None); PUT_OK family answered with the header
_STATUS_CODES: dict[PutMessageStatus, tuple[int, str | None, bool]] = {
    PutMessageStatus.PUT_OK: (ResponseCode.SUCCESS, None, True),
    PutMessageStatus.FLUSH_DISK_TIMEOUT: (ResponseCode.FLUSH_DISK_TIMEOUT, None, True),
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT: (ResponseCode.FLUSH_SLAVE_TIMEOUT, None, True),
    PutMessageStatus.SLAVE_NOT_AVAILABLE: (ResponseCode.SLAVE_NOT_AVAILABLE, None, True),
    PutMessageStatus.IN_SYNC_REPLICAS_NOT_ENOUGH: (ResponseCode.SYSTEM_ERROR, "in-sync replicas not enough", False),
    PutMessageStatus.CREATE_MAPPED_FILE_FAILED: (
        ResponseCode.SYSTEM_ERROR,
        "create mapped file failed, server is busy or broken.",
        False,
    ),
    PutMessageStatus.SERVICE_NOT_AVAILABLE: (
        ResponseCode.SERVICE_NOT_AVAILABLE,
        "service not available now. It may be caused by one of the following reasons: the broker's disk is full "
        "[{disk}], messages are put to the slave, message store has been shut down, etc.",
        False,
    ),
    PutMessageStatus.OS_PAGE_CACHE_BUSY: (
        ResponseCode.SYSTEM_BUSY,
        "[PC_SYNCHRONIZED]broker busy, start flow control for a while",
        False,
    ),
    PutMessageStatus.UNKNOWN_ERROR: (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR", False),
}
_ILLEGAL_REMARK = (
    "the message is illegal, maybe msg body or properties length not matched. msg body length "
    "limit {max}B, msg properties length limit 32KB."
)


def parse_send_header(cmd: RemotingCommand) -> SendMessageRequestHeader:
    """V2 (310, 320, 325) single-letter keys or V1 names (10, 324) -> the V1 field set."""
    if cmd.code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2):
        return SendMessageRequestHeaderV2.from_ext_fields(cmd.ext_fields).to_v1()
    return SendMessageRequestHeader.from_ext_fields(cmd.ext_fields)


def _add_property(props: str, name: str, value: str) -> str:
    if props and not props.endswith(_PROP_SEP):
        props += _PROP_SEP
    return f"{props}{name}{_NAME_SEP}{value}{_PROP_SEP}"


class AbstractSendMessageProcessor:
    """What every send-like request shares: msgCheck, the born host, the MSG_REGION/TRACE_ON ext
    fields of every answer. Java: AbstractSendMessageProcessor (the parent of the send and the
    reply processors). Built after the server bound its port, so the store host is final."""

    def __init__(
        self,
        *,
        config: BrokerConfig,
        topic_config_manager: TopicConfigManager,
        subscription_group_manager: SubscriptionGroupManager,
        message_store: MessageStore,
        pending_topic_registrations: Mapping[str, asyncio.Task[None]],
        now: Clock,
    ) -> None:
        self.config = config
        self.store_config = config.store
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self.message_store = message_store
        self.pending_topic_registrations = pending_topic_registrations
        self.now = now
        self._ext = {"MSG_REGION": config["regionId"], "TRACE_ON": "true" if config["traceOn"] else "false"}
        self._cluster = config["brokerClusterName"]
        self._store_host = (config.broker_ip, int(config["listenPort"]))

    # ------------------------------------------------------------------ helpers

    def _response(
        self, cmd: RemotingCommand, code: int, remark: str | None = None, extra: dict[str, str] | None = None
    ) -> RemotingCommand:
        ext = dict(extra) if extra else {}
        ext.update(self._ext)
        return cmd.make_response(code, remark, ext)

    def _born_host(self, ctx: RequestContext) -> tuple[str, int]:
        ch = ctx.channel
        host = ch.attrs.get("_peer")
        if host is None:
            peer = ch.transport.get_extra_info("peername") if ch.transport is not None else None
            host = (peer[0], peer[1]) if isinstance(peer, tuple) else ("127.0.0.1", 0)
            ch.attrs["_peer"] = host
        return host

    async def _msg_check_registered(self, ctx: RequestContext, cmd: RemotingCommand, h: SendMessageRequestHeader):
        """_msg_check; a topic it auto-created is answered once the name servers have its route (Java
        TopicConfigManager#createTopicInSendMessageMethod registers before the send returns)."""
        tc, err = self._msg_check(ctx, cmd, h)
        reg = self.pending_topic_registrations.get(h.topic) if err is None else None
        if reg is not None:
            await asyncio.wait((reg,))
        return tc, err

    def _msg_check(self, ctx: RequestContext, cmd: RemotingCommand, h: SendMessageRequestHeader):
        """Java AbstractSendMessageProcessor#msgCheck: (topic config, None) or (None, error response)."""
        tcm = self.topic_config_manager
        if not is_writeable(int(self.config["brokerPermission"])) and tcm.is_order_topic(h.topic):
            return None, self._response(
                cmd, ResponseCode.NO_PERMISSION, f"the broker[{self.config.broker_ip}] sending message is forbidden"
            )
        bad = validate_topic(h.topic)
        if bad is not None:
            return None, self._response(cmd, ResponseCode.INVALID_PARAMETER, bad)
        if h.topic in NOT_ALLOWED_SEND_TOPIC_SET:
            return None, self._response(
                cmd, ResponseCode.NO_PERMISSION, f"Sending message to topic[{h.topic}] is forbidden."
            )
        tc = tcm.select_topic_config(h.topic)
        if tc is None:
            sys_flag = 0
            if h.unit_mode:
                sys_flag = 0x2 if h.topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else 0x1
            log.warning("the topic %s not exist, producer: %s", h.topic, ctx.channel.remote_addr)
            tc = tcm.create_topic_in_send_message_method(h.topic, h.default_topic, h.default_topic_queue_nums, sys_flag)
            if tc is None and h.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                tc = tcm.create_topic_in_send_message_back_method(h.topic, 1, PERM_WRITE | PERM_READ, sys_flag)
            if tc is None:
                return None, self._response(
                    cmd, ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist, apply first please!{FAQ_SUGGEST}"
                )
        valid = max(tc.write_queue_nums, tc.read_queue_nums)
        if h.queue_id >= valid:
            return None, self._response(
                cmd,
                ResponseCode.INVALID_PARAMETER,
                f"request queueId[{h.queue_id}] is illegal, {tc.java_string()} Producer: {ctx.channel.remote_addr}",
            )
        return tc, None

    def _not_accepting_yet(self, cmd: RemotingCommand) -> RemotingCommand | None:
        """startAcceptSendRequestTimeStamp: refuse sends until then (Java, both processors)."""
        start = int(self.config["startAcceptSendRequestTimeStamp"])
        if start and self.now() < start:
            return self._response(cmd, ResponseCode.SYSTEM_ERROR, f"broker unable to service, until {start}")
        return None


class SendMessageProcessor(AbstractSendMessageProcessor):
    def __init__(
        self,
        *,
        rebalance_lock_manager: RebalanceLockManager,
        broker_stats: BrokerStatsManager,
        broker_metrics: BrokerMetricsManager,
        uniq_id_generator: m.UniqIdGenerator,
        transactional_message_service: TransactionalMessageService,
        **base: Any,
    ) -> None:
        super().__init__(**base)
        self.rebalance_lock_manager = rebalance_lock_manager
        self.broker_stats = broker_stats
        self.broker_metrics = broker_metrics
        self.uniq_id_generator = uniq_id_generator
        self.transactional_message_service = transactional_message_service

    def _record_put_metrics(self, topic: str, props: Mapping[str, str], result: PutMessageResult) -> None:
        amr = result.append_message_result
        if amr is not None and result.is_ok():
            self.broker_metrics.on_put(topic, props, max(int(amr.msg_num), 1), int(amr.wrote_bytes))

    def _handle_retry_and_dlq(
        self, cmd: RemotingCommand, h: SendMessageRequestHeader, msg: m.MessageExtBrokerInner, tc, props: dict[str, str]
    ):
        """Java handleRetryAndDLQ: (topic config, None) or (None, error response)."""
        topic = h.topic
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            group = topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
            sg = self.subscription_group_manager.find_subscription_group_config(group)
            if sg is None:
                return None, self._response(
                    cmd,
                    ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                    f"subscription group not exist, {group} {FAQ_SUGGEST}",
                )
            max_times = sg.retry_max_times
            if cmd.version >= MQVersion.V3_4_9 and h.max_reconsume_times is not None:
                max_times = h.max_reconsume_times
            reconsume = h.reconsume_times or 0
            to_dlq = not self.rebalance_lock_manager.is_lock_all_expired(group)
            if reconsume > max_times or to_dlq:
                self.broker_metrics.on_send_to_dlq(h.producer_group, h.topic)
                props[MessageConst.DELAY_TIME_LEVEL] = "-1"
                new_topic = DLQ_GROUP_TOPIC_PREFIX + group
                tc = self.topic_config_manager.create_topic_in_send_message_back_method(
                    new_topic, DLQ_NUMS_PER_GROUP, PERM_WRITE | PERM_READ, 0
                )
                msg.topic = new_topic
                msg.queue_id = random.randrange(DLQ_NUMS_PER_GROUP)
        sys_flag = h.sys_flag
        if tc.topic_filter_type == "MULTI_TAG":
            sys_flag |= m.MessageSysFlag.MULTI_TAGS_FLAG
        msg.sys_flag = sys_flag
        return tc, None

    def _put_result_response(
        self,
        cmd: RemotingCommand,
        result: PutMessageResult,
        queue_id: int,
        uniq_key: str | None,
        recall_handle: str | None = None,
    ) -> RemotingCommand:
        status = result.put_message_status
        if status in (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
            return self._response(
                cmd,
                ResponseCode.MESSAGE_ILLEGAL,
                _ILLEGAL_REMARK.format(max=self.store_config.max_message_size),
            )
        timer = _timer_status_response(self.config, status)
        if timer is not None:
            return self._response(cmd, *timer)
        code, remark, ok = _STATUS_CODES.get(status, (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT", False))
        amr = result.append_message_result
        if not ok or amr is None:
            if remark and "{disk}" in remark:
                remark = remark.format(disk=self.message_store.disk_util())
            if result.error and code == ResponseCode.SYSTEM_ERROR:
                log.error("put message failed: %s (%s)", status.name, result.error)
            return self._response(cmd, code, remark)
        extra = {"msgId": amr.msg_id, "queueId": str(queue_id), "queueOffset": str(amr.logics_offset)}
        if uniq_key:
            extra["transactionId"] = uniq_key
        if recall_handle is not None:
            extra["recallHandle"] = recall_handle
        return self._response(cmd, code, None, extra)

    # ------------------------------------------------------------------ handlers

    @handles(RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE)
    async def send_message(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        if not self.config.is_master and not self.config["enableSlaveActingMaster"]:
            raise SystemBusy(REJECT_REQUEST_REMARK)  # Java SendMessageProcessor#rejectRequest
        h = parse_send_header(cmd)
        refused = self._not_accepting_yet(cmd)
        if refused is not None:
            return refused
        if h.batch:
            return await self._send_batch(ctx, cmd, h)
        tc, err = await self._msg_check_registered(ctx, cmd, h)
        if err is not None:
            return err
        body = cmd.body or b""
        if len(body) > self.store_config.max_message_size:
            return self._response(
                cmd, ResponseCode.MESSAGE_ILLEGAL, _ILLEGAL_REMARK.format(max=self.store_config.max_message_size)
            )
        queue_id = h.queue_id
        if queue_id < 0:
            queue_id = random.randrange(max(tc.write_queue_nums, 1))
        msg = m.MessageExtBrokerInner(topic=h.topic, body=body, queue_id=queue_id, flag=h.flag)
        props = m.string_to_message_properties(h.properties) if h.properties else {}
        props.update(self._ext)  # Java buildMsgContext: MSG_REGION, TRACE_ON stored with every message
        tc, err = self._handle_retry_and_dlq(cmd, h, msg, tc, props)
        if err is not None:
            return err
        uniq = props.get(_PROPERTY_UNIQ)
        if not uniq:
            uniq = self.uniq_id_generator.create()
            props[_PROPERTY_UNIQ] = uniq
        props[_PROPERTY_CLUSTER] = self._cluster
        tran = props.get(_PROPERTY_TRAN)
        # Java: TRAN_MSG=true makes a half message (except a pre-4.6.1 client's retried delayed message)
        prepare = (
            tran is not None
            and tran.lower() == "true"
            and not ((h.reconsume_times or 0) > 0 and _delay_level(props) > 0)
        )
        if prepare and self.config["rejectTransactionMessage"]:
            return self._response(
                cmd,
                ResponseCode.NO_PERMISSION,
                f"the broker[{self.config.broker_ip}] sending transaction message is forbidden",
            )
        msg.properties = hashmap_order(props)  # Java re-serialises them from a HashMap(128)
        msg.born_timestamp = h.born_timestamp
        msg.born_host = self._born_host(ctx)
        msg.store_host = self._store_host
        msg.reconsume_times = h.reconsume_times or 0
        queue_id = msg.queue_id  # the answer names the queue asked for, not SCHEDULE_TOPIC's (delay/timer)
        if prepare:
            result = await self.transactional_message_service.prepare_message(msg)
            if result.is_ok():
                self.broker_metrics.on_half_put(h.topic)
        else:
            result = await await_put(self.message_store.put_message_async(msg))
        record_put(self.broker_stats, msg.topic, result)
        self._record_put_metrics(msg.topic, props, result)
        handle = recall_handle_of(msg, self.config["brokerName"]) if result.is_ok() else None
        return self._put_result_response(cmd, result, queue_id, uniq, handle)

    async def _send_batch(
        self, ctx: RequestContext, cmd: RemotingCommand, h: SendMessageRequestHeader
    ) -> RemotingCommand:
        """Java sendBatchMessage: every element one record, one queue, consecutive offsets."""
        tc, err = await self._msg_check_registered(ctx, cmd, h)
        if err is not None:
            return err
        if len(h.topic) > 127:
            return self._response(cmd, ResponseCode.MESSAGE_ILLEGAL, f"message topic length too long {len(h.topic)}")
        if h.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return self._response(
                cmd, ResponseCode.MESSAGE_ILLEGAL, "batch request does not support retry group " + h.topic
            )
        queue_id = h.queue_id
        if queue_id < 0:
            queue_id = random.randrange(max(tc.write_queue_nums, 1))
        sys_flag = h.sys_flag
        if tc.topic_filter_type == "MULTI_TAG":
            sys_flag |= m.MessageSysFlag.MULTI_TAGS_FLAG
        props = m.string_to_message_properties(h.properties) if h.properties else {}
        wait = props.get(MessageConst.WAIT_STORE_MSG_OK)
        # pyrmq keeps each element's own properties (incl. its UNIQ_KEY) and adds CLUSTER (spec §4.5)
        batch = MessageExtBatch(
            topic=h.topic,
            body=cmd.body or b"",
            queue_id=queue_id,
            sys_flag=sys_flag,
            born_timestamp=h.born_timestamp,
            born_host=self._born_host(ctx),
            store_host=self._store_host,
            reconsume_times=h.reconsume_times or 0,
            properties_string=f"{_PROPERTY_CLUSTER}{_NAME_SEP}{self._cluster}{_PROP_SEP}",
            wait_store_msg_ok=wait is None or wait.lower() == "true",
        )
        try:
            result = await await_put(self.message_store.put_messages_async(batch))
        except (ValueError, IndexError) as e:  # undecodable batch body
            return self._response(cmd, ResponseCode.MESSAGE_ILLEGAL, f"the batch body is illegal: {e}")
        appended = result.append_message_result
        if appended is not None and appended.status is AppendMessageStatus.MESSAGE_SIZE_EXCEEDED:
            # Java's batch encoder throws here (MessageExtEncoder#encode(MessageExtBatch)); the remoting
            # layer turns the exception into SYSTEM_ERROR, which the client retries, then gives up.
            return self._response(
                cmd, ResponseCode.SYSTEM_ERROR, "java.lang.RuntimeException: message body size exceeded"
            )
        record_put(self.broker_stats, h.topic, result)
        self._record_put_metrics(h.topic, props, result)
        return self._put_result_response(cmd, result, queue_id, None)


def _timer_status_response(c: BrokerConfig, status: PutMessageStatus) -> tuple[int, str] | None:
    """Java SendMessageProcessor#handlePutMessageResult, WHEEL_TIMER_* cases."""
    if status is PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL:
        return ResponseCode.MESSAGE_ILLEGAL, (
            "timer message illegal, the delay time should not be bigger than the max delay "
            f"{int(c['timerMaxDelaySec']) * 1000}ms; or if set del msg, the delay time should be bigger "
            "than the current time"
        )
    if status is PutMessageStatus.WHEEL_TIMER_NOT_ENABLE:
        return ResponseCode.SYSTEM_ERROR, (
            f"accurate timer message is not enabled, timerWheelEnable is {str(bool(c['timerWheelEnable'])).lower()}"
        )
    if status is PutMessageStatus.WHEEL_TIMER_FLOW_CONTROL:
        return ResponseCode.SYSTEM_ERROR, "timer message is under flow control"
    return None


def _delay_level(props: dict[str, str]) -> int:
    v = props.get(MessageConst.DELAY_TIME_LEVEL)
    try:
        return int(v) if v else 0
    except ValueError:
        return 0
