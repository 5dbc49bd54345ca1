"""A broker in controller mode: its id, its role and its sync state set come from the controller.

Java: broker/controller/ReplicasManager. Start-up walks INITIAL -> FIRST_TIME_SYNC_CONTROLLER_
METADATA_DONE (the controller leader's address is known) -> REGISTER_TO_CONTROLLER_DONE (an id
is applied for and kept in the brokerIdentity file, the broker registered) -> RUNNING (a master
exists, this broker or another; the broker is no longer fenced), retried every 5 s until it gets
there. The id dance: GET_NEXT_BROKER_ID, write brokerIdentity-temp with a check code, APPLY_BROKER_ID,
write brokerIdentity and delete the temp file, REGISTER_BROKER.

Then, periodically: a heartbeat to every controller (brokerHeartbeatInterval, carrying the last
epoch, max offset, confirm offset and election priority); GET_REPLICA_INFO every
syncBrokerMetadataPeriod (a bigger master epoch means a role change, no master means "elect
me"); on the master, the sync state set check every checkSyncStateSetPeriod (shrink, then ALTER
the set at the controller). NOTIFY_BROKER_ROLE_CHANGED from the controller lands in
``change_broker_role``. A role change moves the HA service (AutoSwitchHAService), the broker's
role, id and services (``RoleHost.apply_role``) and re-registers with the name servers.

The controller is reached only through ``api`` (ControllerApi's methods), so the role state
machine runs against a fake controller in the unit tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
from enum import Enum
from typing import Any, Protocol

from pyrmq.broker.controller_api import ControllerError, MasterInfo
from pyrmq.common.clock import now_ms
from pyrmq.ha.broker_metadata import BrokerMetadata, TempBrokerMetadata
from pyrmq.protocol.codes import ResponseCode
from pyrmq.protocol.headers.namesrv import BrokerHeartbeatRequestHeader
from pyrmq.store.store_config import BrokerRole

log = logging.getLogger("pyrmq.broker.replicas")

#: ReplicasManager.RETRY_INTERVAL_SECOND
RETRY_INTERVAL_S = 5.0
#: MixAll.MASTER_ID
MASTER_ID = 0


class State(Enum):
    INITIAL = "INITIAL"
    FIRST_TIME_SYNC_CONTROLLER_METADATA_DONE = "FIRST_TIME_SYNC_CONTROLLER_METADATA_DONE"
    REGISTER_TO_CONTROLLER_DONE = "REGISTER_TO_CONTROLLER_DONE"
    RUNNING = "RUNNING"
    SHUTDOWN = "SHUTDOWN"


class RegisterState(Enum):
    INITIAL = "INITIAL"
    CREATE_TEMP_METADATA_FILE_DONE = "CREATE_TEMP_METADATA_FILE_DONE"
    CREATE_METADATA_FILE_DONE = "CREATE_METADATA_FILE_DONE"
    REGISTERED = "REGISTERED"


class RoleHost(Protocol):
    """What the ReplicasManager changes in its broker (Java BrokerController's part)."""

    @property
    def broker_addr(self) -> str: ...

    def apply_role(self, role: BrokerRole, broker_id: int, master_addr: str | None, epoch: int) -> None:
        """Role, brokerId, the put refusal of a slave, SlaveSynchronize, the topic data version."""

    def set_fenced(self, fenced: bool) -> None:
        """A fenced broker takes no puts and neither registers nor heartbeats."""

    async def register_broker_all(self) -> None: ...


class ReplicasManager:
    def __init__(
        self,
        config: Any,
        api: Any,
        ha: Any,
        host: RoleHost,
        *,
        now=now_ms,
        retry_interval_s: float = RETRY_INTERVAL_S,
    ) -> None:
        self.config = config  # BrokerConfig
        self.api = api  # ControllerApi
        self.ha = ha  # AutoSwitchHAService
        self.host = host
        self.now = now
        self.retry_interval_s = retry_interval_s
        self.state = State.INITIAL
        self.register_state = RegisterState.INITIAL
        self.controller_addresses: list[str] = []
        self.controller_leader_address = ""
        self.broker_controller_id: int | None = None
        self.master_broker_id: int | None = None
        self.master_address = ""
        self.master_epoch = 0
        self.sync_state_set: set[int] = set()
        self.sync_state_set_epoch = 0
        path = config.store.broker_identity_path
        self.broker_metadata = BrokerMetadata(path)
        self.temp_broker_metadata = TempBrokerMetadata(path + "-temp")
        self.fenced = True
        self._lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._check_task: asyncio.Task[None] | None = None
        #: the last heartbeat task per controller address (send_heartbeat_to_controller)
        self._heartbeats: dict[str, asyncio.Task[None]] = {}
        self._started_periodic = False
        ha.on_sync_state_set_changed = self._on_sync_state_set_changed

    @property
    def cluster_name(self) -> str:
        return str(self.config["brokerClusterName"])

    @property
    def broker_name(self) -> str:
        return str(self.config["brokerName"])

    def _spawn(self, coro, name: str) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks = [t for t in self._tasks if not t.done()]
        self._tasks.append(task)
        return task

    # --- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        self.state = State.INITIAL
        await self.update_controller_addr()
        self._spawn(self._every(120.0, self.update_controller_addr, first=120.0), "replicas-controller-addr")
        self._spawn(self._heartbeat_loop(), "replicas-heartbeat")
        if not await self.start_basic_service():
            log.error("Failed to start replicasManager")
            self._spawn(self._retry_start(), "replicas-start-retry")

    async def _retry_start(self) -> None:
        retries = 0
        while True:
            await asyncio.sleep(self.retry_interval_s)
            retries += 1
            log.warning(
                "Failed to start replicasManager, retry times:%d, current state:%s, try it again",
                retries,
                self.state.name,
            )
            if await self.start_basic_service():
                log.info("Start replicasManager success, retry times:%d", retries)
                return

    async def shutdown(self) -> None:
        self.state = State.SHUTDOWN
        self.register_state = RegisterState.INITIAL
        tasks, self._tasks = self._tasks, []
        tasks.extend(self._heartbeats.values())
        self._heartbeats = {}
        if self._check_task is not None:
            tasks.append(self._check_task)
            self._check_task = None
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t

    async def start_basic_service(self) -> bool:
        if self.state is State.SHUTDOWN:
            return False
        if self.state is State.INITIAL:
            if not await self._first_sync_controller_metadata():
                return False
            self.state = State.FIRST_TIME_SYNC_CONTROLLER_METADATA_DONE
            log.info("First time sync controller metadata success, change state to: %s", self.state.name)
        if self.state is State.FIRST_TIME_SYNC_CONTROLLER_METADATA_DONE:
            for _ in range(5):
                if await self.register():
                    self.state = State.REGISTER_TO_CONTROLLER_DONE
                    log.info("First time register broker success, change state to: %s", self.state.name)
                    break
                await asyncio.sleep(random.random())  # Java: avoid registering in lock step
            if self.state is not State.REGISTER_TO_CONTROLLER_DONE:
                log.error("Register to broker failed 5 times")
                return False
        if self.state is State.REGISTER_TO_CONTROLLER_DONE:
            await self.send_heartbeat_to_controller()
            if self.master_broker_id is not None or await self.broker_elect():
                log.info(
                    "Master in this broker set is elected, masterBrokerId: %s, masterBrokerAddr: %s",
                    self.master_broker_id,
                    self.master_address,
                )
                self.state = State.RUNNING
                self.set_fenced(False)
            else:
                return False
        if not self._started_periodic:
            self._started_periodic = True
            self._spawn(
                self._every(int(self.config["syncBrokerMetadataPeriod"]) / 1000, self.sync_broker_metadata, first=3.0),
                "replicas-sync-broker-metadata",
            )
        return True

    def set_fenced(self, fenced: bool) -> None:
        self.fenced = fenced
        self.host.set_fenced(fenced)

    async def _every(self, period_s: float, fn, *, first: float) -> None:
        await asyncio.sleep(first)
        while True:
            try:
                await fn()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s failed", getattr(fn, "__name__", fn))
            await asyncio.sleep(period_s)

    # --- controller addresses and metadata --------------------------------------------------------
    async def update_controller_addr(self) -> None:
        """controllerAddr split on ';', or with fetchControllerAddrByDnsLookup every address the
        name resolves to (Java BrokerOuterAPI#dnsLookupAddressByDomain)."""
        raw = str(self.config["controllerAddr"] or "")
        if self.config["fetchControllerAddrByDnsLookup"]:
            host, _, port = raw.rpartition(":")
            try:
                infos = await asyncio.get_running_loop().getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
            except (OSError, ValueError) as e:
                log.warning("dns lookup of controller %s failed: %s", raw, e)
                return
            addrs = sorted({f"{info[4][0]}:{port}" for info in infos})
            if addrs:
                self.controller_addresses = addrs
            return
        self.controller_addresses = [a.strip() for a in raw.split(";") if a.strip()]

    async def _first_sync_controller_metadata(self) -> bool:
        for _ in range(3):
            if await self.update_controller_metadata():
                period = int(self.config["syncControllerMetadataPeriod"]) / 1000
                self._spawn(self._every(period, self.update_controller_metadata, first=3.0), "replicas-controller-meta")
                return True
            await asyncio.sleep(1.0)
        log.error(
            "Failed to init controller metadata, maybe the controllers in %s is not available",
            self.controller_addresses,
        )
        return False

    async def update_controller_metadata(self) -> bool:
        for addr in self.controller_addresses:
            try:
                meta = await self.api.get_controller_metadata(addr)
            except Exception as e:
                log.warning("Failed to update controller metadata from %s: %s", addr, e)
                continue
            if meta.controller_leader_address:
                if meta.controller_leader_address != self.controller_leader_address:
                    log.info("Update controller leader address to %s", meta.controller_leader_address)
                self.controller_leader_address = meta.controller_leader_address
                return True
        return False

    # --- registration ---------------------------------------------------------------------------
    async def register(self) -> bool:
        try:
            self._confirm_now_registering_state()
            if not self._check_metadata_valid():
                log.error("Check and find that metadata/tempMetadata invalid, you can modify the broker config")
                return False
            if self.register_state is RegisterState.INITIAL:
                next_id = await self._get_next_broker_id()
                if next_id is None or not self._create_temp_metadata_file(next_id):
                    log.error("Failed to create temp metadata file, nextBrokerId: %s", next_id)
                    return False
                self.register_state = RegisterState.CREATE_TEMP_METADATA_FILE_DONE
            if self.register_state is RegisterState.CREATE_TEMP_METADATA_FILE_DONE:
                if not await self._apply_broker_id():
                    self.temp_broker_metadata.clear()
                    self.register_state = RegisterState.INITIAL
                    return False
                if not self._create_metadata_file_and_delete_temp():
                    return False
                self.register_state = RegisterState.CREATE_METADATA_FILE_DONE
            if self.register_state is RegisterState.CREATE_METADATA_FILE_DONE:
                if not await self.register_broker_to_controller():
                    log.error("Failed to register broker to controller")
                    return False
                self.register_state = RegisterState.REGISTERED
            return True
        except Exception:
            log.exception("Failed to register broker to controller")
            return False

    def _confirm_now_registering_state(self) -> None:
        if self.broker_metadata.read() and self.broker_metadata.is_loaded:
            self.register_state = RegisterState.CREATE_METADATA_FILE_DONE
            self.broker_controller_id = self.broker_metadata.broker_id
            self.ha.local_broker_id = self.broker_controller_id
            return
        if self.temp_broker_metadata.read() and self.temp_broker_metadata.is_loaded:
            self.register_state = RegisterState.CREATE_TEMP_METADATA_FILE_DONE

    def _check_metadata_valid(self) -> bool:
        md: BrokerMetadata | None = None
        if self.register_state is RegisterState.CREATE_TEMP_METADATA_FILE_DONE:
            md = self.temp_broker_metadata
        elif self.register_state is RegisterState.CREATE_METADATA_FILE_DONE:
            md = self.broker_metadata
        if md is None:
            return True
        if md.cluster_name != self.cluster_name:
            log.error(
                "The clusterName: %s in broker metadata is different from the clusterName: %s in broker config",
                md.cluster_name,
                self.cluster_name,
            )
            return False
        if md.broker_name != self.broker_name:
            log.error(
                "The brokerName: %s in broker metadata is different from the brokerName: %s in broker config",
                md.broker_name,
                self.broker_name,
            )
            return False
        return True

    async def _get_next_broker_id(self) -> int | None:
        try:
            return await self.api.get_next_broker_id(
                self.controller_leader_address, self.cluster_name, self.broker_name
            )
        except Exception as e:
            log.error("fail to get next broker id from controller: %s", e)
            return None

    def _create_temp_metadata_file(self, broker_id: int) -> bool:
        code = f"{self.host.broker_addr};{self.now()}"
        try:
            self.temp_broker_metadata.update_and_persist_temp(self.cluster_name, self.broker_name, broker_id, code)
            return True
        except OSError as e:
            log.error("update and persist temp broker metadata file failed: %s", e)
            self.temp_broker_metadata.clear()
            return False

    async def _apply_broker_id(self) -> bool:
        t = self.temp_broker_metadata
        try:
            await self.api.apply_broker_id(
                self.controller_leader_address, self.cluster_name, self.broker_name, t.broker_id, t.register_check_code
            )
            return True
        except Exception as e:
            log.error("fail to apply broker id: %s: %s", t.broker_id, e)
            return False

    def _create_metadata_file_and_delete_temp(self) -> bool:
        try:
            assert self.temp_broker_metadata.broker_id is not None
            self.broker_metadata.update_and_persist(
                self.cluster_name, self.broker_name, self.temp_broker_metadata.broker_id
            )
            self.temp_broker_metadata.clear()
            self.broker_controller_id = self.broker_metadata.broker_id
            self.ha.local_broker_id = self.broker_controller_id
            return True
        except OSError as e:
            log.error("fail to create metadata file: %s", e)
            self.broker_metadata.clear()
            return False

    async def register_broker_to_controller(self) -> bool:
        assert self.broker_controller_id is not None
        try:
            info = await self.api.register_broker(
                self.controller_leader_address,
                self.cluster_name,
                self.broker_name,
                self.broker_controller_id,
                self.host.broker_addr,
            )
        except Exception as e:
            log.error("fail to send registerBrokerToController request to controller: %s", e)
            return False
        await self._follow(info)
        return True

    async def _follow(self, info: MasterInfo) -> None:
        """Become what ``info`` says (nothing when the controller knows no master yet)."""
        if info.master_broker_id is None:
            return
        if info.master_broker_id == self.broker_controller_id:
            await self.change_to_master(info.master_epoch, info.sync_state_set_epoch, set(info.sync_state_set))
        else:
            await self.change_to_slave(info.master_address or "", info.master_epoch, info.master_broker_id)

    async def broker_elect(self) -> bool:
        """Ask the controller to elect (this broker preferred); follow the answer."""
        assert self.broker_controller_id is not None
        try:
            info = await self.api.broker_elect(
                self.controller_leader_address, self.cluster_name, self.broker_name, self.broker_controller_id
            )
        except Exception as e:
            log.error("Failed to try elect: %s", e)
            return False
        if not info.master_address or info.master_broker_id is None:
            log.warning("Now no master in broker set")
            return False
        await self._follow(info)
        return True

    # --- heartbeat ------------------------------------------------------------------------------
    async def _heartbeat_loop(self) -> None:
        """BrokerController#scheduleSendHeartbeat: at a fixed rate of brokerHeartbeatInterval, not
        while fenced."""
        loop = asyncio.get_running_loop()
        due = loop.time()
        while True:
            period = int(self.config["brokerHeartbeatInterval"]) / 1000
            due = max(due + period, loop.time())
            await asyncio.sleep(due - loop.time())
            if self.fenced or self.broker_controller_id is None:
                continue
            try:
                await self.send_heartbeat_to_controller()
            except Exception:
                log.exception("sendHeartbeat Exception")

    def heartbeat_header(self) -> BrokerHeartbeatRequestHeader:
        store = self.ha.store
        return BrokerHeartbeatRequestHeader(
            cluster_name=self.cluster_name,
            broker_addr=self.host.broker_addr,
            broker_name=self.broker_name,
            broker_id=self.broker_controller_id,
            epoch=self.ha.epoch_cache.last_epoch(),
            max_offset=store.get_max_phy_offset(),
            confirm_offset=self.ha.get_confirm_offset(),
            heartbeat_timeout_mills=int(self.config["controllerHeartBeatTimeoutMills"]),
            election_priority=int(self.config["brokerElectionPriority"]),
        )

    async def send_heartbeat_to_controller(self) -> None:
        """BROKER_HEARTBEAT to every controller, each on its own task, as Java hands each to its
        broker-outer executor: a member whose connect hangs (its host down) must not hold back
        the others' heartbeats, or the leader takes this broker for dead after
        controllerHeartBeatTimeoutMills. Waits at most sendHeartbeatTimeoutMillis (bounded by the
        interval); a member whose last heartbeat is still connecting is skipped this round."""
        header = self.heartbeat_header()
        sending = []
        for addr in self.controller_addresses:
            pending = self._heartbeats.get(addr)
            if pending is not None and not pending.done():
                continue
            task = asyncio.get_running_loop().create_task(self._send_heartbeat(addr, header))
            self._heartbeats[addr] = task
            sending.append(task)
        if sending:
            bound = min(int(self.config["sendHeartbeatTimeoutMillis"]), int(self.config["brokerHeartbeatInterval"]))
            await asyncio.wait(sending, timeout=max(bound, 1) / 1000)

    async def _send_heartbeat(self, addr: str, header: BrokerHeartbeatRequestHeader) -> None:
        try:
            await self.api.send_heartbeat(addr, header)
        except Exception as e:
            log.warning("Error happen when send heartbeat to controller %s: %s", addr, e)

    # --- role changes ---------------------------------------------------------------------------
    @property
    def is_master_state(self) -> bool:
        return self.config.broker_role is BrokerRole.SYNC_MASTER

    async def change_broker_role(
        self,
        master_id: int | None,
        master_addr: str | None,
        master_epoch: int | None,
        sss_epoch: int | None,
        sss: set[int],
    ) -> None:
        """NOTIFY_BROKER_ROLE_CHANGED. Java ReplicasManager#changeBrokerRole."""
        if master_id is None or master_epoch is None or master_epoch <= self.master_epoch:
            return
        if master_id == self.broker_controller_id:
            await self.change_to_master(master_epoch, sss_epoch or 0, sss)
        else:
            await self.change_to_slave(master_addr or "", master_epoch, master_id)

    async def change_to_master(self, epoch: int, sss_epoch: int, sss: set[int]) -> None:
        async with self._lock:
            if epoch <= self.master_epoch:
                return
            log.info(
                "Begin to change to master, brokerName:%s, replicas:%s, new Epoch:%d",
                self.broker_name,
                self.host.broker_addr,
                epoch,
            )
            self.master_epoch = epoch
            if (
                self.master_broker_id is not None
                and self.master_broker_id == self.broker_controller_id
                and int(self.config["brokerId"]) == MASTER_ID
            ):
                self._change_sync_state_set(sss, sss_epoch)
                self.ha.change_to_master_when_last_role_is_master(epoch)
                self.host.apply_role(BrokerRole.SYNC_MASTER, MASTER_ID, None, epoch)
            else:
                self._change_sync_state_set(sss, sss_epoch)
                await self.ha.change_to_master(epoch)
                self.host.apply_role(BrokerRole.SYNC_MASTER, MASTER_ID, None, epoch)
                self.master_address = self.host.broker_addr
                self.master_broker_id = self.broker_controller_id
                self._schedule_check_sync_state_set()
        self._spawn(self.check_sync_state_set_and_report(), "replicas-check-sss-now")
        self._register_when_role_change()

    async def change_to_slave(self, master_addr: str, epoch: int, master_id: int) -> None:
        async with self._lock:
            if epoch <= self.master_epoch:
                return
            log.info(
                "Begin to change to slave, brokerName=%s, brokerId=%s, newMasterBrokerId=%d, "
                "newMasterAddress=%s, newMasterEpoch=%d",
                self.broker_name,
                self.broker_controller_id,
                master_id,
                master_addr,
                epoch,
            )
            self.master_epoch = epoch
            assert self.broker_controller_id is not None
            if master_id == self.master_broker_id:
                self.ha.change_to_slave_when_master_not_change(master_addr, epoch)
                self.host.apply_role(BrokerRole.SLAVE, self.broker_controller_id, master_addr, epoch)
            else:
                self._stop_check_sync_state_set()
                self.master_address = master_addr
                self.master_broker_id = master_id
                self.host.apply_role(BrokerRole.SLAVE, self.broker_controller_id, master_addr, epoch)
                await self.ha.change_to_slave(master_addr, epoch, self.broker_controller_id)
        self._register_when_role_change()

    def _register_when_role_change(self) -> None:
        async def register() -> None:
            try:
                await self.host.register_broker_all()
            except Exception:
                log.exception("Error happen when register broker to name-srv")
                return
            log.info(
                "Change broker [id:%s][address:%s] to %s, newMasterBrokerId:%s, newMasterAddress:%s, "
                "newMasterEpoch:%d, syncStateSetEpoch:%d",
                self.broker_controller_id,
                self.host.broker_addr,
                self.config.broker_role.name,
                self.master_broker_id,
                self.master_address,
                self.master_epoch,
                self.sync_state_set_epoch,
            )

        self._spawn(register(), "replicas-register-namesrv")

    def _change_sync_state_set(self, new: set[int], epoch: int) -> None:
        if epoch > self.sync_state_set_epoch:
            log.info("SyncStateSet changed from %s to %s", sorted(self.sync_state_set), sorted(new))
            self.sync_state_set_epoch = epoch
            self.sync_state_set = set(new)
            self.ha.set_sync_state_set(set(new))

    # --- periodic checks ------------------------------------------------------------------------
    async def sync_broker_metadata(self) -> None:
        """GET_REPLICA_INFO: follow a newer master, elect when there is none, take a newer sync
        state set while master. Java schedulingSyncBrokerMetadata."""
        try:
            info = await self.api.get_replica_info(self.controller_leader_address, self.broker_name)
        except ControllerError as e:
            log.warning("Error happen when get broker %s's metadata: %s", self.broker_name, e)
            if e.code == ResponseCode.CONTROLLER_BROKER_METADATA_NOT_EXIST:
                await self.register_broker_to_controller()
                await asyncio.sleep(2)
            return
        except Exception as e:  # the controller is unreachable: try again next period
            log.warning("Error happen when get broker %s's metadata: %s", self.broker_name, e)
            return
        if info.master_epoch > self.master_epoch:
            if info.master_address and info.master_broker_id is not None:
                await self._follow(info)
            else:
                await self.broker_elect()
        elif info.master_epoch == self.master_epoch and self.is_master_state:
            self._change_sync_state_set(set(info.sync_state_set), info.sync_state_set_epoch)

    def _schedule_check_sync_state_set(self) -> None:
        self._stop_check_sync_state_set()
        period = int(self.config["checkSyncStateSetPeriod"]) / 1000
        self._check_task = asyncio.get_running_loop().create_task(
            self._every(period, self.check_sync_state_set_and_report, first=3.0), name="replicas-check-sss"
        )

    def _stop_check_sync_state_set(self) -> None:
        if self._check_task is not None:
            self._check_task.cancel()
            self._check_task = None

    async def check_sync_state_set_and_report(self) -> None:
        new = self.ha.maybe_shrink_sync_state_set()
        assert self.broker_controller_id is not None
        new.add(self.broker_controller_id)
        if new == self.sync_state_set:
            return
        await self.do_report_sync_state_set_changed(new)

    def _on_sync_state_set_changed(self, new: set[int]) -> None:
        """The HA service's listener (a slave joined or left): report it from a task."""
        if self.state is State.SHUTDOWN:
            return
        with contextlib.suppress(RuntimeError):
            self._spawn(self.do_report_sync_state_set_changed(new), "replicas-alter-sss")

    async def do_report_sync_state_set_changed(self, new: set[int]) -> None:
        assert self.broker_controller_id is not None
        try:
            result = await self.api.alter_sync_state_set(
                self.controller_leader_address,
                self.broker_name,
                self.broker_controller_id,
                self.master_epoch,
                new,
                self.sync_state_set_epoch,
            )
        except Exception as e:
            log.error(
                "Error happen when change SyncStateSet, broker:%s, masterEpoch:%d, old:%s, new:%s, "
                "syncStateSetEpoch:%d: %s",
                self.broker_name,
                self.master_epoch,
                sorted(self.sync_state_set),
                sorted(new),
                self.sync_state_set_epoch,
                e,
            )
            return
        self._change_sync_state_set(set(result.sync_state_set), result.sync_state_set_epoch)


__all__ = ["RegisterState", "ReplicasManager", "RoleHost", "State"]
