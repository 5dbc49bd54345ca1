"""Admin codes about queues, topics and the broker itself.

Java: ``broker/processor/AdminBrokerProcessor`` (getMaxOffset, getMinOffset,
searchOffsetByTimestamp, getEarliestMsgStoretime, lockBatchMQ, unlockBatchMQ,
updateAndCreateTopic[List], deleteTopic, getAllTopicConfig, getTopicConfig,
getBrokerConfig, updateBrokerConfig, getBrokerRuntimeInfo, getTopicStatsInfo,
getSystemTopicListFromBroker, ViewBrokerStatsData, cleanExpiredConsumeQueue,
deleteExpiredCommitLog, cleanUnusedTopic, queryConsumeQueue). Group codes are in
``admin/group_processor.py``, relayed client calls in ``admin/client_forward.py``.
Anything else falls through to the server's REQUEST_CODE_NOT_SUPPORTED.
"""

from __future__ import annotations

import logging

from pyrmq.broker.processor.runtime_info import build_runtime_info
from pyrmq.common.attributes import MESSAGE_TYPE, AttributeModificationError, parse_to_map
from pyrmq.common.constants import SYSTEM_TOPIC_PREFIX, SYSTEM_TOPIC_SET, TIMER_TOPIC, is_system_topic, validate_topic
from pyrmq.protocol.bodies.admin import (
    BrokerStatsData,
    BrokerStatsItem,
    ConsumeQueueData,
    QueryConsumeQueueResponseBody,
    TopicOffset,
    TopicStatsTable,
)
from pyrmq.protocol.bodies.broker import (
    Connection,
    ConsumerConnection,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    UnlockBatchRequestBody,
)
from pyrmq.protocol.bodies.common import TopicConfig, TopicConfigAndMappingSerializeWrapper, decode_config_update
from pyrmq.protocol.bodies.namesrv import KVTable, TopicList
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.errors import ConsumerNotOnline, InvalidParameter, SystemError_, TopicNotExist
from pyrmq.protocol.fastjson import BodyDecodeError, lenient_loads
from pyrmq.protocol.headers.admin import (
    DeleteTopicRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryConsumeQueueRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)
from pyrmq.protocol.headers.broker import (
    CreateTopicRequestHeader,
    GetTopicConfigRequestHeader,
    SearchOffsetRequestHeader,
    TopicQueueRequestHeader,
)
from pyrmq.remoting.server import RequestContext, handles
from pyrmq.store.lmq import is_lmq

log = logging.getLogger("pyrmq.broker.admin")


def _language_name(code: int) -> str:
    from pyrmq.protocol.codes import LanguageCode

    try:
        return LanguageCode(code).name
    except ValueError:
        return "OTHER"


