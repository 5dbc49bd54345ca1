"""NameServer configuration: Java's keys, defaults and properties file format.

Java: ``common/namesrv/NamesrvConfig``, ``remoting/netty/NettyServerConfig``,
``remoting/Configuration`` (GET/UPDATE_NAMESRV_CONFIG) and
``MixAll#properties2Object`` (how a properties file fills them).

One table (``NAMESRV_KEYS``) lists every key with its Java default; values are
kept as typed Python values in ``NamesrvConfig.values``. Keys pyrmq adds:

* ``brokerChannelExpiredTime`` (ms, default 120000): liveness timeout of a
  broker that does not send ``heartbeatTimeoutMillis`` (Java hard-codes
  ``RouteInfoManager.DEFAULT_BROKER_CHANNEL_EXPIRED_TIME``); tests shorten it.
* ``listenHost``: alias of Java's ``bindAddress``.

Unknown keys are kept (Java keeps the whole file in ``Configuration.allConfigs``
and shows it in GET_NAMESRV_CONFIG) and reported by ``unknown_keys``; reading
and the bad-value policy are ``pyrmq.common.properties``'.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from pyrmq.auth.config import AUTH_CONFIG_KEYS
from pyrmq.common.files import write_file_atomically
from pyrmq.common.properties import KeyTable, properties_text
from pyrmq.common.settings import KeyedSettings

log = logging.getLogger("pyrmq.namesrv")


def _home(*parts: str) -> str:
    return os.path.join(os.path.expanduser("~"), *parts)


def _defaults() -> dict[str, Any]:
    """Java defaults, NamesrvConfig first, then NettyServerConfig (its field order)."""
    return {
        # NamesrvConfig
        # Java refuses to start without ROCKETMQ_HOME; pyrmq needs no files there and
        # falls back to the user's home so the key is always listed
        "rocketmqHome": os.environ.get("ROCKETMQ_HOME") or os.path.expanduser("~"),
        "kvConfigPath": _home("namesrv", "kvConfig.json"),
        "configStorePath": _home("namesrv", "namesrv.properties"),
        "productEnvName": "center",
        "clusterTest": False,
        "orderMessageEnable": False,
        "returnOrderTopicConfigToBroker": True,
        "clientRequestThreadPoolNums": 8,
        "defaultThreadPoolNums": 16,
        "clientRequestThreadPoolQueueCapacity": 50000,
        "defaultThreadPoolQueueCapacity": 10000,
        "scanNotActiveBrokerInterval": 5000,
        "unRegisterBrokerQueueCapacity": 3000,
        "supportActingMaster": False,
        "enableAllTopicList": True,
        "enableTopicList": True,
        "notifyMinBrokerIdChanged": False,
        "enableControllerInNamesrv": False,
        "needWaitForService": False,
        "waitSecondsForService": 45,
        "deleteTopicWithBrokerRegistration": False,
        "configBlackList": "configBlackList;configStorePath;kvConfigPath",
        # pyrmq
        "brokerChannelExpiredTime": 120_000,
        # NettyServerConfig
        "bindAddress": "0.0.0.0",
        "listenPort": 9876,  # NamesrvStartup sets 9876 before reading the file
        "serverWorkerThreads": 8,
        "serverCallbackExecutorThreads": 0,
        "serverSelectorThreads": 3,
        "serverOnewaySemaphoreValue": 256,
        "serverAsyncSemaphoreValue": 64,
        "serverChannelMaxIdleTimeSeconds": 120,
        "serverSocketSndBufSize": 0,
        "serverSocketRcvBufSize": 0,
        "writeBufferHighWaterMark": 0,
        "writeBufferLowWaterMark": 0,
        "serverSocketBacklog": 1024,
        "serverNettyWorkerGroupEnable": True,
        "serverPooledByteBufAllocatorEnable": True,
        "enableShutdownGracefully": False,
        "shutdownWaitTimeSeconds": 30,
        "useEpollNativeSelector": False,
    }


#: every key with its value type (from the defaults); ``listenHost`` is accepted for bindAddress
NAMESRV_KEYS = KeyTable.of(_defaults(), {"listenHost": "bindAddress"})

#: keys that only configure our server process and are not Java's
PYRMQ_KEYS = frozenset({"brokerChannelExpiredTime"})

#: always refused by UPDATE_NAMESRV_CONFIG (DefaultRequestProcessor#initConfigBlackList)
FIXED_BLACK_LIST = ("configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome")


class NamesrvConfig(KeyedSettings):
    """Typed view over the NameServer's settings, keyed by Java names.

    ``values`` holds every known key; ``file_properties`` is what the config file
    (and later UPDATE_NAMESRV_CONFIG) said, unknown keys included.
    """

    KEYS = NAMESRV_KEYS

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        return _defaults()

    def is_known(self, key: str) -> bool:
        """With enableControllerInNamesrv the same file configures the controller (NamesrvStartup);
        the broker's auth keys turn on the name server's auth (NamesrvController's auth_of)."""
        if super().is_known(key) or key in AUTH_CONFIG_KEYS:
            return True
        if self.values["enableControllerInNamesrv"]:
            from pyrmq.controller.config import CONTROLLER_KEYS

            return key in CONTROLLER_KEYS
        return False

    def all_properties(self) -> dict[str, str]:
        """GET_NAMESRV_CONFIG's source, without the auth keys (they carry passwords)."""
        out = super().all_properties()
        for key in AUTH_CONFIG_KEYS.intersection(out):
            del out[key]
        return out

    def black_list(self) -> set[str]:
        keys = set(FIXED_BLACK_LIST)
        keys.update(AUTH_CONFIG_KEYS)  # UPDATE_NAMESRV_CONFIG cannot turn auth off
        keys.update(k for k in str(self.values["configBlackList"]).split(";"))
        return keys

    def update(self, props: dict[str, str]) -> None:
        """``Configuration#update``: only keys that already exist change, then persist."""
        existing = self.all_properties()
        for k, v in props.items():
            if k in existing:
                self.file_properties[k] = v
        self.apply({k: v for k, v in props.items() if k in NAMESRV_KEYS.types})

    def persist(self) -> None:
        """Write all settings to ``configStorePath`` like Java (errors are logged)."""
        path = self.values["configStorePath"]
        try:
            write_file_atomically(path, properties_text(self.all_properties()))
        except OSError as e:
            log.error("persist namesrv config to %s failed: %s", path, e)
