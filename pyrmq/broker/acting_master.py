"""Slave acting master: the broker's view of its group's lowest live member, and what follows.

Java: ``broker/BrokerController`` with ``enableSlaveActingMaster`` (registerBrokerAll flags,
scheduleSendHeartbeat / sendHeartbeat, syncBrokerMemberGroup, updateMinBroker,
onMinBrokerChange, onMasterOffline / onMasterOnline, changeSpecialServiceStatus,
startService / stopService, isIsolated) and ``out/BrokerOuterAPI`` (sendHeartbeat,
sendHeartbeatViaDataVersion, getBrokerMemberGroup / getBrokerMemberGroupCompatible).

The rules live in ``MinBrokerView`` (no I/O): a slave learns its group's lowest live broker id
from the name server (GET_BROKER_MEMBER_GROUP or, with ``compatibleWithOldNameSrv``, the route
of ``SYNC_BROKER_MEMBER_<brokerName>``, polled every ``syncBrokerMemberGroupPeriod``) or from a
NOTIFY_MIN_BROKER_ID_CHANGE push. The lowest live slave runs the "special services" (delay
levels, timer); when the lowest id moves past the master's address the slave stops copying from
it (SlaveSynchronize, HA client), and when a master (id 0) is back it follows it again.
``ActingMasterService`` is the asyncio layer: the loops and the effects.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyrmq.common.constants import MASTER_ID
from pyrmq.protocol.bodies.namesrv import GetBrokerMemberGroupResponseBody, TopicRouteData
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import ExchangeHAInfoRequestHeader
from pyrmq.protocol.headers.namesrv import (
    BrokerHeartbeatRequestHeader,
    GetBrokerMemberGroupRequestHeader,
    GetRouteInfoRequestHeader,
    QueryDataVersionRequestHeader,
)

if TYPE_CHECKING:
    from pyrmq.broker.config import BrokerConfig

log = logging.getLogger("pyrmq.broker.acting")

#: TopicValidator.SYNC_BROKER_MEMBER_GROUP_PREFIX: the route that carries a group's members
SYNC_BROKER_MEMBER_GROUP_PREFIX = "rmq_sys_SYNC_BROKER_MEMBER_"
#: BrokerOuterAPI#getBrokerMemberGroup(Compatible): invokeSync(..., 3000)
MEMBER_GROUP_TIMEOUT_S = 3.0
#: BrokerController#start: the heartbeat and member-group schedules start after 1 s
FIRST_RUN_DELAY_S = 1.0


def minimum_broker_id(addrs: dict[int, str]) -> int:
    """Java BrokerMemberGroup#minimumBrokerId: the smallest id, or MixAll.MASTER_ID for none."""
    return min(addrs) if addrs else MASTER_ID


@dataclass(frozen=True, slots=True)
class MinBrokerChange:
    """What a move of the group's lowest live broker asks for (Java onMinBrokerChange)."""

    min_broker_id: int
    min_broker_addr: str | None
    #: this broker is now the lowest: delay levels and timer run here
    special_services: bool
    #: the broker that went away was the master this slave copies from
    master_offline: bool
    #: a master (id 0) with an address is the lowest again
    master_online: bool
    master_ha_addr: str | None = None


class MinBrokerView:
    """Java BrokerController#minBrokerIdInGroup / minBrokerAddrInGroup and #updateMinBroker.

    Only a slave with ``enableSlaveActingMaster`` moves; a master and any other slave always see
    the master (0), which is also where every broker starts (Java's field initialisers).
    """

    def __init__(self, broker_id: int, enabled: bool) -> None:
        self.broker_id = broker_id
        self.enabled = enabled and broker_id != MASTER_ID
        self.min_broker_id = MASTER_ID
        self.min_broker_addr: str | None = None

    def on_member_group(self, addrs: dict[int, str], master_addr: str | None = None) -> MinBrokerChange | None:
        """A polled member group (Java syncBrokerMemberGroup -> updateMinBroker(id, addr)): a higher
        lowest id than before means the previous lowest went offline."""
        min_id = minimum_broker_id(addrs)
        if self.enabled and min_id == self.min_broker_id:
            # pyrmq: remember who the lowest is even when the id did not move, so the first loss
            # of the master is seen as its going offline (Java knows the address only after a move)
            self.min_broker_addr = addrs.get(min_id)
            return None
        offline = self.min_broker_addr if min_id > self.min_broker_id else None
        return self.update(min_id, addrs.get(min_id), offline_addr=offline, master_addr=master_addr)

    def update(
        self,
        min_id: int,
        min_addr: str | None,
        *,
        offline_addr: str | None = None,
        ha_addr: str | None = None,
        master_addr: str | None = None,
    ) -> MinBrokerChange | None:
        """Java updateMinBroker + onMinBrokerChange; None when nothing changes. ``master_addr`` is
        the master this slave copies from (SlaveSynchronize's), compared with ``offline_addr``."""
        if not self.enabled or min_id == self.min_broker_id:
            return None
        log.info(
            "Min broker changed, old: %s-%s, new %s-%s",
            self.min_broker_id,
            self.min_broker_addr,
            min_id,
            min_addr,
        )
        self.min_broker_id = min_id
        self.min_broker_addr = min_addr
        return MinBrokerChange(
            min_broker_id=min_id,
            min_broker_addr=min_addr,
            special_services=self.broker_id == min_id,
            master_offline=offline_addr is not None and offline_addr == master_addr,
            master_online=min_id == MASTER_ID and min_addr is not None,
            master_ha_addr=ha_addr,
        )


