"""How many popped messages wait for their ack, per topic, group and queue: the in-flight part of
a POP group's lag in the metrics. Java: ``broker/processor/PopInflightMessageCounter``.

Pops add, acks and revived messages take away, offset resets and deletions clear. Kept in memory
only, as in Java: a message popped before the broker started is never taken away (its pop time
is older than the start), so the count restarts at 0 with the broker.
"""

from __future__ import annotations


class PopInflightMessageCounter:
    def __init__(self, should_start_time: int) -> None:
        #: Java BrokerController#shouldStartTime: pops older than this predate the counter
        self.should_start_time = should_start_time
        self._counts: dict[tuple[str, str], dict[int, int]] = {}

    def increment(self, topic: str, group: str, queue_id: int, num: int) -> None:
        if num <= 0:
            return
        queues = self._counts.setdefault((topic, group), {})
        queues[queue_id] = queues.get(queue_id, 0) + num

    def decrement(self, topic: str, group: str, queue_id: int, delta: int, pop_time: int) -> None:
        """An ack (``delta`` messages) or a revived message of a pop at ``pop_time``."""
        if pop_time < self.should_start_time:
            return
        queues = self._counts.get((topic, group))
        if queues is None or queue_id not in queues:
            return
        n = queues[queue_id] - delta
        if n > 0:
            queues[queue_id] = n
            return
        del queues[queue_id]
        if not queues:
            del self._counts[(topic, group)]

    def clear(self, topic: str, group: str, queue_id: int) -> None:
        """An orderly pop found the queue free again, or the group's offset was reset."""
        queues = self._counts.get((topic, group))
        if queues is not None:
            queues.pop(queue_id, None)
            if not queues:
                del self._counts[(topic, group)]

    def clear_group(self, group: str) -> None:
        for key in [k for k in self._counts if k[1] == group]:
            del self._counts[key]

    def clear_topic(self, topic: str) -> None:
        for key in [k for k in self._counts if k[0] == topic]:
            del self._counts[key]

    def get(self, topic: str, group: str, queue_id: int) -> int:
        return self._counts.get((topic, group), {}).get(queue_id, 0)
