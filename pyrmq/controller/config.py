"""Controller configuration: Java's keys, defaults and properties file format.

Java: ``common/ControllerConfig`` (+ ``JraftConfig``, read from the same file),
``remoting/netty/NettyServerConfig`` and ``ControllerManager``'s
``Configuration`` (what GET/UPDATE_CONTROLLER_CONFIG show and change).

The port: Java's controller serves its requests on the DLedger server, which
binds the port of this node's own entry in ``controllerDLegerPeers``
(``n0-127.0.0.1:9878;n1-...`` with ``controllerDLegerSelfId=n0``), whatever
``listenPort`` says (ControllerStartup sets 19876 before reading the file, and
the DLedger RPC service then overwrites it). ``serve_address()`` does the same.
Java refuses to start without peers or self id; so does ``check()``.

Java quirk kept: the field ``isProcessReadEvent`` is set through
``setProcessReadEvent``, so a file says ``processReadEvent`` while
GET_CONTROLLER_CONFIG shows ``isProcessReadEvent``; both names are read here.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from pyrmq.common.files import write_file_atomically
from pyrmq.common.properties import KeyTable, properties_text
from pyrmq.common.settings import KeyedSettings
from pyrmq.dledger.config import parse_peers

log = logging.getLogger("pyrmq.controller")

DLEDGER_CONTROLLER = "DLedger"
JRAFT_CONTROLLER = "jRaft"

#: Java ControllerStartup: nettyServerConfig.setListenPort(19876) before the file is read
DEFAULT_LISTEN_PORT = 19876


def _home(*parts: str) -> str:
    return os.path.join(os.path.expanduser("~"), *parts)


def _controller_defaults() -> dict[str, tuple[type, Any]]:
    """ControllerConfig's fields in declaration order, (type, Java default); None is Java null."""
    return {
        # Java refuses to start without ROCKETMQ_HOME; pyrmq needs no files there and
        # falls back to the user's home like the NameServer
        "rocketmqHome": (str, os.environ.get("ROCKETMQ_HOME") or os.path.expanduser("~")),
        "configStorePath": (str, _home("controller", "controller.properties")),
        "controllerType": (str, DLEDGER_CONTROLLER),
        "scanNotActiveBrokerInterval": (int, 5000),
        "controllerThreadPoolNums": (int, 16),
        "controllerRequestThreadPoolQueueCapacity": (int, 50000),
        "controllerDLegerGroup": (str, None),
        "controllerDLegerPeers": (str, None),
        "controllerDLegerSelfId": (str, None),
        "mappedFileSize": (int, 1024 * 1024 * 1024),
        "controllerStorePath": (str, ""),
        "electMasterMaxRetryCount": (int, 3),
        "enableElectUncleanMaster": (bool, False),
        "isProcessReadEvent": (bool, False),
        "notifyBrokerRoleChanged": (bool, True),
        "scanInactiveMasterInterval": (int, 5000),
        "metricsExporterType": (str, "DISABLE"),
        "metricsGrpcExporterTarget": (str, ""),
        "metricsGrpcExporterHeader": (str, ""),
        "metricGrpcExporterTimeOutInMills": (int, 3000),
        "metricGrpcExporterIntervalInMills": (int, 60_000),
        "metricLoggingExporterIntervalInMills": (int, 10_000),
        "metricsPromExporterPort": (int, 5557),
        "metricsPromExporterHost": (str, ""),
        "metricsLabel": (str, ""),
        "metricsInDelta": (bool, False),
        "configBlackList": (str, "configBlackList;configStorePath"),
    }


def _jraft_defaults() -> dict[str, tuple[type, Any]]:
    """JraftConfig: read from the file like Java, shown only as the ``jraftConfig`` object."""
    return {
        "jRaftElectionTimeoutMs": (int, 1000),
        "jRaftScanWaitTimeoutMs": (int, 1000),
        "jRaftSnapshotIntervalSecs": (int, 3600),
        "jRaftGroupId": (str, "jRaft-Controller"),
        "jRaftServerId": (str, "localhost:9880"),
        "jRaftInitConf": (str, "localhost:9880,localhost:9881,localhost:9882"),
        "jRaftControllerRPCAddr": (str, "localhost:9770,localhost:9771,localhost:9772"),
    }


def _netty_defaults() -> dict[str, tuple[type, Any]]:
    return {
        "bindAddress": (str, "0.0.0.0"),
        "listenPort": (int, DEFAULT_LISTEN_PORT),
        "serverWorkerThreads": (int, 8),
        "serverCallbackExecutorThreads": (int, 0),
        "serverSelectorThreads": (int, 3),
        "serverOnewaySemaphoreValue": (int, 256),
        "serverAsyncSemaphoreValue": (int, 64),
        "serverChannelMaxIdleTimeSeconds": (int, 120),
        "serverSocketSndBufSize": (int, 0),
        "serverSocketRcvBufSize": (int, 0),
        "writeBufferHighWaterMark": (int, 0),
        "writeBufferLowWaterMark": (int, 0),
        "serverSocketBacklog": (int, 1024),
        "serverNettyWorkerGroupEnable": (bool, True),
        "serverPooledByteBufAllocatorEnable": (bool, True),
        "enableShutdownGracefully": (bool, False),
        "shutdownWaitTimeSeconds": (int, 30),
        "useEpollNativeSelector": (bool, False),
    }


