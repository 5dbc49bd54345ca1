"""Topic table of the broker: system topics, auto-creation from TBW102, persistence.

Java: ``broker/topic/TopicConfigManager`` (init, createTopicInSendMessageMethod,
createTopicInSendMessageBackMethod, updateTopicConfig, buildTopicConfigSerializeWrapper)
and ``common/topic/TopicValidator``. The table is persisted as
``<storePathRootDir>/config/topics.json`` (TopicConfigSerializeWrapper JSON).
Changes bump the DataVersion and call ``on_change(topic_configs)`` so the
controller registers them with the name servers (incremental registration).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from pyrmq.broker.config_manager import ConfigManager
from pyrmq.broker.lmq import lmq_enabled
from pyrmq.common.attributes import TOPIC_ATTRIBUTES, alter_current_attributes
from pyrmq.common.constants import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    RMQ_SYS_BENCHMARK_TOPIC,
    RMQ_SYS_OFFSET_MOVED_EVENT,
    RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC,
    RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC,
    RMQ_SYS_SCHEDULE_TOPIC,
    RMQ_SYS_SELF_TEST_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
    SCHEDULE_TOPIC_QUEUE_NUM,
    TIMER_TOPIC,
)
from pyrmq.store.config import (
    DataVersion,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from pyrmq.store.lmq import is_lmq

log = logging.getLogger("pyrmq.broker.topic")


class TopicConfigManager(ConfigManager):
    wrapper_class = TopicConfigSerializeWrapper

    """topic -> TopicConfig with a DataVersion; ``now`` gives ms for the version stamps."""

    def __init__(
        self,
        broker_config,
        path: str | None,
        *,
        now: Callable[[], int],
        on_change: Callable[[list[TopicConfig]], None] | None = None,
    ) -> None:
        self.broker_config = broker_config
        self.path = path
        self.now = now
        self.on_change = on_change
        self.topic_config_table: dict[str, TopicConfig] = {}
        self.data_version = DataVersion()
        self._init_system_topics()

    # --------------------------------------------------------------------- init / load

    def _put(self, name: str, read: int = 16, write: int = 16, perm: int = PERM_READ | PERM_WRITE) -> None:
        self.topic_config_table[name] = TopicConfig(
            topic_name=name, read_queue_nums=read, write_queue_nums=write, perm=perm
        )

    def _init_system_topics(self) -> None:
        """The topics a Java 5.x broker creates at start (TopicConfigManager#init)."""
        c = self.broker_config
        self._put(RMQ_SYS_SELF_TEST_TOPIC, 1, 1)
        if c["autoCreateTopicEnable"]:
            n = int(c["defaultTopicQueueNums"])
            self._put(AUTO_CREATE_TOPIC_KEY_TOPIC, n, n, PERM_INHERIT | PERM_READ | PERM_WRITE)
        self._put(RMQ_SYS_BENCHMARK_TOPIC, 1024, 1024)
        perm = PERM_INHERIT | (PERM_READ | PERM_WRITE if c["clusterTopicEnable"] else 0)
        self._put(c["brokerClusterName"], 16, 16, perm)
        perm = PERM_INHERIT | (PERM_READ | PERM_WRITE if c["brokerTopicEnable"] else 0)
        self._put(c["brokerName"], 1, 1, perm)
        self._put(RMQ_SYS_OFFSET_MOVED_EVENT, 1, 1)
        self._put(RMQ_SYS_SCHEDULE_TOPIC, SCHEDULE_TOPIC_QUEUE_NUM, SCHEDULE_TOPIC_QUEUE_NUM)
        if c["traceTopicEnable"]:
            self._put(c["msgTraceTopicName"], 1, 1)
        self._put(f"{c['brokerClusterName']}_REPLY_TOPIC", 1, 1)
        n = int(c["reviveQueueNum"])
        self._put(f"rmq_sys_REVIVE_LOG_{c['brokerClusterName']}", n, n)
        self._put(f"rmq_sys_SYNC_BROKER_MEMBER_{c['brokerName']}", 1, 1, PERM_INHERIT)
        self._put(RMQ_SYS_TRANS_HALF_TOPIC, 1, 1)
        self._put(RMQ_SYS_TRANS_OP_HALF_TOPIC, 1, 1)
        self._put(RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC, 1, 1)
        self._put(RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC, 1, 1)
        if c["timerWheelEnable"]:
            self._put(TIMER_TOPIC, 1, 1)

    def decode_wrapper(self, wrapper: TopicConfigSerializeWrapper) -> None:
        """topics.json (or its ``.bak``, see ConfigManager.load) merged over the system topics."""
        for name, tc in wrapper.topic_config_table.items():
            if tc.topic_name is None:
                tc.topic_name = name
            if tc.attributes and any(k[:1] in "+-" for k in tc.attributes):
                # pyrmq before 2026-11 stored the request's "+key" modifications as they came
                tc.attributes = {k.lstrip("+"): v for k, v in tc.attributes.items() if not k.startswith("-")}
            self.topic_config_table[name] = tc
        self.data_version = wrapper.data_version

    def build_serialize_wrapper(self) -> TopicConfigSerializeWrapper:
        return TopicConfigSerializeWrapper(dict(self.topic_config_table), self.data_version)

    # --------------------------------------------------------------------- lookups

    def select_topic_config(self, topic: str) -> TopicConfig | None:
        if is_lmq(topic) and lmq_enabled(self.broker_config):
            # Java LmqTopicConfigManager: an LMQ needs no config: one queue, read and write
            return TopicConfig(topic_name=topic, read_queue_nums=1, write_queue_nums=1, perm=PERM_READ | PERM_WRITE)
        return self.topic_config_table.get(topic)

    def is_order_topic(self, topic: str) -> bool:
        tc = self.topic_config_table.get(topic)
        return bool(tc and tc.order)

    # --------------------------------------------------------------------- changes

    def _changed(self, configs: list[TopicConfig]) -> None:
        self.data_version.next_version(self.now())
        self.persist()
        if self.on_change is not None:
            try:
                self.on_change(configs)
            except Exception:
                log.exception("topic change listener failed")

    def create_topic_in_send_message_method(
        self, topic: str, default_topic: str | None, client_default_queue_nums: int, topic_sys_flag: int = 0
    ) -> TopicConfig | None:
        """Auto-create ``topic`` from the template ``default_topic`` (TBW102) if it inherits."""
        tc = self.topic_config_table.get(topic)
        if tc is not None:
            return tc
        template = self.topic_config_table.get(default_topic or "")
        if template is None:
            log.warning("Create new topic failed, because the default topic[%s] not exist.", default_topic)
            return None
        perm = template.perm
        if default_topic == AUTO_CREATE_TOPIC_KEY_TOPIC and not self.broker_config["autoCreateTopicEnable"]:
            perm = PERM_READ | PERM_WRITE
        if not perm & PERM_INHERIT:
            log.warning("Create new topic failed, because the default topic[%s] has no perm [%d]", default_topic, perm)
            return None
        n = max(0, min(int(client_default_queue_nums), template.write_queue_nums))
        tc = TopicConfig(
            topic_name=topic,
            read_queue_nums=n,
            write_queue_nums=n,
            perm=perm & ~PERM_INHERIT,
            topic_filter_type=template.topic_filter_type,
            topic_sys_flag=topic_sys_flag,
        )
        log.info("Create new topic by default topic:[%s] config:[%s]", default_topic, tc)
        self.topic_config_table[topic] = tc
        self._changed([tc])
        return tc

    def create_topic_in_send_message_back_method(
        self, topic: str, queue_nums: int, perm: int, topic_sys_flag: int = 0, is_order: bool = False
    ) -> TopicConfig:
        """Retry/DLQ topics (Java createTopicInSendMessageBackMethod); returns the existing one if any."""
        tc = self.topic_config_table.get(topic)
        if tc is not None:
            if is_order != tc.order:
                tc.order = is_order
                self._changed([tc])
            return tc
        tc = TopicConfig(
            topic_name=topic,
            read_queue_nums=queue_nums,
            write_queue_nums=queue_nums,
            perm=perm,
            topic_sys_flag=topic_sys_flag,
            order=is_order,
        )
        self.topic_config_table[topic] = tc
        self._changed([tc])
        return tc

    def update_topic_config(self, tc: TopicConfig) -> None:
        """UPDATE_AND_CREATE_TOPIC: put (replacing), bump the version, persist, register.

        ``tc.attributes`` holds the request's modifications (``+key``/``-key``); the stored map is
        what they make of the current one (Java updateSingleTopicConfigWithoutPersist). Raises
        AttributeModificationError with Java's text when Java refuses them."""
        self.update_topic_config_list([tc])

    def update_topic_config_list(self, configs: list[TopicConfig]) -> None:
        """UPDATE_AND_CREATE_TOPIC_LIST: each put as `update_topic_config` puts it, then one persist
        and one change notice for the list (Java updateTopicConfigList): thousands of topics must
        not rewrite topics.json once each."""
        changed: list[TopicConfig] = []
        try:
            for tc in configs:
                if is_lmq(tc.topic_name) and lmq_enabled(self.broker_config):
                    continue  # Java LmqTopicConfigManager#updateTopicConfig keeps no LMQ config
                old = self.topic_config_table.get(tc.topic_name or "")
                tc.attributes = alter_current_attributes(
                    old is None,
                    TOPIC_ATTRIBUTES,
                    (old.attributes or {}) if old is not None else {},
                    tc.attributes or {},
                )
                self.topic_config_table[tc.topic_name or ""] = tc
                if changed:  # Java bumps the version once per topic; _changed bumps the last time
                    self.data_version.next_version(self.now())
                changed.append(tc)
        finally:  # a refused topic ends the list: what was put before it is kept and persisted
            if changed:
                self._changed(changed)

    def delete_topic_config(self, topic: str) -> TopicConfig | None:
        old = self.topic_config_table.pop(topic, None)
        if old is not None:
            self.data_version.next_version(self.now())
            self.persist()
        return old


def default_topics_path(store_root: str) -> str:
    return os.path.join(store_root, "config", "topics.json")
