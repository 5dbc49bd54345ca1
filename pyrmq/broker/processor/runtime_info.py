"""GET_BROKER_RUNTIME_INFO (28): the KVTable both 4.9.x and 5.x tools and the dashboard parse.

Java: ``AdminBrokerProcessor#prepareRuntimeInfo``, ``store/StoreStatsService#getRuntimeInfo``,
``store/DefaultMessageStore#getRuntimeInfo``, ``store/stats/BrokerStats``. Spec
admin-and-dashboard §4: the union of the 4.9 and 5.3 keys, both spellings of the
transferred TPS, three numeric tokens in every ``*Tps`` value, plain integers.
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING

from pyrmq.protocol.version import MQVersion
from pyrmq.store.cleanup import disk_partition_space_used_percent

if TYPE_CHECKING:
    from pyrmq.broker.config import BrokerConfig
    from pyrmq.broker.stats import BrokerStatsManager
    from pyrmq.store.message_store import MessageStore

#: the release pyrmq follows (MQVersion.V5_5_0, protocol/version.py)
BROKER_VERSION_DESC = MQVersion.V5_5_0.name


def human_bytes(n: int) -> str:
    """Java MixAll#humanReadableByteCount(bytes, false): ``0 B``, ``1.2 KiB``."""
    if n < 1024:
        return f"{n} B"
    exp = 0
    v = float(n)
    while v >= 1024 and exp < 6:
        v /= 1024
        exp += 1
    return f"{v:.1f} {'KMGTPE'[exp - 1]}iB"


def _runtime_text(ms: int) -> str:
    s = max(ms, 0) // 1000
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return f"[ {d:,} days, {h} hours, {m} minutes, {s} seconds ]"


def _disk_ratio(path: str) -> float:
    """UtilAll#getDiskPartitionSpaceUsedPercent (rounded up to whole percent), -1 if ``path`` is missing."""
    return disk_partition_space_used_percent(path) if os.path.exists(path) else -1.0


def build_runtime_info(
    config: BrokerConfig,
    message_store: MessageStore,
    broker_stats: BrokerStatsManager,
    now_ms: int,
    broker_active: bool,
) -> dict[str, str]:
    """Every value a string (KVTable). ``broker_active``: Java isSpecialServiceRunning (the delay
    and transaction-check services run here: a master, or a slave acting for its master)."""
    st = broker_stats
    store = message_store
    sc = config.store
    now = now_ms
    out: dict[str, str] = {}
    out["brokerVersionDesc"] = BROKER_VERSION_DESC
    out["bootTimestamp"] = str(st.boot_timestamp)
    out["runtime"] = _runtime_text(now - st.boot_timestamp)
    out["putMessageEntireTimeMax"] = str(st.put_message_entire_time_max)
    out["putMessageTimesTotal"] = str(st.put_message_times_total or 1)  # Java's divisor guard leaks out
    out["putMessageFailedTimes"] = str(st.put_message_failed_times)
    out["putMessageSizeTotal"] = str(st.put_message_size_total)
    out["putMessageDistributeTime"] = st.put_distribute_text()
    avg = st.put_message_size_total / st.put_message_times_total if st.put_message_times_total else 0.0
    from pyrmq.common.java_lang import double_to_string

    out["putMessageAverageSize"] = double_to_string(float(avg))
    out["dispatchMaxBuffer"] = "0"
    out["getMessageEntireTimeMax"] = str(st.get_message_entire_time_max)
    out["putTps"] = st.put_tps()
    out["getFoundTps"] = st.get_found_tps()
    out["getMissTps"] = st.get_miss_tps()
    out["getTotalTps"] = st.get_total_tps()
    transferred = st.get_transferred_tps()
    out["getTransferedTps"] = transferred  # 4.9.x spelling (4.9.8 clusterList reads only this)
    out["getTransferredTps"] = transferred  # 5.x spelling
    out["putLatency99"] = "0.00"
    out["putLatency999"] = "0.00"
    cl_dir = store.get_store_path_physic()
    ratio = _disk_ratio(cl_dir if os.path.exists(cl_dir) else sc.store_path_root_dir)
    out["commitLogDiskRatio"] = double_to_string(ratio)
    out[f"commitLogDiskRatio_{cl_dir}"] = double_to_string(ratio)
    out["consumeQueueDiskRatio"] = double_to_string(_disk_ratio(os.path.join(sc.store_path_root_dir, "consumequeue")))
    out["commitLogMinOffset"] = str(store.get_min_phy_offset())
    out["commitLogMaxOffset"] = str(store.get_max_phy_offset())
    out["brokerActive"] = "true" if broker_active else "false"
    out["msgPutTotalYesterdayMorning"] = str(st.put_yesterday_morning)
    out["msgPutTotalTodayMorning"] = str(st.put_morning)
    out["msgPutTotalTodayNow"] = str(st.broker_put_nums)
    out["msgGetTotalYesterdayMorning"] = str(st.get_yesterday_morning)
    out["msgGetTotalTodayMorning"] = str(st.get_morning)
    out["msgGetTotalTodayNow"] = str(st.broker_get_nums)
    out["dispatchBehindBytes"] = str(store.dispatch_behind_bytes())
    out["pageCacheLockTimeMills"] = "0"
    earliest = store.get_earliest_message_time_all()
    out["earliestMessageTimeStamp"] = str(earliest if earliest and earliest > 0 else -1)
    out["startAcceptSendRequestTimeStamp"] = str(int(config["startAcceptSendRequestTimeStamp"]))
    for k in ("timerReadBehind", "timerOffsetBehind", "timerCongestNum"):
        out[k] = "0"
    out["timerEnqueueTps"] = "0.0"
    out["timerDequeueTps"] = "0.0"
    out["remainTransientStoreBufferNumbs"] = str(2**31 - 1)
    out["remainHowManyDataToFlush"] = human_bytes(max(0, store.get_max_phy_offset() - store.get_flushed_where()))
    try:
        du = shutil.disk_usage(sc.store_path_root_dir)
        out["commitLogDirCapacity"] = f"Total : {human_bytes(du.total)}, Free : {human_bytes(du.free)}."
    except OSError:
        pass
    # asyncio has no per-kind thread pools: queues are always empty
    for pool in ("send", "pull", "lite", "query", "ack"):
        name = "litePull" if pool == "lite" else pool
        out[f"{name}ThreadPoolQueueSize"] = "0"
        out[f"{name}ThreadPoolQueueCapacity"] = "10000"
        out[f"{name}ThreadPoolQueueHeadWaitTimeMills"] = "0"
    out["EndTransactionQueueSize"] = "0"
    out["EndTransactionThreadPoolQueueCapacity"] = "100000"
    return out