class SpecialServices:
    """The services only the lowest live broker of a group runs. Java
    BrokerController#changeSpecialServiceStatus: the delay levels (ScheduleMessageService), the
    timer's delivery (TimerMessageStore#setShouldRunningDequeue), the transaction check (on an
    acting slave it hands open half messages to another group) and the POP revive
    (AckMessageProcessor#setPopReviveServiceStatus)."""

    def __init__(
        self,
        *,
        config: BrokerConfig,
        schedule_message_service: Any,
        timer_message_store: Any,
        transactional_message_check_service: Any,
        pop_revive_service: Any = None,
    ) -> None:
        self.config = config
        self.pop_revive_service = pop_revive_service
        self.schedule_message_service = schedule_message_service
        self.timer_message_store = timer_message_store
        self.transactional_message_check_service = transactional_message_check_service
        self.running: bool | None = None

    async def change(self, should_start: bool) -> None:
        if self.running is should_start:
            return
        log.info("ScheduleServiceStatus changed to %s", should_start)
        self.running = should_start
        if self.pop_revive_service is not None:
            self.pop_revive_service.should_run = should_start
        schedule, timer = self.schedule_message_service, self.timer_message_store
        if should_start:
            if not self.config.is_master:
                schedule.correct_delay_offset()
                timer.take_master_offset()
            schedule.start()
            if self.config["timerWheelEnable"]:
                timer.start()
            self.transactional_message_check_service.start()
        else:
            await schedule.shutdown()
            await timer.shutdown()
            await self.transactional_message_check_service.shutdown()


