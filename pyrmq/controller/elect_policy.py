"""Who becomes master. Java: ``controller/elect/impl/DefaultElectPolicy``.

Candidates are tried in the SyncStateSet first, then (only when
enableElectUncleanMaster hands them in) among all replicas. Among the alive
ones: the old master if it is still alive and nobody else was asked for; else
the designated broker if alive (and nobody if not); else the best by
(epoch desc, maxOffset desc, electionPriority asc), ties to the lowest id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from pyrmq.controller.heartbeat import BrokerLiveInfo

BrokerValidPredicate = Callable[[str | None, str, int], bool]
BrokerLiveInfoGetter = Callable[[str | None, str, int], "BrokerLiveInfo | None"]


class ElectPolicy(Protocol):
    def elect(
        self,
        cluster_name: str | None,
        broker_name: str,
        sync_state_brokers: set[int] | None,
        all_replica_brokers: set[int] | None,
        old_master: int | None,
        prefer_broker_id: int | None,
    ) -> int | None: ...


class DefaultElectPolicy:
    def __init__(
        self,
        valid_predicate: BrokerValidPredicate | None = None,
        live_info_getter: BrokerLiveInfoGetter | None = None,
    ) -> None:
        self.valid_predicate = valid_predicate
        self.live_info_getter = live_info_getter

    def elect(
        self,
        cluster_name: str | None,
        broker_name: str,
        sync_state_brokers: set[int] | None,
        all_replica_brokers: set[int] | None,
        old_master: int | None,
        prefer_broker_id: int | None,
    ) -> int | None:
        if sync_state_brokers is not None:
            chosen = self._try_elect(cluster_name, broker_name, sync_state_brokers, old_master, prefer_broker_id)
            if chosen is not None:
                return chosen
        if all_replica_brokers is not None:
            return self._try_elect(cluster_name, broker_name, all_replica_brokers, old_master, prefer_broker_id)
        return None

    def _try_elect(
        self,
        cluster_name: str | None,
        broker_name: str,
        brokers: Iterable[int],
        old_master: int | None,
        prefer_broker_id: int | None,
    ) -> int | None:
        candidates = sorted(brokers)
        if self.valid_predicate is not None:
            candidates = [b for b in candidates if self.valid_predicate(cluster_name, broker_name, b)]
        if not candidates:
            return None
        if old_master in candidates and (prefer_broker_id is None or prefer_broker_id == old_master):
            return old_master
        if prefer_broker_id is not None:
            return prefer_broker_id if prefer_broker_id in candidates else None
        if self.live_info_getter is not None:
            infos = [i for i in (self.live_info_getter(cluster_name, broker_name, b) for b in candidates) if i]
            if infos:
                # sorted() is stable: equal keys keep ascending id order, like Java's TreeSet keeps the first
                best = sorted(infos, key=lambda i: (-i.epoch, -i.max_offset, i.election_priority))[0]
                return best.broker_id
        return candidates[0]
