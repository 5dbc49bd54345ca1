"""Orderly (FIFO) pops: which messages of a queue a group holds, until when, and how often each
was handed out. A queue stays blocked while any message of the last orderly pop is neither acked
nor visible again; an ack moves the group's offset to the first unacked message.

Java: ``broker/pop/orderly/QueueLevelConsumerManager`` and its ``OrderInfo``, persisted as
``config/consumerOrderInfo.json`` (``{"table":{"topic@group":{queueId:{...}}}}``, OrderInfo
with its short names: ``popTime``, ``i`` invisible time, ``o`` offsets as first + deltas, ``ot``
per-offset next visible time, ``oc`` per-offset consumed count, ``l`` last consume time, ``cm``
acked bits, ``a`` attempt id).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyrmq.broker.config_manager import ConfigManager
from pyrmq.protocol.fastjson import FastJsonBody
from pyrmq.protocol.headers.pop import OffsetInfo

#: Java CLEAN_SPAN_FROM_LAST: an order info untouched for a day is dropped
CLEAN_SPAN_FROM_LAST_MS = 24 * 3600 * 1000


@dataclass(slots=True)
class OrderInfo(FastJsonBody):
    pop_time: int = 0
    invisible_time: int | None = field(default=None, metadata={"json": "i"})
    #: a tuple when written: fastjson2 keeps this List<Long> on one line, as pyrmq's writer does tuples
    offset_list: list[int] | tuple[int, ...] | None = field(default=None, metadata={"json": "o"})
    offset_next_visible_time: dict[int, int] | None = field(default=None, metadata={"json": "ot"})
    offset_consumed_count: dict[int, int] | None = field(default=None, metadata={"json": "oc"})
    last_consume_timestamp: int = field(default=0, metadata={"json": "l"})
    commit_offset_bit: int = field(default=0, metadata={"json": "cm"})
    attempt_id: str | None = field(default=None, metadata={"json": "a"})

    @staticmethod
    def build_offset_list(offsets: list[int]) -> list[int]:
        if len(offsets) == 1:
            return list(offsets)
        first = offsets[0]
        return [first] + [o - first for o in offsets[1:]]

    def queue_offset(self, index: int) -> int:
        assert self.offset_list is not None
        return self.offset_list[0] if index == 0 else self.offset_list[0] + self.offset_list[index]

    def is_not_ack(self, index: int) -> bool:
        return not self.commit_offset_bit & (1 << index)

    def next_visible_time(self, index: int) -> int:
        t = (self.offset_next_visible_time or {}).get(self.queue_offset(index))
        return t if t is not None else self.pop_time + (self.invisible_time or 0)

    def need_block(self, attempt_id: str | None, current_invisible_time: int, now_ms: int) -> bool:
        if not self.offset_list:
            return False
        if self.attempt_id is not None and self.attempt_id == attempt_id:
            return False  # the same attempt asks again (a retried request)
        if not self.invisible_time or self.invisible_time <= 0:
            self.invisible_time = current_invisible_time
        return any(self.is_not_ack(i) and now_ms < self.next_visible_time(i) for i in range(len(self.offset_list)))

    def next_offset(self) -> int:
        if not self.offset_list:
            return -2
        for i in range(len(self.offset_list)):
            if self.is_not_ack(i):
                return self.queue_offset(i)
        return self.queue_offset(len(self.offset_list) - 1) + 1

    def merge_offset_consumed_count(self, pre: OrderInfo) -> None:
        """A message handed out again counts one more consumption (Java mergeOffsetConsumedCount)."""
        prev = pre.offset_consumed_count or {}
        if pre.attempt_id is not None and pre.attempt_id == self.attempt_id:
            self.offset_consumed_count = dict(prev)
            return
        pre_offsets = {pre.queue_offset(i) for i in range(len(pre.offset_list or []))}
        counts: dict[int, int] = {}
        for i in range(len(self.offset_list or [])):
            qo = self.queue_offset(i)
            if qo in pre_offsets:
                counts[qo] = prev.get(qo, 0) + 1
        self.offset_consumed_count = counts


def _sorted_maps(oi: OrderInfo) -> OrderInfo:
    return dataclasses.replace(
        oi,
        offset_list=None if oi.offset_list is None else tuple(oi.offset_list),
        offset_next_visible_time=None
        if oi.offset_next_visible_time is None
        else dict(sorted(oi.offset_next_visible_time.items())),
        offset_consumed_count=None
        if oi.offset_consumed_count is None
        else dict(sorted(oi.offset_consumed_count.items())),
    )


@dataclass(slots=True)
class ConsumerOrderInfoWrapper(FastJsonBody):
    """The file's tree; Java also writes two getters of the manager (orderInfoCount = topic@group
    entries, orderedConsumptionLevel), never read back."""

    table: dict[str, dict[int, OrderInfo]] = field(default_factory=dict)
    order_info_count: int | None = None
    ordered_consumption_level: str | None = None


class ConsumerOrderInfoManager(ConfigManager):
    wrapper_class = ConsumerOrderInfoWrapper

    def __init__(self, path: str | None, *, now: Callable[[], int]) -> None:
        self.path = path
        self.now = now
        self.table: dict[str, dict[int, OrderInfo]] = {}

    def decode_wrapper(self, wrapper: ConsumerOrderInfoWrapper) -> None:
        self.table = wrapper.table

    def build_serialize_wrapper(self) -> ConsumerOrderInfoWrapper:
        # Java's ConcurrentHashMap<Integer, OrderInfo> and HashMap<Long, V> iterate small keys ascending
        table = {k: {q: _sorted_maps(oi) for q, oi in sorted(v.items())} for k, v in self.table.items()}
        return ConsumerOrderInfoWrapper(table, len(table), "QUEUE")

    def _get(self, topic: str, group: str, queue_id: int) -> OrderInfo | None:
        return self.table.get(f"{topic}@{group}", {}).get(queue_id)

    def update(
        self,
        attempt_id: str | None,
        is_retry: bool,
        topic: str,
        group: str,
        queue_id: int,
        pop_time: int,
        invisible_time: int,
        offsets: list[int],
        info: OffsetInfo,
    ) -> None:
        """Record an orderly pop and add the consumed counts to the answer's orderCountInfo."""
        qs = self.table.setdefault(f"{topic}@{group}", {})
        new = OrderInfo(
            pop_time=pop_time,
            invisible_time=invisible_time,
            offset_list=OrderInfo.build_offset_list(offsets),
            last_consume_timestamp=self.now(),
            attempt_id=attempt_id,
        )
        old = qs.get(queue_id)
        if old is not None:
            new.merge_offset_consumed_count(old)
        qs[queue_id] = new
        counts = new.offset_consumed_count
        min_times = 0
        if counts is not None:
            min_times = min(counts.values(), default=2**31 - 1)
            for qo, times in counts.items():
                info.add_offset_order_count(topic, queue_id, qo, times)
            if len(counts) != len(new.offset_list or []):
                min_times = 0  # some messages are new
        info.add_queue_order_count(topic, queue_id, min_times)  # what older clients read

    def check_block(self, attempt_id: str | None, topic: str, group: str, queue_id: int, invisible_time: int) -> bool:
        oi = self._get(topic, group, queue_id)
        return oi is not None and oi.need_block(attempt_id, invisible_time, self.now())

    def clear_block(self, topic: str, group: str, queue_id: int) -> None:
        self.table.get(f"{topic}@{group}", {}).pop(queue_id, None)

    def commit_and_next(self, topic: str, group: str, queue_id: int, queue_offset: int, pop_time: int) -> int:
        """Mark ``queue_offset`` acked; the group's next offset, -1 for an offset not popped, -2 for
        an ack of an older pop (Java commitAndNext)."""
        oi = self._get(topic, group, queue_id)
        if oi is None:
            return queue_offset + 1
        if not oi.offset_list:
            return -1
        if pop_time != oi.pop_time:
            return -2
        for i in range(len(oi.offset_list)):
            if oi.queue_offset(i) == queue_offset:
                oi.commit_offset_bit |= 1 << i
                return oi.next_offset()
        return -1

    def update_next_visible_time(
        self, topic: str, group: str, queue_id: int, queue_offset: int, pop_time: int, next_visible_time: int
    ) -> None:
        oi = self._get(topic, group, queue_id)
        if oi is None or pop_time != oi.pop_time:
            return
        if oi.offset_next_visible_time is None:
            oi.offset_next_visible_time = {}
        oi.offset_next_visible_time[queue_offset] = next_visible_time

    def auto_clean(self, topic_exists: Callable[[str], Any], group_exists: Callable[[str], bool]) -> None:
        now = self.now()
        for key, qs in list(self.table.items()):
            topic, _, group = key.partition("@")
            tc = topic_exists(topic)
            if tc is None or not group_exists(group) or not qs:
                del self.table[key]
                continue
            for qid, oi in list(qs.items()):
                if qid >= tc.read_queue_nums or now - oi.last_consume_timestamp > CLEAN_SPAN_FROM_LAST_MS:
                    del qs[qid]