class ActingMasterService:
    """The loops and effects of slave acting master on one broker (Java BrokerController parts
    named in the module docstring)."""

    def __init__(
        self,
        *,
        config: BrokerConfig,
        client: Any,
        broker_addr: Callable[[], str],
        topic_data_version: Callable[[], Any],
        special_services: SpecialServices,
        pull_processor: Any,
        slave_synchronize: Any,
        ha_client: Callable[[], Any],
        register_broker_all: Callable[[], Coroutine[Any, Any, None]],
    ) -> None:
        self.config = config
        self.client = client
        self.broker_addr = broker_addr
        self.topic_data_version = topic_data_version
        self.special_services = special_services
        self.pull_processor = pull_processor
        self.slave_synchronize = slave_synchronize
        self.ha_client = ha_client
        self.register_broker_all = register_broker_all
        self.enabled = bool(config["enableSlaveActingMaster"])
        self.broker_id = int(config["brokerId"])
        self.view = MinBrokerView(self.broker_id, self.enabled)
        #: Java isIsolated: a broker that waits for BrokerPreOnlineService neither registers nor
        #: heartbeats (totalReplicas > 1 with enableSlaveActingMaster; skipPreOnline ends it at
        #: once, Java startServiceWithoutCondition)
        self.isolated = self.enabled and config.store.total_replicas > 1 and not config["skipPreOnline"]
        self._tasks: list[asyncio.Task] = []
        self._lock = asyncio.Lock()

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Java BrokerController#start: a broker that is not isolated starts its special services
        if it is the master; with enableSlaveActingMaster the heartbeat and member-group loops
        run from 1 s on."""
        if not self.isolated:
            await self.special_services.change(self.broker_id == MASTER_ID)
        if self.enabled:
            loop = asyncio.get_running_loop()
            self._tasks = [
                loop.create_task(self._heartbeat_loop(), name="broker-heartbeat"),
                loop.create_task(self._member_group_loop(), name="broker-member-group"),
            ]

    async def shutdown(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._tasks = []
        await self.special_services.change(False)

    async def _heartbeat_loop(self) -> None:
        period = max(int(self.config["brokerHeartbeatInterval"]), 100) / 1000
        await asyncio.sleep(FIRST_RUN_DELAY_S)
        while True:
            if not self.isolated:
                try:
                    await self.send_heartbeat()
                except Exception:
                    log.exception("sendHeartbeat Exception")
            await asyncio.sleep(period)

    async def _member_group_loop(self) -> None:
        period = max(int(self.config["syncBrokerMemberGroupPeriod"]), 100) / 1000
        await asyncio.sleep(FIRST_RUN_DELAY_S)
        while True:
            try:
                await self.sync_broker_member_group()
            except Exception:
                log.exception("sync BrokerMemberGroup error.")
            await asyncio.sleep(period)

    # ------------------------------------------------------------------ name server

    async def send_heartbeat(self) -> None:
        """Java BrokerController#sendHeartbeat: one-way to every name server, BROKER_HEARTBEAT,
        or QUERY_DATA_VERSION with the topic data version when compatibleWithOldNameSrv."""
        cfg = self.config
        if cfg["compatibleWithOldNameSrv"]:
            header: Any = QueryDataVersionRequestHeader(
                broker_name=cfg["brokerName"],
                broker_addr=self.broker_addr(),
                cluster_name=cfg["brokerClusterName"],
                broker_id=self.broker_id,
            )
            code, body = RequestCode.QUERY_DATA_VERSION, self.topic_data_version().encode()
        else:
            header = BrokerHeartbeatRequestHeader(
                cluster_name=cfg["brokerClusterName"], broker_addr=self.broker_addr(), broker_name=cfg["brokerName"]
            )
            code, body = RequestCode.BROKER_HEARTBEAT, None
        ext = header.to_ext_fields()
        for addr in cfg.namesrv_addrs:
            try:
                await self.client.invoke_oneway(addr, RemotingCommand.request(code, dict(ext), body, oneway=True))
            except Exception as e:
                log.error("sendHeartbeat Exception %s: %s", addr, e)

    async def fetch_broker_member_group(self) -> dict[int, str] | None:
        """Java BrokerOuterAPI#syncBrokerMemberGroup from the first name server that answers; None
        when none did."""
        cfg = self.config
        cluster, name = cfg["brokerClusterName"], cfg["brokerName"]
        for addr in cfg.namesrv_addrs:
            try:
                if cfg["compatibleWithOldNameSrv"]:
                    h: Any = GetRouteInfoRequestHeader(topic=SYNC_BROKER_MEMBER_GROUP_PREFIX + name)
                    cmd = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, h.to_ext_fields())
                else:
                    h = GetBrokerMemberGroupRequestHeader(cluster_name=cluster, broker_name=name)
                    cmd = RemotingCommand.request(RequestCode.GET_BROKER_MEMBER_GROUP, h.to_ext_fields())
                resp = await self.client.invoke(addr, cmd, MEMBER_GROUP_TIMEOUT_S)
            except Exception as e:
                log.warning("syncBrokerMemberGroup from namesrv %s failed: %s", addr, e)
                continue
            return member_addrs(resp, cluster, name, compatible=bool(cfg["compatibleWithOldNameSrv"]))
        return None

    async def sync_broker_member_group(self) -> None:
        """Java BrokerController#syncBrokerMemberGroup."""
        addrs = await self.fetch_broker_member_group()
        if not addrs:
            log.warning(
                "Couldn't find any broker member from namesrv in %s/%s",
                self.config["brokerClusterName"],
                self.config["brokerName"],
            )
            return
        if not self.isolated:
            async with self._lock:
                change = self.view.on_member_group(addrs, master_addr=self.slave_synchronize.master_addr)
                if change is not None:
                    await self.apply(change)

    async def notify_min_broker_id_change(
        self, min_id: int, min_addr: str | None, offline_addr: str | None, ha_addr: str | None
    ) -> None:
        """NOTIFY_MIN_BROKER_ID_CHANGE from a name server (Java updateMinBroker, the 4-argument one)."""
        async with self._lock:
            change = self.view.update(
                min_id,
                min_addr,
                offline_addr=offline_addr,
                ha_addr=ha_addr,
                master_addr=self.slave_synchronize.master_addr,
            )
            if change is not None:
                await self.apply(change)

    # ------------------------------------------------------------------ effects

    async def apply(self, change: MinBrokerChange) -> None:
        """Java onMinBrokerChange."""
        self.pull_processor.min_broker_id_in_group = change.min_broker_id
        await self.special_services.change(change.special_services)
        if change.master_offline:
            self.on_master_offline()
        if change.master_online:
            self.on_master_online(change.min_broker_addr, change.master_ha_addr)
        if change.min_broker_id == MASTER_ID:
            # held pulls are answered now, so their clients go back to the master
            self.pull_processor.pull_request_hold_service.notify_master_online()

    def on_master_offline(self) -> None:
        """Java onMasterOffline: drop the connection to the master, stop copying from it."""
        addr = self.slave_synchronize.master_addr
        if addr:
            self.client.close_channel(addr)
        self.slave_synchronize.master_addr = None
        client = self.ha_client()
        if client is not None:
            client.update_ha_master_address(None)
        log.info("master %s offline: slave synchronize and HA client stopped", addr)

    def on_master_online(self, master_addr: str | None, master_ha_addr: str | None) -> None:
        """Java onMasterOnline: follow the master again. Without its HA address (a polled change)
        the slave asks the master for it with EXCHANGE_BROKER_HA_INFO (Java retrieveBrokerHaInfo)."""
        client = self.ha_client()
        if client is not None and master_ha_addr:
            client.update_ha_master_address(master_ha_addr)
            client.wakeup()
        self.slave_synchronize.master_addr = master_addr
        log.info("master %s online (HA %s)", master_addr, master_ha_addr)
        if master_ha_addr is None and master_addr:
            task = asyncio.get_running_loop().create_task(self.retrieve_broker_ha_info(master_addr))
            task.add_done_callback(_log_task_error)

    async def retrieve_broker_ha_info(self, master_addr: str) -> None:
        try:
            r = await self.client.invoke(
                master_addr, RemotingCommand.request(RequestCode.EXCHANGE_BROKER_HA_INFO, {}), MEMBER_GROUP_TIMEOUT_S
            )
            info = ExchangeHAInfoRequestHeader.from_ext_fields(r.ext_fields)
        except Exception as e:
            log.error("retrieve master ha info exception, %s", e)
            return
        client = self.ha_client()
        if client is not None and info.master_ha_address:
            client.update_ha_master_address(info.master_ha_address)
            client.update_master_address(info.master_address)
            client.wakeup()

    # ------------------------------------------------------------------ isolation

    async def start_service(self, min_id: int, min_addr: str | None) -> None:
        """Java BrokerController#startService: leave isolation, register, run the special
        services if this broker is the lowest."""
        log.info("start service, min broker id is %s, min broker addr: %s", min_id, min_addr)
        self.view.min_broker_id, self.view.min_broker_addr = (min_id, min_addr) if self.view.enabled else (0, None)
        self.pull_processor.min_broker_id_in_group = self.view.min_broker_id
        await self.special_services.change(self.broker_id == min_id)
        self.isolated = False
        await self.register_broker_all()


def member_addrs(resp: RemotingCommand, cluster: str, broker_name: str, *, compatible: bool) -> dict[int, str]:
    """The group's members from a GET_BROKER_MEMBER_GROUP or SYNC_BROKER_MEMBER_ route answer;
    empty when the name server knows none (Java returns an empty BrokerMemberGroup)."""
    if resp.code != ResponseCode.SUCCESS or not resp.body:
        return {}
    if compatible:
        route = TopicRouteData.decode(resp.body)
        for bd in route.broker_datas or []:
            if bd.broker_name == broker_name and bd.cluster == cluster:
                return {int(k): v for k, v in bd.broker_addrs.items()}
        return {}
    group = GetBrokerMemberGroupResponseBody.decode(resp.body).broker_member_group
    return {int(k): v for k, v in (group.broker_addrs if group else {}).items()}


def _log_task_error(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background task failed", exc_info=task.exception())


__all__ = [
    "ActingMasterService",
    "MinBrokerChange",
    "MinBrokerView",
    "SpecialServices",
    "member_addrs",
    "minimum_broker_id",
]
