"""With enableLmq an %LMQ% topic or group needs no config (Java LmqTopicConfigManager,
LmqSubscriptionGroupManager); without it the ordinary rules hold."""

from __future__ import annotations

from pyrmq.broker.config import BrokerConfig
from pyrmq.broker.subscription_group_manager import SubscriptionGroupManager
from pyrmq.broker.topic_config_manager import TopicConfigManager
from pyrmq.protocol.bodies.common import TopicConfig
from pyrmq.store.config import SubscriptionGroupConfig


def _config(enable_lmq: bool) -> BrokerConfig:
    c = BrokerConfig()
    c.apply({"enableLmq": str(enable_lmq).lower(), "autoCreateSubscriptionGroup": "false"})
    return c


def test_keys_have_javas_defaults() -> None:
    store = BrokerConfig().store
    assert (store.enable_lmq, store.enable_multi_dispatch, store.max_lmq_consume_queue_num) == (False, False, 20000)
    props = BrokerConfig().all_properties()
    assert props["enableLmq"] == "false" and props["maxLmqConsumeQueueNum"] == "20000"


def test_lmq_topic_needs_no_config_and_is_never_stored() -> None:
    tcm = TopicConfigManager(_config(True), None, now=lambda: 0)
    tc = tcm.select_topic_config("%LMQ%room")
    assert tc is not None and (tc.read_queue_nums, tc.write_queue_nums, tc.perm) == (1, 1, 6)
    tcm.update_topic_config(TopicConfig(topic_name="%LMQ%room", read_queue_nums=8, write_queue_nums=8))
    assert "%LMQ%room" not in tcm.topic_config_table
    assert tcm.select_topic_config("plain") is None
    off = TopicConfigManager(_config(False), None, now=lambda: 0)
    assert off.select_topic_config("%LMQ%room") is None


def test_lmq_group_needs_no_config_and_is_never_stored() -> None:
    sgm = SubscriptionGroupManager(_config(True), None, now=lambda: 0)
    sg = sgm.find_subscription_group_config("%LMQ%g")
    assert sg is not None and sg.group_name == "%LMQ%g" and sg.consume_enable
    assert sgm.contains("%LMQ%g") and "%LMQ%g" not in sgm.table
    sgm.update_subscription_group_config(SubscriptionGroupConfig(group_name="%LMQ%g"))
    assert "%LMQ%g" not in sgm.table
    assert sgm.find_subscription_group_config("plain") is None  # autoCreateSubscriptionGroup=false
    off = SubscriptionGroupManager(_config(False), None, now=lambda: 0)
    assert off.find_subscription_group_config("%LMQ%g") is None and not off.contains("%LMQ%g")
