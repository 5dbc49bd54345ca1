"""Producer and consumer registrations per group, fed by heartbeats.

Java: ``broker/client/{ClientChannelInfo,ConsumerGroupInfo,ConsumerManager,
ProducerManager,DefaultConsumerIdsChangeListener,ClientHousekeepingService}``.
A client is known by its connection (channel); a heartbeat refreshes
``last_update_timestamp``; channels silent for ``channelExpiredTimeout``
(120 s) are dropped and closed by ``scan_not_active_channel``, and a closed
connection is dropped at once (``do_channel_close_event``). When a consumer
group's membership or subscriptions change, ``on_ids_changed(group, channels)``
runs (the controller sends NOTIFY_CONSUMER_IDS_CHANGED one-way to each).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyrmq.protocol.bodies.broker import SubscriptionData

log = logging.getLogger("pyrmq.broker.client")

CHANNEL_EXPIRED_TIMEOUT_MS = 120_000


@dataclass(slots=True, eq=False)
class ClientChannelInfo:
    channel: Any
    client_id: str
    language: int = 0
    version: int = 0
    last_update_timestamp: int = 0


@dataclass(slots=True, eq=False)
class ConsumerGroupInfo:
    group_name: str
    consume_type: str | None = None
    message_model: str | None = None
    consume_from_where: str | None = None
    channel_info_table: dict[Any, ClientChannelInfo] = field(default_factory=dict)
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)
    last_update_timestamp: int = 0

    def all_client_ids(self) -> list[str]:
        return [c.client_id for c in self.channel_info_table.values()]

    def all_channels(self) -> list[Any]:
        return list(self.channel_info_table)

    def update_channel(
        self, info: ClientChannelInfo, consume_type, message_model, consume_from_where, now: int
    ) -> bool:
        """True when the channel is new to the group (Java ConsumerGroupInfo#updateChannel)."""
        self.consume_type, self.message_model, self.consume_from_where = consume_type, message_model, consume_from_where
        old = self.channel_info_table.get(info.channel)
        updated = False
        if old is None:
            self.channel_info_table[info.channel] = info
            updated = True
        elif old.client_id != info.client_id:
            log.error(
                "ConsumerGroupInfo: %s channel exists in broker, but clientId is not the same one, old=%s new=%s",
                self.group_name,
                old.client_id,
                info.client_id,
            )
            self.channel_info_table[info.channel] = info
        else:
            old.last_update_timestamp = now
        self.last_update_timestamp = now
        return updated

    def update_subscription(self, sub_list: list[SubscriptionData], now: int) -> bool:
        """True when a topic was added, removed or a newer subVersion came (Java updateSubscription)."""
        updated = False
        topics = set()
        for sub in sub_list:
            if sub.topic is None:
                continue
            topics.add(sub.topic)
            old = self.subscription_table.get(sub.topic)
            if old is None:
                self.subscription_table[sub.topic] = sub
                updated = True
            elif sub.sub_version > old.sub_version:
                self.subscription_table[sub.topic] = sub
        for t in list(self.subscription_table):
            if t not in topics:
                del self.subscription_table[t]
                updated = True
        self.last_update_timestamp = now
        return updated

    def find_subscription_data(self, topic: str) -> SubscriptionData | None:
        return self.subscription_table.get(topic)


IdsChangedListener = Callable[[str, list[Any]], None]


class ConsumerManager:
    def __init__(
        self,
        *,
        now: Callable[[], int],
        on_ids_changed: IdsChangedListener | None = None,
        channel_expired_timeout_ms: int = CHANNEL_EXPIRED_TIMEOUT_MS,
    ) -> None:
        self.now = now
        self.on_ids_changed = on_ids_changed
        self.channel_expired_timeout_ms = channel_expired_timeout_ms
        self.consumer_table: dict[str, ConsumerGroupInfo] = {}
        #: Java consumerCompensationTable: what pulls told about groups without a heartbeat (pull
        #: consumers, consumers gone); read by the lag metrics, never expired (as in Java 5.5.0)
        self.compensation_table: dict[str, ConsumerGroupInfo] = {}

    def get_consumer_group_info(self, group: str, from_compensation_table: bool = False) -> ConsumerGroupInfo | None:
        info = self.consumer_table.get(group)
        if info is None and from_compensation_table:
            info = self.compensation_table.get(group)
        return info

    def compensate_basic_consumer_info(self, group: str, consume_type: str, message_model: str) -> None:
        info = self.compensation_table.get(group)
        if info is None:
            info = self.compensation_table[group] = ConsumerGroupInfo(group)
        info.consume_type, info.message_model = consume_type, message_model

    def compensate_subscribe_data(self, group: str, topic: str, sub: SubscriptionData) -> None:
        info = self.compensation_table.get(group)
        if info is None:
            info = self.compensation_table[group] = ConsumerGroupInfo(group)
        info.subscription_table[topic] = sub

    def find_subscription_data(self, group: str, topic: str) -> SubscriptionData | None:
        info = self.consumer_table.get(group)
        return info.find_subscription_data(topic) if info else None

    def find_subscription_data_count(self, group: str) -> int:
        info = self.consumer_table.get(group)
        return len(info.subscription_table) if info else 0

    def query_topic_consume_by_who(self, topic: str) -> set[str]:
        """Groups with a live subscription to ``topic`` (Java ConsumerManager#queryTopicConsumeByWho)."""
        return {g for g, info in self.consumer_table.items() if topic in info.subscription_table}

    def find_channel(self, group: str, client_id: str) -> ClientChannelInfo | None:
        info = self.consumer_table.get(group)
        if info is None:
            return None
        for c in info.channel_info_table.values():
            if c.client_id == client_id:
                return c
        return None

    def _notify(self, group: str, info: ConsumerGroupInfo | None) -> None:
        if self.on_ids_changed is None:
            return
        channels = info.all_channels() if info is not None else []
        try:
            self.on_ids_changed(group, channels)
        except Exception:
            log.exception("consumer ids changed listener failed")

    def register_consumer(
        self,
        group: str,
        info: ClientChannelInfo,
        consume_type,
        message_model,
        consume_from_where,
        sub_list: list[SubscriptionData],
        notify: bool = True,
    ) -> bool:
        now = self.now()
        g = self.consumer_table.get(group)
        if g is None:
            g = self.consumer_table[group] = ConsumerGroupInfo(group, consume_type, message_model, consume_from_where)
        r1 = g.update_channel(info, consume_type, message_model, consume_from_where, now)
        r2 = g.update_subscription(sub_list, now)
        if (r1 or r2) and notify:
            self._notify(group, g)
        return r1 or r2

    def unregister_consumer(self, group: str, channel: Any, notify: bool = True) -> None:
        g = self.consumer_table.get(group)
        if g is None:
            return
        removed = g.channel_info_table.pop(channel, None)
        if not g.channel_info_table:
            del self.consumer_table[group]
            log.info("unregister consumer ok, no any connection, and remove consumer group, %s", group)
        if removed is not None and notify:
            self._notify(group, self.consumer_table.get(group))

    def do_channel_close_event(self, channel: Any) -> bool:
        removed_any = False
        for group, g in list(self.consumer_table.items()):
            if g.channel_info_table.pop(channel, None) is not None:
                removed_any = True
                if not g.channel_info_table:
                    del self.consumer_table[group]
                self._notify(group, self.consumer_table.get(group))
        return removed_any

    def scan_not_active_channel(self) -> list[Any]:
        """Drop channels silent longer than the expiry; returns them (the caller closes them)."""
        now = self.now()
        expired = []
        for group, g in list(self.consumer_table.items()):
            for ch, info in list(g.channel_info_table.items()):
                if now - info.last_update_timestamp > self.channel_expired_timeout_ms:
                    log.warning(
                        "SCAN: remove expired channel from ConsumerManager consumerTable. channel=%s, consumerGroup=%s",
                        getattr(ch, "remote_addr", ch),
                        group,
                    )
                    del g.channel_info_table[ch]
                    expired.append(ch)
            if not g.channel_info_table:
                del self.consumer_table[group]
        return expired


class ProducerManager:
    def __init__(self, *, now: Callable[[], int], channel_expired_timeout_ms: int = CHANNEL_EXPIRED_TIMEOUT_MS) -> None:
        self.now = now
        self.channel_expired_timeout_ms = channel_expired_timeout_ms
        self.group_channel_table: dict[str, dict[Any, ClientChannelInfo]] = {}
        self.client_channel_table: dict[str, Any] = {}

    def register_producer(self, group: str, info: ClientChannelInfo) -> None:
        chans = self.group_channel_table.setdefault(group, {})
        old = chans.get(info.channel)
        if old is None:
            chans[info.channel] = info
            self.client_channel_table[info.client_id] = info.channel
        else:
            old.last_update_timestamp = self.now()

    def unregister_producer(self, group: str, channel: Any) -> None:
        chans = self.group_channel_table.get(group)
        if chans is None:
            return
        info = chans.pop(channel, None)
        if info is not None:
            self.client_channel_table.pop(info.client_id, None)
        if not chans:
            del self.group_channel_table[group]

    def do_channel_close_event(self, channel: Any) -> None:
        for group in list(self.group_channel_table):
            self.unregister_producer(group, channel)

    def find_channel(self, client_id: str) -> Any | None:
        return self.client_channel_table.get(client_id)

    def get_available_channel(self, group: str) -> Any | None:
        chans = self.group_channel_table.get(group)
        if not chans:
            return None
        for ch in chans:
            if not getattr(ch, "closed", False):
                return ch
        return None

    def scan_not_active_channel(self) -> list[Any]:
        now = self.now()
        expired = []
        for group, chans in list(self.group_channel_table.items()):
            for ch, info in list(chans.items()):
                if now - info.last_update_timestamp > self.channel_expired_timeout_ms:
                    del chans[ch]
                    self.client_channel_table.pop(info.client_id, None)
                    expired.append(ch)
            if not chans:
                del self.group_channel_table[group]
        return expired
