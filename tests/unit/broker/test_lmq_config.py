"""With enableLmq an %LMQ% topic or group needs no config (Java LmqTopicConfigManager,
LmqSubscriptionGroupManager); without it the ordinary rules hold."""

from __future__ import annotations

from pyrmq.broker.config import BrokerConfig
from pyrmq.broker.consumer_offset_manager import ConsumerOffsetManager, LmqConsumerOffsetManager
from pyrmq.broker.stats import GROUP_GET_NUMS, LmqBrokerStatsManager
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


def test_lmq_offsets_are_one_number_per_topic_at_group_in_their_own_file(tmp_path) -> None:
    path = str(tmp_path / "lmqConsumerOffset.json")
    com = LmqConsumerOffsetManager(path, now=lambda: 0)
    com.commit_offset("h", "%LMQ%g", "%LMQ%room", 3, 7)  # the queue id does not matter for an LMQ group
    com.commit_offset("h", "plain", "%LMQ%room", 0, 5)
    assert com.query_offset("%LMQ%g", "%LMQ%room", 0) == 7 and com.query_offset_table("%LMQ%g", "%LMQ%room") == {0: 7}
    assert com.query_offset("plain", "%LMQ%room", 0) == 5 and com.query_offset("plain", "%LMQ%room", 1) == -1
    assert "%LMQ%room@%LMQ%g" not in com.offset_table
    assert com.persist()
    text = open(path).read()
    # fastjson's getter order: dataVersion, groupTopicMap, lmqOffsetTable, offsetTable, pullOffsetTable
    assert text.index('"groupTopicMap"') < text.index('"lmqOffsetTable":{\n\t\t"%LMQ%room@%LMQ%g":7\n\t}')
    assert text.index('"lmqOffsetTable"') < text.index('"offsetTable"') < text.index('"pullOffsetTable"')
    again = LmqConsumerOffsetManager(path, now=lambda: 0)
    again.load()
    assert again.query_offset("%LMQ%g", "%LMQ%room", 0) == 7 and again.query_offset("plain", "%LMQ%room", 0) == 5
    again.remove_offset("%LMQ%g")
    assert again.query_offset("%LMQ%g", "%LMQ%room", 0) == -1
    # without enableLmq an %LMQ% group is an ordinary one
    plain = ConsumerOffsetManager(None)
    plain.commit_offset("h", "%LMQ%g", "%LMQ%room", 3, 7)
    assert plain.query_offset("%LMQ%g", "%LMQ%room", 0) == -1 and plain.query_offset("%LMQ%g", "%LMQ%room", 3) == 7


def test_lmq_consume_stats_fold_into_one_item_unless_enable_lmq_stats() -> None:
    assert BrokerConfig()["enableLmqStats"] is False
    folded = LmqBrokerStatsManager("c", now=lambda: 0)
    folded.on_get("%LMQ%room", "%LMQ%g", 2, 20)
    folded.on_get("%LMQ%other", "plain", 1, 10)
    folded.on_get("T", "plain", 1, 10)
    keys = set(folded.items[GROUP_GET_NUMS])
    assert keys == {"%LMQ%@%LMQ%", "%LMQ%@plain", "T@plain"}
    assert folded.get_stats_item(GROUP_GET_NUMS, "%LMQ%@%LMQ%").value == 2
    apart = LmqBrokerStatsManager("c", now=lambda: 0, lmq_stats=True)
    apart.on_get("%LMQ%room", "%LMQ%g", 2, 20)
    assert set(apart.items[GROUP_GET_NUMS]) == {"%LMQ%room@%LMQ%g"}
