"""MessageStoreConfig: the store's settings under their Java names.

Java: store.config.MessageStoreConfig (defaults of 5.x). Attributes are snake_case;
``KEYS`` is the same table under the camelCase keys of broker.conf, filled with
``pyrmq.common.properties``' policy like every other config.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from pyrmq.common.properties import KeyTable
from pyrmq.protocol.headers.base import camel_case


class FlushDiskType(StrEnum):
    """Java store.config.FlushDiskType."""

    SYNC_FLUSH = "SYNC_FLUSH"
    ASYNC_FLUSH = "ASYNC_FLUSH"


class BrokerRole(StrEnum):
    """Java store.config.BrokerRole."""

    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"


@dataclass(slots=True)
class MessageStoreConfig:
    KEYS: ClassVar[KeyTable]

    store_path_root_dir: str = field(default_factory=lambda: os.path.join(os.path.expanduser("~"), "store"))
    store_path_commit_log: str | None = None  # default <root>/commitlog
    mapped_file_size_commit_log: int = 1024 * 1024 * 1024
    mapped_file_size_consume_queue: int = 300000 * 20
    max_hash_slot_num: int = 5000000
    max_index_num: int = 5000000 * 4
    max_msgs_num_batch: int = 64
    message_index_enable: bool = True
    message_index_safe: bool = False
    broker_role: BrokerRole = BrokerRole.ASYNC_MASTER
    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    flush_interval_commit_log: int = 500
    flush_commit_log_least_pages: int = 4
    flush_commit_log_thorough_interval: int = 1000 * 10
    flush_commit_log_timed: bool = True
    flush_interval_consume_queue: int = 1000
    flush_consume_queue_least_pages: int = 2
    flush_consume_queue_thorough_interval: int = 1000 * 60
    sync_flush_timeout: int = 1000 * 5
    read_un_committed: bool = False  # SYNC_FLUSH: dispatch (make readable) before the flush
    max_message_size: int = 1024 * 1024 * 4
    check_crc_on_recover: bool = True
    auto_message_version_on_topic_len: bool = True
    message_delay_level: str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    max_transfer_bytes_on_message_in_memory: int = 1024 * 256
    max_transfer_count_on_message_in_memory: int = 32
    max_transfer_bytes_on_message_in_disk: int = 1024 * 64
    max_transfer_count_on_message_in_disk: int = 8
    access_message_in_memory_max_ratio: int = 40
    default_query_max_num: int = 32
    file_reserved_time: int = 72
    delete_when: str = "04"
    disk_max_used_space_ratio: int = 75
    clean_resource_interval: int = 10000
    delete_commit_log_files_interval: int = 100
    delete_consume_queue_files_interval: int = 100
    destroy_maped_file_interval_forcibly: int = 1000 * 120
    redelete_hanged_file_interval: int = 1000 * 120
    clean_file_forcibly_enable: bool = True
    disk_space_warning_level_ratio: int = 90
    disk_space_clean_forcibly_ratio: int = 85
    delete_file_batch_max: int = 10
    # classic HA (pyrmq/ha/, docs/ha.md); Java's defaults. haListenPort 0: listenPort + 1 at start
    ha_listen_port: int = 10912
    ha_send_heartbeat_interval: int = 1000 * 5
    ha_housekeeping_interval: int = 1000 * 20
    ha_transfer_batch_size: int = 1024 * 32
    ha_master_address: str | None = None
    ha_max_gap_not_in_sync: int = 1024 * 1024 * 256
    # SYNC_MASTER (pyrmq/store/replica.py): replicas a waiting put needs (the master counts), ms
    in_sync_replicas: int = 1
    min_in_sync_replicas: int = 1
    slave_timeout: int = 3000
    all_ack_in_sync_state_set: bool = False
    # slave acting master: > 1 makes a broker wait isolated at start (BrokerPreOnlineService)
    total_replicas: int = 1
    # controller mode (pyrmq/ha/autoswitch*.py, docs/ha.md "Controller mode")
    store_path_epoch_file: str | None = None  # default <root>/epochFileCheckpoint
    store_path_broker_identity: str | None = None  # default <root>/brokerIdentity
    ha_max_time_slave_not_catchup: int = 1000 * 15
    sync_from_last_file: bool = False
    async_learner: bool = False
    # light message queues (pyrmq/store/lmq.py, docs/lmq.md); Java 5.x accepts but does not
    # enforce maxLmqConsumeQueueNum
    enable_lmq: bool = False
    enable_multi_dispatch: bool = False
    max_lmq_consume_queue_num: int = 20000
    # DLedger commit log (pyrmq/broker/dledger_role.py, docs/dledger.md); null in Java unless set
    d_leger_group: str | None = None
    d_leger_peers: str | None = None
    d_leger_self_id: str | None = None
    preferred_leader_id: str | None = None
    store_path_d_ledger_commit_log: str | None = None

    @property
    def epoch_file_path(self) -> str:
        """Java getStorePathEpochFile."""
        return self.store_path_epoch_file or os.path.join(self.store_path_root_dir, "epochFileCheckpoint")

    @property
    def broker_identity_path(self) -> str:
        """Java getStorePathBrokerIdentity (the temp file adds "-temp")."""
        return self.store_path_broker_identity or os.path.join(self.store_path_root_dir, "brokerIdentity")

    @property
    def commit_log_dir(self) -> str:
        return self.store_path_commit_log or os.path.join(self.store_path_root_dir, "commitlog")

    @property
    def consume_queue_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "consumequeue")

    @property
    def index_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "index")

    @property
    def checkpoint_path(self) -> str:
        return os.path.join(self.store_path_root_dir, "checkpoint")

    @property
    def abort_path(self) -> str:
        return os.path.join(self.store_path_root_dir, "abort")

    @property
    def lock_path(self) -> str:
        return os.path.join(self.store_path_root_dir, "lock")

    @property
    def consume_queue_file_size(self) -> int:
        """Java getMappedFileSizeConsumeQueue: rounded up to a multiple of 20."""
        factor = -(-self.mapped_file_size_consume_queue // 20)
        return factor * 20

    @property
    def sync_flush(self) -> bool:
        return FlushDiskType(self.flush_disk_type) is FlushDiskType.SYNC_FLUSH

    def delay_level_table(self) -> dict[int, int]:
        """Level (1-based) -> delay ms. Java DefaultMessageStore/ScheduleMessageService#parseDelayLevel."""
        unit = {"s": 1000, "m": 60000, "h": 3600000, "d": 86400000}
        table = {}
        for i, item in enumerate(self.message_delay_level.split()):
            mt = re.fullmatch(r"(\d+)([smhd])", item)
            if not mt:
                raise ValueError(f"bad messageDelayLevel item {item!r}")
            table[i + 1] = int(mt.group(1)) * unit[mt.group(2)]
        return table

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> MessageStoreConfig:
        """Build from broker.conf key/values (Java camelCase names); unknown keys are ignored."""
        cfg = cls()
        cfg.apply_properties(props)
        return cfg

    def apply_properties(self, props: Mapping[str, str]) -> list[str]:
        """Set the keys present in ``props`` in place (the running store shares this
        object), whatever the current value, so a key set back to its default takes
        effect; returns the keys that are not store keys."""
        return self.KEYS.apply(
            props,
            lambda key, value: setattr(self, _ATTR_OF[key], value),
            lambda key: getattr(self, _ATTR_OF[key]),
        )

    def properties(self) -> dict[str, Any]:
        """Every key under its Java name with its current value (None when unset)."""
        return {key: getattr(self, attr) for key, attr in _ATTR_OF.items()}


def _field_types() -> dict[str, type]:
    """Value type of each field, from its default (``str`` for the optional paths)."""
    out: dict[str, type] = {}
    for f in dataclasses.fields(MessageStoreConfig):
        if f.default is not dataclasses.MISSING and f.default is not None:
            out[f.name] = type(f.default)
        else:
            out[f.name] = str
    return out


#: attributes whose Java name is not their camel case
_JAVA_NAMES = {"check_crc_on_recover": "checkCRCOnRecover"}


def java_name(attr: str) -> str:
    return _JAVA_NAMES.get(attr) or camel_case(attr)


_ATTR_OF: dict[str, str] = {java_name(name): name for name in _field_types()}
MessageStoreConfig.KEYS = KeyTable({java_name(name): tp for name, tp in _field_types().items()})
