"""Admin codes about consumer/producer groups: configs, consume stats, connections, reset offsets.

Java: ``broker/processor/AdminBrokerProcessor`` (updateAndCreateSubscriptionGroup[List],
getAllSubscriptionGroup, getSubscriptionGroup, deleteSubscriptionGroup, getConsumeStats, getProducerConnectionList,
getAllProducerInfo, queryTopicConsumeByWho, queryTopicsByConsumer,
querySubscriptionByConsumer, resetOffset/resetOffsetInner, fetchAllConsumeStatsInBroker,
cloneGroupOffset) and ``client/net/Broker2Client#resetOffset`` (client-side reset).
"""

from __future__ import annotations

import logging

from pyrmq.broker.subscription_group_manager import SubscriptionGroupConfig
from pyrmq.common.constants import validate_group
from pyrmq.protocol.bodies.admin import (
    ConsumeStats,
    ConsumeStatsList,
    GroupList,
    OffsetWrapper,
    ProducerConnection,
    ProducerInfo,
    ProducerTableInfo,
    QuerySubscriptionResponseBody,
    ResetOffsetBody,
    SubscriptionGroupWrapper,
)
from pyrmq.protocol.bodies.broker import Connection, MessageQueue
from pyrmq.protocol.bodies.namesrv import TopicList
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.errors import InvalidParameter, SubscriptionGroupNotExist, SystemError_, TopicNotExist
from pyrmq.protocol.fastjson import BodyDecodeError, fastjson_dumps, lenient_loads
from pyrmq.protocol.headers.admin import (
    CloneGroupOffsetRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    GetConsumeStatsInBrokerHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetSubscriptionGroupConfigRequestHeader,
    QuerySubscriptionByConsumerRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    QueryTopicsByConsumerRequestHeader,
    ResetOffsetRequestHeader,
)
from pyrmq.remoting.server import RequestContext, handles

log = logging.getLogger("pyrmq.broker.admin")


def language_name(code: int) -> str:
    from pyrmq.protocol.codes import LanguageCode

    try:
        return LanguageCode(code).name
    except ValueError:
        return "OTHER"


