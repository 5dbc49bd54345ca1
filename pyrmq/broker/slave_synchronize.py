"""A slave copies its master's metadata: topics, consumer offsets, delay offsets, subscription
groups, and the timer checkpoint. Java: broker/slave/SlaveSynchronize and its schedule in
BrokerController#initialize (first run 10 s after start, then every 3 s: everything at most once
a minute, the timer checkpoint every time).

The master's broker address comes from each REGISTER_BROKER answer (``masterAddr``), and with
everything else comes the table of POP request modes. pyrmq keeps no timer metrics, so
GET_TIMER_METRICS is not asked for.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from pyrmq.protocol.bodies.common import DataVersion, TopicConfigAndMappingSerializeWrapper
from pyrmq.protocol.bodies.pop import MessageRequestModeSerializeWrapper
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.store.checkpoint import TIMER_CHECKPOINT_LAYOUT
from pyrmq.store.config import ConsumerOffsetSerializeWrapper, SubscriptionGroupSerializeWrapper

log = logging.getLogger("pyrmq.broker.slave")

#: BrokerController#initialize (slave): initial delay, period, and the least time between full syncs
FIRST_SYNC_DELAY_S = 10.0
SYNC_PERIOD_S = 3.0
SYNC_ALL_INTERVAL_MS = 60 * 1000
#: BrokerOuterAPI's timeout for these calls (3 s)
CALL_TIMEOUT_S = 3.0


class MasterAnswerError(Exception):
    """The master answered a sync request with something other than SUCCESS."""


class SlaveSynchronize:
    def __init__(
        self,
        *,
        client: Any,
        broker_addr: Callable[[], str],
        topic_config_manager: Any,
        subscription_group_manager: Any,
        consumer_offset_manager: Any,
        schedule_message_service: Any,
        timer_message_store: Any,
        timer_wheel_enable: Callable[[], bool],
        now: Callable[[], int],
        message_request_mode_manager: Any = None,
    ) -> None:
        self.client = client
        self.broker_addr = broker_addr
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.schedule_message_service = schedule_message_service
        self.timer_message_store = timer_message_store
        self.timer_wheel_enable = timer_wheel_enable
        self.now = now
        self.message_request_mode_manager = message_request_mode_manager
        self.master_addr: str | None = None
        self.last_sync_time_ms = 0

    async def run(self) -> None:
        """The slave's schedule (Java BrokerController#initialize, role SLAVE)."""
        await asyncio.sleep(FIRST_SYNC_DELAY_S)
        while True:
            try:
                if self.now() - self.last_sync_time_ms > SYNC_ALL_INTERVAL_MS:
                    await self.sync_all()
                    self.last_sync_time_ms = self.now()
                if self.timer_wheel_enable():
                    await self.sync_timer_check_point()
            except Exception:
                log.exception("Failed to sync all config for slave.")
            await asyncio.sleep(SYNC_PERIOD_S)

    def _master(self) -> str | None:
        addr = self.master_addr
        return addr if addr and addr != self.broker_addr() else None

    async def _ask(self, addr: str, code: RequestCode) -> bytes:
        r = await self.client.invoke(addr, RemotingCommand.request(code), CALL_TIMEOUT_S)
        if r.code != ResponseCode.SUCCESS:
            raise MasterAnswerError(f"{code.name}: code {r.code} {r.remark}")
        return bytes(r.body or b"")

    async def sync_all(self) -> None:
        """Java SlaveSynchronize#syncAll; each part logs its own failure and the rest go on."""
        addr = self._master()
        if addr is None:
            return
        for part in (
            self.sync_topic_config,
            self.sync_consumer_offset,
            self.sync_delay_offset,
            self.sync_subscription_group_config,
            self.sync_message_request_mode,
        ):
            try:
                await part(addr)
            except Exception as e:
                log.error("%s failed, master %s: %s", part.__name__, addr, e)

    async def sync_topic_config(self, addr: str) -> None:
        """The master's topic table replaces the slave's when the versions differ; the slave's
        version becomes the master's, bumped once (Java)."""
        w = TopicConfigAndMappingSerializeWrapper.decode(await self._ask(addr, RequestCode.GET_ALL_TOPIC_CONFIG))
        tcm = self.topic_config_manager
        if tcm.data_version == w.data_version:
            return
        tcm.topic_config_table.clear()
        tcm.topic_config_table.update(w.topic_config_table)
        tcm.data_version = _bumped(w.data_version, self.now())
        tcm.persist()
        log.info("Update slave topic config from master, %s", addr)

    async def sync_consumer_offset(self, addr: str) -> None:
        """The master's offsets are put over the slave's (Java putAll), with its data version."""
        w = ConsumerOffsetSerializeWrapper.decode(await self._ask(addr, RequestCode.GET_ALL_CONSUMER_OFFSET))
        com = self.consumer_offset_manager
        for key, queues in w.offset_table.items():
            com.offset_table[str(key)] = {int(q): int(o) for q, o in queues.items()}
        if w.data_version is not None:
            com.data_version = dataclasses.replace(w.data_version)
        com.persist()
        log.info("Update slave consumer offset from master, %s", addr)

    async def sync_delay_offset(self, addr: str) -> None:
        """The master's delayOffset.json, written as it came and loaded (Java
        ScheduleMessageService#loadWhenSyncDelayOffset)."""
        body = await self._ask(addr, RequestCode.GET_ALL_DELAY_OFFSET)
        self.schedule_message_service.load_when_sync_delay_offset(body.decode())
        log.info("Update slave delay offset from master, %s", addr)

    async def sync_subscription_group_config(self, addr: str) -> None:
        body = await self._ask(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        w = SubscriptionGroupSerializeWrapper.decode(body)
        sgm = self.subscription_group_manager
        if sgm.data_version == w.data_version:
            return
        sgm.table.clear()
        sgm.table.update(w.subscription_group_table)
        sgm.data_version = _bumped(w.data_version, self.now())
        sgm.persist()
        log.info("Update slave Subscription Group from master, %s", addr)

    async def sync_message_request_mode(self, addr: str) -> None:
        """The master's request modes replace the slave's (Java SlaveSynchronize#syncMessageRequestMode)."""
        if self.message_request_mode_manager is None:
            return
        body = await self._ask(addr, RequestCode.GET_ALL_MESSAGE_REQUEST_MODE)
        self.message_request_mode_manager.replace_all(MessageRequestModeSerializeWrapper.decode(body))
        self.message_request_mode_manager.persist()
        log.info("Update slave message request mode from master, %s", addr)

    async def sync_timer_check_point(self) -> None:
        """The master's lastReadTimeMs, masterTimerQueueOffset and data version into the slave's
        timer checkpoint (Java SlaveSynchronize#syncTimerCheckPoint)."""
        addr = self.master_addr  # Java does not compare it with its own address here
        if not addr:
            return
        try:
            body = await self._ask(addr, RequestCode.GET_TIMER_CHECK_POINT)
            read_ms, _, _, master_offset, state_version, timestamp, counter = TIMER_CHECKPOINT_LAYOUT.unpack(body)
        except Exception as e:
            log.error("syncTimerCheckPoint Exception, %s: %s", addr, e)
            return
        cp = self.timer_message_store.checkpoint
        cp.last_read_time_ms = read_ms
        cp.master_timer_queue_offset = master_offset
        cp.state_version, cp.timestamp, cp.counter = state_version, timestamp, counter


def _bumped(version: DataVersion, now_ms: int) -> DataVersion:
    """Java: dataVersion.assignNewOne(master's), then updateDataVersion()."""
    v = dataclasses.replace(version)
    v.next_version(now_ms)
    return v
