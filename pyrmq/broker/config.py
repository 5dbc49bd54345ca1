"""Broker configuration: one table of Java keys and defaults, read from ``broker.conf``.

Java: ``common/BrokerConfig``, ``remoting/netty/NettyServerConfig`` and
``store/config/MessageStoreConfig`` (the store keys are handed to
``pyrmq.store.store_config.MessageStoreConfig.from_properties``), filled by
``MixAll#properties2Object`` from the ``-c`` file like ``BrokerStartup``.

``BROKER_KEYS`` lists every broker/netty key of Java 5.5.0 with its Java default: those
pyrmq acts on (``_core_defaults``) and those it only accepts and reports
(``broker/java_config.py``, docs/broker-config-keys.md); store keys pyrmq acts on are
``MessageStoreConfig.KEYS``. Anything else is kept in ``file_properties`` (shown by
GET_BROKER_CONFIG) and reported by ``unknown_keys``; it is never fatal.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping
from typing import Any

from pyrmq.auth.config import AUTH_CONFIG_KEYS
from pyrmq.broker.java_config import MACHINE_DEFAULTS, Machine, accepted_only_defaults
from pyrmq.common.constants import RMQ_SYS_TRACE_TOPIC
from pyrmq.common.files import write_file_atomically
from pyrmq.common.properties import KeyTable, format_value, properties_text
from pyrmq.common.settings import KeyedSettings
from pyrmq.grpc.config import GRPC_CONFIG_KEYS  # the proxy's keys the built-in gRPC endpoint reads
from pyrmq.store.store_config import BrokerRole, MessageStoreConfig

log = logging.getLogger("pyrmq.broker")

__all__ = ["BROKER_KEYS", "BrokerConfig", "local_address"]


def local_address() -> str:
    """Java NetworkUtil#getLocalAddress, simplified: the first non-loopback IPv4, else 127.0.0.1."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))  # no packet is sent; picks the outgoing interface
            ip = s.getsockname()[0]
            if ip and not ip.startswith("0."):
                return ip
    except OSError:
        pass
    try:
        ip = socket.gethostbyname(socket.gethostname())
        if ip:
            return ip
    except OSError:
        pass
    return "127.0.0.1"


def _host_name() -> str:
    try:
        return socket.gethostname() or "DEFAULT_BROKER"
    except OSError:
        return "DEFAULT_BROKER"


def _defaults() -> dict[str, Any]:
    """Every key of Java's four config objects but the store's: the keys the broker acts on with
    their Java defaults (5.x), over the keys it only accepts and reports (broker/java_config.py)."""
    core = _core_defaults()
    return {**accepted_only_defaults([*core, *MessageStoreConfig.KEYS]), **core}


