"""Which controller-mode brokers are alive, and what they last reported.

Java: ``controller/impl/heartbeat/DefaultBrokerHeartbeatManager``,
``BrokerLiveInfo`` and ``BrokerIdentityInfo``. Sans-IO: the clock is
injected, the connection is an opaque object, and ``scan_not_active_broker``
/ ``on_broker_channel_close`` return the brokers that just went inactive; the
caller closes their connections and runs the inactive listener (the
controller's: re-elect when it was the master).

A broker is alive while ``lastUpdateTimestamp + heartbeatTimeoutMillis >= now``.
A heartbeat only moves (epoch, maxOffset, confirmOffset) forward: a report
with a lower epoch, or the same epoch and no higher offset, keeps the old
values (Java does the same, so a lagging heartbeat cannot demote a candidate).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyrmq.common.clock import now_ms

log = logging.getLogger("pyrmq.controller")

#: Java RouteInfoManager.DEFAULT_BROKER_CHANNEL_EXPIRED_TIME, used when a heartbeat has no timeout
DEFAULT_BROKER_CHANNEL_EXPIRED_TIME = 1000 * 60 * 2
#: Java Integer.MAX_VALUE: no election priority given
LOWEST_PRIORITY = 2**31 - 1


@dataclass(frozen=True, slots=True)
class BrokerIdentityInfo:
    cluster_name: str | None
    broker_name: str
    broker_id: int


@dataclass(slots=True)
class BrokerLiveInfo:
    broker_name: str
    broker_addr: str
    broker_id: int
    last_update_timestamp: int
    heartbeat_timeout_millis: int
    channel: Any
    epoch: int
    max_offset: int
    election_priority: int
    confirm_offset: int = 0


class BrokerHeartbeatManager:
    def __init__(self, *, clock: Callable[[], int] = now_ms) -> None:
        self.clock = clock
        self.broker_live_table: dict[BrokerIdentityInfo, BrokerLiveInfo] = {}

    def on_broker_heartbeat(
        self,
        cluster_name: str | None,
        broker_name: str,
        broker_addr: str,
        broker_id: int | None,
        timeout_millis: int | None,
        channel: Any,
        epoch: int | None,
        max_offset: int | None,
        confirm_offset: int | None,
        election_priority: int | None,
    ) -> None:
        real_id = -1 if broker_id is None else broker_id
        identity = BrokerIdentityInfo(cluster_name, broker_name, real_id)
        real_epoch = -1 if epoch is None else epoch
        real_max = -1 if max_offset is None else max_offset
        real_confirm = -1 if confirm_offset is None else confirm_offset
        timeout = DEFAULT_BROKER_CHANNEL_EXPIRED_TIME if timeout_millis is None else timeout_millis
        priority = LOWEST_PRIORITY if election_priority is None else election_priority
        prev = self.broker_live_table.get(identity)
        now = self.clock()
        if prev is None:
            self.broker_live_table[identity] = BrokerLiveInfo(
                broker_name, broker_addr, real_id, now, timeout, channel, real_epoch, real_max, priority
            )
            log.info("new broker registered, %s, brokerId:%d", identity, real_id)
            return
        prev.last_update_timestamp = now
        prev.heartbeat_timeout_millis = timeout
        prev.election_priority = priority
        if real_epoch > prev.epoch or (real_epoch == prev.epoch and real_max > prev.max_offset):
            prev.epoch, prev.max_offset, prev.confirm_offset = real_epoch, real_max, real_confirm

    def is_broker_active(self, cluster_name: str | None, broker_name: str, broker_id: int | None) -> bool:
        if broker_id is None:
            return False
        info = self.broker_live_table.get(BrokerIdentityInfo(cluster_name, broker_name, broker_id))
        return info is not None and info.last_update_timestamp + info.heartbeat_timeout_millis >= self.clock()

    def get_broker_live_info(self, cluster_name: str | None, broker_name: str, broker_id: int) -> BrokerLiveInfo | None:
        return self.broker_live_table.get(BrokerIdentityInfo(cluster_name, broker_name, broker_id))

    def scan_not_active_broker(self) -> list[tuple[BrokerIdentityInfo, BrokerLiveInfo]]:
        """Drop brokers silent for longer than their timeout; the caller closes their channels."""
        now = self.clock()
        gone = [
            (k, v)
            for k, v in self.broker_live_table.items()
            if now - v.last_update_timestamp > v.heartbeat_timeout_millis
        ]
        for k, v in gone:
            del self.broker_live_table[k]
            log.warning(
                "The broker channel %s expired, brokerInfo %s, expired %dms",
                v.broker_addr,
                k,
                v.heartbeat_timeout_millis,
            )
        return gone

    def on_broker_channel_close(self, channel: Any) -> BrokerIdentityInfo | None:
        """The connection a broker heartbeats on closed: that broker is inactive at once."""
        for k, v in self.broker_live_table.items():
            if v.channel is channel:
                log.info(
                    "Channel %s inactive, broker %s, addr:%s, id:%d", channel, v.broker_name, v.broker_addr, v.broker_id
                )
                del self.broker_live_table[k]
                return k
        return None
