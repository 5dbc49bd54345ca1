"""Broker configuration: one table of Java keys and defaults, read from ``broker.conf``.

Java: ``common/BrokerConfig``, ``remoting/netty/NettyServerConfig`` and
``store/config/MessageStoreConfig`` (the store keys are handed to
``pyrmq.store.store_config.MessageStoreConfig.from_properties``), filled by
``MixAll#properties2Object`` from the ``-c`` file like ``BrokerStartup``.

``BROKER_KEYS`` lists every broker/netty key pyrmq reads with its Java default;
store keys are recognised through ``MessageStoreConfig``. Anything else is kept
in ``file_properties`` (shown by GET_BROKER_CONFIG) and reported by
``unknown_keys``; it is never fatal.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
from dataclasses import dataclass, field
from typing import Any

from pyrmq.namesrv.config import format_value, load_properties, properties_text
from pyrmq.store.store_config import FlushDiskType, MessageStoreConfig

log = logging.getLogger("pyrmq.broker")

__all__ = ["BROKER_KEYS", "STORE_KEYS", "BrokerConfig", "load_properties", "local_address"]


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
    """Java defaults (5.x) of the keys the broker core uses; BrokerConfig then NettyServerConfig."""
    return {
        # BrokerConfig
        "rocketmqHome": os.environ.get("ROCKETMQ_HOME", ""),
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
        "msgTraceTopicName": "RMQ_SYS_TRACE_TOPIC",
        "traceTopicEnable": False,
        "traceOn": True,
        "regionId": "DefaultRegion",
        "registerBrokerTimeoutMills": 24000,
        "registerNameServerPeriod": 30000,
        "forceRegister": True,
        "brokerNotActiveTimeoutMillis": 10000,
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
        "useServerSideResetOffset": True,
        "enableSplitRegistration": False,
        "maxErrorRateOfBloomFilter": 20,
        "compressedRegister": False,
        "defaultQueryMaxNum": 32,
        "isolateLogEnable": False,
        "enableControllerMode": False,
        "reviveQueueNum": 8,
        "timerWheelEnable": True,
        "timerPrecisionMs": 1000,  # MessageStoreConfig (5.x timer)
        "timerMaxDelaySec": 259200,
        "flushDelayOffsetInterval": 10000,  # MessageStoreConfig: delayOffset.json persist period
        "storeReplyMessageEnable": True,
        "retryQueueNums": 1,  # pyrmq: Java hard-codes PermName/retry queue 1 (MixAll)
        "consumeBroadcastEnable": True,
        "slaveReadEnable": False,  # reported only (no slaves); mqadmin exportConfigs reads it
        "useTLS": False,  # NettyClientConfig; reported only, mqadmin exportConfigs reads it
        # NettyServerConfig
        "bindAddress": "0.0.0.0",
        "listenPort": 10911,  # BrokerStartup sets 10911 before reading the file
        "serverChannelMaxIdleTimeSeconds": 120,
        # pyrmq: HA port is not served; kept for the haServerAddr of registrations
        "haListenPort": 10912,
    }


#: key -> Python type of its value
BROKER_KEYS: dict[str, type] = {k: type(v) for k, v in _defaults().items()}

#: store keys (camelCase) understood by MessageStoreConfig, plus brokerRole
STORE_KEYS: frozenset[str] = frozenset(
    ["brokerRole"]
    + [
        (lambda n: n.split("_")[0] + "".join(p[:1].upper() + p[1:] for p in n.split("_")[1:]))(f.name)
        for f in dataclasses.fields(MessageStoreConfig)
    ]
)

#: accepted aliases
ALIASES = {"listenHost": "bindAddress"}


@dataclass
class BrokerConfig:
    """Typed broker settings keyed by Java names, plus the store's MessageStoreConfig."""

    values: dict[str, Any] = field(default_factory=_defaults)
    file_properties: dict[str, str] = field(default_factory=dict)
    store: MessageStoreConfig = field(default_factory=MessageStoreConfig)
    broker_role: str = "ASYNC_MASTER"

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if key not in BROKER_KEYS:
            raise KeyError(key)
        self.values[key] = value

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> BrokerConfig:
        cfg = cls()
        cfg.apply(props)
        cfg.file_properties = dict(props)
        return cfg

    @classmethod
    def from_file(cls, path: str) -> BrokerConfig:
        with open(path, encoding="utf-8") as f:
            return cls.from_properties(load_properties(f.read()))

    def apply(self, props: dict[str, str]) -> list[str]:
        """Set known keys (broker, netty and store); returns the keys nobody knows."""
        unknown = []
        for raw_key, raw in props.items():
            key = ALIASES.get(raw_key, raw_key)
            if key in BROKER_KEYS:
                tp = BROKER_KEYS[key]
                try:
                    if tp is bool:
                        self.values[key] = raw.strip().lower() == "true"
                    elif tp is int:
                        self.values[key] = int(raw.strip())
                    else:
                        self.values[key] = raw.strip()
                except ValueError:
                    log.warning("config: %s=%r is not an integer; keeping %s", key, raw, self.values[key])
            elif key == "brokerRole":
                self.broker_role = raw.strip().upper()
            elif key not in STORE_KEYS:
                unknown.append(raw_key)
        store_props = {k: v for k, v in props.items() if k in STORE_KEYS}
        if store_props:
            self.store.apply_properties(store_props)  # in place: the running store shares it
        return unknown

    def unknown_keys(self) -> list[str]:
        return sorted(k for k in self.file_properties if ALIASES.get(k, k) not in BROKER_KEYS and k not in STORE_KEYS)

    # ----------------------------------------------------------- derived values

    @property
    def broker_ip(self) -> str:
        return self.values["brokerIP1"] or local_address()

    @property
    def broker_addr(self) -> str:
        """``brokerIP1:listenPort``: the address clients connect to and msgIds encode."""
        return f"{self.broker_ip}:{self.values['listenPort']}"

    @property
    def ha_server_addr(self) -> str:
        ip2 = self.values["brokerIP2"] or self.broker_ip
        return f"{ip2}:{self.values['haListenPort']}"

    @property
    def namesrv_addrs(self) -> list[str]:
        return [a.strip() for a in str(self.values["namesrvAddr"] or "").split(";") if a.strip()]

    @property
    def is_master(self) -> bool:
        return self.broker_role != "SLAVE"

    def all_properties(self) -> dict[str, str]:
        """GET_BROKER_CONFIG text source: file properties overlaid with current values."""
        out = dict(self.file_properties)
        for k, v in self.values.items():
            out[k] = format_value(v)
        for f in dataclasses.fields(MessageStoreConfig):
            name = f.name.split("_")[0] + "".join(p[:1].upper() + p[1:] for p in f.name.split("_")[1:])
            v = getattr(self.store, f.name)
            if v is None:
                continue
            out[name] = v.value if isinstance(v, FlushDiskType) else format_value(v)
        out["brokerRole"] = self.broker_role
        out["brokerIP1"] = self.broker_ip
        return out

    def properties_text(self) -> str:
        return properties_text(self.all_properties())
