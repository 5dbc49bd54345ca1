"""Broker counters for admin tools: per-topic/group stats items, store TPS windows, daily totals.

Java: ``store/stats/BrokerStatsManager`` + ``common/stats/{StatsItem,StatsItemSet}``
(VIEW_BROKER_STATS_DATA, topicPutTps, consumeTps), ``store/StoreStatsService``
(putTps/getFoundTps/... windows of GET_BROKER_RUNTIME_INFO) and
``store/stats/BrokerStats`` (msgPutTotal*/msgGetTotal* morning values).

Sampling is driven by ``tick(now_ms)``: the controller calls it every second
and every query calls it first, so tests can drive it with a fake clock. Java's
StatsItemSet samples every item on fixed-rate timers started with the broker
(every 10 s, 10 min and 1 h, the first run at start); here the same schedule
runs from the first tick at or after each due time. An item's first sample in
a list is preceded by a zero sample one interval back (StatsItem#samplingIn*),
so before the first hourly run an item's day figures are 0, as in Java.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from pyrmq.common.constants import is_system_topic
from pyrmq.store.lmq import LMQ_PREFIX, is_lmq

# stats names (common/stats/Stats.java, BrokerStatsManager)
TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
TOPIC_PUT_SIZE = "TOPIC_PUT_SIZE"
GROUP_GET_NUMS = "GROUP_GET_NUMS"
GROUP_GET_SIZE = "GROUP_GET_SIZE"
BROKER_PUT_NUMS = "BROKER_PUT_NUMS"
BROKER_GET_NUMS = "BROKER_GET_NUMS"
SNDBCK_PUT_NUMS = "SNDBCK_PUT_NUMS"

MINUTE_MS, HOUR_MS, DAY_MS = 10_000, 600_000, 3_600_000  # snapshot intervals
MINUTE_KEEP, HOUR_KEEP, DAY_KEEP = 7, 7, 25
#: StoreStatsService keeps one sample a second for the longest window (600 s)
TPS_WINDOWS_S = (10, 60, 600)


@dataclass(slots=True)
class StatsSnapshot:
    """Java StatsSnapshot as BrokerStatsItem carries it: sum, tps, avgpt."""

    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0


@dataclass(slots=True)
class _Sample:
    ts: int
    value: int
    times: int


def _compute(samples: deque[_Sample]) -> StatsSnapshot:
    """StatsItem#computeStatsData: first vs last snapshot of the window."""
    if not samples:
        return StatsSnapshot()
    first, last = samples[0], samples[-1]
    total = last.value - first.value
    span = last.ts - first.ts
    tps = total * 1000.0 / span if span > 0 else 0.0
    times = last.times - first.times
    avgpt = total / times if times > 0 else 0.0
    return StatsSnapshot(total, tps, avgpt)


@dataclass(slots=True)
class StatsItem:
    """One counter (value, times) with minute/hour/day snapshot lists (Java StatsItem)."""

    value: int = 0
    times: int = 0
    minute: deque = field(default_factory=lambda: deque(maxlen=MINUTE_KEEP))
    hour: deque = field(default_factory=lambda: deque(maxlen=HOUR_KEEP))
    day: deque = field(default_factory=lambda: deque(maxlen=DAY_KEEP))

    def add(self, value: int, times: int = 1) -> None:
        self.value += value
        self.times += times

    def sample(self, samples: deque[_Sample], interval: int, now: int) -> None:
        """StatsItem#samplingIn{Seconds,Minutes,Hour}: a first sample comes after a zero one back-dated
        by the interval."""
        if not samples:
            samples.append(_Sample(now - interval, 0, 0))
        samples.append(_Sample(now, self.value, self.times))

    def in_minute(self) -> StatsSnapshot:
        return _compute(self.minute)

    def in_hour(self) -> StatsSnapshot:
        return _compute(self.hour)

    def in_day(self) -> StatsSnapshot:
        return _compute(self.day)


def _java_tps(v: float) -> str:
    from pyrmq.common.java_lang import double_to_string

    if v != v or v in (float("inf"), float("-inf")):
        v = 0.0
    return double_to_string(float(v))


def _local_midnight(now_ms: int) -> int:
    lt = time.localtime(now_ms / 1000)
    return int(time.mktime((lt.tm_year, lt.tm_mon, lt.tm_mday, 0, 0, 0, 0, 0, -1)) * 1000)


