"""Queue locks for orderly consumption. Java: ``broker/client/rebalance/RebalanceLockManager``.

A lock is held by a clientId per (group, message queue) and expires
``lock_max_live_time_ms`` (60 s, ``rocketmq.broker.rebalance.lockMaxLiveTime``)
after its last renewal; an expired lock may be taken by another client.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pyrmq.protocol.bodies.broker import MessageQueue

log = logging.getLogger("pyrmq.broker.lock")

REBALANCE_LOCK_MAX_LIVE_TIME = int(os.environ.get("rocketmq.broker.rebalance.lockMaxLiveTime", "60000"))


@dataclass(slots=True)
class LockEntry:
    client_id: str
    last_update_timestamp: int


class RebalanceLockManager:
    def __init__(self, *, now: Callable[[], int], lock_max_live_time_ms: int = REBALANCE_LOCK_MAX_LIVE_TIME) -> None:
        self.now = now
        self.lock_max_live_time_ms = lock_max_live_time_ms
        self.mq_lock_table: dict[str, dict[MessageQueue, LockEntry]] = {}

    def _expired(self, e: LockEntry, now: int) -> bool:
        return now - e.last_update_timestamp > self.lock_max_live_time_ms

    def is_locked(self, group: str, mq: MessageQueue, client_id: str) -> bool:
        e = self.mq_lock_table.get(group, {}).get(mq)
        if e is None or e.client_id != client_id:
            return False
        now = self.now()
        if self._expired(e, now):
            return False
        e.last_update_timestamp = now
        return True

    def try_lock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> set[MessageQueue]:
        """Queues now held by ``client_id``: free, expired or already its own."""
        now = self.now()
        table = self.mq_lock_table.setdefault(group, {})
        locked: set[MessageQueue] = set()
        for mq in mqs:
            e = table.get(mq)
            if e is None or e.client_id == client_id or self._expired(e, now):
                if e is not None and e.client_id != client_id:
                    log.warning("tryLockBatch: remove expired lock %s of %s, new holder %s", mq, e.client_id, client_id)
                table[mq] = LockEntry(client_id, now)
                locked.add(mq)
        return locked

    def unlock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> None:
        table = self.mq_lock_table.get(group)
        if not table:
            return
        for mq in mqs:
            e = table.get(mq)
            if e is not None and e.client_id == client_id:
                del table[mq]

    def is_lock_all_expired(self, group: str) -> bool:
        now = self.now()
        return all(self._expired(e, now) for e in self.mq_lock_table.get(group, {}).values())
