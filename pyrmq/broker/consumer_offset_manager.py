"""Committed consumer offsets per (group, topic, queue). Java: ``broker/offset/ConsumerOffsetManager``.

Keys are ``topic@group`` like Java; persisted as
``<storePathRootDir>/config/consumerOffset.json`` every
``flushConsumerOffsetInterval`` and at shutdown, in the format defined once in
``pyrmq.store.config.ConsumerOffsetSerializeWrapper`` (unquoted integer queue-id
keys, ``pullOffsetTable`` like 5.5.0).

With enableLmq the broker uses ``LmqConsumerOffsetManager``, Java's: the file is
``lmqConsumerOffset.json`` and a %LMQ% group's offset is one number per ``topic@group``
(``lmqOffsetTable``, the queue id ignored).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import ClassVar

from pyrmq.broker.config_manager import ConfigManager
from pyrmq.store.config import (
    ConsumerOffsetSerializeWrapper,
    DataVersion,
    LmqConsumerOffsetSerializeWrapper,
)
from pyrmq.store.lmq import is_lmq

log = logging.getLogger("pyrmq.broker.offset")

TOPIC_GROUP_SEPARATOR = "@"


class ConsumerOffsetManager(ConfigManager):
    wrapper_class = ConsumerOffsetSerializeWrapper

    lmq: ClassVar[bool] = False

    def __init__(self, path: str | None, *, now: Callable[[], int] | None = None) -> None:
        self.path = path
        self.now = now
        self.lmq_offset_table: dict[str, int] = {}
        self.offset_table: dict[str, dict[int, int]] = {}
        self.pull_offset_table: dict[str, dict[int, int]] = {}
        self.reset_offset_table: dict[str, dict[int, int]] = {}
        self.data_version = DataVersion()
        self._dirty = False

    def decode_wrapper(self, w: ConsumerOffsetSerializeWrapper) -> None:
        """Only ``offsetTable`` and ``dataVersion`` are read back (Java)."""
        for k, qs in w.offset_table.items():
            self.offset_table[str(k)] = {int(q): int(o) for q, o in qs.items()}
        if w.data_version is not None:
            self.data_version = w.data_version
        if isinstance(w, LmqConsumerOffsetSerializeWrapper):
            self.lmq_offset_table = {str(k): int(v) for k, v in w.lmq_offset_table.items()}

    def build_serialize_wrapper(self) -> ConsumerOffsetSerializeWrapper:
        if self.lmq:
            return LmqConsumerOffsetSerializeWrapper(
                offset_table=self.offset_table,
                data_version=self.data_version,
                pull_offset_table=self.pull_offset_table,
                lmq_offset_table=self.lmq_offset_table,
            )
        return ConsumerOffsetSerializeWrapper(
            offset_table=self.offset_table, data_version=self.data_version, pull_offset_table=self.pull_offset_table
        )

    def _lmq_group(self, group: str) -> bool:
        return self.lmq and is_lmq(group)

    def persist(self) -> bool:
        if not super().persist():
            return False
        self._dirty = False
        return True

    def commit_offset(self, client_host: str, group: str, topic: str, queue_id: int, offset: int) -> None:
        key = f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"
        if self._lmq_group(group):
            self.lmq_offset_table[key] = offset
            self._dirty = True
            return
        qs = self.offset_table.get(key)
        if qs is None:
            qs = self.offset_table[key] = {}
        qs[queue_id] = offset
        self._dirty = True

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 (Java queryOffset)."""
        if self._lmq_group(group):
            return self.lmq_offset_table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", -1)
        qs = self.offset_table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}")
        if qs is None:
            return -1
        return qs.get(queue_id, -1)

    def commit_pull_offset(self, client_host: str, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.pull_offset_table.setdefault(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {})[queue_id] = offset

    def query_offset_table(self, group: str, topic: str) -> dict[int, int]:
        if self._lmq_group(group):
            offset = self.lmq_offset_table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}")
            return {} if offset is None else {0: offset}
        return dict(self.offset_table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {}))

    def which_group_by_topic(self, topic: str) -> set[str]:
        out = set()
        for k in self.offset_table:
            t, _, g = k.partition(TOPIC_GROUP_SEPARATOR)
            if t == topic:
                out.add(g)
        return out

    def which_topic_by_consumer(self, group: str) -> set[str]:
        out = set()
        for k in self.offset_table:
            t, _, g = k.partition(TOPIC_GROUP_SEPARATOR)
            if g == group:
                out.add(t)
        return out

    # ------------------------------------------------------------ admin (AdminBrokerProcessor callers)

    def query_pull_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The offset the group's last pull asked for next; without one (a group that only pops
        or commits, a restarted broker: the table is not persisted) its consumer offset, as
        Java's queryPullOffset falls back."""
        offset = self.pull_offset_table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {}).get(queue_id)
        return self.query_offset(group, topic, queue_id) if offset is None else offset

    def assign_reset_offset(self, topic: str, group: str, queue_id: int, offset: int) -> None:
        """Java assignResetOffset: the next pull of that queue answers OFFSET_MOVED to ``offset``."""
        if not topic or not group or queue_id < 0 or offset < 0:
            log.warning(
                "Illegal arguments when assigning reset offset. Topic=%s, group=%s, queueId=%s, offset=%s",
                topic,
                group,
                queue_id,
                offset,
            )
            return
        key = f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"
        self.reset_offset_table.setdefault(key, {})[queue_id] = offset
        if self._lmq_group(group) and is_lmq(topic):
            if key in self.lmq_offset_table:  # Java: computeIfPresent
                self.lmq_offset_table[key] = offset
            self._dirty = True
            return
        self.offset_table.setdefault(key, {})[queue_id] = offset
        self._dirty = True

    def has_offset_reset(self, topic: str, group: str, queue_id: int) -> bool:
        return queue_id in self.reset_offset_table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {})

    def query_then_erase_reset_offset(self, topic: str, group: str, queue_id: int) -> int | None:
        m = self.reset_offset_table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}")
        return None if m is None else m.pop(queue_id, None)

    def clean_offset_by_topic(self, topic: str) -> None:
        for table in (self.offset_table, self.pull_offset_table, self.reset_offset_table):
            for k in [k for k in table if k.partition(TOPIC_GROUP_SEPARATOR)[0] == topic]:
                del table[k]
        self._dirty = True

    def remove_offset(self, group: str) -> None:
        if self._lmq_group(group):
            for k in [k for k in self.lmq_offset_table if k.partition(TOPIC_GROUP_SEPARATOR)[2] == group]:
                del self.lmq_offset_table[k]
        for table in (self.offset_table, self.pull_offset_table, self.reset_offset_table):
            for k in [k for k in table if k.partition(TOPIC_GROUP_SEPARATOR)[2] == group]:
                del table[k]
        self._dirty = True

    def clone_offset(self, src_group: str, dest_group: str, topic: str) -> None:
        qs = self.offset_table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{src_group}")
        if qs is not None:
            self.offset_table[f"{topic}{TOPIC_GROUP_SEPARATOR}{dest_group}"] = dict(qs)
            self._dirty = True


class LmqConsumerOffsetManager(ConsumerOffsetManager):
    """Java LmqConsumerOffsetManager: %LMQ% groups' offsets in ``lmqOffsetTable``, everything in
    lmqConsumerOffset.json."""

    wrapper_class = LmqConsumerOffsetSerializeWrapper
    lmq = True