class BrokerStatsManager:
    """All counters of one broker; ``now`` is the clock in ms (injectable)."""

    def __init__(self, cluster_name: str, *, now: Callable[[], int]) -> None:
        self.cluster_name = cluster_name
        self.now = now
        self.items: dict[str, dict[str, StatsItem]] = {}
        # StoreStatsService counters
        self.boot_timestamp = now()
        self.put_message_times_total = 0
        self.put_message_size_total = 0
        self.put_message_failed_times = 0
        self.put_message_entire_time_max = 0
        self.get_message_entire_time_max = 0
        self.get_found_total = 0
        self.get_miss_total = 0
        self.get_transferred_total = 0
        self.put_buckets = [0] * 13
        # BrokerStats (non-system topics)
        self.broker_put_nums = 0
        self.broker_get_nums = 0
        self.put_morning = self.put_yesterday_morning = 0
        self.get_morning = self.get_yesterday_morning = 0
        self._midnight = _local_midnight(self.boot_timestamp)
        #: StatsItemSet#init: fixed-rate sampling from the start, first run at once
        self._next_sample = {MINUTE_MS: self.boot_timestamp, HOUR_MS: self.boot_timestamp, DAY_MS: self.boot_timestamp}
        self._samples: deque[tuple[int, int, int, int, int]] = deque(maxlen=TPS_WINDOWS_S[-1] + 1)
        self._last_sample = 0
        #: topic -> its TOPIC_PUT_NUMS and TOPIC_PUT_SIZE items and whether it is a system topic:
        #: looked up once per topic, not per put (the send path counts every message)
        self._put_items: dict[str, tuple[StatsItem, StatsItem, bool]] = {}
        self._broker_put: StatsItem | None = None  # BROKER_PUT_NUMS, made at the first put
        self.tick()

    # ------------------------------------------------------------------ events

    def _item(self, name: str, key: str) -> StatsItem:
        table = self.items.setdefault(name, {})
        it = table.get(key)
        if it is None:
            it = table[key] = StatsItem()
        return it

    def on_topic_put(self, topic: str, msgs: int, size: int) -> None:
        """A successful send request: TOPIC_PUT_NUMS/SIZE, BROKER_PUT_NUMS, store put counters.
        The topic's items are looked up once per topic (the send path counts every message); no
        elapsed time is measured, so the put time stays in the first bucket, as before."""
        per = self._put_items.get(topic)
        if per is None:
            per = self._put_items[topic] = (
                self._item(TOPIC_PUT_NUMS, topic),
                self._item(TOPIC_PUT_SIZE, topic),
                is_system_topic(topic),
            )
        nums, sizes, system = per
        nums.value += msgs
        nums.times += 1
        sizes.value += size
        sizes.times += 1
        self.put_message_times_total += msgs
        self.put_message_size_total += size
        self.put_buckets[0] += 1
        if not system:
            broker = self._broker_put
            if broker is None:
                broker = self._broker_put = self._item(BROKER_PUT_NUMS, self.cluster_name)
            broker.value += msgs
            broker.times += 1
            self.broker_put_nums += msgs

    def on_replicated_put(self, size: int) -> None:
        """A record a slave dispatched from its master's data: the store's put counters only (Java
        ReputMessageService on a SLAVE), not the topic and broker put items of a send."""
        self.put_message_times_total += 1
        self.put_message_size_total += size

    def on_put_failed(self) -> None:
        self.put_message_failed_times += 1

    def on_get(self, topic: str, group: str, msgs: int, size: int, *, system: bool = False) -> None:
        """A pull that found messages: GROUP_GET_NUMS/SIZE keyed ``topic@group``, BROKER_GET_NUMS."""
        key = f"{topic}@{group}"
        self._item(GROUP_GET_NUMS, key).add(msgs, 1)
        self._item(GROUP_GET_SIZE, key).add(size, 1)
        self.get_found_total += 1
        self.get_transferred_total += msgs
        if not system:
            self._item(BROKER_GET_NUMS, self.cluster_name).add(msgs, 1)
            self.broker_get_nums += msgs

    def on_get_miss(self) -> None:
        self.get_miss_total += 1

    def on_topic_deleted(self, topic: str) -> None:
        self._put_items.pop(topic, None)
        for name in (TOPIC_PUT_NUMS, TOPIC_PUT_SIZE):
            self.items.get(name, {}).pop(topic, None)
        for name in (GROUP_GET_NUMS, GROUP_GET_SIZE):
            table = self.items.get(name, {})
            for k in [k for k in table if k.split("@", 1)[0] == topic]:
                del table[k]

    def on_group_deleted(self, group: str) -> None:
        for name in (GROUP_GET_NUMS, GROUP_GET_SIZE):
            table = self.items.get(name, {})
            for k in [k for k in table if k.partition("@")[2] == group]:
                del table[k]

    # ------------------------------------------------------------------ sampling

    def tick(self, now: int | None = None) -> None:
        now = self.now() if now is None else now
        for interval, due in self._next_sample.items():
            if now < due:
                continue
            for table in self.items.values():
                for it in table.values():
                    samples = it.minute if interval == MINUTE_MS else it.hour if interval == HOUR_MS else it.day
                    it.sample(samples, interval, now)
            self._next_sample[interval] = due + ((now - due) // interval + 1) * interval
        if now - self._last_sample >= 1000 or not self._samples:
            self._samples.append(
                (
                    now,
                    self.put_message_times_total,
                    self.get_found_total,
                    self.get_miss_total,
                    self.get_transferred_total,
                )
            )
            self._last_sample = now
        midnight = _local_midnight(now)
        if midnight > self._midnight:
            # BrokerStats#record at 00:00: today's morning becomes yesterday's
            self.put_yesterday_morning, self.put_morning = self.put_morning, self.broker_put_nums
            self.get_yesterday_morning, self.get_morning = self.get_morning, self.broker_get_nums
            self._midnight = midnight

    # ------------------------------------------------------------------ queries

    def get_stats_item(self, name: str, key: str) -> StatsItem | None:
        self.tick()
        return self.items.get(name, {}).get(key)

    def tps_topic_put_nums(self, topic: str) -> float:
        it = self.get_stats_item(TOPIC_PUT_NUMS, topic)
        return it.in_minute().tps if it else 0.0

    def tps_group_get_nums(self, group: str, topic: str) -> float:
        it = self.get_stats_item(GROUP_GET_NUMS, f"{topic}@{group}")
        return it.in_minute().tps if it else 0.0

    def _window_tps(self, col: int, window_s: int, plus: int | None = None) -> float:
        """Δcount/Δtime between the newest sample and the one ``window_s`` samples earlier (or the oldest)."""
        if len(self._samples) < 2:
            return 0.0
        newest = self._samples[-1]
        idx = max(0, len(self._samples) - 1 - window_s)
        oldest = self._samples[idx]
        span = newest[0] - oldest[0]
        if span <= 0:
            return 0.0
        delta = newest[col] - oldest[col]
        if plus is not None:
            delta += newest[plus] - oldest[plus]
        return delta * 1000.0 / span

    def tps_text(self, col: int, plus: int | None = None) -> str:
        """Three windows (10 s, 60 s, 600 s), one space apart, always three numbers."""
        self.tick()
        return " ".join(_java_tps(self._window_tps(col, w, plus)) for w in TPS_WINDOWS_S)

    def put_tps(self) -> str:
        return self.tps_text(1)

    def get_found_tps(self) -> str:
        return self.tps_text(2)

    def get_miss_tps(self) -> str:
        return self.tps_text(3)

    def get_total_tps(self) -> str:
        return self.tps_text(2, 3)

    def get_transferred_tps(self) -> str:
        return self.tps_text(4)

    def put_distribute_text(self) -> str:
        labels = (
            "<=0ms",
            "0~10ms",
            "10~50ms",
            "50~100ms",
            "100~200ms",
            "200~500ms",
            "500ms~1s",
            "1~2s",
            "2~3s",
            "3~4s",
            "4~5s",
            "5~10s",
            "10s~",
        )
        return "".join(f"[{lb}]:{n} " for lb, n in zip(labels, self.put_buckets, strict=False))


def _bucket(ms: int) -> int:
    for i, limit in enumerate((0, 10, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 10000)):
        if ms <= limit:
            return i
    return 12


def record_put(stats: BrokerStatsManager, topic: str, result) -> None:
    """Count one send request's PutMessageResult (Java SendMessageProcessor#handlePutMessageResult)."""
    amr = getattr(result, "append_message_result", None)
    if result is not None and amr is not None and result.is_ok():
        stats.on_topic_put(topic, max(amr.msg_num, 1), amr.wrote_bytes)
    else:
        stats.on_put_failed()


class LmqBrokerStatsManager(BrokerStatsManager):
    """Java LmqBrokerStatsManager (used with enableLmq): unless enableLmqStats, the consume
    counters of every %LMQ% topic and group fall under the one name ``%LMQ%``, so millions of
    light queues do not make millions of stats items."""

    def __init__(self, cluster_name: str, *, now: Callable[[], int], lmq_stats: bool = False) -> None:
        self.lmq_stats = lmq_stats
        BrokerStatsManager.__init__(self, cluster_name, now=now)

    def _adjusted(self, name: str) -> str:
        return LMQ_PREFIX if not self.lmq_stats and is_lmq(name) else name

    def on_get(self, topic: str, group: str, msgs: int, size: int, *, system: bool = False) -> None:
        BrokerStatsManager.on_get(self, self._adjusted(topic), self._adjusted(group), msgs, size, system=system)

    def tps_group_get_nums(self, group: str, topic: str) -> float:
        return BrokerStatsManager.tps_group_get_nums(self, self._adjusted(group), self._adjusted(topic))
