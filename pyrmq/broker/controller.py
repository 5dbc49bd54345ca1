"""Wires a broker together: config, store, managers, processors, servers, name-server registration.

Java: ``broker/BrokerController`` (initialize, registerProcessor, start,
shutdown, registerBrokerAll / doRegisterBrokerAll), ``out/BrokerOuterAPI``
(REGISTER_BROKER / UNREGISTER_BROKER to every name server),
``client/ClientHousekeepingService`` (expire silent clients every 10 s) and
``DefaultConsumerIdsChangeListener`` (NOTIFY_CONSUMER_IDS_CHANGED one-way).

Two listeners serve the same processors: ``listenPort`` and the VIP port
``listenPort - 2``, which lacks the pull family (spec §1.1).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pyrmq.broker.auth import BrokerAuth
from pyrmq.broker.broker2client import Broker2Client
from pyrmq.broker.client_manager import ConsumerManager, ProducerManager
from pyrmq.broker.config import BrokerConfig
from pyrmq.broker.consumer_offset_manager import ConsumerOffsetManager, LmqConsumerOffsetManager
from pyrmq.broker.controller_api import ControllerApi
from pyrmq.broker.failover import wire_acting_master
from pyrmq.broker.filter.consumer_filter_manager import ConsumerFilterManager
from pyrmq.broker.flow_control import build_flow_control, max_bytes_in_flight
from pyrmq.broker.metrics import BrokerMetricsManager
from pyrmq.broker.pop.message_request_mode_manager import MessageRequestModeManager
from pyrmq.broker.pop.services import PopServices
from pyrmq.broker.processor.ack_message import AckMessageProcessor
from pyrmq.broker.processor.acting_master import ActingMasterProcessor
from pyrmq.broker.processor.admin import AdminBrokerProcessor
from pyrmq.broker.processor.auth_admin import AuthAdminProcessor
from pyrmq.broker.processor.change_invisible_time import ChangeInvisibleTimeProcessor
from pyrmq.broker.processor.client_forward import ClientForwardProcessor
from pyrmq.broker.processor.client_manage import ClientManageProcessor
from pyrmq.broker.processor.consumer_manage import ConsumerManageProcessor
from pyrmq.broker.processor.end_transaction import EndTransactionProcessor
from pyrmq.broker.processor.group_admin import GroupAdminProcessor
from pyrmq.broker.processor.ha_status import HAStatusProcessor
from pyrmq.broker.processor.notification import NotificationProcessor
from pyrmq.broker.processor.peek_message import PeekMessageProcessor
from pyrmq.broker.processor.pop_message import PopMessageProcessor
from pyrmq.broker.processor.pull import PullMessageProcessor
from pyrmq.broker.processor.query import QueryMessageProcessor
from pyrmq.broker.processor.query_assignment import QueryAssignmentProcessor
from pyrmq.broker.processor.recall import RecallMessageProcessor
from pyrmq.broker.processor.replicas import ReplicasProcessor
from pyrmq.broker.processor.reply import ReplyMessageProcessor
from pyrmq.broker.processor.send import SendMessageProcessor
from pyrmq.broker.processor.send_msg_back import ConsumerSendMsgBackProcessor
from pyrmq.broker.processor.slave_sync import SlaveSyncProcessor
from pyrmq.broker.put_message_hook import register_message_store_hook
from pyrmq.broker.rebalance_lock_manager import RebalanceLockManager
from pyrmq.broker.replicas_manager import ReplicasManager
from pyrmq.broker.schedule_message_service import ScheduleMessageService
from pyrmq.broker.slave_synchronize import SlaveSynchronize
from pyrmq.broker.stats import BrokerStatsManager, LmqBrokerStatsManager
from pyrmq.broker.subscription_group_manager import SubscriptionGroupManager
from pyrmq.broker.timer_message_store import TimerMessageStore
from pyrmq.broker.topic_config_manager import TopicConfigManager
from pyrmq.broker.transaction.check_listener import DefaultTransactionalMessageCheckListener
from pyrmq.broker.transaction.check_service import TransactionalMessageCheckService
from pyrmq.broker.transaction.transactional_message_service import TransactionalMessageService
from pyrmq.common.clock import now_ms
from pyrmq.common.constants import PERM_READ, PERM_WRITE, RMQ_SYS_SCHEDULE_TOPIC, TIMER_TOPIC
from pyrmq.ha.autoswitch import AutoSwitchHAService
from pyrmq.ha.autoswitch_client import AutoSwitchHAClient
from pyrmq.ha.epoch import EpochFileCache
from pyrmq.ha.master import HAService
from pyrmq.ha.slave import HAClient
from pyrmq.protocol.bodies.admin import HAClientRuntimeInfo, HARuntimeInfo
from pyrmq.protocol.bodies.common import DataVersion, TopicConfig, TopicConfigAndMappingSerializeWrapper
from pyrmq.protocol.bodies.namesrv import RegisterBrokerBody
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.namesrv import (
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
)
from pyrmq.remoting.channel import call_handler
from pyrmq.remoting.client import RemotingClient
from pyrmq.remoting.flow_dispatch import FlowDispatcher
from pyrmq.remoting.server import RemotingServer, frontends_from_env, water_marks
from pyrmq.remoting.tls import ServerTls, TlsConfig
from pyrmq.store import message as m
from pyrmq.store.message_store import MessageStore, PutMessage
from pyrmq.store.results import PutMessageResult, PutMessageStatus
from pyrmq.store.store_config import BrokerRole

if TYPE_CHECKING:  # the Raft stack is imported only by a DLedger broker (start time of the others)
    from pyrmq.broker.dledger_role import DLedgerRoleChangeHandler
    from pyrmq.store.dledger_store import DLedgerMessageStore

log = logging.getLogger("pyrmq.broker")

P = TypeVar("P")

#: the processors both ports serve, in registration order (the pull processor is the main port's)
PROCESSORS: tuple[type, ...] = (
    SendMessageProcessor,
    ClientManageProcessor,
    ConsumerManageProcessor,
    QueryMessageProcessor,
    AdminBrokerProcessor,
    EndTransactionProcessor,
    GroupAdminProcessor,
    ClientForwardProcessor,
    ConsumerSendMsgBackProcessor,
    ReplyMessageProcessor,
    RecallMessageProcessor,
    SlaveSyncProcessor,
    HAStatusProcessor,
    ActingMasterProcessor,
    ReplicasProcessor,
    AuthAdminProcessor,
    QueryAssignmentProcessor,
    AckMessageProcessor,
    ChangeInvisibleTimeProcessor,
)

#: Java ClientHousekeepingService: scan every 10 s
HOUSEKEEPING_INTERVAL_S = 10.0

#: BrokerController.HA_ADDRESS_MIN_LENGTH: a shorter haMasterAddress counts as unset
HA_ADDRESS_MIN_LENGTH = 6


def refuse_put_on_slave(msg: PutMessage) -> PutMessageResult:
    """Java HookUtils#checkBeforePutMessage: a slave's store takes no puts (only replicated data)."""
    return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, error="message store is in slave mode")


