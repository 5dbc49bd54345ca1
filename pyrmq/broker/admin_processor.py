"""The admin codes the client paths need: offsets by queue, queue locks, topic creation and listing.

Java: ``broker/processor/AdminBrokerProcessor`` (getMaxOffset, getMinOffset,
searchOffsetByTimestamp, getEarliestMsgStoretime, lockBatchMQ, unlockBatchMQ,
updateAndCreateTopic, getAllTopicConfig, getTopicConfig, getBrokerConfig).
Anything else falls through to the server's REQUEST_CODE_NOT_SUPPORTED.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pyrmq.remoting.bodies import BodyDecodeError, TopicConfig, TopicConfigAndMappingSerializeWrapper
from pyrmq.remoting.codes import RequestCode, ResponseCode
from pyrmq.remoting.command import RemotingCommand
from pyrmq.remoting.errors import InvalidParameter
from pyrmq.remoting.server import RequestContext, handles

from .bodies import (
    Connection,
    ConsumerConnection,
    LockBatchRequestBody,
    LockBatchResponseBody,
    UnlockBatchRequestBody,
)
from .headers import (
    CreateTopicRequestHeader,
    GetTopicConfigRequestHeader,
    SearchOffsetRequestHeader,
    TopicQueueRequestHeader,
)
from .topic_config_manager import is_system_topic, validate_topic

if TYPE_CHECKING:
    from .controller import BrokerController

log = logging.getLogger("pyrmq.broker.admin")


def parse_attributes(text: str | None) -> dict[str, str]:
    """Java AttributeParser#parseToMap: ``+a=b,-c`` -> {"+a": "b", "-c": ""}."""
    out: dict[str, str] = {}
    if not text:
        return out
    for kv in text.split(","):
        if not kv:
            continue
        if kv.startswith("+"):
            k, _, v = kv.partition("=")
            out[k] = v
        elif kv.startswith("-"):
            out[kv] = ""
        else:
            raise InvalidParameter(f"add/alter attribute format is wrong: {kv}")
    return out


def _language_name(code: int) -> str:
    from pyrmq.remoting.codes import LanguageCode

    try:
        return LanguageCode(code).name
    except ValueError:
        return "OTHER"


