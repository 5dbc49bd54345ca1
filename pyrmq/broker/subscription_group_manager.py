"""Consumer group configs, auto-created on first use. Java: ``broker/subscription/SubscriptionGroupManager``
and ``remoting/protocol/subscription/SubscriptionGroupConfig``.

Persisted as ``<storePathRootDir>/config/subscriptionGroup.json``
(``{"dataVersion":...,"subscriptionGroupTable":{group: config}}``).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable

from pyrmq.remoting.bodies import DataVersion, FastJsonBody

from .persist import load_json_file, persist_json_file

log = logging.getLogger("pyrmq.broker.subscription")

#: groups a Java broker creates at start (SubscriptionGroupManager#init)
SYSTEM_GROUPS = (
    "TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "__MONITOR_CONSUMER", "CLIENT_INNER_PRODUCER",
    "SELF_TEST_P_GROUP", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY", "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER", "CID_SYS_RMQ_TRANS",
)


@dataclass(slots=True)
class GroupRetryPolicy(FastJsonBody):
    type: str = "CUSTOMIZED"
    exponential_retry_policy: dict | None = None
    customized_retry_policy: dict | None = None


@dataclass(slots=True)
class SubscriptionGroupConfig(FastJsonBody):
    group_name: str | None = None
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    consume_message_orderly: bool = False
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    group_retry_policy: GroupRetryPolicy = field(default_factory=GroupRetryPolicy)
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    group_sys_flag: int = 0
    consume_timeout_minute: int = 15
    subscription_data_set: list | None = None
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class _Wrapper(FastJsonBody):
    subscription_group_table: dict[str, SubscriptionGroupConfig] = field(default_factory=dict)
    forbidden_table: dict[str, dict[str, int]] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)


class SubscriptionGroupManager:
    def __init__(self, broker_config, path: str | None, *, now: Callable[[], int]) -> None:
        self.broker_config = broker_config
        self.path = path
        self.now = now
        self.table: dict[str, SubscriptionGroupConfig] = {}
        self.forbidden_table: dict[str, dict[str, int]] = {}
        self.data_version = DataVersion()
        for g in SYSTEM_GROUPS:
            self.table[g] = SubscriptionGroupConfig(group_name=g)
        self.table["TOOLS_CONSUMER"].consume_broadcast_enable = True

    def load(self) -> None:
        if not self.path:
            return
        obj = load_json_file(self.path)
        if obj is None:
            return
        w = _Wrapper.from_obj(obj)
        for name, cfg in w.subscription_group_table.items():
            if cfg.group_name is None:
                cfg.group_name = name
            self.table[name] = cfg
        self.forbidden_table = w.forbidden_table
        self.data_version = w.data_version

    def encode(self) -> bytes:
        return _Wrapper(dict(self.table), self.forbidden_table, self.data_version).encode()

    def persist(self) -> None:
        if self.path:
            persist_json_file(self.path, self.encode())

    def find_subscription_group_config(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config, auto-created when ``autoCreateSubscriptionGroup`` (Java, same name)."""
        cfg = self.table.get(group)
        if cfg is None and self.broker_config["autoCreateSubscriptionGroup"]:
            from .topic_config_manager import validate_group

            if validate_group(group) is not None:
                return None
            cfg = SubscriptionGroupConfig(group_name=group)
            self.table[group] = cfg
            log.info("auto create a subscription group, %s", group)
            self.data_version.next_version(self.now())
            self.persist()
        return cfg

    def update_subscription_group_config(self, cfg: SubscriptionGroupConfig) -> None:
        self.table[cfg.group_name or ""] = cfg
        self.data_version.next_version(self.now())
        self.persist()

    def contains(self, group: str) -> bool:
        return group in self.table

    def delete_subscription_group_config(self, group: str) -> SubscriptionGroupConfig | None:
        """Java deleteSubscriptionGroupConfig: drop the config and its forbidden entries, bump, persist."""
        old = self.table.pop(group, None)
        self.forbidden_table.pop(group, None)
        if old is not None:
            log.info("delete subscription group OK, subscription group:%s", group)
            self.data_version.next_version(self.now())
            self.persist()
        else:
            log.warning("delete subscription group failed, subscription groupName: %s not exist", group)
        return old