def _all() -> dict[str, tuple[type, Any]]:
    return {**_controller_defaults(), **_jraft_defaults(), **_netty_defaults()}


CONTROLLER_KEYS = KeyTable(
    {k: tp for k, (tp, _) in _all().items()},
    {"processReadEvent": "isProcessReadEvent", "listenHost": "bindAddress"},
)

#: keys GET_CONTROLLER_CONFIG does not list one by one (Java shows the JraftConfig object instead)
JRAFT_KEYS = frozenset(_jraft_defaults())

#: always refused by UPDATE_CONTROLLER_CONFIG (ControllerRequestProcessor#initConfigBlackList)
FIXED_BLACK_LIST = ("configBlackList", "configStorePath", "rocketmqHome")

#: what Object#toString of the JraftConfig field looks like in GET_CONTROLLER_CONFIG; the
#: identity hash is per JVM run in Java, a fixed number here
JRAFT_CONFIG_SHOWN = "org.apache.rocketmq.common.JraftConfig@1b2c3d4e"


class ControllerConfigError(ValueError):
    """The config cannot run a controller (Java throws IllegalArgumentException at initialize)."""


class ControllerConfig(KeyedSettings):
    """Typed view over the controller's settings, keyed by Java names."""

    KEYS = CONTROLLER_KEYS

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        return {k: v for k, (_, v) in _all().items()}

    # ---------------------------------------------------------------- derived values

    def store_path(self) -> str:
        """``getControllerStorePath``: empty means ``~/<controllerType>Controller`` (and sticks)."""
        if not self.values["controllerStorePath"]:
            self.values["controllerStorePath"] = _home(f"{self.values['controllerType']}Controller")
        return str(self.values["controllerStorePath"])

    def peers(self) -> dict[str, str]:
        """``controllerDLegerPeers`` as {id: "host:port"}, in file order (DLedger's peer map)."""
        out: dict[str, str] = {}
        for item in (self.values["controllerDLegerPeers"] or "").split(";"):
            item = item.strip()
            if not item:
                continue
            peer_id, sep, addr = item.partition("-")
            if not sep or not addr:
                raise ControllerConfigError(f"controllerDLegerPeers: bad peer {item!r}, expected <id>-<host>:<port>")
            out[peer_id] = addr
        return out

    def self_address(self) -> str:
        """This node's peer address, "host:port"."""
        self_id = self.values["controllerDLegerSelfId"]
        peers = self.peers()
        if self_id not in peers:
            raise ControllerConfigError(f"controllerDLegerSelfId {self_id} is not in controllerDLegerPeers")
        return peers[self_id]

    def check(self) -> None:
        """ControllerManager#initialize's checks, plus what pyrmq cannot do yet."""
        if self.values["controllerType"] != DLEDGER_CONTROLLER:
            raise ControllerConfigError(
                f"controllerType {self.values['controllerType']} is not supported by pyrmq (only {DLEDGER_CONTROLLER})"
            )
        if not self.values["controllerDLegerPeers"]:
            raise ControllerConfigError("Attribute value controllerDLegerPeers of ControllerConfig is null or empty")
        if not self.values["controllerDLegerSelfId"]:
            raise ControllerConfigError("Attribute value controllerDLegerSelfId of ControllerConfig is null or empty")
        port = self.self_address().rpartition(":")[2]
        if not port.isdigit():
            raise ControllerConfigError(f"controllerDLegerPeers: bad port in {self.self_address()!r}")
        try:
            parse_peers(str(self.values["controllerDLegerPeers"]))  # the DLedger group reads them so
        except ValueError as e:
            raise ControllerConfigError(f"controllerDLegerPeers: {e}") from None

    def serve_port(self) -> int:
        """The port requests are served on: this node's peer port (Java's DLedger RPC server)."""
        return int(self.self_address().rpartition(":")[2])

    # ---------------------------------------------------------------- Configuration

    def black_list(self) -> set[str]:
        keys = set(FIXED_BLACK_LIST)
        keys.update(str(self.values["configBlackList"]).split(";"))
        return keys

    def all_properties(self) -> dict[str, str]:
        """``Configuration#getAllConfigsInternal`` of ControllerManager: file + ControllerConfig + NettyServerConfig."""
        out = super().all_properties()
        for k in JRAFT_KEYS:
            if k not in self.file_properties:
                out.pop(k, None)
            else:
                out[k] = self.file_properties[k]
        out["jraftConfig"] = JRAFT_CONFIG_SHOWN
        return out

    def update(self, props: dict[str, str]) -> None:
        """``Configuration#update``: only keys that already exist change, then persist."""
        existing = self.all_properties()
        for k, v in props.items():
            if k in existing:
                self.file_properties[k] = v
        self.apply({k: v for k, v in props.items() if k in CONTROLLER_KEYS})

    def persist(self) -> None:
        path = self.values["configStorePath"]
        try:
            write_file_atomically(path, properties_text(self.all_properties()))
        except OSError as e:
            log.error("persist controller config to %s failed: %s", path, e)
