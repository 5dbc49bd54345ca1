"""Wires the controller together: state machine, journal, heartbeats, server, elections.

Java: ``controller/ControllerManager`` (inactive-broker listener, forced
re-election, NOTIFY_BROKER_ROLE_CHANGED), ``impl/DLedgerController`` (the
single-file event scheduler: compute a result, persist its events, apply
them, answer; ``scanInactiveMasterAndTriggerReelect``) and
``BrokerHousekeepingService`` (a closed broker connection is an inactive
broker at once, which is what makes failover after a SIGKILL fast).

One ``asyncio.Lock`` plays Java's EventScheduler thread: requests are
computed and applied one at a time, and the journal's fsync runs on a worker
thread while the lock is held, so the loop keeps serving heartbeats.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from pyrmq.common.clock import now_ms
from pyrmq.controller.config import ControllerConfig
from pyrmq.controller.dledger_log import ControllerAppendError, DLedgerEventLog
from pyrmq.controller.elect_policy import DefaultElectPolicy, ElectPolicy
from pyrmq.controller.events import ControllerResult
from pyrmq.controller.heartbeat import BrokerHeartbeatManager
from pyrmq.controller.journal import EventJournal
from pyrmq.controller.processor import ControllerRequestProcessor
from pyrmq.controller.replicas_info import ReplicasInfoManager
from pyrmq.protocol.bodies.controller import ElectMasterResponseBody, SyncStateSet
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.fastjson import BodyDecodeError
from pyrmq.protocol.headers.controller import (
    ElectMasterRequestHeader,
    ElectMasterResponseHeader,
    GetMetaDataResponseHeader,
    GetReplicaInfoRequestHeader,
    NotifyBrokerRoleChangedRequestHeader,
)
from pyrmq.remoting.client import RemotingClient
from pyrmq.remoting.server import RemotingServer
from pyrmq.remoting.tls import ServerTls, TlsConfig

log = logging.getLogger("pyrmq.controller")

#: Java DefaultBrokerHeartbeatManager#start: first scan after 2 s
SCAN_NOT_ACTIVE_INITIAL_DELAY_MS = 2000


#: DLedgerController's answer on a member that is not (yet) the serving leader
NOT_LEADER_REMARK = "The controller is not in leader state"


class ControllerManager:
    """One controller. A group of one keeps its events in the local journal (``await start()``
    replays it); a group of more peers replicates them through DLedger (``dledger_log``) and
    serves requests only as the leader."""

    def __init__(
        self, config: ControllerConfig, *, clock: Callable[[], int] = now_ms, tls: TlsConfig | None = None
    ) -> None:
        config.check()
        self.tls = tls or TlsConfig.system()  # Java's tls.* system properties
        self.config = config
        self.clock = clock
        self.heartbeat = BrokerHeartbeatManager(clock=clock)
        self.replicas = ReplicasInfoManager(
            enable_elect_unclean_master=lambda: bool(self.config["enableElectUncleanMaster"])
        )
        self.elect_policy: ElectPolicy = DefaultElectPolicy(
            self.heartbeat.is_broker_active, self.heartbeat.get_broker_live_info
        )
        self.journal = EventJournal(config.store_path())
        #: set in start() when controllerDLegerPeers lists more than this node
        self.dledger: DLedgerEventLog | None = None
        self.server: RemotingServer | None = None
        self.client: RemotingClient | None = None
        self._lock = asyncio.Lock()
        self._tasks: list[asyncio.Task] = []
        self._background: set[asyncio.Task] = set()

    # ------------------------------------------------------------------ the event scheduler

    async def run(self, compute: Callable[[], ControllerResult]) -> ControllerResult:
        """Compute against the current state, persist the events, apply them (Java appendEvent + onApply).

        Shielded: a request whose connection drops (its handler task is cancelled) still
        finishes, so an event that reached the journal is always applied in memory too."""
        task = asyncio.ensure_future(self._run_locked(compute))
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return await asyncio.shield(task)

    async def _run_locked(self, compute: Callable[[], ControllerResult]) -> ControllerResult:
        if self.dledger is not None:
            return await self._run_replicated(self.dledger, compute)
        async with self._lock:
            result = compute()
            if result.events:
                await asyncio.to_thread(self.journal.append, result.events)
                for event in result.events:
                    self.replicas.apply_event(event)
            return result

    async def _run_replicated(
        self, dledger: DLedgerEventLog, compute: Callable[[], ControllerResult]
    ) -> ControllerResult:
        """DLedgerController's EventScheduler: leader only; the events are applied on commit."""
        async with self._lock:
            if not dledger.leader_state:
                return ControllerResult(code=ResponseCode.CONTROLLER_NOT_LEADER, remark=NOT_LEADER_REMARK)
            result = compute()
            try:
                if result.events:
                    await dledger.append(result.events)
                elif self.config["isProcessReadEvent"]:
                    # DLedger has no read index or lease read: Java proposes an empty entry
                    await dledger.append([])
            except ControllerAppendError as e:
                log.error("Failed to append event to DLedger, the response is %s: %s", result.response, e)
                return ControllerResult(code=ResponseCode.SYSTEM_ERROR, remark=str(e))
            return result

    @property
    def is_leader_state(self) -> bool:
        """Java Controller#isLeaderState: a group of one always is."""
        return self.dledger is None or self.dledger.leader_state

    def is_alive(self, cluster_name: str | None, broker_name: str, broker_id: int) -> bool:
        return self.heartbeat.is_broker_active(cluster_name, broker_name, broker_id)

    async def elect_master(self, request: ElectMasterRequestHeader) -> ControllerResult:
        return await self.run(lambda: self.replicas.elect_master(request, self.elect_policy))

    # ------------------------------------------------------------------ metadata and config

    def metadata(self) -> GetMetaDataResponseHeader:
        """DLedgerController#getControllerMetadata: a group of one is always its own leader."""
        peers = self.config.peers()
        self_id = self.config["controllerDLegerSelfId"]
        leader_id: str | None = self_id
        leader_addr: str | None = peers[self_id]
        is_leader = True
        if self.dledger is not None:
            leader_id, leader_addr, is_leader = (
                self.dledger.leader_id,
                self.dledger.leader_address,
                self.dledger.is_leader,
            )
        return GetMetaDataResponseHeader(
            group=self.config["controllerDLegerGroup"],
            controller_leader_id=leader_id,
            controller_leader_address=leader_addr,
            is_leader=is_leader,
            peers="".join(f"{k}:{v};" for k, v in peers.items()),
        )

    def update_config(self, props: dict[str, str]) -> None:
        self.config.update(props)
        self.config.persist()

    # ------------------------------------------------------------------ brokers going away

    def on_channel_close(self, channel: object) -> None:
        identity = self.heartbeat.on_broker_channel_close(channel)
        if identity is not None:
            self._spawn(self.on_broker_inactive(identity.cluster_name, identity.broker_name, identity.broker_id))

    async def on_broker_inactive(self, cluster_name: str | None, broker_name: str, broker_id: int | None) -> None:
        """ControllerManager#onBrokerInactive: re-elect only when the master went away, and only
        on the leader (the other members see the same closed connections)."""
        if not self.is_leader_state:
            log.warning("The broker with brokerId: %s in broker-set: %s has been inactive", broker_id, broker_name)
            return
        log.info(
            "Controller Manager received broker inactive event, clusterName: %s, brokerName: %s, brokerId: %s",
            cluster_name,
            broker_name,
            broker_id,
        )
        if broker_id is not None:
            info = await self.run(lambda: self.replicas.get_replica_info(GetReplicaInfoRequestHeader(broker_name)))
            master = getattr(info.response, "master_broker_id", None)
            if info.code != ResponseCode.SUCCESS or master != broker_id:
                log.warning("The broker with brokerId: %s in broker-set: %s has been inactive", broker_id, broker_name)
                return
        await self.trigger_elect_master(broker_name)

    async def trigger_elect_master(self, broker_name: str) -> bool:
        """Controller-triggered election (brokerId -1), retried electMasterMaxRetryCount times."""
        for attempt in range(max(int(self.config["electMasterMaxRetryCount"]), 1)):
            try:
                result = await self.elect_master(ElectMasterRequestHeader(broker_name=broker_name))
            except Exception:
                log.warning(
                    "Failed to trigger elect-master in broker-set: %s, retryCount: %d",
                    broker_name,
                    attempt,
                    exc_info=True,
                )
                continue
            if result.code == ResponseCode.SUCCESS:
                log.info("Elect a new master in broker-set: %s done", broker_name)
                if self.config["notifyBrokerRoleChanged"]:
                    self.notify_broker_role_changed(result)
                return True
            log.error("Failed to trigger elect-master in broker-set: %s: %s", broker_name, result.remark)
        return False

    def notify_broker_role_changed(self, result: ControllerResult) -> None:
        """Tell every alive member of the group the new master (oneway, like Java's NotifyService)."""
        header = result.response
        if not isinstance(header, ElectMasterResponseHeader) or not result.body:
            return
        try:
            body = ElectMasterResponseBody.decode(result.body)
        except BodyDecodeError:
            return
        group = body.broker_member_group
        if group is None:
            return
        if header.master_broker_id is None:
            log.warning("Notify broker role change failed: the new master brokerId is empty")
            return
        notify = NotifyBrokerRoleChangedRequestHeader(
            master_address=header.master_address,
            master_epoch=header.master_epoch,
            sync_state_set_epoch=header.sync_state_set_epoch,
            master_broker_id=header.master_broker_id,
        )
        payload = SyncStateSet(set(body.sync_state_set), header.sync_state_set_epoch or 0).encode()
        for broker_id, addr in sorted(group.broker_addrs.items()):
            if addr and self.heartbeat.is_broker_active(group.cluster, group.broker_name or "", broker_id):
                cmd = RemotingCommand.request(
                    RequestCode.NOTIFY_BROKER_ROLE_CHANGED, notify.to_ext_fields(), payload, oneway=True
                )
                self._spawn(self._notify_one(addr, cmd))

    async def _notify_one(self, addr: str, cmd: RemotingCommand) -> None:
        log.info("Try notify broker %s that role changed", addr)
        if self.client is None:
            return
        try:
            await self.client.invoke_oneway(addr, cmd)
        except Exception as e:
            log.error("Failed to notify broker %s that role changed: %s", addr, e)

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ------------------------------------------------------------------ scans

    async def _scan_not_active_loop(self) -> None:
        await asyncio.sleep(SCAN_NOT_ACTIVE_INITIAL_DELAY_MS / 1000)
        while True:
            try:
                for identity, info in self.heartbeat.scan_not_active_broker():
                    close = getattr(info.channel, "close", None)
                    if close is not None:
                        with contextlib.suppress(Exception):
                            close()
                    self._spawn(
                        self.on_broker_inactive(identity.cluster_name, identity.broker_name, identity.broker_id)
                    )
            except Exception:
                log.exception("scanNotActiveBroker exception")
            await asyncio.sleep(max(int(self.config["scanNotActiveBrokerInterval"]), 1) / 1000)

    async def _scan_inactive_master_loop(self) -> None:
        while True:
            await asyncio.sleep(max(int(self.config["scanInactiveMasterInterval"]), 1) / 1000)
            if not self.is_leader_state:
                continue
            try:
                for broker_name in self.replicas.scan_need_reelect_broker_sets(self.is_alive):
                    self._spawn(self.on_broker_inactive(None, broker_name, None))
            except Exception:
                log.exception("scanInactiveMasterAndTriggerReelect exception")

    # ------------------------------------------------------------------ lifecycle

    @property
    def port(self) -> int:
        return self.server.port if self.server else self.config.serve_port()

    def processors(self) -> list[object]:
        return [ControllerRequestProcessor(self)]

    def replay(self) -> int:
        """Rebuild the state from the journal; returns how many records were applied."""
        records = self.journal.replay()
        for events in records:
            for event in events:
                self.replicas.apply_event(event)
        return len(records)

    async def start(self) -> None:
        replicated = len(self.config.peers()) > 1
        if not replicated:
            n = await asyncio.to_thread(self.replay)
            log.info("controller: replayed %d journal records from %s", n, self.journal.path)
            self.journal.open()
        # Java's DLedger RPC service writes the peer port into the shared NettyServerConfig,
        # so GET_CONTROLLER_CONFIG shows it as listenPort
        self.config["listenPort"] = self.config.serve_port()
        server = RemotingServer(
            self.config["bindAddress"],
            self.config.serve_port(),
            name="controller",
            idle_seconds=float(self.config["serverChannelMaxIdleTimeSeconds"]),
            tls=ServerTls(self.tls),
        )
        for processor in self.processors():
            server.register(processor)
        server.add_close_listener(self.on_channel_close)
        if replicated:
            # Java's DLedgerController: the DLedger RPCs and the controller's requests share the port
            self.dledger = DLedgerEventLog(
                group=self.config["controllerDLegerGroup"],
                self_id=self.config["controllerDLegerSelfId"],
                peers=self.config["controllerDLegerPeers"],
                store_path=self.config.store_path(),
                data_file_size=int(self.config["mappedFileSize"]),
                remoting=server,
                apply=self.replicas.apply_event,
            )
            await self.dledger.start()
        else:
            await server.start()
        self.server = server
        # Java NettyClientConfig#useTLS's default: tls.enable, else an enforcing server mode
        self.client = RemotingClient(tls=self.tls.outgoing_context())
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._scan_not_active_loop(), name="controller-scan-not-active"),
            loop.create_task(self._scan_inactive_master_loop(), name="controller-scan-inactive-master"),
        ]

    async def shutdown(self) -> None:
        for task in [*self._tasks, *self._background]:
            task.cancel()
        for task in [*self._tasks, *self._background]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []
        if self.dledger is not None:
            await self.dledger.close()  # closes the shared server too
            self.dledger = None
            self.server = None
        if self.server is not None:
            await self.server.close()
            self.server = None
        if self.client is not None:
            await self.client.close()
            self.client = None
        self.journal.close()