class GroupAdminProcessor:
    def __init__(
        self,
        *,
        config,
        topic_config_manager,
        subscription_group_manager,
        consumer_offset_manager,
        consumer_manager,
        producer_manager,
        message_store,
        broker_stats,
        broker_metrics,
        broker2client,
        pop_inflight_message_counter,
    ) -> None:
        self.pop_inflight = pop_inflight_message_counter
        self.config = config
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.consumer_manager = consumer_manager
        self.producer_manager = producer_manager
        self.message_store = message_store
        self.broker_stats = broker_stats
        self.broker_metrics = broker_metrics
        self.broker2client = broker2client

    @property
    def _broker_name(self) -> str:
        return self.config["brokerName"]

    # ------------------------------------------------------------ subscription group configs

    def _decode_group(self, obj) -> SubscriptionGroupConfig:
        if not isinstance(obj, dict):
            raise InvalidParameter("subscription group body is not a JSON object")
        return SubscriptionGroupConfig.from_obj(obj)

    @handles(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
    async def update_and_create_subscription_group(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        return await self.broker_metrics.time_group_create(self._update_and_create_subscription_group(ctx, cmd))

    async def _update_and_create_subscription_group(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        log.info("AdminBrokerProcessor#updateAndCreateSubscriptionGroup called by %s", ctx.channel.remote_addr)
        if not cmd.body:
            return cmd.make_response(ResponseCode.SUCCESS)
        try:
            cfg = self._decode_group(lenient_loads(cmd.body))
        except BodyDecodeError as e:
            raise InvalidParameter(f"subscription group body is not readable: {e}") from None
        bad = validate_group(cfg.group_name)
        if bad is not None:
            raise InvalidParameter(bad)
        self.subscription_group_manager.update_subscription_group_config(cfg)
        return cmd.make_response(ResponseCode.SUCCESS)

    @handles(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST)
    async def update_and_create_subscription_group_list(
        self, ctx: RequestContext, cmd: RemotingCommand
    ) -> RemotingCommand:
        return await self.broker_metrics.time_group_create(self._update_and_create_subscription_group_list(ctx, cmd))

    async def _update_and_create_subscription_group_list(
        self, ctx: RequestContext, cmd: RemotingCommand
    ) -> RemotingCommand:
        try:
            obj = lenient_loads(cmd.body or b"{}")
        except BodyDecodeError as e:
            raise InvalidParameter(f"subscription group list body is not readable: {e}") from None
        configs = [self._decode_group(o) for o in (obj.get("groupConfigList") or [])] if isinstance(obj, dict) else []
        if not configs:
            raise InvalidParameter("Subscription group config list is empty.")
        for cfg in configs:
            bad = validate_group(cfg.group_name)
            if bad is not None:
                raise InvalidParameter(bad)
        for cfg in configs:
            self.subscription_group_manager.update_subscription_group_config(cfg)
        return cmd.make_response(ResponseCode.SUCCESS)

    @handles(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
    async def get_all_subscription_group(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        sgm = self.subscription_group_manager
        w = SubscriptionGroupWrapper(dict(sgm.table), sgm.forbidden_table, sgm.data_version)
        return cmd.make_response(ResponseCode.SUCCESS, None, {"totalGroupNum": str(len(sgm.table))}, w.encode())

    @handles(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG)
    async def get_subscription_group(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        """One group's config (mqadmin and the dashboard ask a broker for one group); like Java's
        findSubscriptionGroupConfig, an unknown group is auto-created when autoCreateSubscriptionGroup."""
        h = GetSubscriptionGroupConfigRequestHeader.from_ext_fields(cmd.ext_fields)
        cfg = self.subscription_group_manager.find_subscription_group_config(h.group)
        if cfg is None:
            raise SubscriptionGroupNotExist("No group in this broker")
        return cmd.make_response(ResponseCode.SUCCESS, None, None, cfg.encode())

    @handles(RequestCode.DELETE_SUBSCRIPTIONGROUP)
    async def delete_subscription_group(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = DeleteSubscriptionGroupRequestHeader.from_ext_fields(cmd.ext_fields)
        log.info("AdminBrokerProcessor#deleteSubscriptionGroup, caller=%s", ctx.channel.remote_addr)
        self.subscription_group_manager.delete_subscription_group_config(h.group_name)
        if not h.clean_offset:
            # Java 5.5.0 evaluates `cleanOffset || LiteMetadataUtil.isLiteGroupType(group)`; the latter's
            # findSubscriptionGroupConfig re-creates the group just deleted (autoCreateSubscriptionGroup).
            # pyrmq has no lite groups, but keeps that observable side effect (docs/admin.md).
            self.subscription_group_manager.find_subscription_group_config(h.group_name)
        if h.clean_offset or h.remove_offset:  # removeOffset: the 4.9.x tools' name, honoured too
            self.consumer_offset_manager.remove_offset(h.group_name)
        self.broker_stats.on_group_deleted(h.group_name)
        self.pop_inflight.clear_group(h.group_name)
        return cmd.make_response(ResponseCode.SUCCESS)

    # ------------------------------------------------------------ consume stats

    def _offset_wrapper(self, group: str, topic: str, qid: int, with_pull: bool) -> OffsetWrapper:
        store = self.message_store
        broker_offset = max(store.get_max_offset_in_queue(topic, qid), 0)
        consumer_offset = max(self.consumer_offset_manager.query_offset(group, topic, qid), 0)
        ow = OffsetWrapper(broker_offset=broker_offset, consumer_offset=consumer_offset)
        if with_pull:
            ow.pull_offset = max(consumer_offset, self.consumer_offset_manager.query_pull_offset(group, topic, qid))
        if consumer_offset - 1 >= 0:
            ts = store.get_message_store_timestamp(topic, qid, consumer_offset - 1)
            if ts > 0:
                ow.last_timestamp = ts
        return ow

    def _topics_for_consume_stats(self, h: GetConsumeStatsRequestHeader) -> list[str]:
        listed = [t for t in (h.topic_list or "").split(";") if t]
        if listed:
            return listed
        topics = (
            sorted(self.consumer_offset_manager.which_topic_by_consumer(h.consumer_group)) if not h.topic else [h.topic]
        )
        subs = self.consumer_manager.find_subscription_data_count(h.consumer_group)
        return [
            t
            for t in topics
            if not (subs > 0 and self.consumer_manager.find_subscription_data(h.consumer_group, t) is None)
        ]

    @handles(RequestCode.GET_CONSUME_STATS)
    async def get_consume_stats(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = GetConsumeStatsRequestHeader.from_ext_fields(cmd.ext_fields)
        stats = ConsumeStats()
        for topic in self._topics_for_consume_stats(h):
            tc = self.topic_config_manager.select_topic_config(topic)
            if tc is None:
                log.warning("AdminBrokerProcessor#getConsumeStats: topic config does not exist, topic=%s", topic)
                continue
            for i in range(tc.read_queue_nums):
                mq = MessageQueue(topic, self._broker_name, i)
                stats.offset_table[mq] = self._offset_wrapper(h.consumer_group, topic, i, True)
            stats.consume_tps += self.broker_stats.tps_group_get_nums(h.consumer_group, topic)
        return cmd.make_response(ResponseCode.SUCCESS, None, None, stats.encode())

    @handles(RequestCode.GET_BROKER_CONSUME_STATS)
    async def fetch_all_consume_stats_in_broker(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = GetConsumeStatsInBrokerHeader.from_ext_fields(cmd.ext_fields)
        out = ConsumeStatsList(broker_addr=self.config.broker_addr)
        for group in list(self.subscription_group_manager.table):
            stats_list = []
            for topic in sorted(self.consumer_offset_manager.which_topic_by_consumer(group)):
                tc = self.topic_config_manager.select_topic_config(topic)
                if tc is None or (h.is_order and not tc.order):
                    continue
                if (
                    self.consumer_manager.find_subscription_data(group, topic) is None
                    and self.consumer_manager.find_subscription_data_count(group) > 0
                ):
                    continue
                cs = ConsumeStats()
                for i in range(tc.write_queue_nums):
                    ow = self._offset_wrapper(group, topic, i, False)
                    cs.offset_table[MessageQueue(topic, self._broker_name, i)] = ow
                    out.total_diff += ow.broker_offset - ow.consumer_offset
                cs.consume_tps = self.broker_stats.tps_group_get_nums(group, topic)
                stats_list.append(cs)
            if stats_list:
                out.consume_stats_list.append({group: stats_list})
        return cmd.make_response(ResponseCode.SUCCESS, None, None, out.encode())

    # ------------------------------------------------------------ producers and who-consumes

    @handles(RequestCode.GET_PRODUCER_CONNECTION_LIST)
    async def get_producer_connection_list(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = GetProducerConnectionListRequestHeader.from_ext_fields(cmd.ext_fields)
        chans = self.producer_manager.group_channel_table.get(h.producer_group)
        if chans is None:
            raise SystemError_(f"the producer group[{h.producer_group}] not exist")
        body = ProducerConnection(
            [
                Connection(i.client_id, getattr(i.channel, "remote_addr", ""), language_name(i.language), i.version)
                for i in chans.values()
            ]
        )
        return cmd.make_response(ResponseCode.SUCCESS, None, None, body.encode())

    @handles(RequestCode.GET_ALL_PRODUCER_INFO)
    async def get_all_producer_info(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        table = ProducerTableInfo()
        for group, chans in self.producer_manager.group_channel_table.items():
            table.data[group] = [
                ProducerInfo(
                    i.client_id,
                    getattr(i.channel, "remote_addr", ""),
                    language_name(i.language),
                    i.version,
                    i.last_update_timestamp,
                )
                for i in chans.values()
            ]
        return cmd.make_response(ResponseCode.SUCCESS, None, None, table.encode())

    @handles(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO)
    async def query_topic_consume_by_who(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = QueryTopicConsumeByWhoRequestHeader.from_ext_fields(cmd.ext_fields)
        groups = self.consumer_manager.query_topic_consume_by_who(h.topic)
        groups |= self.consumer_offset_manager.which_group_by_topic(h.topic)
        return cmd.make_response(ResponseCode.SUCCESS, None, None, GroupList(sorted(groups)).encode())

    @handles(RequestCode.QUERY_TOPICS_BY_CONSUMER)
    async def query_topics_by_consumer(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = QueryTopicsByConsumerRequestHeader.from_ext_fields(cmd.ext_fields)
        topics = sorted(self.consumer_offset_manager.which_topic_by_consumer(h.group))
        return cmd.make_response(ResponseCode.SUCCESS, None, None, TopicList(topics, self.config.broker_addr).encode())

    @handles(RequestCode.QUERY_SUBSCRIPTION_BY_CONSUMER)
    async def query_subscription_by_consumer(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = QuerySubscriptionByConsumerRequestHeader.from_ext_fields(cmd.ext_fields)
        sub = self.consumer_manager.find_subscription_data(h.group, h.topic)
        body = QuerySubscriptionResponseBody(sub, h.group, h.topic)
        return cmd.make_response(ResponseCode.SUCCESS, None, None, body.encode())

    # ------------------------------------------------------------ offsets

    def _search(self, topic: str, qid: int, timestamp: int) -> int:
        store = self.message_store
        if timestamp < 0:
            return store.get_max_offset_in_queue(topic, qid)
        return store.get_offset_in_queue_by_time(topic, qid, timestamp)

    @handles(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET)
    async def reset_offset(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = ResetOffsetRequestHeader.from_ext_fields(cmd.ext_fields)
        log.info(
            "[reset-offset] reset offset started by %s. topic=%s, group=%s, timestamp=%s, isForce=%s",
            ctx.channel.remote_addr,
            h.topic,
            h.group,
            h.timestamp,
            h.is_force,
        )
        if self.config["useServerSideResetOffset"]:
            return self._reset_offset_inner(cmd, h)
        return await self.broker2client.reset_offset(cmd, h.topic, h.group, h.timestamp, h.is_force)

    def _reset_offset_inner(self, cmd: RemotingCommand, h: ResetOffsetRequestHeader) -> RemotingCommand:
        """Java resetOffsetInner (5.x server-side reset)."""
        if not self.config.is_master:
            raise SystemError_("Can not reset offset in slave broker")
        tc = self.topic_config_manager.select_topic_config(h.topic)
        if tc is None:
            raise TopicNotExist(f"Topic {h.topic} does not exist")
        # containsSubscriptionGroup: no auto-create here (Java 5.5.0 bytecode checks the table as HEAD does)
        if not self.subscription_group_manager.contains(h.group):
            raise SubscriptionGroupNotExist(f"Group {h.group} does not exist")
        store = self.message_store
        offsets: dict[int, int] = {}
        if h.queue_id is not None and h.queue_id >= 0:
            offset = h.offset
            if offset is not None and offset != -1:
                lo = store.get_min_offset_in_queue(h.topic, h.queue_id)
                hi = store.get_max_offset_in_queue(h.topic, h.queue_id)
                if (lo >= 0 and offset < lo) or offset > hi + 1:
                    raise SystemError_(f"Target offset {offset} not in consume queue range [{lo}-{hi}]")
            else:
                offset = self._search(h.topic, h.queue_id, h.timestamp)
            offsets[h.queue_id] = offset
        else:
            for i in range(tc.read_queue_nums):
                offsets[i] = self._search(h.topic, i, h.timestamp)
        if not offsets:
            raise SystemError_("No queues to reset.")
        body = ResetOffsetBody()
        for qid, off in offsets.items():
            self.consumer_offset_manager.assign_reset_offset(h.topic, h.group, qid, off)
            self.pop_inflight.clear(h.topic, h.group, qid)
            body.offset_table[MessageQueue(h.topic, self._broker_name, qid)] = off
        log.info("Reset offset, topic=%s, group=%s, queues=%s", h.topic, h.group, offsets)
        return cmd.make_response(ResponseCode.SUCCESS, None, None, body.encode())

    @handles(RequestCode.CLONE_GROUP_OFFSET)
    async def clone_group_offset(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = CloneGroupOffsetRequestHeader.from_ext_fields(cmd.ext_fields)
        topics = [h.topic] if h.topic else sorted(self.consumer_offset_manager.which_topic_by_consumer(h.src_group))
        for topic in topics:
            if self.topic_config_manager.select_topic_config(topic) is None:
                log.warning("[cloneGroupOffset], topic config not exist, %s", topic)
                continue
            if not h.offline:
                info = self.consumer_manager.get_consumer_group_info(h.src_group)
                if info is not None and not info.channel_info_table:
                    continue
            self.consumer_offset_manager.clone_offset(h.src_group, h.dest_group, topic)
        return cmd.make_response(ResponseCode.SUCCESS)


def encode_offset_table(table: dict[MessageQueue, int]) -> bytes:
    return fastjson_dumps(ResetOffsetBody(table))