class AdminBrokerProcessor:
    def __init__(
        self,
        *,
        config,
        topic_config_manager,
        consumer_offset_manager,
        consumer_manager,
        rebalance_lock_manager,
        message_store,
        broker_stats,
        broker_metrics,
        pop_inflight_message_counter,
        config_data_version,
        update_config,
        register_increment_broker_data,
        special_services_running,
        now,
    ) -> None:
        self.pop_inflight = pop_inflight_message_counter
        self.config = config
        self.topic_config_manager = topic_config_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.consumer_manager = consumer_manager
        self.broker_metrics = broker_metrics
        self.rebalance_lock_manager = rebalance_lock_manager
        self.message_store = message_store
        self.broker_stats = broker_stats
        self.config_data_version = config_data_version
        self.update_config = update_config
        self.register_increment_broker_data = register_increment_broker_data
        self.special_services_running = special_services_running
        self.now = now

    # ------------------------------------------------------------ offsets by queue

    @handles(RequestCode.GET_MAX_OFFSET)
    async def get_max_offset(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = TopicQueueRequestHeader.from_ext_fields(cmd.ext_fields)
        off = self.message_store.get_max_offset_in_queue(h.topic, h.queue_id)
        return cmd.make_response(ResponseCode.SUCCESS, None, {"offset": str(off)})

    @handles(RequestCode.GET_MIN_OFFSET)
    async def get_min_offset(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = TopicQueueRequestHeader.from_ext_fields(cmd.ext_fields)
        off = self.message_store.get_min_offset_in_queue(h.topic, h.queue_id)
        return cmd.make_response(ResponseCode.SUCCESS, None, {"offset": str(off)})

    @handles(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP)
    async def search_offset_by_timestamp(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = SearchOffsetRequestHeader.from_ext_fields(cmd.ext_fields)
        store = self.message_store
        boundary = (h.boundary_type or "LOWER").upper()
        if boundary == "UPPER":
            off = self._search_upper(h.topic, h.queue_id, h.timestamp)
        else:
            off = store.get_offset_in_queue_by_time(h.topic, h.queue_id, h.timestamp)
        return cmd.make_response(ResponseCode.SUCCESS, None, {"offset": str(off)})

    def _search_upper(self, topic: str, queue_id: int, ts: int) -> int:
        """BoundaryType.UPPER: the largest offset stored at or before ``ts`` (binary search)."""
        store = self.message_store
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
        ts = self.message_store.get_earliest_message_time(h.topic, h.queue_id)
        return cmd.make_response(ResponseCode.SUCCESS, None, {"timestamp": str(ts)})

    # ------------------------------------------------------------ orderly locks

    @handles(RequestCode.LOCK_BATCH_MQ)
    async def lock_batch_mq(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        try:
            body = LockBatchRequestBody.decode(cmd.body or b"{}")
        except BodyDecodeError as e:
            raise InvalidParameter(f"lock body is not readable: {e}") from None
        locked = self.rebalance_lock_manager.try_lock_batch(
            body.consumer_group or "", body.mq_set, body.client_id or ""
        )
        # keep the request's order so the answer is stable
        ordered = [mq for mq in dict.fromkeys(body.mq_set) if mq in locked]
        return cmd.make_response(ResponseCode.SUCCESS, None, None, LockBatchResponseBody(ordered).encode())

    @handles(RequestCode.UNLOCK_BATCH_MQ)
    async def unlock_batch_mq(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        try:
            body = UnlockBatchRequestBody.decode(cmd.body or b"{}")
        except BodyDecodeError as e:
            raise InvalidParameter(f"unlock body is not readable: {e}") from None
        self.rebalance_lock_manager.unlock_batch(body.consumer_group or "", body.mq_set, body.client_id or "")
        return cmd.make_response(ResponseCode.SUCCESS)

    # ------------------------------------------------------------ topics and config

    @handles(RequestCode.UPDATE_AND_CREATE_TOPIC)
    async def update_and_create_topic(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        system = is_system_topic(cmd.ext("topic") or "")
        return await self.broker_metrics.time_topic_create(system, self._update_and_create_topic(ctx, cmd))

    async def _update_and_create_topic(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = CreateTopicRequestHeader.from_ext_fields(cmd.ext_fields)
        log.info(
            "Broker receive request to update or create topic=%s, caller address=%s", h.topic, ctx.channel.remote_addr
        )
        bad = validate_topic(h.topic)
        if bad is not None:
            raise InvalidParameter(bad)
        if self._is_system_topic(h.topic):
            raise InvalidParameter(f"The topic[{h.topic}] is conflict with system topic.")
        try:
            modifications = parse_to_map(h.attributes)
        except AttributeModificationError as e:  # Java: caught around the whole update, SYSTEM_ERROR
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, str(e))
        if not self.config["enableMixedMessageType"] and modifications.get("+" + MESSAGE_TYPE) == "MIXED":
            raise InvalidParameter("MIXED message type is not supported.")
        tc = TopicConfig(
            topic_name=h.topic,
            read_queue_nums=h.read_queue_nums,
            write_queue_nums=h.write_queue_nums,
            perm=h.perm,
            topic_filter_type=h.topic_filter_type or "SINGLE_TAG",
            topic_sys_flag=h.topic_sys_flag or 0,
            order=bool(h.order),
            attributes=modifications,
        )
        tcm = self.topic_config_manager
        if tcm.select_topic_config(h.topic) == tc:
            return cmd.make_response(ResponseCode.SUCCESS)
        try:
            tcm.update_topic_config(tc)
        except AttributeModificationError as e:
            log.error("Update / create topic failed for [%s]: %s", h.topic, e)
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, str(e))
        await self._register_now([tc])
        return cmd.make_response(ResponseCode.SUCCESS)

    async def _register_now(self, configs: list[TopicConfig]) -> None:
        """Java answers a topic create/update only after registerIncrementBrokerData has reached the name
        servers (BrokerOuterAPI#registerBrokerAll waits on its latch), so the tool's next route lookup
        (updateTopicPerm reads the old perm from the route) sees the change."""
        await self.register_increment_broker_data(configs)  # a no-op before the broker started

    @handles(RequestCode.GET_ALL_TOPIC_CONFIG)
    async def get_all_topic_config(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        tcm = self.topic_config_manager
        w = TopicConfigAndMappingSerializeWrapper(dict(tcm.topic_config_table), tcm.data_version)
        return cmd.make_response(ResponseCode.SUCCESS, None, None, w.encode())

    @handles(RequestCode.GET_TOPIC_CONFIG)
    async def get_topic_config(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = GetTopicConfigRequestHeader.from_ext_fields(cmd.ext_fields)
        tc = self.topic_config_manager.select_topic_config(h.topic)
        if tc is None:
            raise TopicNotExist(f"No topic in this broker. topic: {h.topic}")
        body = tc.encode()  # Java TopicConfigAndQueueMapping extends TopicConfig: flat, no mappingDetail
        return cmd.make_response(ResponseCode.SUCCESS, None, None, body)

    @handles(RequestCode.GET_CONSUMER_CONNECTION_LIST)
    async def get_consumer_connection_list(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        """Java getConsumerConnectionList: ConsumerConnection body, or CONSUMER_NOT_ONLINE."""
        group = cmd.ext("consumerGroup") or ""
        info = self.consumer_manager.get_consumer_group_info(group)
        if info is None:
            raise ConsumerNotOnline(f"the consumer group[{group}] not online")
        conns = [
            Connection(ci.client_id, getattr(ci.channel, "remote_addr", ""), _language_name(ci.language), ci.version)
            for ci in info.channel_info_table.values()
        ]
        body = ConsumerConnection(
            conns, dict(info.subscription_table), info.consume_type, info.message_model, info.consume_from_where
        ).encode()
        return cmd.make_response(ResponseCode.SUCCESS, None, None, body)

    @handles(RequestCode.GET_BROKER_CONFIG)
    async def get_broker_config(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        body = self.config.properties_text().encode("utf-8")
        dv = self.config_data_version.encode().decode()
        return cmd.make_response(ResponseCode.SUCCESS, None, {"version": dv}, body)

    @handles(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST)
    async def update_and_create_topic_list(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        return await self.broker_metrics.time_topic_create(False, self._update_and_create_topic_list(ctx, cmd))

    async def _update_and_create_topic_list(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        """5.x batch create: body ``{"topicConfigList":[TopicConfig...]}``, every name checked first.
        Java labels its creation time with isSystemTopic("a;b;"), false for any real list: so here."""
        try:
            obj = lenient_loads(cmd.body or b"{}")
        except BodyDecodeError as e:
            raise InvalidParameter(f"topic list body is not readable: {e}") from None
        items = obj.get("topicConfigList") if isinstance(obj, dict) else None
        configs = [TopicConfig.from_obj(o) for o in (items or []) if isinstance(o, dict)]
        for tc in configs:
            bad = validate_topic(tc.topic_name)
            if bad is not None:
                raise InvalidParameter(bad)
            if self._is_system_topic(tc.topic_name or ""):
                raise InvalidParameter(f"The topic[{tc.topic_name}] is conflict with system topic.")
        self.topic_config_manager.update_topic_config_list(configs)
        await self._register_now(configs)
        return cmd.make_response(ResponseCode.SUCCESS)

    @handles(RequestCode.DELETE_TOPIC_IN_BROKER)
    async def delete_topic(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        """Drop config, offsets, stats and the topic's consume queues (Java deleteTopic)."""
        h = DeleteTopicRequestHeader.from_ext_fields(cmd.ext_fields)
        log.info(
            "AdminBrokerProcessor#deleteTopic: broker receive request to delete topic=%s, caller=%s",
            h.topic,
            ctx.channel.remote_addr,
        )
        if not h.topic or not h.topic.strip():
            raise InvalidParameter("The specified topic is blank.")
        if self._is_system_topic(h.topic):
            raise InvalidParameter(f"The topic[{h.topic}] is conflict with system topic.")
        try:
            self.topic_config_manager.delete_topic_config(h.topic)
            self.consumer_offset_manager.clean_offset_by_topic(h.topic)
            self.broker_stats.on_topic_deleted(h.topic)
            self.pop_inflight.clear_topic(h.topic)
            self.message_store.delete_topics({h.topic})
        except Exception as e:  # Java: buildErrorResponse(SYSTEM_ERROR, t.getMessage())
            log.exception("delete topic %s failed", h.topic)
            raise SystemError_(str(e)) from None
        return cmd.make_response(ResponseCode.SUCCESS)

    @handles(RequestCode.UPDATE_BROKER_CONFIG)
    async def update_broker_config(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        """Properties text body; black-listed keys refused; a value that does not parse is ignored like Java."""
        log.info("Broker receive request to update config, caller address=%s", ctx.channel.remote_addr)
        if not cmd.body:
            return cmd.make_response(ResponseCode.SUCCESS)
        props = decode_config_update(cmd.body, self.config.black_list())
        log.info("updateBrokerConfig, new config: [%s] client: %s", props, ctx.channel.remote_addr)
        self.update_config(props)  # a value that does not parse is logged and skipped (properties2Object)
        return cmd.make_response(ResponseCode.SUCCESS)

    @handles(RequestCode.GET_BROKER_RUNTIME_INFO)
    async def get_broker_runtime_info(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        info = build_runtime_info(
            self.config, self.message_store, self.broker_stats, self.now(), self.special_services_running()
        )
        body = KVTable(info).encode()
        return cmd.make_response(ResponseCode.SUCCESS, None, None, body)

    @handles(RequestCode.GET_TOPIC_STATS_INFO)
    async def get_topic_stats_info(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = GetTopicStatsInfoRequestHeader.from_ext_fields(cmd.ext_fields)
        tc = self.topic_config_manager.select_topic_config(h.topic)
        if tc is None:
            raise TopicNotExist(f"topic[{h.topic}] not exist")
        store = self.message_store
        table = TopicStatsTable()
        for i in range(max(tc.write_queue_nums, tc.read_queue_nums)):
            lo = max(store.get_min_offset_in_queue(h.topic, i), 0)
            hi = max(store.get_max_offset_in_queue(h.topic, i), 0)
            ts = store.get_message_store_timestamp(h.topic, i, hi - 1) if hi > 0 else 0
            table.offset_table[MessageQueue(h.topic, self.config["brokerName"], i)] = TopicOffset(lo, hi, ts)
        table.topic_put_tps = self.broker_stats.tps_topic_put_nums(h.topic)
        return cmd.make_response(ResponseCode.SUCCESS, None, None, table.encode())

    def _system_topics(self) -> set[str]:
        """Java TopicValidator's SYSTEM_TOPIC_SET as a started broker holds it: the fixed names plus what
        TopicConfigManager's constructor adds (cluster and broker name, reply, revive, sync-member, trace
        when enabled, timer)."""
        c = self.config
        cluster, broker = c["brokerClusterName"], c["brokerName"]
        topics = set(SYSTEM_TOPIC_SET) | {
            cluster,
            broker,
            f"{cluster}_REPLY_TOPIC",
            f"{SYSTEM_TOPIC_PREFIX}REVIVE_LOG_{cluster}",
            f"{SYSTEM_TOPIC_PREFIX}SYNC_BROKER_MEMBER_{broker}",
        }
        if c["traceTopicEnable"]:
            topics.add(c["msgTraceTopicName"])
        if c["timerWheelEnable"]:
            topics.add(TIMER_TOPIC)
        return topics

    def _is_system_topic(self, topic: str) -> bool:
        """Java TopicValidator#isSystemTopic."""
        return topic in self._system_topics() or topic.startswith(SYSTEM_TOPIC_PREFIX)

    @handles(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER)
    async def get_system_topic_list_from_broker(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response(ResponseCode.SUCCESS, None, None, TopicList(sorted(self._system_topics())).encode())

    @handles(RequestCode.VIEW_BROKER_STATS_DATA)
    async def view_broker_stats_data(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = ViewBrokerStatsDataRequestHeader.from_ext_fields(cmd.ext_fields)
        it = self.broker_stats.get_stats_item(h.stats_name, h.stats_key)
        if it is None:
            raise SystemError_(f"The stats <{h.stats_name}> <{h.stats_key}> not exist")

        def item(s) -> BrokerStatsItem:
            return BrokerStatsItem(s.sum, s.tps, s.avgpt)

        body = BrokerStatsData(item(it.in_minute()), item(it.in_hour()), item(it.in_day()))
        return cmd.make_response(ResponseCode.SUCCESS, None, None, body.encode())

    @handles(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)
    async def clean_expired_consume_queue(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        store = self.message_store
        fn = getattr(store, "clean_expired_consumer_queue", None)
        try:
            if fn is not None:
                fn()
        except Exception as e:
            raise SystemError_(str(e)) from e
        return cmd.make_response(ResponseCode.SUCCESS)

    @handles(RequestCode.DELETE_EXPIRED_COMMITLOG)
    async def delete_expired_commit_log(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        store = self.message_store
        fn = getattr(store, "execute_delete_files_manually", None)
        if fn is not None:
            fn()
        return cmd.make_response(ResponseCode.SUCCESS)

    @handles(RequestCode.CLEAN_UNUSED_TOPIC)
    async def clean_unused_topic(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        """Drop consume queues of topics that have no config (Java MessageStore#cleanUnusedTopic)."""
        keep = set(self.topic_config_manager.topic_config_table)
        # Java skips the LMQs: they never have a config
        unused = {t for t in self.message_store.get_topics() if t not in keep and not is_lmq(t)}
        if unused:
            self.message_store.delete_topics(unused)
        return cmd.make_response(ResponseCode.SUCCESS)

    @handles(RequestCode.QUERY_CONSUME_QUEUE)
    async def query_consume_queue(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = QueryConsumeQueueRequestHeader.from_ext_fields(cmd.ext_fields)
        cq = self.message_store.get_consume_queue(h.topic, h.queue_id)
        if cq is None:
            raise SystemError_(f"{h.topic}:{h.queue_id} is not exist!")
        store = self.message_store
        body = QueryConsumeQueueResponseBody(
            max_queue_index=store.get_max_offset_in_queue(h.topic, h.queue_id),
            min_queue_index=store.get_min_offset_in_queue(h.topic, h.queue_id),
        )
        if h.consumer_group:
            sub = self.consumer_manager.find_subscription_data(h.consumer_group, h.topic)
            body.subscription_data = sub
        if h.index < body.min_queue_index or h.index >= body.max_queue_index:
            return cmd.make_response(ResponseCode.SUCCESS, None, None, body.encode())
        for off in range(h.index, min(h.index + max(h.count, 0), body.max_queue_index)):
            e = cq.get(off)
            if e is None:
                break
            body.queue_data.append(ConsumeQueueData(physic_offset=e[0], physic_size=e[1], tags_code=e[2]))
        return cmd.make_response(ResponseCode.SUCCESS, None, None, body.encode())
