"""Consumer group configs, auto-created on first use. Java: ``broker/subscription/SubscriptionGroupManager``
and ``remoting/protocol/subscription/SubscriptionGroupConfig``.

Persisted as ``<storePathRootDir>/config/subscriptionGroup.json``
(``{"dataVersion":...,"subscriptionGroupTable":{group: config}}``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from pyrmq.broker.config_manager import ConfigManager
from pyrmq.broker.lmq import lmq_enabled
from pyrmq.common.constants import SYSTEM_GROUPS, validate_group
from pyrmq.store.config import (
    DataVersion,
    GroupRetryPolicy,
    SubscriptionGroupConfig,
    SubscriptionGroupSerializeWrapper,
)
from pyrmq.store.lmq import is_lmq

log = logging.getLogger("pyrmq.broker.subscription")

__all__ = ["GroupRetryPolicy", "SubscriptionGroupConfig", "SubscriptionGroupManager"]


class SubscriptionGroupManager(ConfigManager):
    wrapper_class = SubscriptionGroupSerializeWrapper

    def __init__(self, broker_config, path: str | None, *, now: Callable[[], int]) -> None:
        self.broker_config = broker_config
        self.path = path
        self.now = now
        self.table: dict[str, SubscriptionGroupConfig] = {}
        self.forbidden_table: dict[str, dict[str, int]] = {}
        self.data_version = DataVersion()
        for g in SYSTEM_GROUPS:
            self.table[g] = SubscriptionGroupConfig(group_name=g)

    def decode_wrapper(self, w: SubscriptionGroupSerializeWrapper) -> None:
        for name, cfg in w.subscription_group_table.items():
            if cfg.group_name is None:
                cfg.group_name = name
            self.table[name] = cfg
        self.forbidden_table = w.forbidden_table or {}
        self.data_version = w.data_version

    def build_serialize_wrapper(self) -> SubscriptionGroupSerializeWrapper:
        return SubscriptionGroupSerializeWrapper(dict(self.table), self.forbidden_table, self.data_version)

    def find_subscription_group_config(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config, auto-created when ``autoCreateSubscriptionGroup`` (Java, same name)."""
        if is_lmq(group) and lmq_enabled(self.broker_config):
            return SubscriptionGroupConfig(group_name=group)  # Java LmqSubscriptionGroupManager: never stored
        cfg = self.table.get(group)
        if cfg is None and self.broker_config["autoCreateSubscriptionGroup"]:
            if validate_group(group) is not None:
                return None
            cfg = SubscriptionGroupConfig(group_name=group)
            self.table[group] = cfg
            log.info("auto create a subscription group, %s", group)
            self.data_version.next_version(self.now())
            self.persist()
        return cfg

    def update_subscription_group_config(self, cfg: SubscriptionGroupConfig) -> None:
        if is_lmq(cfg.group_name) and lmq_enabled(self.broker_config):
            return  # Java LmqSubscriptionGroupManager keeps no LMQ group config
        self.table[cfg.group_name or ""] = cfg
        self.data_version.next_version(self.now())
        self.persist()

    def contains(self, group: str) -> bool:
        return group in self.table or (is_lmq(group) and lmq_enabled(self.broker_config))

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
