"""The broker-wide parts of POP, built once and given to the POP processors by name: the revive
log and queue locks, the order info of FIFO pops, the two long-polling services (pops and
notifications) and the revive service. ``BrokerController`` calls load/start/persist/shutdown
and forwards dispatches and closed channels here.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

from pyrmq.broker.pop.inflight import PopInflightMessageCounter
from pyrmq.broker.pop.long_polling import PopLongPollingService
from pyrmq.broker.pop.order_info import ConsumerOrderInfoManager
from pyrmq.broker.pop.revive_log import ReviveLog
from pyrmq.broker.pop.revive_service import PopReviveService
from pyrmq.protocol.command import RemotingCommand

Rerun = Callable[[Any, RemotingCommand], Awaitable[RemotingCommand | None]]


class PopServices:
    def __init__(
        self,
        *,
        config,
        message_store,
        topic_config_manager,
        subscription_group_manager,
        consumer_offset_manager,
        timer_caught_up: Callable[[], bool],
        now: Callable[[], int],
        rerun_pop: Rerun,
        rerun_notification: Rerun,
    ) -> None:
        self.config = config
        cfg_dir = os.path.join(config.store.store_path_root_dir, "config")
        self.consumer_order_info_manager = ConsumerOrderInfoManager(
            os.path.join(cfg_dir, "consumerOrderInfo.json"), now=now
        )
        self.revive_log = ReviveLog(config=config, message_store=message_store, now=now)
        self.pop_inflight_message_counter = PopInflightMessageCounter(now())
        self.pop_long_polling_service = PopLongPollingService(config=config, now=now, rerun=rerun_pop)
        self.notification_long_polling_service = PopLongPollingService(config=config, now=now, rerun=rerun_notification)
        self.revive_service = PopReviveService(
            config=config,
            message_store=message_store,
            topic_config_manager=topic_config_manager,
            subscription_group_manager=subscription_group_manager,
            consumer_offset_manager=consumer_offset_manager,
            revive_log=self.revive_log,
            inflight=self.pop_inflight_message_counter,
            timer_caught_up=timer_caught_up,
            now=now,
        )
        self.revive_service.should_run = config.is_master  # Java: brokerId == 0 until told otherwise
        self._topic_config_manager = topic_config_manager
        self._subscription_group_manager = subscription_group_manager

    def dependencies(self) -> dict[str, Any]:
        return {
            "revive_log": self.revive_log,
            "pop_inflight_message_counter": self.pop_inflight_message_counter,
            "consumer_order_info_manager": self.consumer_order_info_manager,
            "pop_long_polling_service": self.pop_long_polling_service,
            "notification_long_polling_service": self.notification_long_polling_service,
        }

    def load(self) -> None:
        self.consumer_order_info_manager.load()

    def start(self) -> None:
        """The revive task; whether it revives follows the special services (a master, or a slave
        acting as one; Java AckMessageProcessor#setPopReviveServiceStatus)."""
        self.revive_service.start()

    def persist(self) -> None:
        self.consumer_order_info_manager.auto_clean(
            self._topic_config_manager.select_topic_config, self._subscription_group_manager.contains
        )
        self.consumer_order_info_manager.persist()

    def on_dispatched(self, topic: str, queue_id: int) -> None:
        self.pop_long_polling_service.notify_threadsafe(topic, queue_id)
        self.notification_long_polling_service.notify_threadsafe(topic, queue_id)

    def drop_channel(self, channel: Any) -> None:
        self.pop_long_polling_service.drop_channel(channel)
        self.notification_long_polling_service.drop_channel(channel)

    async def shutdown(self) -> None:
        await self.revive_service.shutdown()
        self.pop_long_polling_service.shutdown()
        self.notification_long_polling_service.shutdown()
