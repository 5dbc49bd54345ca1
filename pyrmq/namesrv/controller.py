"""Wires the NameServer together: config, KV store, route tables, server, liveness scan.

Java: ``namesrv/NamesrvController`` and ``routeinfo/BrokerHousekeepingService``
(a closed connection unregisters the broker that registered on it at once).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import Any

from pyrmq.auth.wiring import ServerAuth
from pyrmq.common.clock import now_ms
from pyrmq.namesrv.config import NamesrvConfig
from pyrmq.namesrv.kv_config import KVConfigManager
from pyrmq.namesrv.processor import ClientRequestProcessor, DefaultRequestProcessor
from pyrmq.namesrv.route_info_manager import RouteInfoManager
from pyrmq.protocol.codes import RequestCode
from pyrmq.remoting.flow import FlowControl, RequestQueue
from pyrmq.remoting.flow_dispatch import FlowDispatcher
from pyrmq.remoting.server import RemotingServer, water_marks
from pyrmq.remoting.tls import ServerTls, TlsConfig

log = logging.getLogger("pyrmq.namesrv")

#: Java NamesrvController#startScheduleService: first scan after 5 s
SCAN_INITIAL_DELAY_MS = 5000


class NamesrvController:
    """One NameServer. ``await start()`` binds and starts the scan; ``await shutdown()`` undoes it."""

    def __init__(self, config: NamesrvConfig | None = None, *, clock=now_ms, tls: TlsConfig | None = None) -> None:
        self.config = config or NamesrvConfig()
        self.tls = tls or TlsConfig.system()  # Java's tls.* system properties
        self.clock = clock
        self.kv_config_manager = KVConfigManager(self.config["kvConfigPath"])
        self.route_info_manager = RouteInfoManager(clock=clock)
        self._sync_route_settings()
        self.server: RemotingServer | None = None
        self.auth: ServerAuth | None = None  # built at start (auth_of)
        self._scan_task: asyncio.Task | None = None
        self._started_at = self.clock()

    # ------------------------------------------------------------------ config

    def _sync_route_settings(self) -> None:
        r, c = self.route_info_manager, self.config
        r.default_timeout_millis = int(c["brokerChannelExpiredTime"])
        r.delete_topic_with_broker_registration = bool(c["deleteTopicWithBrokerRegistration"])
        r.support_acting_master = bool(c["supportActingMaster"])

    def update_config(self, props: dict[str, str]) -> None:
        """UPDATE_NAMESRV_CONFIG after the black-list check: apply, persist (Java Configuration#update)."""
        self.config.update(props)
        self._sync_route_settings()
        self.config.persist()

    def ready_for_service(self) -> bool:
        return self.clock() - self._started_at >= int(self.config["waitSecondsForService"]) * 1000

    def processors(self) -> list[Any]:
        """The two processors, given the tables they work on (never the controller)."""
        managers: dict[str, Any] = {
            "config": self.config,
            "route_info_manager": self.route_info_manager,
            "kv_config_manager": self.kv_config_manager,
        }
        return [
            ClientRequestProcessor(**managers, ready_for_service=self.ready_for_service),
            DefaultRequestProcessor(**managers, update_config=self.update_config),
        ]

    # ------------------------------------------------------------------ lifecycle

    @property
    def port(self) -> int:
        return self.server.port if self.server else int(self.config["listenPort"])

    async def start(self) -> None:
        self.kv_config_manager.load()
        server = RemotingServer(
            self.config["bindAddress"],
            int(self.config["listenPort"]),
            name="namesrv",
            idle_seconds=float(self.config["serverChannelMaxIdleTimeSeconds"]),
            tls=ServerTls(self.tls),
            write_buffer=water_marks(
                int(self.config["writeBufferLowWaterMark"]), int(self.config["writeBufferHighWaterMark"])
            ),
            dispatch=self._flow_dispatcher(),
        )
        for processor in self.processors():
            server.register(processor)
        self.auth = auth_of(self.config)
        server.request_check = self.auth.request_check()
        server.add_close_listener(self.route_info_manager.on_channel_destroy)
        await server.start()
        self.server = server
        self._started_at = self.clock()
        self._scan_task = asyncio.get_running_loop().create_task(self._scan_loop(), name="namesrv-scan")

    def _flow_dispatcher(self) -> FlowDispatcher:
        """Java NamesrvController's two executors: route queries on the client-request queue, the
        rest on the default one; a full queue answers [OVERLOAD] (the name server has no
        fast failure)."""
        cfg = self.config
        client: RequestQueue = RequestQueue(
            "clientRequest",
            int(cfg["clientRequestThreadPoolQueueCapacity"]),
            int(cfg["clientRequestThreadPoolNums"]),
        )
        default: RequestQueue = RequestQueue(
            "default", int(cfg["defaultThreadPoolQueueCapacity"]), int(cfg["defaultThreadPoolNums"])
        )
        return FlowDispatcher(FlowControl([(client, [RequestCode.GET_ROUTEINFO_BY_TOPIC])], default))

    async def _scan_loop(self) -> None:
        interval = max(int(self.config["scanNotActiveBrokerInterval"]), 1)
        await asyncio.sleep(min(SCAN_INITIAL_DELAY_MS, interval) / 1000)
        while True:
            self.scan_not_active_broker()
            await asyncio.sleep(max(int(self.config["scanNotActiveBrokerInterval"]), 1) / 1000)

    def scan_not_active_broker(self) -> None:
        """Expire silent brokers and close their connections (Java RouteInfoManager#scanNotActiveBroker)."""
        try:
            for channel in self.route_info_manager.scan_not_active_broker():
                if channel is not None:
                    try:
                        channel.close()
                    except Exception:  # a channel already gone is fine
                        log.debug("closing expired broker channel failed", exc_info=True)
        except Exception:
            log.exception("scanNotActiveBroker exception")

    async def shutdown(self) -> None:
        if self._scan_task is not None:
            self._scan_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._scan_task
            self._scan_task = None
        if self.server is not None:
            await self.server.close()
            self.server = None
        self.kv_config_manager.persist()


def auth_of(config: NamesrvConfig) -> ServerAuth:
    """Opt-in, stricter than Java (whose name server authenticates nothing): the broker's auth
    keys in the name server's file. Its users: initAuthenticationUser and
    innerClientAuthenticationCredentials (the key the brokers register with) as super users, and
    with migrateAuthFromV1Enabled the plain_acl.yml accounts of rocketmqHome, kept next to
    kvConfigPath (docs/security.md)."""
    return ServerAuth.build(
        config.file_properties,
        cluster_name="",
        auth_config_path=os.path.dirname(os.path.abspath(str(config["kvConfigPath"]))),
        rocketmq_home=str(config["rocketmqHome"]),
    )
