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
and shows it in GET_NAMESRV_CONFIG) and reported by ``unknown_keys``.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field
from typing import Any

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


#: key -> Python type of its value (from the defaults)
NAMESRV_KEYS: dict[str, type] = {k: type(v) for k, v in _defaults().items()}

#: keys that only configure our server process and are not Java's
PYRMQ_KEYS = frozenset({"brokerChannelExpiredTime"})

#: aliases accepted in a properties file
ALIASES = {"listenHost": "bindAddress"}

#: always refused by UPDATE_NAMESRV_CONFIG (DefaultRequestProcessor#initConfigBlackList)
FIXED_BLACK_LIST = ("configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome")


class ConfigError(ValueError):
    """A value that cannot be read as its key's type."""


def parse_value(key: str, raw: str) -> Any:
    """``MixAll#properties2Object``: ints/longs parsed strictly, booleans true iff 'true', strings trimmed."""
    tp = NAMESRV_KEYS[key]
    if tp is bool:
        return raw.strip().lower() == "true"
    if tp is int:
        try:
            return int(raw.strip())
        except ValueError:
            raise ConfigError(f"{key}={raw!r} is not an integer") from None
    return raw.strip()


def format_value(value: Any) -> str:
    """Java ``String.valueOf`` of a config field."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def load_properties(text: str) -> dict[str, str]:
    """Read ``java.util.Properties`` text: ``key=value``/``key:value``/``key value``,
    ``#``/``!`` comments, backslash line continuation and escapes."""
    out: dict[str, str] = {}
    lines = re.split(r"\r\n|\r|\n", text)  # only these end a line in Properties#load
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        while _ends_with_odd_backslashes(line) and i <= len(lines):
            line = line[:-1] + (lines[i].lstrip(" \t\f") if i < len(lines) else "")
            i += 1
        key, value = _split_key_value(line)
        out[_unescape(key)] = _unescape(value)
    return out


def _ends_with_odd_backslashes(s: str) -> bool:
    n = len(s) - len(s.rstrip("\\"))
    return n % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    j = 0
    while j < len(line):
        c = line[j]
        if c == "\\":
            j += 2
            continue
        if c in "=: \t\f":
            break
        j += 1
    key = line[:j]
    rest = line[j:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out = []
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\" or i + 1 >= len(s):
            out.append(c)
            i += 1
            continue
        n = s[i + 1]
        if n == "u" and i + 6 <= len(s):
            try:
                out.append(chr(int(s[i + 2 : i + 6], 16)))
                i += 6
                continue
            except ValueError:
                pass
        out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(n, n))
        i += 2
    return "".join(out)


def properties_text(props: dict[str, str]) -> str:
    """``MixAll#properties2String(props, true)``: sorted ``key=value`` lines."""
    return "".join(f"{k}={v}\n" for k, v in sorted(props.items()))


@dataclass
class NamesrvConfig:
    """Typed view over the NameServer's settings, keyed by Java names.

    ``values`` holds every known key; ``file_properties`` is what the config file
    (and later UPDATE_NAMESRV_CONFIG) said, unknown keys included.
    """

    values: dict[str, Any] = field(default_factory=_defaults)
    file_properties: dict[str, str] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if key not in NAMESRV_KEYS:
            raise KeyError(key)
        self.values[key] = value

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> NamesrvConfig:
        cfg = cls()
        cfg.apply(props)
        cfg.file_properties = dict(props)
        return cfg

    def apply(self, props: dict[str, str]) -> list[str]:
        """Set every known key present in ``props``; returns the keys it ignored.

        A value that does not parse keeps the old value and is logged (Java
        swallows the NumberFormatException the same way).
        """
        ignored = []
        for raw_key, raw in props.items():
            key = ALIASES.get(raw_key, raw_key)
            if key not in NAMESRV_KEYS:
                ignored.append(raw_key)
                continue
            try:
                self.values[key] = parse_value(key, raw)
            except ConfigError as e:
                log.warning("config: %s; keeping %s=%s", e, key, format_value(self.values[key]))
        return ignored

    def unknown_keys(self) -> list[str]:
        return sorted(k for k in self.file_properties if ALIASES.get(k, k) not in NAMESRV_KEYS)

    def black_list(self) -> set[str]:
        keys = set(FIXED_BLACK_LIST)
        keys.update(k for k in str(self.values["configBlackList"]).split(";"))
        return keys

    def all_properties(self) -> dict[str, str]:
        """``Configuration#getAllConfigsInternal``: file properties overlaid with current values."""
        out = dict(self.file_properties)
        for k, v in self.values.items():
            if v is not None:
                out[k] = format_value(v)
        return out

    def update(self, props: dict[str, str]) -> None:
        """``Configuration#update``: only keys that already exist change, then persist."""
        existing = self.all_properties()
        for k, v in props.items():
            if k in existing:
                self.file_properties[k] = v
        self.apply({k: v for k, v in props.items() if k in NAMESRV_KEYS})

    def persist(self) -> None:
        """Write all settings to ``configStorePath`` like Java (errors are logged)."""
        path = self.values["configStorePath"]
        try:
            write_file_atomically(path, properties_text(self.all_properties()))
        except OSError as e:
            log.error("persist namesrv config to %s failed: %s", path, e)


def write_file_atomically(path: str, text: str) -> None:
    """``MixAll#string2File``: write ``path.tmp``, keep the old file as ``path.bak``, rename."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    if os.path.exists(path):
        try:
            with open(path, "rb") as src, open(path + ".bak", "wb") as dst:
                dst.write(src.read())
        except OSError:
            pass
    os.replace(tmp, path)