def refuse_put_when_fenced(msg: PutMessage) -> PutMessageResult:
    """Controller mode before the controller named a role (Java RunningFlags#makeFenced)."""
    return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, error="message store is fenced")


def constructor_parameters(cls: type) -> list[str]:
    """The named parameters of ``cls``'s constructor and of its bases' (a subclass passes
    ``**base`` on to the base class it extends)."""
    names: list[str] = []
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        for p in inspect.signature(init).parameters.values():
            if p.name != "self" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in names:
                names.append(p.name)
    return names


class BrokerController:
    """One broker. ``await start()`` loads the store and registers; ``await shutdown()`` undoes it."""

    def __init__(
        self,
        config: BrokerConfig,
        *,
        clock: Callable[[], int] = now_ms,
        host: str | None = None,
        tls: TlsConfig | None = None,
    ) -> None:
        self.config = config
        self.tls = tls or TlsConfig.system()  # Java's tls.* system properties
        self.server_tls = ServerTls(self.tls)  # one context for the main and the VIP port
        if not config["useTLS"] and "useTLS" not in config.file_properties:
            config["useTLS"] = self.tls.client_enabled  # NettyClientConfig: tls.enable, else enforcing mode
        self.now = clock
        self.host = host or config["bindAddress"]
        self.store_config = config.store
        root = self.store_config.store_path_root_dir
        cfg_dir = os.path.join(root, "config")
        self.topic_config_manager = TopicConfigManager(
            config, os.path.join(cfg_dir, "topics.json"), now=clock, on_change=self._topics_changed
        )
        self.subscription_group_manager = SubscriptionGroupManager(
            config, os.path.join(cfg_dir, "subscriptionGroup.json"), now=clock
        )
        # with enableLmq Java's LmqConsumerOffsetManager keeps every offset in lmqConsumerOffset.json
        if self.store_config.enable_lmq:
            offsets = os.path.join(cfg_dir, "lmqConsumerOffset.json")
            self.consumer_offset_manager: ConsumerOffsetManager = LmqConsumerOffsetManager(offsets, now=clock)
        else:
            self.consumer_offset_manager = ConsumerOffsetManager(
                os.path.join(cfg_dir, "consumerOffset.json"), now=clock
            )
        self.message_request_mode_manager = MessageRequestModeManager(os.path.join(cfg_dir, "messageRequestMode.json"))
        expiry = int(config["channelExpiredTimeout"])
        self.consumer_manager = ConsumerManager(
            now=clock, on_ids_changed=self._consumer_ids_changed, channel_expired_timeout_ms=expiry
        )
        self.producer_manager = ProducerManager(now=clock, channel_expired_timeout_ms=expiry)
        self.rebalance_lock_manager = RebalanceLockManager(now=clock)
        self.config_data_version = DataVersion()
        dledger_store: DLedgerMessageStore | None = None
        if str(config.all_properties().get("enableDLegerCommitLog", "false")).strip().lower() == "true":
            # the commit log is a DLedger member's; the Raft stack is imported only here
            from pyrmq.broker.dledger_role import dledger_config
            from pyrmq.dledger.server import DLedgerServer
            from pyrmq.store.dledger_store import DLedgerMessageStore

            dledger = dledger_config(config.all_properties(), self.store_config)
            if dledger is not None:
                dledger_store = DLedgerMessageStore(
                    self.store_config, DLedgerServer(dledger), on_dispatched=self._on_dispatched, clock=clock
                )
        if dledger_store is None:
            self.message_store = MessageStore(self.store_config, on_dispatched=self._on_dispatched, clock=clock)
        else:
            self.message_store = dledger_store
        self.uniq_id_generator = m.UniqIdGenerator(_ip_bytes(config.broker_ip))
        self.consumer_filter_manager = ConsumerFilterManager(
            os.path.join(cfg_dir, "consumerFilter.json"),
            now=clock,
            max_error_rate=int(config["maxErrorRateOfBloomFilter"]),
            expect_consumer_num=int(config["expectConsumerNumUseFilter"]),
            clean_time_span_ms=int(config["filterDataCleanTimeSpan"]),
        )
        # Java ConsumerFilterManager: the store's bit map length is the bloom filter's width
        config["bitMapLengthConsumeQueueExt"] = self.consumer_filter_manager.bloom_filter.m
        self.transactional_message_service = TransactionalMessageService(
            config=config,
            message_store=self.message_store,
            topic_config_manager=self.topic_config_manager,
            consumer_offset_manager=self.consumer_offset_manager,
            now=clock,
        )
        self.transactional_message_check_listener = DefaultTransactionalMessageCheckListener(
            config=config,
            topic_config_manager=self.topic_config_manager,
            producer_manager=self.producer_manager,
            message_store=self.message_store,
        )
        self.transactional_message_check_service = TransactionalMessageCheckService(
            config, self.transactional_message_service, self.transactional_message_check_listener
        )
        if self.store_config.enable_lmq:
            self.broker_stats: BrokerStatsManager = LmqBrokerStatsManager(
                config["brokerClusterName"], now=clock, lmq_stats=bool(config["enableLmqStats"])
            )
        else:
            self.broker_stats = BrokerStatsManager(config["brokerClusterName"], now=clock)
        self.schedule_message_service = ScheduleMessageService(
            config=config, message_store=self.message_store, now=clock
        )
        self.timer_message_store = TimerMessageStore(config=config, message_store=self.message_store, now=clock)
        register_message_store_hook(self.message_store, config, self.schedule_message_service, clock)
        self.broker_metrics = BrokerMetricsManager(
            config=config,
            topic_config_manager=self.topic_config_manager,
            subscription_group_manager=self.subscription_group_manager,
            consumer_manager=self.consumer_manager,
            producer_manager=self.producer_manager,
            consumer_offset_manager=self.consumer_offset_manager,
            message_store=self.message_store,
            timer_message_store=self.timer_message_store,
            now=clock,
        )
        self.schedule_message_service.on_delivered = self.broker_metrics.on_schedule_delivered
        self.controller_mode = bool(config["enableControllerMode"])
        if self.controller_mode:  # fenced until the controller names a role (ReplicasManager)
            self.message_store.put_message_hook_list.insert(0, refuse_put_when_fenced)
        elif not config.is_master:
            self.message_store.put_message_hook_list.insert(0, refuse_put_on_slave)
        self.fenced = self.controller_mode
        self.dledger_role_handler: DLedgerRoleChangeHandler | None = None
        if dledger_store is not None:  # fenced until DLedger names a role
            from pyrmq.broker.dledger_role import DLedgerRoleChangeHandler

            self.dledger_role_handler = DLedgerRoleChangeHandler(self, dledger_store)
            self.set_fenced(True)
        self.replicas_manager: ReplicasManager | None = None
        self._slave_sync_task: asyncio.Task | None = None
        # classic HA (pyrmq/ha): a master serves slaves, a slave replicates from its master
        self.ha_service: HAService | None = None
        self.ha_client: HAClient | None = None
        self._update_master_ha_addr_periodically = False
        self.pending_topic_registrations: dict[str, asyncio.Task] = {}
        self.broker2client = Broker2Client(
            config=config,
            topic_config_manager=self.topic_config_manager,
            consumer_offset_manager=self.consumer_offset_manager,
            consumer_manager=self.consumer_manager,
            message_store=self.message_store,
        )
        # POP (pyrmq/broker/pop): one pop processor, its long polling re-runs held pops through it
        self.pop_services = PopServices(
            config=config,
            message_store=self.message_store,
            topic_config_manager=self.topic_config_manager,
            subscription_group_manager=self.subscription_group_manager,
            consumer_offset_manager=self.consumer_offset_manager,
            timer_caught_up=self.timer_message_store.caught_up,
            now=clock,
            rerun_pop=lambda ctx, cmd: call_handler(self.pop_processor.pop_message, ctx, cmd),
            rerun_notification=lambda ctx, cmd: call_handler(self.notification_processor.notification, ctx, cmd),
        )
        self.broker_metrics.watch_pop(
            self.pop_services.revive_log,
            self.pop_services.revive_service,
            self.pop_services.pop_inflight_message_counter,
        )
        self.pop_processor = self.build(PopMessageProcessor)
        self.notification_processor = self.build(NotificationProcessor)
        # one pull processor for the main port: its hold service answers held pulls
        self.pull_processor = self.build(PullMessageProcessor)
        self.pull_request_hold_service = self.pull_processor.pull_request_hold_service
        self.server: RemotingServer | None = None
        self.fast_server: RemotingServer | None = None
        # Java's executors and BrokerFastFailure, shared by both ports (docs/reliability.md)
        self.flow_dispatcher = FlowDispatcher(
            build_flow_control(config, self._page_cache_busy),
            max_bytes_in_flight=lambda: max_bytes_in_flight(self.config),
        )
        # registration, slave sync and broker-to-broker calls: TLS with useTLS (HA stays plain, as in Java)
        self.outer_client = RemotingClient(tls=self.tls.client_context() if config["useTLS"] else None)
        self.auth: BrokerAuth | None = None  # built at start (pyrmq/broker/auth.py)
        # a slave copies its master's metadata (Java SlaveSynchronize); the master address comes
        # with each REGISTER_BROKER answer
        self.slave_synchronize = SlaveSynchronize(
            client=self.outer_client,
            broker_addr=lambda: self.broker_addr,
            topic_config_manager=self.topic_config_manager,
            subscription_group_manager=self.subscription_group_manager,
            consumer_offset_manager=self.consumer_offset_manager,
            schedule_message_service=self.schedule_message_service,
            timer_message_store=self.timer_message_store,
            timer_wheel_enable=lambda: bool(self.config["timerWheelEnable"]),
            now=clock,
            message_request_mode_manager=self.message_request_mode_manager,
        )
        # slave acting master (pyrmq/broker/failover.py): escape bridge, member-group view, pre-online
        self.escape_bridge, self.acting_master_service, self.pre_online_service = wire_acting_master(self)
        self._tasks: list[asyncio.Task] = []
        self._register_lock: asyncio.Lock | None = None
        self._started = False
        self._loaded = self._store_started = False  # what shutdown may persist or stop

    # ------------------------------------------------------------------ lifecycle

    @property
    def port(self) -> int:
        return self.server.port if self.server else int(self.config["listenPort"])

    @property
    def broker_addr(self) -> str:
        return f"{self.config.broker_ip}:{self.port}"

    def load(self) -> None:
        """Java BrokerController#initialize: config files, then the store."""
        self.topic_config_manager.load()
        self.subscription_group_manager.load()
        self.consumer_offset_manager.load()
        self.consumer_filter_manager.load()
        self.message_request_mode_manager.load()
        self.pop_services.load()
        self.message_store.load()
        self.schedule_message_service.load()
        self.timer_message_store.load()
        self._loaded = True

    def _dependencies(self) -> dict[str, Any]:
        """Everything a processor may ask for, by the name of its constructor parameter."""
        return {
            "config": self.config,
            "topic_config_manager": self.topic_config_manager,
            "subscription_group_manager": self.subscription_group_manager,
            "consumer_offset_manager": self.consumer_offset_manager,
            "consumer_manager": self.consumer_manager,
            "producer_manager": self.producer_manager,
            "consumer_filter_manager": self.consumer_filter_manager,
            "message_request_mode_manager": self.message_request_mode_manager,
            "outer_client": getattr(self, "outer_client", None),  # made after the pull processor
            "rebalance_lock_manager": self.rebalance_lock_manager,
            "message_store": self.message_store,
            "broker_stats": self.broker_stats,
            "broker_metrics": self.broker_metrics,
            "broker2client": self.broker2client,
            "transactional_message_service": self.transactional_message_service,
            "uniq_id_generator": self.uniq_id_generator,
            "pending_topic_registrations": self.pending_topic_registrations,
            "config_data_version": self.config_data_version,
            "schedule_message_service": self.schedule_message_service,
            "timer_message_store": self.timer_message_store,
            "now": self.now,
            "update_config": self.update_config,
            "register_increment_broker_data": self.register_increment_broker_data,
            "ha_runtime_info": self.ha_runtime_info,
            "acting_master_service": getattr(self, "acting_master_service", None),  # built after the pull processor
            "special_services_running": self._special_services_running,
            "replicas_manager": self.replicas_manager,
            "broker_auth": getattr(self, "auth", None),  # built at start
            **(self.pop_services.dependencies() if hasattr(self, "pop_services") else {}),
        }

    def build(self, cls: type[P], deps: dict[str, Any] | None = None) -> P:
        """``cls`` given exactly the dependencies its constructor names (Java BrokerController
        hands every processor itself; here a processor sees only what it declares)."""
        deps = deps or self._dependencies()
        return cls(**{name: deps[name] for name in constructor_parameters(cls)})

    def processors(self) -> list[Any]:
        """Every processor of both servers except the pull processor (the main port's only).
        Built once the servers bound their ports: the send family stamps the store host."""
        deps = self._dependencies()
        return [self.build(cls, deps) for cls in PROCESSORS]

    def _page_cache_busy(self) -> bool:
        """Java MessageStore#isOSPageCacheBusy, when the store can tell."""
        busy = getattr(self.message_store, "is_os_page_cache_busy", None)
        return bool(busy()) if busy is not None else False

    def main_port_processors(self) -> list[Any]:
        """What only the main port serves (Java registers them on remotingServer alone): the pull
        family, and POP's pop, peek, notification and polling info."""
        return [self.pull_processor, self.pop_processor, self.notification_processor, self.build(PeekMessageProcessor)]

    def _make_server(self, port: int, name: str) -> RemotingServer:
        server = RemotingServer(
            self.host,
            port,
            name=name,
            idle_seconds=float(self.config["serverChannelMaxIdleTimeSeconds"]),
            write_buffer=water_marks(
                int(self.config["writeBufferLowWaterMark"]), int(self.config["writeBufferHighWaterMark"])
            ),
            dispatch=self.flow_dispatcher,
            tls=self.server_tls,
        )
        server.request_check = self.auth.request_check() if self.auth is not None else None
        server.add_close_listener(self._channel_closed)
        if name == "broker":
            server.frontends = frontends_from_env()  # docs/multicore.md
        return server

    async def start(self) -> None:
        self.load()
        self.auth = BrokerAuth.from_broker_config(self.config)  # users, ACLs, the request check
        self.outer_client.rpc_hook = self.auth.client_hook()
        self.message_store.start()
        self._store_started = True
        if self.dledger_role_handler is not None:
            await self.dledger_role_handler.start()  # DLedger replicates: no HA service
        else:
            await self._start_ha()
        self._register_lock = asyncio.Lock()
        listen = int(self.config["listenPort"])
        self.server = self._make_server(listen, "broker")
        await self.server.start(serving=False)
        if listen == 0:
            self.config["listenPort"] = self.server.port
        fast_port = max(self.server.port - 2, 0)
        self.fast_server = self._make_server(fast_port, "broker-vip")
        try:
            await self.fast_server.start(serving=False)
        except OSError as e:
            log.warning("cannot listen on the VIP port %d: %s", fast_port, e)
            self.fast_server = None
        for main_only in self.main_port_processors():  # the VIP port lacks the pull family (spec §1.1)
            self.server.register(main_only)
        for server in (self.server, self.fast_server):
            if server is not None:
                for processor in self.processors():
                    server.register(processor)
                self.broker_metrics.watch(server.table)
                await server.start_serving()
        await self.broker_metrics.start()
        self.topic_config_manager.persist()
        self.subscription_group_manager.persist()
        self._started = True
        self.flow_dispatcher.start()
        await self.acting_master_service.start()  # special services by role, member-group loops
        if not self.fenced:  # controller mode: not before the controller gave a role
            await self.register_broker_all()
        if self.pre_online_service is not None:
            self.pre_online_service.start()
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._register_loop(), name="broker-register"),
            loop.create_task(self._persist_loop(), name="broker-persist"),
            loop.create_task(self._housekeeping_loop(), name="broker-housekeeping"),
            loop.create_task(self._stats_loop(), name="broker-stats"),
        ]
        self.pop_services.start()
        if self.replicas_manager is not None:
            await self.replicas_manager.start()
        elif not self.config.is_master:
            self._tasks.append(loop.create_task(self.slave_synchronize.run(), name="broker-slave-synchronize"))

    async def _start_ha(self) -> None:
        """Java DefaultHAService#start and BrokerController#initialize (slave part): every broker
        listens on haListenPort; a slave connects to haMasterAddress or, without one, to the HA
        address the name server answers REGISTER_BROKER with. In controller mode the
        AutoSwitchHAService always listens and the ReplicasManager picks the role."""
        if self.controller_mode:
            await self._start_autoswitch_ha()
            return
        # a slave's HA service accepts too (Java's is one object for both roles) and streams its
        # own commit log to whoever connects: a slave whose haMasterAddress names this slave
        self.config.resolve_ha_listen_port()
        self.ha_service = HAService(self.message_store, self.host)
        await self.ha_service.start()
        if self.config.is_master:
            self.message_store.ha_service = self.ha_service  # SYNC_MASTER puts wait for its acks
            return
        self.ha_client = HAClient(self.message_store, clock=self.now)
        addr = self.store_config.ha_master_address
        if addr and len(addr) >= HA_ADDRESS_MIN_LENGTH:
            self.ha_client.update_ha_master_address(addr)
        else:
            self._update_master_ha_addr_periodically = True
        self.ha_client.start()

    def _special_services_running(self) -> bool:
        """Java isSpecialServiceRunning (brokerActive): the role decides until the services started."""
        running = self.acting_master_service.special_services.running
        return self.config.is_master if running is None else running

    def ha_runtime_info(self) -> HARuntimeInfo | None:
        """What haStatus shows (Java DefaultHAService / AutoSwitchHAService#getRuntimeInfo): by role,
        a master lists its slaves, a slave its client; None before the HA side started. In
        controller mode the one HA service serves both roles, its client is the slave's."""
        max_offset = self.message_store.get_max_phy_offset()
        if self.ha_service is None and self.ha_client is None:
            return None
        if self.config.is_master and self.ha_service is not None:
            slaves = self.ha_service.runtime_info(max_offset)
            return HARuntimeInfo(
                master=True,
                master_commit_log_max_offset=max_offset,
                in_sync_slave_nums=sum(1 for c in slaves if c.in_sync),
                ha_connection_info=slaves,
            )
        client = self.ha_client or getattr(self.ha_service, "client", None)
        if client is None:  # a controller-mode slave between roles
            return HARuntimeInfo(master=False, ha_client_runtime_info=HAClientRuntimeInfo(max_offset=max_offset))
        return HARuntimeInfo(
            master=False,
            ha_client_runtime_info=HAClientRuntimeInfo(
                master_addr=client.master_ha_address,
                transferred_byte_in_second=client.flow.transferred_byte_in_second(),
                max_offset=max_offset,
                last_read_timestamp=client.last_read_timestamp,
                last_write_timestamp=client.last_write_timestamp,
            ),
        )

    async def _start_autoswitch_ha(self) -> None:
        self.config.resolve_ha_listen_port()
        store = self.message_store
        epoch_cache = EpochFileCache(self.store_config.epoch_file_path)
        epoch_cache.load()
        service = AutoSwitchHAService(store, epoch_cache, self.host)
        service.client_factory = lambda svc, broker_id: AutoSwitchHAClient(store, epoch_cache, broker_id)
        await service.start()
        self.ha_service = service
        store.ha_service = service
        self._update_master_ha_addr_periodically = True
        self.replicas_manager = ReplicasManager(
            self.config, ControllerApi(self.outer_client), service, self, now=self.now
        )

    # ------------------------------------------------------------------ controller mode (RoleHost)

    def apply_role(self, role: BrokerRole, broker_id: int, master_addr: str | None, epoch: int | None) -> None:
        """What a role change does to the broker (Java ReplicasManager#changeToMaster/Slave, the
        BrokerController part): role and brokerId, the slave's put refusal, SlaveSynchronize, and
        a new topic data version stamped with the epoch, and the special services of a master.

        `epoch` None (a DLedger role change): the data version stays as it is, as Java's
        DLedgerRoleChangeHandler leaves it; the name server refuses a new master whose stateVersion
        is below the registered one's, so a term there kept a Java successor out."""
        self.store_config.broker_role = role
        self.config["brokerId"] = broker_id
        hooks = self.message_store.put_message_hook_list
        if role is BrokerRole.SLAVE:
            if refuse_put_on_slave not in hooks:
                hooks.insert(0, refuse_put_on_slave)
            self.slave_synchronize.master_addr = master_addr
            if self._slave_sync_task is None:
                self._slave_sync_task = asyncio.get_running_loop().create_task(
                    self.slave_synchronize.run(), name="broker-slave-synchronize"
                )
        else:
            while refuse_put_on_slave in hooks:
                hooks.remove(refuse_put_on_slave)
            self.slave_synchronize.master_addr = None
            if self._slave_sync_task is not None:
                self._slave_sync_task.cancel()
                self._slave_sync_task = None
        if epoch is not None:
            self.topic_config_manager.data_version.next_version(self.now(), epoch)
        # Java changeToMaster / changeToSlave: changeSpecialServiceStatus (delay levels, timer, transaction check)
        task = asyncio.get_running_loop().create_task(
            self.acting_master_service.special_services.change(role is not BrokerRole.SLAVE)
        )
        task.add_done_callback(_log_task_error)

    def set_fenced(self, fenced: bool) -> None:
        self.fenced = fenced
        hooks = self.message_store.put_message_hook_list
        if fenced and refuse_put_when_fenced not in hooks:
            hooks.insert(0, refuse_put_when_fenced)
        elif not fenced:
            while refuse_put_when_fenced in hooks:
                hooks.remove(refuse_put_when_fenced)

    async def _shutdown_ha(self) -> None:
        if self.ha_client is not None:
            await self.ha_client.shutdown()
            self.ha_client = None
        if self.ha_service is not None:
            self.message_store.ha_service = None
            await self.ha_service.shutdown()
            self.ha_service = None

    async def shutdown(self) -> None:
        if self.pre_online_service is not None:
            await self.pre_online_service.shutdown()
        await self.acting_master_service.shutdown()
        if self.replicas_manager is not None:
            await self.replicas_manager.shutdown()
        if self._slave_sync_task is not None:
            self._slave_sync_task.cancel()
            self._slave_sync_task = None
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._tasks = []
        await self.transactional_message_check_service.shutdown()
        await self.schedule_message_service.shutdown()
        await self.timer_message_store.shutdown()
        if self._started:
            await self.unregister_broker_all()
        self.pull_request_hold_service.shutdown()
        self.flow_dispatcher.stop()
        await self.pop_services.shutdown()
        await self.broker_metrics.shutdown()
        for server in (self.fast_server, self.server):
            if server is not None:
                await server.close()
        self.fast_server = None
        self.server = None
        await self.outer_client.close()
        if self._loaded:  # after a failed load the tables are not the files' content: keep the files
            self.consumer_offset_manager.persist()
            self.consumer_filter_manager.persist()
            self.pop_services.persist()
            self.topic_config_manager.persist()
            self.subscription_group_manager.persist()
        await self._shutdown_ha()
        if self.dledger_role_handler is not None:
            await self.dledger_role_handler.close()
        if self._store_started:
            await asyncio.get_running_loop().run_in_executor(None, self.message_store.shutdown)
        self._started = self._store_started = False

    # ------------------------------------------------------------------ periodic work

    async def _register_loop(self) -> None:
        period = min(max(int(self.config["registerNameServerPeriod"]), 10000), 60000) / 1000
        while True:
            await asyncio.sleep(period)
            if self.fenced:
                continue  # Java: "Skip register for broker is isolated"
            if self.dledger_role_handler is not None and not self.dledger_role_handler.may_register_periodically():
                continue
            try:
                await self.register_broker_all()
            except Exception:
                log.exception("registerBrokerAll Exception")

    async def _persist_loop(self) -> None:
        interval = max(int(self.config["flushConsumerOffsetInterval"]), 100) / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                self.consumer_offset_manager.persist()
                self.consumer_filter_manager.persist()
                self.pop_services.persist()
            except Exception:
                log.exception("persist consumer offsets failed")

    async def _stats_loop(self) -> None:
        """StoreStatsService samples every second; stats items snapshot on the same tick."""
        while True:
            await asyncio.sleep(1.0)
            try:
                self.broker_stats.tick()
            except Exception:
                log.exception("stats sampling failed")

    def update_config(self, props: dict[str, str]) -> None:
        """UPDATE_BROKER_CONFIG (Java Configuration#update): apply known keys, persist every setting
        to brokerConfigPath (the -c file), so the change survives a restart; brokerPermission
        re-registers. A flushDiskType change is for the next start, except that SYNC_FLUSH to
        ASYNC_FLUSH stops the flush wait of sends at once, as in Java."""
        self.config.apply(props)
        self.config.file_properties.update({k: v for k, v in props.items() if k in self.config.file_properties})
        self.config_data_version.next_version(self.now())
        self.config.persist()
        if (
            "flushDiskType" in props
            and self.store_config.sync_flush != self.message_store.commit_log.flush_manager.sync_flush
        ):
            log.warning(
                "flushDiskType is now %s; the flush service started as %s runs until the next start",
                self.store_config.flush_disk_type,
                "SYNC_FLUSH" if self.message_store.commit_log.flush_manager.sync_flush else "ASYNC_FLUSH",
            )
        if "brokerPermission" in props and self._started:
            self.topic_config_manager.data_version.next_version(self.now())
            task = asyncio.get_running_loop().create_task(self.register_broker_all())
            task.add_done_callback(_log_task_error)

    async def _housekeeping_loop(self) -> None:
        while True:
            await asyncio.sleep(HOUSEKEEPING_INTERVAL_S)
            self.scan_not_active_channel()

    def scan_not_active_channel(self) -> None:
        """Java ClientHousekeepingService#scanExceptionChannel: drop and close silent clients."""
        for ch in self.consumer_manager.scan_not_active_channel() + self.producer_manager.scan_not_active_channel():
            try:
                ch.close()
            except Exception:
                log.debug("closing expired client channel failed", exc_info=True)

    # ------------------------------------------------------------------ events

    def _channel_closed(self, channel: Any) -> None:
        self.producer_manager.do_channel_close_event(channel)
        self.consumer_manager.do_channel_close_event(channel)
        self.pull_request_hold_service.drop_channel(channel)
        self.pop_services.drop_channel(channel)

    def _on_dispatched(self, topic: str, queue_id: int, max_offset: int, tags_code: int, request: Any) -> None:
        self.pull_request_hold_service.notify_threadsafe(topic, queue_id, max_offset, tags_code)
        self.pop_services.on_dispatched(topic, queue_id)
        if self.store_config.broker_role is BrokerRole.SLAVE:
            # Java ReputMessageService on a slave: replicated records count as puts (putTps, InTPS)
            self.broker_stats.on_replicated_put(request.msg_size)
        if topic == RMQ_SYS_SCHEDULE_TOPIC:
            self.schedule_message_service.on_dispatched(queue_id)
        elif topic == TIMER_TOPIC:
            self.timer_message_store.on_dispatched()

    def _consumer_ids_changed(self, group: str, channels: list[Any]) -> None:
        """Java DefaultConsumerIdsChangeListener (CHANGE): tell every member to rebalance."""
        if not channels:
            self.consumer_filter_manager.unregister(group)  # Java UNREGISTER event
            return
        for ch in channels:
            cmd = RemotingCommand.request(
                RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": group}, oneway=True
            )
            try:
                ch.send_oneway(cmd)
            except Exception:
                log.warning("notifyConsumerIdsChanged to %s failed", getattr(ch, "remote_addr", ch), exc_info=True)

    def _topics_changed(self, configs: list[TopicConfig]) -> None:
        if not self._started:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = loop.create_task(self.register_increment_broker_data(configs))
        task.add_done_callback(_log_task_error)
        # Java registers a topic auto-created by a send before answering that send
        # (TopicConfigManager#createTopicInSendMessageMethod -> registerBrokerAll): sends wait on this.
        pending = self.pending_topic_registrations
        for tc in configs:
            pending[tc.topic_name or ""] = task

        def _settled(t: asyncio.Task, names=None) -> None:
            if names is None:
                names = [tc.topic_name or "" for tc in configs]
            for name in names:
                if pending.get(name) is t:
                    del pending[name]

        task.add_done_callback(_settled)

    # ------------------------------------------------------------------ name-server registration

    def _registered_topic_configs(self, configs: dict[str, TopicConfig]) -> dict[str, TopicConfig]:
        """Java: a broker that is not fully RW registers its topics with perms AND-ed with brokerPermission."""
        bp = int(self.config["brokerPermission"])
        if bp & (PERM_READ | PERM_WRITE) == PERM_READ | PERM_WRITE:
            return configs
        out = {}
        for name, tc in configs.items():
            out[name] = TopicConfig(
                tc.topic_name,
                tc.read_queue_nums,
                tc.write_queue_nums,
                tc.perm & bp,
                tc.topic_filter_type,
                tc.topic_sys_flag,
                tc.order,
                dict(tc.attributes),
            )
        return out

    async def register_broker_all(self) -> None:
        tcm = self.topic_config_manager
        await self._register(self._registered_topic_configs(dict(tcm.topic_config_table)), tcm.data_version)

    async def register_increment_broker_data(self, configs: list[TopicConfig]) -> None:
        """Register these topics with the name servers now (nothing to do before the broker started,
        nor on a DLedger member before its first role: its brokerId is not yet its own (Java's is -1
        until then); as 0 it replaced the elected master, and its slave registration then removed
        it. The role change registers every topic)."""
        if not self._started or (self.fenced and self.dledger_role_handler is not None):
            return
        table = {tc.topic_name or "": tc for tc in configs}
        await self._register(self._registered_topic_configs(table), self.topic_config_manager.data_version)

    async def _register(self, table: dict[str, TopicConfig], data_version: DataVersion) -> None:
        addrs = self.config.namesrv_addrs
        if not addrs or self.acting_master_service.isolated:  # Java: "Skip register for broker is isolated"
            return
        wrapper = TopicConfigAndMappingSerializeWrapper(
            table, DataVersion(data_version.counter, data_version.state_version, data_version.timestamp)
        )
        # off the event loop, as Java's registration has its own thread: 10,000 topics take
        # ~130 ms of CPU to encode, a stall every 30 s on the loop; in a thread the loop keeps
        # its turns (the GIL is handed over every few ms)
        body = await asyncio.to_thread(RegisterBrokerBody(wrapper, []).encode)
        header = RegisterBrokerRequestHeader(
            broker_name=self.config["brokerName"],
            broker_addr=self.broker_addr,
            cluster_name=self.config["brokerClusterName"],
            ha_server_addr=self.config.ha_server_addr,
            broker_id=int(self.config["brokerId"]),
            enable_acting_master=bool(self.config["enableSlaveActingMaster"]),
            heartbeat_timeout_millis=(
                int(self.config["brokerNotActiveTimeoutMillis"]) if self.config["enableSlaveActingMaster"] else None
            ),
            compressed=False,
            body_crc32=m.crc32(body),
        )
        ext = header.to_ext_fields()
        timeout = int(self.config["registerBrokerTimeoutMills"]) / 1000
        assert self._register_lock is not None
        async with self._register_lock:
            await asyncio.gather(*(self._register_one(a, ext, body, timeout) for a in addrs))

    async def _register_one(self, addr: str, ext: dict[str, str], body: bytes, timeout: float) -> None:
        cmd = RemotingCommand.request(RequestCode.REGISTER_BROKER, dict(ext), body)
        try:
            resp = await self.outer_client.invoke(addr, cmd, timeout)
        except Exception as e:
            log.warning("register broker to name server %s failed: %s", addr, e)
            return
        if resp.code != ResponseCode.SUCCESS:
            log.warning("register broker to name server %s failed: code %d %s", addr, resp.code, resp.remark)
            return
        log.debug("register broker to name server %s OK", addr)
        self._handle_register_broker_result(RegisterBrokerResponseHeader.from_ext_fields(resp.ext_fields))

    def _handle_register_broker_result(self, result: RegisterBrokerResponseHeader) -> None:
        """Java BrokerController#handleRegisterBrokerResult: a slave without haMasterAddress
        follows the master the name server names."""
        if self.ha_client is not None and self._update_master_ha_addr_periodically and result.ha_server_addr:
            self.ha_client.update_ha_master_address(result.ha_server_addr)
            self.ha_client.update_master_address(result.master_addr)
        if isinstance(self.ha_service, AutoSwitchHAService):
            if not self.config.is_master and result.ha_server_addr:
                self.ha_service.update_ha_master_address(result.ha_server_addr)
            return  # the ReplicasManager names the master (SlaveSynchronize's address included)
        self.slave_synchronize.master_addr = result.master_addr

    async def unregister_broker_all(self) -> None:
        header = UnRegisterBrokerRequestHeader(
            broker_name=self.config["brokerName"],
            broker_addr=self.broker_addr,
            cluster_name=self.config["brokerClusterName"],
            broker_id=int(self.config["brokerId"]),
        )
        ext = header.to_ext_fields()

        async def one(addr: str) -> None:
            try:
                resp = await self.outer_client.invoke(
                    addr, RemotingCommand.request(RequestCode.UNREGISTER_BROKER, dict(ext)), 3
                )
                if resp.code == ResponseCode.SUCCESS:
                    log.info("unregisterBroker OK, NamesrvAddr: %s", addr)
                else:
                    log.warning("unregisterBroker failed, NamesrvAddr: %s: %d %s", addr, resp.code, resp.remark)
            except Exception as e:
                log.warning("unregisterBroker Exception, NamesrvAddr: %s: %s", addr, e)

        await asyncio.gather(*(one(a) for a in self.config.namesrv_addrs))


def _ip_bytes(ip: str) -> bytes:
    import socket

    try:
        return socket.inet_aton(ip)
    except OSError:
        return b"\x7f\x00\x00\x01"


def _log_task_error(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background task failed", exc_info=task.exception())
