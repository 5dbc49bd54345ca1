"""Builds a broker's slave-acting-master parts (Java BrokerController's constructor and
initialize, enableSlaveActingMaster): the escape bridge the delay levels and the timer deliver
through, the member-group view (ActingMasterService) and the pre-online step. Takes the broker
without importing its module (the layering test forbids the cycle).
"""

from __future__ import annotations

from typing import Any

from pyrmq.broker.acting_master import ActingMasterService, SpecialServices
from pyrmq.broker.escape_bridge import EscapeBridge
from pyrmq.broker.pre_online import BrokerPreOnlineService


def wire_acting_master(broker: Any) -> tuple[EscapeBridge, ActingMasterService, BrokerPreOnlineService | None]:
    escape_bridge = EscapeBridge(
        config=broker.config, message_store=broker.message_store, client=broker.outer_client, now=broker.now
    )
    cfg, pull = broker.config, broker.pull_processor
    if cfg["enableSlaveActingMaster"]:
        # only an acting slave escapes; everyone else keeps the services' own local puts
        broker.schedule_message_service.put_message = escape_bridge.put_message
        broker.timer_message_store.put_message = escape_bridge.put_message
        broker.transactional_message_service.escape_message = escape_bridge.escape_message
        broker.transactional_message_service.acting_slave = lambda: (
            not cfg.is_master and pull.min_broker_id_in_group == int(cfg["brokerId"])
        )
    acting = ActingMasterService(
        config=broker.config,
        client=broker.outer_client,
        broker_addr=lambda: broker.broker_addr,
        topic_data_version=lambda: broker.topic_config_manager.data_version,
        special_services=SpecialServices(
            config=broker.config,
            schedule_message_service=broker.schedule_message_service,
            timer_message_store=broker.timer_message_store,
            transactional_message_check_service=broker.transactional_message_check_service,
            pop_revive_service=broker.pop_services.revive_service,
        ),
        pull_processor=broker.pull_processor,
        slave_synchronize=broker.slave_synchronize,
        ha_client=lambda: broker.ha_client,
        register_broker_all=broker.register_broker_all,
    )
    pre_online = None
    if broker.config["enableSlaveActingMaster"] and not broker.config["skipPreOnline"]:
        pre_online = BrokerPreOnlineService(
            config=broker.config,
            client=broker.outer_client,
            acting_master_service=acting,
            ha_service=lambda: broker.ha_service,
            consumer_offset_manager=broker.consumer_offset_manager,
            schedule_message_service=broker.schedule_message_service,
            timer_message_store=broker.timer_message_store,
            max_phy_offset=broker.message_store.get_max_phy_offset,
        )
    return escape_bridge, acting, pre_online