def _core_defaults() -> dict[str, Any]:
    """Java defaults (5.x) of the keys the broker core uses; BrokerConfig then NettyServerConfig."""
    return {
        # BrokerConfig
        "rocketmqHome": os.environ.get("ROCKETMQ_HOME", ""),
        # where UPDATE_BROKER_CONFIG persists every setting: BrokerStartup sets it to the -c file;
        # without one Java uses ~/store/config/broker.properties, pyrmq <storePathRootDir>/config/
        "brokerConfigPath": "",
        "configBlackList": "configBlackList;brokerConfigPath",
        "namesrvAddr": os.environ.get("NAMESRV_ADDR", ""),
        "brokerIP1": "",  # filled with local_address() when empty
        "brokerIP2": "",
        "brokerName": _host_name(),
        "brokerClusterName": "DefaultCluster",
        "brokerId": 0,
        "brokerPermission": 6,
        "defaultTopicQueueNums": 8,
        "autoCreateTopicEnable": True,
        "clusterTopicEnable": True,
        "brokerTopicEnable": True,
        "autoCreateSubscriptionGroup": True,
        "messageStorePlugIn": "",
        "msgTraceTopicName": RMQ_SYS_TRACE_TOPIC,
        "traceTopicEnable": False,
        "traceOn": True,
        "regionId": "DefaultRegion",
        "registerBrokerTimeoutMills": 24000,
        "registerNameServerPeriod": 30000,
        "forceRegister": True,
        "brokerNotActiveTimeoutMillis": 10000,
        # slave acting master (pyrmq/broker/acting_master.py, docs/ha.md), Java 5.x defaults
        "enableSlaveActingMaster": False,
        "enableRemoteEscape": False,
        "skipPreOnline": False,
        "compatibleWithOldNameSrv": True,
        "brokerHeartbeatInterval": 1000,
        "sendHeartbeatTimeoutMillis": 1000,
        "syncBrokerMemberGroupPeriod": 1000,
        "flushConsumerOffsetInterval": 5000,
        "flushConsumerOffsetHistoryInterval": 60000,
        "rejectTransactionMessage": False,
        "fetchNamesrvAddrByAddressServer": False,
        "longPollingEnable": True,
        "shortPollingTimeMills": 1000,
        "notifyConsumerIdsChangedEnable": True,
        "transferMsgByHeap": True,
        "startAcceptSendRequestTimeStamp": 0,
        "enablePropertyFilter": False,
        # SQL92 filters (ConsumerFilterManager) and transactions (TransactionalMessageCheckService), 5.x values
        "filterSupportRetry": False,
        "enableCalcFilterBitMap": False,
        "expectConsumerNumUseFilter": 32,
        "filterDataCleanTimeSpan": 86400000,
        "transactionTimeOut": 6000,
        "transactionCheckMax": 15,
        "transactionCheckInterval": 30000,
        "transactionOpMsgMaxSize": 4096,
        "transactionOpBatchInterval": 3000,
        "litePullMessageEnable": True,
        "channelExpiredTimeout": 120000,
        "subscriptionExpiredTimeout": 600000,
        "consumerOffsetUpdateVersionStep": 500,
        "enableDetailStat": True,
        "enableLmqStats": False,  # with enableLmq: count each %LMQ% queue and group apart (docs/lmq.md)
        "useServerSideResetOffset": True,
        "enableSplitRegistration": False,
        "maxErrorRateOfBloomFilter": 20,
        "compressedRegister": False,
        "defaultQueryMaxNum": 32,
        "isolateLogEnable": False,
        "enableControllerMode": False,
        # controller mode (pyrmq/broker/replicas_manager.py), Java BrokerConfig defaults
        "controllerAddr": "",
        "fetchControllerAddrByDnsLookup": False,
        "syncBrokerMetadataPeriod": 5000,
        "checkSyncStateSetPeriod": 5000,
        "syncControllerMetadataPeriod": 10000,
        "controllerHeartBeatTimeoutMills": 10000,
        "brokerElectionPriority": 2147483647,  # brokerHeartbeatInterval: with the acting-master keys
        "reviveQueueNum": 8,
        "timerWheelEnable": True,
        "timerPrecisionMs": 1000,  # MessageStoreConfig (5.x timer)
        "timerMaxDelaySec": 259200,
        "flushDelayOffsetInterval": 10000,  # MessageStoreConfig: delayOffset.json persist period
        "storeReplyMessageEnable": True,
        "slaveReadEnable": False,  # a slave serves pulls only with it (Java PullMessageProcessor#rejectRequest)
        "enableMixedMessageType": False,  # a topic's +message.type=MIXED is refused without it
        "useTLS": False,  # NettyClientConfig; reported only, mqadmin exportConfigs reads it
        # flow control (pyrmq/broker/flow_control.py, docs/reliability.md): Java's executor queues
        "brokerFastFailureEnable": True,
        "sendThreadPoolQueueCapacity": 10000,
        "pullThreadPoolQueueCapacity": 100000,
        "litePullThreadPoolQueueCapacity": 100000,
        "ackThreadPoolQueueCapacity": 100000,
        "replyThreadPoolQueueCapacity": 10000,
        "queryThreadPoolQueueCapacity": 20000,
        "heartbeatThreadPoolQueueCapacity": 50000,
        "clientManagerThreadPoolQueueCapacity": 1000000,
        "consumerManagerThreadPoolQueueCapacity": 1000000,
        "loadBalanceThreadPoolQueueCapacity": 100000,
        "endTransactionPoolQueueCapacity": 100000,
        "adminBrokerThreadPoolQueueCapacity": 10000,
        "waitTimeMillsInSendQueue": 200,
        "waitTimeMillsInPullQueue": 5000,
        "waitTimeMillsInLitePullQueue": 5000,
        "waitTimeMillsInAckQueue": 3000,
        "waitTimeMillsInHeartbeatQueue": 31000,
        "waitTimeMillsInTransactionQueue": 3000,
        "waitTimeMillsInAdminBrokerQueue": 5000,
        "ackMessageThreadPoolNums": 16,
        "clientManageThreadPoolNums": 32,
        "consumerManageThreadPoolNums": 32,
        "loadBalanceProcessorThreadPoolNums": 32,
        "adminBrokerThreadPoolNums": 16,
        **{k: MACHINE_DEFAULTS[k](Machine.current()) for k in _MACHINE_POOLS},
        "metricsExporterType": "DISABLE",  # pyrmq/broker/metrics.py: PROM serves Java's metric names
        "metricsPromExporterHost": "",  # brokerIP1 when empty
        "metricsPromExporterPort": 5557,
        "metricsLabel": "",  # extra labels on every series, k1:v1,k2:v2
        "metricsInDelta": False,  # adds aggregation=delta (Java's label; values stay cumulative)
        "enableStatsMetrics": True,
        "enableRequestMetrics": True,
        "enableConnectionMetrics": True,
        "enableLagAndDlqMetrics": True,
        "enableRemotingMetrics": True,
        "enableMessageStoreMetrics": True,
        "enableTransactionMetrics": True,
        "enablePopMetrics": True,
        "retrieveMessageFromPopRetryTopicV1": True,  # POP lag: a V1 retry topic when V2 has none
        "enableScheduleMessageStats": True,  # MessageStoreConfig: delayed deliveries counted in the metrics
        # NettyServerConfig
        "bindAddress": "0.0.0.0",
        "listenPort": 10911,  # BrokerStartup sets 10911 before reading the file
        "serverChannelMaxIdleTimeSeconds": 120,
        "writeBufferHighWaterMark": 0,  # 0: Netty's default water marks (64 KiB / 32 KiB)
        "writeBufferLowWaterMark": 0,
    }


