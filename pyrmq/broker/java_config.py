"""The Java broker's whole configuration surface, for keys pyrmq accepts but does not act on.

Java's GET_BROKER_CONFIG lists every field of BrokerConfig, NettyServerConfig, NettyClientConfig
and MessageStoreConfig (484 keys in 5.5.0); operators and the dashboard read that list, and
UPDATE_BROKER_CONFIG accepts any of them. pyrmq's own tables (broker/config.py, the store's
MessageStoreConfig) hold the keys it acts on; every other Java key is kept here with its Java
type and default, so it is reported, parsed with Java's policy and persisted like Java does,
without pretending to change behaviour (docs/broker-config-keys.md lists which is which).

The table itself is generated from the official jars (tools/gen_broker_config.py); defaults that
depend on the machine are formulas here, checked by the generator against Java on 1-32 processors.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pyrmq.broker.java_config_keys import JAVA_BROKER_CONFIG_KEYS

__all__ = ["MACHINE_DEFAULTS", "Machine", "accepted_only_defaults"]


@dataclass(frozen=True, slots=True)
class Machine:
    """What Java's defaults read from the running machine."""

    cpus: int
    home: str

    @classmethod
    def current(cls) -> Machine:
        # Java's Runtime#availableProcessors honours the process's CPU affinity
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        return cls(cpus=cpus, home=os.path.expanduser("~"))


def _send_pool(m: Machine) -> int:
    return min(m.cpus, 4)


#: Java defaults computed from the machine (BrokerConfig's thread pools from the processor count,
#: NettyClientConfig's callback executor, the store root under user.home)
MACHINE_DEFAULTS: dict[str, Callable[[Machine], Any]] = {
    "sendMessageThreadPoolNums": _send_pool,
    "putMessageFutureThreadPoolNums": _send_pool,
    "pullMessageThreadPoolNums": lambda m: 16 + 2 * m.cpus,
    "litePullMessageThreadPoolNums": lambda m: 16 + 2 * m.cpus,
    "processReplyMessageThreadPoolNums": lambda m: 16 + 2 * m.cpus,
    "queryMessageThreadPoolNums": lambda m: 8 + m.cpus,
    "heartbeatThreadPoolNums": lambda m: min(32, m.cpus),
    "endTransactionThreadPoolNums": lambda m: max(8 + 2 * m.cpus, 4 * _send_pool(m)),
    "clientCallbackExecutorThreads": lambda m: m.cpus,
    "storePathRootDir": lambda m: os.path.join(m.home, "store"),
    "brokerName": lambda m: socket.gethostname() or "DEFAULT_BROKER",
}


def _typed(tp: type, text: str) -> Any:
    if tp is bool:
        return text == "true"
    if tp is int:
        return int(text)
    if tp is float:
        return float(text)
    return text


def accepted_only_defaults(known: Iterable[str], machine: Machine | None = None) -> dict[str, Any]:
    """Typed Java defaults of the keys not in ``known`` (the keys pyrmq acts on)."""
    machine = machine or Machine.current()
    skip = set(known)
    out: dict[str, Any] = {}
    for key, (_owner, tp, default) in JAVA_BROKER_CONFIG_KEYS.items():
        if key in skip:
            continue
        formula = MACHINE_DEFAULTS.get(key)
        out[key] = formula(machine) if formula is not None else _typed(tp, default)
    return out