class AdminBrokerProcessor:
    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller

    # ------------------------------------------------------------ offsets by queue

    @handles(RequestCode.GET_MAX_OFFSET)
    async def get_max_offset(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = TopicQueueRequestHeader.from_ext_fields(cmd.ext_fields)
        off = self.controller.message_store.get_max_offset_in_queue(h.topic, h.queue_id)
        return cmd.make_response(ResponseCode.SUCCESS, None, {"offset": str(off)})

    @handles(RequestCode.GET_MIN_OFFSET)
    async def get_min_offset(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = TopicQueueRequestHeader.from_ext_fields(cmd.ext_fields)
        off = self.controller.message_store.get_min_offset_in_queue(h.topic, h.queue_id)
        return cmd.make_response(ResponseCode.SUCCESS, None, {"offset": str(off)})

    @handles(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP)
    async def search_offset_by_timestamp(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = SearchOffsetRequestHeader.from_ext_fields(cmd.ext_fields)
        store = self.controller.message_store
        boundary = (h.boundary_type or "LOWER").upper()
        if boundary == "UPPER":
            off = self._search_upper(h.topic, h.queue_id, h.timestamp)
        else:
            off = store.get_offset_in_queue_by_time(h.topic, h.queue_id, h.timestamp)
        return cmd.make_response(ResponseCode.SUCCESS, None, {"offset": str(off)})

    def _search_upper(self, topic: str, queue_id: int, ts: int) -> int:
        """BoundaryType.UPPER: the largest offset stored at or before ``ts`` (binary search)."""
        store = self.controller.message_store
        lo = store.get_min_offset_in_queue(topic, queue_id)
        hi = store.get_max_offset_in_queue(topic, queue_id) - 1
        if hi < lo:
            return 0
        best = lo
        while lo <= hi:
            mid = (lo + hi) // 2
            t = store.get_message_store_timestamp(topic, queue_id, mid)
            if 0 <= t <= ts:
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        return best

    @handles(RequestCode.GET_EARLIEST_MSG_STORETIME)
    async def get_earliest_msg_storetime(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = TopicQueueRequestHeader.from_ext_fields(cmd.ext_fields)
        ts = self.controller.message_store.get_earliest_message_time(h.topic, h.queue_id)
        return cmd.make_response(ResponseCode.SUCCESS, None, {"timestamp": str(ts)})

    # ------------------------------------------------------------ orderly locks

    @handles(RequestCode.LOCK_BATCH_MQ)
    async def lock_batch_mq(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        try:
            body = LockBatchRequestBody.decode(cmd.body or b"{}")
        except BodyDecodeError as e:
            raise InvalidParameter(f"lock body is not readable: {e}") from None
        locked = self.controller.rebalance_lock_manager.try_lock_batch(
            body.consumer_group or "", body.mq_set, body.client_id or "")
        # keep the request's order so the answer is stable
        ordered = [mq for mq in dict.fromkeys(body.mq_set) if mq in locked]
        return cmd.make_response(ResponseCode.SUCCESS, None, None, LockBatchResponseBody(ordered).encode())

    @handles(RequestCode.UNLOCK_BATCH_MQ)
    async def unlock_batch_mq(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        try:
            body = UnlockBatchRequestBody.decode(cmd.body or b"{}")
        except BodyDecodeError as e:
            raise InvalidParameter(f"unlock body is not readable: {e}") from None
        self.controller.rebalance_lock_manager.unlock_batch(body.consumer_group or "", body.mq_set,
                                                            body.client_id or "")
        return cmd.make_response(ResponseCode.SUCCESS)

    # ------------------------------------------------------------ topics and config

    @handles(RequestCode.UPDATE_AND_CREATE_TOPIC)
    async def update_and_create_topic(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = CreateTopicRequestHeader.from_ext_fields(cmd.ext_fields)
        log.info("Broker receive request to update or create topic=%s, caller address=%s", h.topic,
                 ctx.channel.remote_addr)
        bad = validate_topic(h.topic)
        if bad is not None:
            return cmd.make_response(ResponseCode.INVALID_PARAMETER, bad)
        if is_system_topic(h.topic):
            return cmd.make_response(ResponseCode.INVALID_PARAMETER,
                                     f"The topic[{h.topic}] is conflict with system topic.")
        tc = TopicConfig(topic_name=h.topic, read_queue_nums=h.read_queue_nums, write_queue_nums=h.write_queue_nums,
                         perm=h.perm, topic_filter_type=h.topic_filter_type or "SINGLE_TAG",
                         topic_sys_flag=h.topic_sys_flag or 0, order=bool(h.order),
                         attributes=parse_attributes(h.attributes))
        tcm = self.controller.topic_config_manager
        if tcm.select_topic_config(h.topic) == tc:
            return cmd.make_response(ResponseCode.SUCCESS)
        tcm.update_topic_config(tc)
        return cmd.make_response(ResponseCode.SUCCESS)

    @handles(RequestCode.GET_ALL_TOPIC_CONFIG)
    async def get_all_topic_config(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        tcm = self.controller.topic_config_manager
        w = TopicConfigAndMappingSerializeWrapper(dict(tcm.topic_config_table), tcm.data_version)
        return cmd.make_response(ResponseCode.SUCCESS, None, None, w.encode())

    @handles(RequestCode.GET_TOPIC_CONFIG)
    async def get_topic_config(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = GetTopicConfigRequestHeader.from_ext_fields(cmd.ext_fields)
        tc = self.controller.topic_config_manager.select_topic_config(h.topic)
        if tc is None:
            return cmd.make_response(ResponseCode.TOPIC_NOT_EXIST, f"No topic in this broker. topic: {h.topic}")
        body = b'{"topicConfig":' + tc.encode() + b"}"  # TopicConfigAndQueueMapping without mapping
        return cmd.make_response(ResponseCode.SUCCESS, None, None, body)

    @handles(RequestCode.GET_CONSUMER_CONNECTION_LIST)
    async def get_consumer_connection_list(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        """Java getConsumerConnectionList: ConsumerConnection body, or CONSUMER_NOT_ONLINE."""
        group = cmd.ext("consumerGroup") or ""
        info = self.controller.consumer_manager.get_consumer_group_info(group)
        if info is None:
            return cmd.make_response(ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online")
        conns = [
            Connection(ci.client_id, getattr(ci.channel, "remote_addr", ""), _language_name(ci.language), ci.version)
            for ci in info.channel_info_table.values()
        ]
        body = ConsumerConnection(conns, dict(info.subscription_table), info.consume_type, info.message_model,
                                  info.consume_from_where).encode()
        return cmd.make_response(ResponseCode.SUCCESS, None, None, body)

    @handles(RequestCode.GET_BROKER_CONFIG)
    async def get_broker_config(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        c = self.controller
        body = c.config.properties_text().encode("utf-8")
        dv = c.config_data_version.encode().decode()
        return cmd.make_response(ResponseCode.SUCCESS, None, {"version": dv}, body)