#: thread counts Java computes from the processor count (java_config.MACHINE_DEFAULTS)
_MACHINE_POOLS = (
    "sendMessageThreadPoolNums",
    "pullMessageThreadPoolNums",
    "litePullMessageThreadPoolNums",
    "processReplyMessageThreadPoolNums",
    "queryMessageThreadPoolNums",
    "heartbeatThreadPoolNums",
    "endTransactionThreadPoolNums",
)


#: always refused by UPDATE_BROKER_CONFIG, whatever configBlackList says
CONFIG_BLACK_LIST_BUILTIN = ("brokerConfigPath", "rocketmqHome", "configBlackList")

#: every broker/netty key with its value type; ``listenHost`` is accepted for bindAddress
BROKER_KEYS = KeyTable.of(_defaults(), {"listenHost": "bindAddress"})


class BrokerConfig(KeyedSettings):
    """Typed broker settings keyed by Java names, plus the store's MessageStoreConfig."""

    KEYS = BROKER_KEYS

    def __init__(self, values: Mapping[str, Any] | None = None, store: MessageStoreConfig | None = None) -> None:
        # BrokerStartup sets haListenPort to 0 before reading the file: unset, it is listenPort + 1
        self.store = store or MessageStoreConfig(ha_listen_port=0)
        #: the -c file (Java BrokerPathConfigHelper, not the brokerConfigPath key, which Java
        #: leaves unset and so does not report)
        self.config_file = ""
        super().__init__(values)

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        return _defaults()

    def apply(self, props: Mapping[str, str]) -> list[str]:
        """Like Java, the whole file fills both BrokerConfig and MessageStoreConfig
        (``defaultQueryMaxNum`` is in both); the store's is changed in place, the
        running store shares it. Returns the keys neither knows."""
        unknown = super().apply(props)
        self.store.apply_properties({k: v for k, v in props.items() if k in MessageStoreConfig.KEYS})
        return [k for k in unknown if k not in MessageStoreConfig.KEYS]

    def is_known(self, key: str) -> bool:
        return (
            key in BROKER_KEYS or key in MessageStoreConfig.KEYS or key in AUTH_CONFIG_KEYS or key in GRPC_CONFIG_KEYS
        )

    # ----------------------------------------------------------- derived values

    @property
    def broker_role(self) -> BrokerRole:
        return self.store.broker_role

    @property
    def broker_ip(self) -> str:
        return str(self.values["brokerIP1"]) or local_address()

    @property
    def broker_addr(self) -> str:
        """``brokerIP1:listenPort``: the address clients connect to and msgIds encode."""
        return f"{self.broker_ip}:{self.values['listenPort']}"

    @property
    def ha_server_addr(self) -> str:
        """``brokerIP2:haListenPort``, where slaves connect (Java BrokerController#getHAServerAddr)."""
        ip2 = self.values["brokerIP2"] or self.broker_ip
        return f"{ip2}:{self.store.ha_listen_port}"

    def resolve_ha_listen_port(self) -> int:
        """Java BrokerStartup: haListenPort <= 0 becomes listenPort + 1 (0 stays 0 when listenPort
        is 0: the OS picks)."""
        if self.store.ha_listen_port <= 0:
            listen = int(self.values["listenPort"])
            self.store.ha_listen_port = listen + 1 if listen > 0 else 0
        return self.store.ha_listen_port

    def check_role(self) -> str | None:
        """Java BrokerStartup outside controller mode: a master's brokerId is forced to 0; a slave
        needs brokerId > 0 (the error text when not)."""
        if self.values["enableControllerMode"]:
            return None
        if self.is_master:
            self.values["brokerId"] = 0
            return None
        if int(self.values["brokerId"]) <= 0:
            return "Slave's brokerId must be > 0"
        return None

    def check_supported(self) -> str | None:
        """A setting pyrmq's broker cannot honour, refused at start rather than run without it: a
        DLedger commit log (docs/dledger.md) without its group, peers or self id, or with controller
        mode (Java's BrokerStartup refuses that pair with this text and exits)."""
        from pyrmq.broker.dledger_role import dledger_config  # here: it loads the store modules

        props = self.all_properties()
        if self.values["enableControllerMode"] and str(props.get("enableDLegerCommitLog")).lower() == "true":
            return "The config enableControllerMode and enableDLegerCommitLog cannot both be true."
        try:
            dledger_config(props, self.store)
        except ValueError as e:
            return str(e)
        return None

    @property
    def namesrv_addrs(self) -> list[str]:
        return [a.strip() for a in str(self.values["namesrvAddr"] or "").split(";") if a.strip()]

    @property
    def is_master(self) -> bool:
        return self.broker_role is not BrokerRole.SLAVE

    def all_properties(self) -> dict[str, str]:
        """GET_BROKER_CONFIG text source: file properties overlaid with current values."""
        out = super().all_properties()
        for key in AUTH_CONFIG_KEYS.intersection(out):
            del out[key]  # AuthConfig's, not reported by Java (and they carry passwords)
        if not out.get("brokerConfigPath"):
            out.pop("brokerConfigPath", None)  # null in Java unless set, and a null field is not listed
        for key, value in self.store.properties().items():
            if value is not None:
                out[key] = format_value(value)
        out["brokerIP1"] = self.broker_ip
        return out

    def properties_text(self) -> str:
        return properties_text(self.all_properties())

    @property
    def config_path(self) -> str:
        """The file UPDATE_BROKER_CONFIG rewrites (Java Configuration#persist)."""
        return (
            str(self.values["brokerConfigPath"])
            or self.config_file
            or os.path.join(self.store.store_path_root_dir, "config", "broker.properties")
        )

    def black_list(self) -> set[str]:
        """Keys UPDATE_BROKER_CONFIG refuses (Java AdminBrokerProcessor#validateBlackListConfigExist)."""
        keys = set(CONFIG_BLACK_LIST_BUILTIN)
        keys.update(AUTH_CONFIG_KEYS)  # Java's update cannot reach AuthConfig either; pyrmq says so
        keys.update(k.strip() for k in str(self.values["configBlackList"]).split(";") if k.strip())
        return keys

    def persist(self) -> None:
        """Write every setting to ``config_path`` (errors are logged, as Java does)."""
        path = self.config_path
        try:
            kept = {k: v for k, v in self.file_properties.items() if k in AUTH_CONFIG_KEYS}  # not dropped here
            write_file_atomically(path, properties_text({**self.all_properties(), **kept}))
        except OSError as e:
            log.error("persist broker config to %s failed: %s", path, e)
