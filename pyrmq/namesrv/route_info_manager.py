"""The NameServer's route tables: which broker serves which topic, and which brokers are alive.

Java: ``namesrv/routeinfo/RouteInfoManager`` (5.x). Pure Python, no I/O: the
caller passes a ``channel`` object (any identity-comparable handle) with each
registration and gets told which channels to close when brokers expire.
``clock`` returns milliseconds so tests pin time.

Invariants (as in Java):

* ``broker_addr_table[name].broker_addrs`` maps broker id -> "ip:port"; an
  address appears under one id only (a slave promoted to master moves);
* a broker name leaves ``broker_addr_table`` and its cluster when its last
  address is removed, and then its QueueData leave every topic; a topic with
  no QueueData left disappears;
* expiry, channel close and UNREGISTER_BROKER share ``un_register_broker``.

Differences from Java, on purpose: unregistration runs at once instead of
through ``BatchUnregistrationService`` (same end state, no queue to overflow),
and NOTIFY_MIN_BROKER_ID_CHANGE is not pushed to brokers (it is only used with
``notifyMinBrokerIdChanged`` + acting-master clusters).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pyrmq.common.clock import now_ms
from pyrmq.common.constants import MASTER_ID, PERM_READ, PERM_WRITE
from pyrmq.protocol.bodies.common import (
    DataVersion,
    TopicConfig,
    TopicConfigAndMappingSerializeWrapper,
    TopicConfigSerializeWrapper,
)
from pyrmq.protocol.bodies.namesrv import (
    BrokerData,
    BrokerMemberGroup,
    ClusterInfo,
    QueueData,
    TopicList,
    TopicRouteData,
)

log = logging.getLogger("pyrmq.namesrv")

#: Java RouteInfoManager.DEFAULT_BROKER_CHANNEL_EXPIRED_TIME (2 minutes)
DEFAULT_BROKER_CHANNEL_EXPIRED_TIME = 120_000
#: Java TopicSysFlag
FLAG_UNIT = 0x1
FLAG_UNIT_SUB = 0x2
#: Java TopicValidator.SYNC_BROKER_MEMBER_GROUP_PREFIX
SYNC_BROKER_MEMBER_GROUP_PREFIX = "rmq_sys_SYNC_BROKER_MEMBER_"


@dataclass(frozen=True, slots=True)
class BrokerAddrInfo:
    """Key of the live table: (cluster, address). Java: RouteInfoManager.BrokerAddrInfo."""

    cluster_name: str
    broker_addr: str


@dataclass(slots=True)
class BrokerLiveInfo:
    """Last sign of life of one broker address. Java: RouteInfoManager.BrokerLiveInfo."""

    last_update_timestamp: int
    heartbeat_timeout_millis: int
    data_version: DataVersion
    channel: Any
    ha_server_addr: str | None


@dataclass(slots=True)
class RegisterBrokerResult:
    """What a registering broker is told. Java: namesrv/RegisterBrokerResult."""

    ha_server_addr: str | None = None
    master_addr: str | None = None


@dataclass(slots=True)
class UnRegisterRequest:
    """One address to remove. Java: UnRegisterBrokerRequestHeader."""

    cluster_name: str
    broker_addr: str
    broker_name: str
    broker_id: int


@dataclass
class RouteInfoManager:
    """Route and liveness tables, keyed as in Java (see module docstring)."""

    clock: Callable[[], int] = now_ms
    default_timeout_millis: int = DEFAULT_BROKER_CHANNEL_EXPIRED_TIME
    delete_topic_with_broker_registration: bool = False
    support_acting_master: bool = False

    topic_queue_table: dict[str, dict[str, QueueData]] = field(default_factory=dict)
    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, set[str]] = field(default_factory=dict)
    broker_live_table: dict[BrokerAddrInfo, BrokerLiveInfo] = field(default_factory=dict)
    filter_server_table: dict[BrokerAddrInfo, list[str]] = field(default_factory=dict)
    topic_queue_mapping_info_table: dict[str, dict[str, dict]] = field(default_factory=dict)

    # ------------------------------------------------------------------ register

    def register_broker(
        self,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str | None,
        zone_name: str | None,
        timeout_millis: int | None,
        enable_acting_master: bool | None,
        topic_config_wrapper: TopicConfigSerializeWrapper | None,
        filter_server_list: list[str] | None,
        channel: Any,
    ) -> RegisterBrokerResult | None:
        """REGISTER_BROKER. Returns None when Java answers "register broker failed"
        (a one-topic incremental registration from a broker id not yet known)."""
        result = RegisterBrokerResult()
        self.cluster_addr_table.setdefault(cluster_name, set()).add(broker_name)

        register_first = False
        broker_data = self.broker_addr_table.get(broker_name)
        if broker_data is None:
            register_first = True
            broker_data = BrokerData(cluster_name, broker_name, {})
            self.broker_addr_table[broker_name] = broker_data

        is_old_version_broker = enable_acting_master is None
        broker_data.enable_acting_master = (not is_old_version_broker) and bool(enable_acting_master)
        broker_data.zone_name = zone_name

        addrs = broker_data.broker_addrs
        # the same ip:port must have only one id (slave -> master switch)
        for bid in [k for k, v in addrs.items() if v == broker_addr and k != broker_id]:
            del addrs[bid]

        new_version = topic_config_wrapper.data_version if topic_config_wrapper else DataVersion()
        old_addr = addrs.get(broker_id)
        if old_addr is not None and old_addr != broker_addr:
            old_info = self.broker_live_table.get(BrokerAddrInfo(cluster_name, old_addr))
            if old_info is not None and old_info.data_version.state_version > new_version.state_version:
                log.warning(
                    "registering broker conflicts with the existing one, ignored: %s %s id=%s old=%s new=%s",
                    cluster_name,
                    broker_name,
                    broker_id,
                    old_addr,
                    broker_addr,
                )
                self.broker_live_table.pop(BrokerAddrInfo(cluster_name, broker_addr), None)
                return result

        table = topic_config_wrapper.topic_config_table if topic_config_wrapper else {}
        if broker_id not in addrs and len(table) == 1:
            log.warning(
                "can't register one topic %s: broker[%s]=%s has not registered yet",
                list(table),
                broker_id,
                broker_addr,
            )
            return None

        prev_addr = addrs.get(broker_id)
        addrs[broker_id] = broker_addr
        register_first = register_first or not prev_addr

        is_master = broker_id == MASTER_ID
        is_prime_slave = (not is_old_version_broker) and not is_master and broker_id == min(addrs)

        if topic_config_wrapper is not None and (is_master or is_prime_slave):
            mapping_infos: dict[str, dict] = {}
            if isinstance(topic_config_wrapper, TopicConfigAndMappingSerializeWrapper):
                mapping_infos = topic_config_wrapper.topic_queue_mapping_info_map or {}
            if self.delete_topic_with_broker_registration and not mapping_infos:
                for topic in self._topics_of_broker_name(broker_name) - set(table):
                    self._remove_queue_data(topic, broker_name)
            changed_version = self.is_broker_topic_config_changed(cluster_name, broker_addr, new_version)
            for key, tc in table.items():
                topic = tc.topic_name or key  # Java would NPE on a missing topicName; use the table key
                if register_first or changed_version or self._topic_missing_broker(topic, broker_name):
                    perm = tc.perm
                    if is_prime_slave and broker_data.enable_acting_master:
                        perm &= ~PERM_WRITE  # the acting master is read-only
                    self._create_and_update_queue_data(broker_name, topic, tc, perm)
            if changed_version or register_first:
                for topic, info in mapping_infos.items():
                    bname = str(info.get("bname", broker_name))
                    self.topic_queue_mapping_info_table.setdefault(topic, {})[bname] = info

        addr_info = BrokerAddrInfo(cluster_name, broker_addr)
        prev_live = self.broker_live_table.get(addr_info)
        self.broker_live_table[addr_info] = BrokerLiveInfo(
            self.clock(),
            self.default_timeout_millis if timeout_millis is None else timeout_millis,
            new_version,
            channel,
            ha_server_addr,
        )
        if prev_live is None:
            log.info("new broker registered, %s HAService: %s", addr_info, ha_server_addr)

        if filter_server_list is not None:
            if filter_server_list:
                self.filter_server_table[addr_info] = list(filter_server_list)
            else:
                self.filter_server_table.pop(addr_info, None)

        if broker_id != MASTER_ID:
            master_addr = addrs.get(MASTER_ID)
            if master_addr is not None:
                master_live = self.broker_live_table.get(BrokerAddrInfo(cluster_name, master_addr))
                if master_live is not None:
                    result.ha_server_addr = master_live.ha_server_addr
                    result.master_addr = master_addr
        return result

    def _topic_missing_broker(self, topic: str, broker_name: str) -> bool:
        # Java isTopicConfigChanged minus the data-version part (checked once by the caller)
        qmap = self.topic_queue_table.get(topic)
        return not qmap or broker_name not in qmap

    def _create_and_update_queue_data(self, broker_name: str, topic: str, tc: TopicConfig, perm: int) -> None:
        qd = QueueData(broker_name, tc.read_queue_nums, tc.write_queue_nums, perm, tc.topic_sys_flag)
        qmap = self.topic_queue_table.get(topic)
        if qmap is None:
            self.topic_queue_table[topic] = {broker_name: qd}
            log.info("new topic registered, %s %s", topic, qd)
        elif qmap.get(broker_name) != qd:
            if broker_name in qmap:
                log.info("topic changed, %s OLD: %s NEW: %s", topic, qmap[broker_name], qd)
            qmap[broker_name] = qd

    def _topics_of_broker_name(self, broker_name: str) -> set[str]:
        return {t for t, qmap in self.topic_queue_table.items() if broker_name in qmap}

    def _remove_queue_data(self, topic: str, broker_name: str) -> None:
        qmap = self.topic_queue_table.get(topic)
        if qmap is None:
            return
        if qmap.pop(broker_name, None) is not None:
            log.info("deleteTopic, remove one broker's topic %s %s", broker_name, topic)
        if not qmap:
            del self.topic_queue_table[topic]

    # ------------------------------------------------------------------ data versions, liveness

    def query_broker_topic_config(self, cluster_name: str, broker_addr: str) -> DataVersion | None:
        live = self.broker_live_table.get(BrokerAddrInfo(cluster_name, broker_addr))
        return None if live is None else live.data_version

    def is_broker_topic_config_changed(self, cluster_name: str, broker_addr: str, version: DataVersion) -> bool:
        prev = self.query_broker_topic_config(cluster_name, broker_addr)
        return prev is None or prev != version

    def update_broker_info_update_timestamp(self, cluster_name: str, broker_addr: str) -> None:
        live = self.broker_live_table.get(BrokerAddrInfo(cluster_name, broker_addr))
        if live is not None:
            live.last_update_timestamp = self.clock()

    def scan_not_active_broker(self) -> list[Any]:
        """Expire addresses silent for longer than their timeout; returns their channels to close."""
        now = self.clock()
        expired = [
            (key, live)
            for key, live in self.broker_live_table.items()
            if live.last_update_timestamp + live.heartbeat_timeout_millis < now
        ]
        channels = []
        for key, live in expired:
            log.warning("The broker channel expired, %s %sms", key, live.heartbeat_timeout_millis)
            channels.append(live.channel)
            self.on_broker_addr_destroy(key)
        return channels

    def on_broker_addr_destroy(self, addr_info: BrokerAddrInfo) -> None:
        req = self._setup_un_register_request(addr_info)
        if req is not None:
            self.un_register_broker([req])
        else:
            # an address whose broker data is already gone: drop its live entry
            self.broker_live_table.pop(addr_info, None)
            self.filter_server_table.pop(addr_info, None)

    def on_channel_destroy(self, channel: Any) -> None:
        """Java ``onChannelDestroy(Channel)``: the connection of a broker closed."""
        for key, live in list(self.broker_live_table.items()):
            if live.channel is channel:
                log.info("the broker's channel destroyed, unregister %s at once", key)
                self.on_broker_addr_destroy(key)
                return

    def _setup_un_register_request(self, addr_info: BrokerAddrInfo) -> UnRegisterRequest | None:
        for bd in self.broker_addr_table.values():
            if bd.cluster != addr_info.cluster_name:
                continue
            for bid, addr in bd.broker_addrs.items():
                if addr == addr_info.broker_addr:
                    return UnRegisterRequest(addr_info.cluster_name, addr, bd.broker_name or "", bid)
        return None

    # ------------------------------------------------------------------ unregister

    def unregister_broker(self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int) -> None:
        self.un_register_broker([UnRegisterRequest(cluster_name, broker_addr, broker_name, broker_id)])

    def un_register_broker(self, requests: Iterable[UnRegisterRequest]) -> None:
        removed_broker: set[str] = set()
        reduced_broker: set[str] = set()
        for req in requests:
            addr_info = BrokerAddrInfo(req.cluster_name, req.broker_addr)
            live = self.broker_live_table.pop(addr_info, None)
            log.info("unregisterBroker, remove from brokerLiveTable %s, %s", "OK" if live else "Failed", addr_info)
            self.filter_server_table.pop(addr_info, None)

            remove_broker_name = False
            bd = self.broker_addr_table.get(req.broker_name)
            if bd is not None:
                for bid in [k for k, v in bd.broker_addrs.items() if v == req.broker_addr]:
                    del bd.broker_addrs[bid]
                if not bd.broker_addrs:
                    del self.broker_addr_table[req.broker_name]
                    log.info("unregisterBroker, remove name from brokerAddrTable OK, %s", req.broker_name)
                    remove_broker_name = True

            if remove_broker_name:
                names = self.cluster_addr_table.get(req.cluster_name)
                if names is not None:
                    names.discard(req.broker_name)
                    if not names:
                        del self.cluster_addr_table[req.cluster_name]
                        log.info("unregisterBroker, remove cluster from clusterAddrTable %s", req.cluster_name)
                removed_broker.add(req.broker_name)
            else:
                reduced_broker.add(req.broker_name)
        self._clean_topic_by_un_register_requests(removed_broker, reduced_broker)

    def _clean_topic_by_un_register_requests(self, removed: set[str], reduced: set[str]) -> None:
        for topic in list(self.topic_queue_table):
            qmap = self.topic_queue_table[topic]
            for name in removed:
                qmap.pop(name, None)
            if not qmap:
                del self.topic_queue_table[topic]
                continue
            for name in reduced:
                qd = qmap.get(name)
                bd = self.broker_addr_table.get(name)
                if qd is not None and bd is not None and bd.enable_acting_master and self._is_no_master_exists(name):
                    qd.perm &= ~PERM_WRITE

    def _is_no_master_exists(self, broker_name: str) -> bool:
        bd = self.broker_addr_table.get(broker_name)
        return bd is None or not bd.broker_addrs or min(bd.broker_addrs) > 0

    # ------------------------------------------------------------------ topics

    def register_topic(self, topic: str, queue_datas: list[QueueData]) -> None:
        """REGISTER_TOPIC_IN_NAMESRV: all-or-nothing, every broker must be known."""
        if not queue_datas:
            return
        for qd in queue_datas:
            if qd.broker_name is None or qd.broker_name not in self.broker_addr_table:
                log.warning("Register topic contains illegal broker, %s, %s", topic, qd)
                return
        qmap = self.topic_queue_table.setdefault(topic, {})
        for qd in queue_datas:
            assert qd.broker_name is not None  # checked above
            qmap[qd.broker_name] = qd

    def delete_topic(self, topic: str, cluster_name: str | None = None) -> None:
        if not cluster_name:
            self.topic_queue_table.pop(topic, None)
            return
        names = self.cluster_addr_table.get(cluster_name)
        if not names:
            return
        qmap = self.topic_queue_table.get(topic)
        if qmap is None:
            return
        for name in names:
            qmap.pop(name, None)
        if not qmap:
            del self.topic_queue_table[topic]

    def wipe_write_perm_of_broker(self, broker_name: str) -> int:
        return self._operate_write_perm(broker_name, wipe=True)

    def add_write_perm_of_broker(self, broker_name: str) -> int:
        return self._operate_write_perm(broker_name, wipe=False)

    def _operate_write_perm(self, broker_name: str, *, wipe: bool) -> int:
        count = 0
        for qmap in self.topic_queue_table.values():
            qd = qmap.get(broker_name)
            if qd is None:
                continue
            qd.perm = (qd.perm & ~PERM_WRITE) if wipe else (PERM_READ | PERM_WRITE)
            count += 1
        return count

    # ------------------------------------------------------------------ queries

    def pickup_topic_route_data(self, topic: str) -> TopicRouteData | None:
        """GET_ROUTEINFO_BY_TOPIC; None when the topic has no QueueData or no known broker."""
        qmap = self.topic_queue_table.get(topic)
        if not qmap:
            return None
        broker_datas: list[BrokerData] = []
        filter_servers: dict[str, list[str]] = {}
        for name in qmap:
            bd = self.broker_addr_table.get(name)
            if bd is None:
                continue
            clone = bd.copy()
            broker_datas.append(clone)
            if self.filter_server_table:
                for addr in clone.broker_addrs.values():
                    servers = self.filter_server_table.get(BrokerAddrInfo(clone.cluster or "", addr))
                    if servers is not None:
                        filter_servers[addr] = list(servers)
        if not broker_datas:
            return None
        route = TopicRouteData(
            queue_datas=[
                QueueData(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm, q.topic_sys_flag)
                for q in qmap.values()
            ],
            broker_datas=broker_datas,
            filter_server_table=filter_servers,
            topic_queue_mapping_by_broker=self.topic_queue_mapping_info_table.get(topic),
        )
        if self.support_acting_master and not topic.startswith(SYNC_BROKER_MEMBER_GROUP_PREFIX):
            self._apply_acting_master(route)
        return route

    @staticmethod
    def _apply_acting_master(route: TopicRouteData) -> None:
        """Java: with supportActingMaster, a read-only broker name without a master
        shows its smallest slave as id 0."""
        for bd in route.broker_datas or []:
            addrs = bd.broker_addrs
            if not addrs or MASTER_ID in addrs or not bd.enable_acting_master:
                continue
            for qd in route.queue_datas or []:
                if qd.broker_name == bd.broker_name:
                    if not qd.perm & PERM_WRITE:
                        addrs[MASTER_ID] = addrs.pop(min(addrs))
                    break

    def get_all_cluster_info(self) -> ClusterInfo:
        return ClusterInfo(
            broker_addr_table=self.broker_addr_table,
            cluster_addr_table={c: sorted(names) for c, names in self.cluster_addr_table.items()},
        )

    def get_broker_member_group(self, cluster_name: str, broker_name: str) -> BrokerMemberGroup:
        bd = self.broker_addr_table.get(broker_name)
        return BrokerMemberGroup(cluster_name, broker_name, dict(bd.broker_addrs) if bd else {})

    def get_all_topic_list(self) -> TopicList:
        return TopicList(list(self.topic_queue_table))

    def get_topics_by_cluster(self, cluster: str) -> TopicList:
        """Topics with QueueData on a broker of ``cluster``; Java throws (logged, empty list)
        for an unknown cluster, which ends the same way."""
        names = self.cluster_addr_table.get(cluster) or set()
        topics = [t for t, qmap in self.topic_queue_table.items() if any(n in qmap for n in names)]
        return TopicList(topics)

    def get_system_topic_list(self) -> TopicList:
        """Cluster names and broker names (mqadmin hides them as topics), plus one broker address."""
        topics: list[str] = []
        for cluster, names in self.cluster_addr_table.items():
            for t in (cluster, *sorted(names)):
                if t not in topics:
                    topics.append(t)
        broker_addr = None
        for bd in self.broker_addr_table.values():
            if bd.broker_addrs:
                broker_addr = next(iter(bd.broker_addrs.values()))
                break
        return TopicList(topics, broker_addr)

    def _topics_by_flag(self, pred: Callable[[int], bool]) -> TopicList:
        out = []
        for topic, qmap in self.topic_queue_table.items():
            if qmap and pred(next(iter(qmap.values())).topic_sys_flag):
                out.append(topic)
        return TopicList(out)

    def get_unit_topics(self) -> TopicList:
        return self._topics_by_flag(lambda f: bool(f & FLAG_UNIT))

    def get_has_unit_sub_topic_list(self) -> TopicList:
        return self._topics_by_flag(lambda f: bool(f & FLAG_UNIT_SUB))

    def get_has_unit_sub_un_unit_topic_list(self) -> TopicList:
        return self._topics_by_flag(lambda f: not f & FLAG_UNIT and bool(f & FLAG_UNIT_SUB))
