"""The broker's side of light message queues: with enableLmq an %LMQ% topic or group needs no
config (Java LmqTopicConfigManager, LmqSubscriptionGroupManager). The store side is
pyrmq/store/lmq.py."""

from __future__ import annotations

from typing import Any


def lmq_enabled(broker_config: Any) -> bool:
    """enableLmq of the broker's MessageStoreConfig (False for a config without a store part)."""
    store = getattr(broker_config, "store", None)
    return bool(getattr(store, "enable_lmq", False))
