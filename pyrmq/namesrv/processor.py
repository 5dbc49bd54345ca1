"""Request handlers of the NameServer, one method per request code.

Java: ``namesrv/processor/DefaultRequestProcessor`` (brokers, admin tools, KV,
config) and ``ClientRequestProcessor`` (GET_ROUTEINFO_BY_TOPIC), plus
``namesrv/route/ZoneRouteRPCHook``. Responses carry Java's codes and remarks;
anything not listed here is answered REQUEST_CODE_NOT_SUPPORTED by the server.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from pyrmq.common.constants import FAQ_SUGGEST, MASTER_ID
from pyrmq.common.properties import properties_text
from pyrmq.namesrv.kv_config import NAMESPACE_ORDER_TOPIC_CONFIG
from pyrmq.protocol.bodies.common import DataVersion, TopicConfigSerializeWrapper, decode_config_update
from pyrmq.protocol.bodies.namesrv import GetBrokerMemberGroupResponseBody, RegisterBrokerBody, TopicRouteData
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.errors import SystemError_, TopicNotExist
from pyrmq.protocol.fastjson import BodyDecodeError
from pyrmq.protocol.headers.namesrv import (
    ZONE_MODE,
    ZONE_NAME,
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    BrokerHeartbeatRequestHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetBrokerMemberGroupRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    RegisterTopicRequestHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from pyrmq.protocol.version import MQVersion
from pyrmq.remoting.channel import RequestContext, handles

if TYPE_CHECKING:
    from pyrmq.namesrv.config import NamesrvConfig
    from pyrmq.namesrv.kv_config import KVConfigManager
    from pyrmq.namesrv.route_info_manager import RouteInfoManager

log = logging.getLogger("pyrmq.namesrv")

#: Java FAQUrl.suggestTodo(FAQUrl.APPLY_TOPIC_URL)


def _remote(ctx: RequestContext | None) -> str:
    ch = getattr(ctx, "channel", None)
    return getattr(ch, "remote_addr", "?")


class DefaultRequestProcessor:
    """Every NameServer code except the route lookup. Java: DefaultRequestProcessor."""

    def __init__(
        self,
        *,
        config: NamesrvConfig,
        route_info_manager: RouteInfoManager,
        kv_config_manager: KVConfigManager,
        update_config: Callable[[dict[str, str]], None],
    ) -> None:
        self.config = config
        self.route = route_info_manager
        self.kv = kv_config_manager
        self._update_config = update_config  # the controller's: apply, re-sync the route table, persist

    # -------------------------------------------------------------- KV config

    @handles(RequestCode.PUT_KV_CONFIG)
    async def put_kv_config(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = PutKVConfigRequestHeader.from_command(cmd)
        if h.namespace is None or h.key is None:
            raise SystemError_("namespace or key is null")
        self.kv.put_kv_config(h.namespace, h.key, h.value)
        return cmd.make_response()

    @handles(RequestCode.GET_KV_CONFIG)
    async def get_kv_config(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = GetKVConfigRequestHeader.from_command(cmd)
        value = self.kv.get_kv_config(h.namespace, h.key)
        if value is not None:
            return cmd.make_response(ext_fields=GetKVConfigResponseHeader(value).to_ext_fields())
        return cmd.make_response(ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {h.namespace} Key: {h.key}")

    @handles(RequestCode.DELETE_KV_CONFIG)
    async def delete_kv_config(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = DeleteKVConfigRequestHeader.from_command(cmd)
        self.kv.delete_kv_config(h.namespace, h.key)
        return cmd.make_response()

    @handles(RequestCode.GET_KVLIST_BY_NAMESPACE)
    async def get_kv_list_by_namespace(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = GetKVListByNamespaceRequestHeader.from_command(cmd)
        body = self.kv.get_kv_list_by_namespace(h.namespace)
        if body is not None:
            return cmd.make_response(body=body)
        return cmd.make_response(ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {h.namespace}")

    # -------------------------------------------------------------- brokers

    @handles(RequestCode.REGISTER_BROKER)
    async def register_broker(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = RegisterBrokerRequestHeader.from_command(cmd)
        if h.body_crc32 != 0:
            crc = zlib.crc32(cmd.body or b"") & 0x7FFFFFFF  # UtilAll#crc32
            if crc != h.body_crc32:
                log.warning("receive registerBroker request, crc32 not match, from %s", _remote(ctx))
                raise SystemError_("crc32 not match")

        filter_server_list: list[str] | None = None
        try:
            if cmd.version >= MQVersion.V3_0_11:
                body = RegisterBrokerBody.decode_request(cmd.body, h.compressed, cmd.version)
                wrapper: TopicConfigSerializeWrapper = body.topic_config_serialize_wrapper
                filter_server_list = body.filter_server_list
            elif cmd.body:
                wrapper = TopicConfigSerializeWrapper.decode(cmd.body)
            else:
                wrapper = TopicConfigSerializeWrapper(data_version=DataVersion(0, 0, 0))
        except BodyDecodeError as e:
            raise SystemError_(f"Failed to decode RegisterBrokerBody: {e}") from None

        result = self.route.register_broker(
            h.cluster_name,
            h.broker_addr,
            h.broker_name,
            h.broker_id,
            h.ha_server_addr,
            cmd.ext(ZONE_NAME),
            h.heartbeat_timeout_millis,
            h.enable_acting_master,
            wrapper,
            filter_server_list,
            ctx.channel,
        )
        if result is None:
            raise SystemError_("register broker failed")
        body_out = None
        if self.config["returnOrderTopicConfigToBroker"]:
            body_out = self.kv.get_kv_list_by_namespace(NAMESPACE_ORDER_TOPIC_CONFIG)
        ext = RegisterBrokerResponseHeader(result.ha_server_addr, result.master_addr).to_ext_fields()
        return cmd.make_response(ext_fields=ext, body=body_out)

    @handles(RequestCode.UNREGISTER_BROKER)
    async def unregister_broker(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = UnRegisterBrokerRequestHeader.from_command(cmd)
        self.route.unregister_broker(h.cluster_name, h.broker_addr, h.broker_name, h.broker_id)
        return cmd.make_response()

    @handles(RequestCode.BROKER_HEARTBEAT)
    async def broker_heartbeat(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = BrokerHeartbeatRequestHeader.from_command(cmd)
        self.route.update_broker_info_update_timestamp(h.cluster_name, h.broker_addr)
        return cmd.make_response()

    @handles(RequestCode.QUERY_DATA_VERSION)
    async def query_broker_topic_config(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = QueryDataVersionRequestHeader.from_command(cmd)
        try:
            version = DataVersion.decode(cmd.body) if cmd.body else None
        except BodyDecodeError as e:
            raise SystemError_(f"Failed to decode DataVersion: {e}") from None
        prev = self.route.query_broker_topic_config(h.cluster_name, h.broker_addr)
        changed = prev is None or prev != version
        self.route.update_broker_info_update_timestamp(h.cluster_name, h.broker_addr)
        ns_version = self.route.query_broker_topic_config(h.cluster_name, h.broker_addr)
        return cmd.make_response(
            ext_fields=QueryDataVersionResponseHeader(changed).to_ext_fields(),
            body=ns_version.encode() if ns_version is not None else None,
        )

    @handles(RequestCode.GET_BROKER_MEMBER_GROUP)
    async def get_broker_member_group(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = GetBrokerMemberGroupRequestHeader.from_command(cmd)
        group = self.route.get_broker_member_group(h.cluster_name, h.broker_name)
        return cmd.make_response(body=GetBrokerMemberGroupResponseBody(group).encode())

    @handles(RequestCode.GET_BROKER_CLUSTER_INFO)
    async def get_broker_cluster_info(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response(body=self.route.get_all_cluster_info().encode())

    @handles(RequestCode.WIPE_WRITE_PERM_OF_BROKER)
    async def wipe_write_perm_of_broker(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = WipeWritePermOfBrokerRequestHeader.from_command(cmd)
        count = self.route.wipe_write_perm_of_broker(h.broker_name)
        log.info("wipe write perm of broker[%s], client: %s, %d", h.broker_name, _remote(ctx), count)
        return cmd.make_response(ext_fields=WipeWritePermOfBrokerResponseHeader(count).to_ext_fields())

    @handles(RequestCode.ADD_WRITE_PERM_OF_BROKER)
    async def add_write_perm_of_broker(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = AddWritePermOfBrokerRequestHeader.from_command(cmd)
        count = self.route.add_write_perm_of_broker(h.broker_name)
        log.info("add write perm of broker[%s], client: %s, %d", h.broker_name, _remote(ctx), count)
        return cmd.make_response(ext_fields=AddWritePermOfBrokerResponseHeader(count).to_ext_fields())

    # -------------------------------------------------------------- topics

    @handles(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
    async def get_all_topic_list_from_nameserver(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        if not self.config["enableAllTopicList"]:
            raise SystemError_("disable")
        return cmd.make_response(body=self.route.get_all_topic_list().encode())

    @handles(RequestCode.REGISTER_TOPIC_IN_NAMESRV)
    async def register_topic_to_namesrv(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = RegisterTopicRequestHeader.from_command(cmd)
        if cmd.body:
            try:
                route = TopicRouteData.decode(cmd.body)
            except BodyDecodeError as e:
                raise SystemError_(f"Failed to decode TopicRouteData: {e}") from None
            if route.queue_datas:
                self.route.register_topic(h.topic, route.queue_datas)
        return cmd.make_response()

    @handles(RequestCode.DELETE_TOPIC_IN_NAMESRV)
    async def delete_topic_in_namesrv(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = DeleteTopicFromNamesrvRequestHeader.from_command(cmd)
        self.route.delete_topic(h.topic, h.cluster_name or None)
        return cmd.make_response()

    @handles(RequestCode.GET_TOPICS_BY_CLUSTER)
    async def get_topics_by_cluster(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        if not self.config["enableTopicList"]:
            raise SystemError_("disable")
        h = GetTopicsByClusterRequestHeader.from_command(cmd)
        return cmd.make_response(body=self.route.get_topics_by_cluster(h.cluster).encode())

    @handles(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS)
    async def get_system_topic_list_from_ns(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response(body=self.route.get_system_topic_list().encode())

    @handles(RequestCode.GET_UNIT_TOPIC_LIST)
    async def get_unit_topic_list(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        if not self.config["enableTopicList"]:
            raise SystemError_("disable")
        return cmd.make_response(body=self.route.get_unit_topics().encode())

    @handles(RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST)
    async def get_has_unit_sub_topic_list(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        if not self.config["enableTopicList"]:
            raise SystemError_("disable")
        return cmd.make_response(body=self.route.get_has_unit_sub_topic_list().encode())

    @handles(RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST)
    async def get_has_unit_sub_un_unit_topic_list(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        if not self.config["enableTopicList"]:
            raise SystemError_("disable")
        return cmd.make_response(body=self.route.get_has_unit_sub_un_unit_topic_list().encode())

    # -------------------------------------------------------------- NameServer config

    @handles(RequestCode.UPDATE_NAMESRV_CONFIG)
    async def update_config(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        log.info("updateConfig called by %s", _remote(ctx))
        if cmd.body is not None:
            self._update_config(decode_config_update(cmd.body, self.config.black_list()))
        return cmd.make_response()

    @handles(RequestCode.GET_NAMESRV_CONFIG)
    async def get_config(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        text = properties_text(self.config.all_properties())
        return cmd.make_response(body=text.encode("utf-8") if text.strip() else None)


class ClientRequestProcessor:
    """GET_ROUTEINFO_BY_TOPIC. Java: ClientRequestProcessor + ZoneRouteRPCHook."""

    def __init__(
        self,
        *,
        config: NamesrvConfig,
        route_info_manager: RouteInfoManager,
        kv_config_manager: KVConfigManager,
        ready_for_service: Callable[[], bool],
    ) -> None:
        self.config = config
        self.route = route_info_manager
        self.kv = kv_config_manager
        self.ready_for_service = ready_for_service

    @handles(RequestCode.GET_ROUTEINFO_BY_TOPIC)
    async def get_route_info_by_topic(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = GetRouteInfoRequestHeader.from_command(cmd)
        if self.config["needWaitForService"] and not self.ready_for_service():
            log.warning("name server not ready. request code %d", cmd.code)
            raise SystemError_("name server not ready")

        route = self.route.pickup_topic_route_data(h.topic)
        if route is None:
            raise TopicNotExist(f"No topic route info in name server for the topic: {h.topic}{FAQ_SUGGEST}")
        if self.config["orderMessageEnable"]:
            route.order_topic_conf = self.kv.get_kv_config(NAMESPACE_ORDER_TOPIC_CONFIG, h.topic)
        standard = cmd.version >= MQVersion.V4_9_4 or bool(h.accept_standard_json_only)
        zone = cmd.ext(ZONE_NAME)
        if (cmd.ext(ZONE_MODE) or "").lower() == "true" and zone and zone.strip():
            route = filter_by_zone_name(route, zone)
            standard = False  # ZoneRouteRPCHook re-encodes with the default features
        return cmd.make_response(body=route.encode(standard=standard))


def filter_by_zone_name(route: TopicRouteData, zone_name: str) -> TopicRouteData:
    """Keep brokers of ``zone_name`` and brokers without a master. Java: ZoneRouteRPCHook."""
    kept, removed = [], {}
    for bd in route.broker_datas or []:
        if bd.broker_addrs.get(MASTER_ID) is None or (bd.zone_name or "").lower() == zone_name.lower():
            kept.append(bd)
        else:
            removed[bd.broker_name] = bd
    route.broker_datas = kept
    route.queue_datas = [q for q in route.queue_datas or [] if q.broker_name not in removed]
    if route.filter_server_table:
        for bd in removed.values():
            for addr in bd.broker_addrs.values():
                route.filter_server_table.pop(addr, None)
    return route
