"""A broker that starts isolated goes online only after catching up with its group.

Java: ``broker/BrokerPreOnlineService`` (prepareForBrokerOnline, prepareForMasterOnline,
waitForHaHandshakeComplete, syncMetadataReverse). It runs only with
``enableSlaveActingMaster``, ``totalReplicas > 1`` (which makes the broker start isolated: no
registration, no heartbeat, no special services) and ``skipPreOnline=false``.

A returning master (broker id 0) finds its group's live members at the name server. For each,
lowest id first, it sends EXCHANGE_BROKER_HA_INFO with its HA address (the slave connects to
it), waits until that slave's HA connection has reported, then reads the slave's consumer
offsets, delay offsets and timer checkpoint (GET_ALL_CONSUMER_OFFSET, GET_ALL_DELAY_OFFSET,
GET_TIMER_CHECK_POINT), since the slave served as master meanwhile. Then it registers and serves
(``ActingMasterService.start_service``). Any failure waits 1 s and starts over with the member
that failed. A slave, or a master alone in its group, starts serving at once.

pyrmq keeps the larger offset of each queue and delay level, whatever the data versions; Java
takes the slave's whole table when the slave's data version is not older than its own.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pyrmq.common.constants import MASTER_ID, TIMER_TOPIC
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import ExchangeHAInfoRequestHeader
from pyrmq.store.checkpoint import TIMER_CHECKPOINT_LAYOUT
from pyrmq.store.config import ConsumerOffsetSerializeWrapper, DelayOffsetSerializeWrapper, decode_config

if TYPE_CHECKING:
    from pyrmq.broker.acting_master import ActingMasterService
    from pyrmq.broker.config import BrokerConfig

log = logging.getLogger("pyrmq.broker.preonline")

#: BrokerPreOnlineService: waitForRunning(1000) after a failed round
RETRY_INTERVAL_S = 1.0
#: BrokerOuterAPI's timeout for these calls
CALL_TIMEOUT_S = 3.0
#: how long the master waits for a slave's HA connection before trying again (Java waits on
#: HAConnectionStateNotificationService, which gives up when the connection is lost)
HA_HANDSHAKE_TIMEOUT_S = 10.0
HA_HANDSHAKE_POLL_S = 0.1


class PreOnlineError(Exception):
    """A member answered a pre-online request with something other than SUCCESS."""


def merge_consumer_offsets(own: dict[str, dict[int, int]], theirs: dict[str, dict[int, int]]) -> int:
    """The larger committed offset of each queue into ``own``; returns how many queues moved."""
    moved = 0
    for key, queues in theirs.items():
        mine = own.setdefault(str(key), {})
        for q, off in queues.items():
            q, off = int(q), int(off)
            if off > mine.get(q, -1):
                mine[q] = off
                moved += 1
    return moved


def merge_delay_offsets(own: dict[int, int], theirs: dict[int, int]) -> int:
    moved = 0
    for level, off in theirs.items():
        level, off = int(level), int(off)
        if off > own.get(level, -1):
            own[level] = off
            moved += 1
    return moved


class BrokerPreOnlineService:
    def __init__(
        self,
        *,
        config: BrokerConfig,
        client: Any,
        acting_master_service: ActingMasterService,
        ha_service: Callable[[], Any],
        consumer_offset_manager: Any,
        schedule_message_service: Any,
        timer_message_store: Any,
        max_phy_offset: Callable[[], int],
    ) -> None:
        self.config = config
        self.client = client
        self.acting = acting_master_service
        self.ha_service = ha_service
        self.consumer_offset_manager = consumer_offset_manager
        self.schedule_message_service = schedule_message_service
        self.timer_message_store = timer_message_store
        self.max_phy_offset = max_phy_offset
        self.broker_id = int(config["brokerId"])
        self.wait_broker_index = 0
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self.run(), name="BrokerPreOnlineService")

    async def shutdown(self) -> None:
        t, self._task = self._task, None
        if t is not None:
            t.cancel()
            try:
                await t
            except BaseException:
                pass

    async def run(self) -> None:
        log.info("BrokerPreOnlineService service started")
        while self.acting.isolated:
            try:
                if await self.prepare_for_broker_online():
                    break
            except Exception:
                log.exception("Broker preOnline error")
            await asyncio.sleep(RETRY_INTERVAL_S)
        log.info("broker %s is online", self.config["brokerName"])

    def _min_other_id(self, addrs: dict[int, str]) -> int:
        others = [i for i in addrs if i != self.broker_id]
        return min(others) if others else self.broker_id

    async def prepare_for_broker_online(self) -> bool:
        addrs = await self.acting.fetch_broker_member_group()
        if addrs is None:
            log.error("syncBrokerMemberGroup from namesrv error, start service failed, will try later")
            return False
        if not addrs:
            log.info("no other broker online, will start service directly")
            await self.acting.start_service(self.broker_id, self.acting.broker_addr())
            return True
        min_id = self._min_other_id(addrs)
        if self.broker_id == MASTER_ID:
            return await self.prepare_for_master_online(addrs)
        # a slave: whether a master is there or not, it learns it from the name server
        await self.acting.start_service(min_id, addrs.get(min_id))
        return True

    async def prepare_for_master_online(self, addrs: dict[int, str]) -> bool:
        ids = sorted(i for i in addrs if i != self.broker_id)
        while self.wait_broker_index < len(ids):
            addr = addrs[ids[self.wait_broker_index]]
            header = ExchangeHAInfoRequestHeader(
                master_ha_address=self.config.ha_server_addr,
                master_flush_offset=self.max_phy_offset(),
                master_address=self.acting.broker_addr(),
            )
            try:
                r = await self.client.invoke(
                    addr,
                    RemotingCommand.request(RequestCode.EXCHANGE_BROKER_HA_INFO, header.to_ext_fields()),
                    CALL_TIMEOUT_S,
                )
                if r.code != ResponseCode.SUCCESS:
                    raise PreOnlineError(f"code {r.code} {r.remark}")
            except Exception as e:
                log.error("send ha address to %s exception, %s", addr, e)
                return False
            if not await self.wait_for_ha_handshake(addr):
                log.error("wait for handshake completion failed, HA connection lost")
                return False
            if not await self.sync_metadata_reverse(addr):
                return False
            self.wait_broker_index += 1
        log.info("master preOnline complete, start service")
        await self.acting.start_service(MASTER_ID, self.acting.broker_addr())
        return True

    async def wait_for_ha_handshake(self, broker_addr: str) -> bool:
        """True once an HA connection from ``broker_addr``'s host has sent its first report."""
        host = broker_addr.rsplit(":", 1)[0]
        log.info("wait for handshake completion with %s", broker_addr)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + HA_HANDSHAKE_TIMEOUT_S
        while loop.time() < deadline:
            service = self.ha_service()
            if service is None:
                log.error("HAService is null, maybe broker config is wrong")
                return False
            for conn in service.connections:
                if conn.client_address.rsplit(":", 1)[0] == host and conn.slave_request_offset >= 0:
                    return True
            await asyncio.sleep(HA_HANDSHAKE_POLL_S)
        return False

    async def _ask(self, addr: str, code: RequestCode) -> RemotingCommand:
        return await self.client.invoke(addr, RemotingCommand.request(code), CALL_TIMEOUT_S)

    async def sync_metadata_reverse(self, addr: str) -> bool:
        """Java syncMetadataReverse, keeping the larger offsets (module docstring)."""
        log.info("Get metadata reverse from %s", addr)
        try:
            delay = await self._ask(addr, RequestCode.GET_ALL_DELAY_OFFSET)
            offsets = await self._ask(addr, RequestCode.GET_ALL_CONSUMER_OFFSET)
            if delay.code != ResponseCode.SUCCESS or offsets.code != ResponseCode.SUCCESS:
                raise PreOnlineError(
                    f"delay offset: {delay.code} {delay.remark}; offsets: {offsets.code} {offsets.remark}"
                )
            com = self.consumer_offset_manager
            w = ConsumerOffsetSerializeWrapper.decode(bytes(offsets.body or b"{}"))
            moved = merge_consumer_offsets(com.offset_table, w.offset_table)
            if w.data_version is not None and com.data_version.compare(w.data_version) < 0:
                com.data_version = w.data_version
            com.persist()
            sms = self.schedule_message_service
            d = decode_config(DelayOffsetSerializeWrapper, bytes(delay.body or b"{}").decode())
            moved_levels = merge_delay_offsets(sms.offset_table, d.offset_table)
            sms.persist()
            log.info("from %s: %d consumer queue offsets and %d delay levels moved ahead", addr, moved, moved_levels)
            if self.config["timerWheelEnable"]:
                await self._sync_timer_checkpoint(addr)
        except Exception as e:
            log.error("GetMetadataReverse Failed from %s: %s", addr, e)
            return False
        return True

    async def _sync_timer_checkpoint(self, addr: str) -> None:
        r = await self._ask(addr, RequestCode.GET_TIMER_CHECK_POINT)
        if r.code != ResponseCode.SUCCESS:
            log.warning("timer checkpoint of %s: %d %s", addr, r.code, r.remark)
            return
        _, _, _, master_offset, _, _, _ = TIMER_CHECKPOINT_LAYOUT.unpack(bytes(r.body or b""))
        timer = self.timer_message_store
        cq = timer.message_store.get_consume_queue(TIMER_TOPIC, 0)
        hi = cq.get_max_offset_in_queue() if cq else 0
        start = min(max(timer.low_water, master_offset), hi)
        if start > timer.low_water:
            timer.low_water = timer.read_offset = start
            timer.flush_checkpoint(force=True)
