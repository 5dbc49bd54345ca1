"""NOTIFY_MIN_BROKER_ID_CHANGE (905) and EXCHANGE_BROKER_HA_INFO (906): slave acting master.

Java: ``broker/processor/AdminBrokerProcessor#notifyMinBrokerIdChange`` (a name server with
``notifyMinBrokerIdChanged`` tells a group's brokers its lowest live id) and
``#updateBrokerHaInfo`` (a returning master tells its slaves where to replicate from; asked
without an address, a master answers with its own HA address, initial max offset and address).
"""

from __future__ import annotations

import logging
from typing import Any

from pyrmq.common.constants import MASTER_ID
from pyrmq.protocol.codes import RequestCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import ExchangeHAInfoRequestHeader, NotifyMinBrokerIdChangeRequestHeader
from pyrmq.remoting.server import RequestContext, handles

log = logging.getLogger("pyrmq.broker.acting")


class ActingMasterProcessor:
    def __init__(self, *, config: Any, message_store: Any, acting_master_service: Any) -> None:
        self.config = config
        self.message_store = message_store
        self.acting_master_service = acting_master_service

    @handles(RequestCode.NOTIFY_MIN_BROKER_ID_CHANGE)
    async def notify_min_broker_id_change(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = NotifyMinBrokerIdChangeRequestHeader.from_ext_fields(cmd.ext_fields)
        service = self.acting_master_service
        log.warning("min broker id changed, prev %s, new %s", service.view.min_broker_id, h.min_broker_id)
        if h.min_broker_id is not None:  # Java would unbox a missing id into a NullPointerException
            await service.notify_min_broker_id_change(
                h.min_broker_id, h.min_broker_addr, h.offline_broker_addr, h.ha_broker_addr
            )
        return cmd.make_response()

    @handles(RequestCode.EXCHANGE_BROKER_HA_INFO)
    async def exchange_broker_ha_info(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = ExchangeHAInfoRequestHeader.from_ext_fields(cmd.ext_fields)
        if h.master_ha_address is not None:
            client = self.acting_master_service.ha_client()
            if client is not None:
                client.update_ha_master_address(h.master_ha_address)
                client.update_master_address(h.master_address)
            return cmd.make_response()
        if int(self.config["brokerId"]) == MASTER_ID:
            answer = ExchangeHAInfoRequestHeader(
                master_ha_address=self.config.ha_server_addr,
                master_flush_offset=self.message_store.get_max_phy_offset(),  # Java: the max offset at load
                master_address=self.acting_master_service.broker_addr(),
            )
            return cmd.make_response(ext_fields=answer.to_ext_fields())
        return cmd.make_response()
