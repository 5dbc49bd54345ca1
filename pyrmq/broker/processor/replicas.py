"""The two broker codes of controller mode. Java AdminBrokerProcessor#getBrokerEpochCache and
#notifyBrokerRoleChanged.

- GET_BROKER_EPOCH_CACHE (1007, mqadmin getBrokerEpoch): the broker's epoch entries and max
  offset as an EpochEntryCache; outside controller mode SYSTEM_ERROR "this request only for
  controllerMode " (Java's text, trailing space included).
- NOTIFY_BROKER_ROLE_CHANGED (1008, from the controller): header names the master, its epoch and
  the sync state set epoch, the body is the SyncStateSet; the ReplicasManager changes role. The
  answer is SUCCESS (also outside controller mode, where Java has no ReplicasManager either).
"""

from __future__ import annotations

import logging

from pyrmq.protocol.bodies.controller import EpochEntry, EpochEntryCache, SyncStateSet
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.controller import NotifyBrokerRoleChangedRequestHeader
from pyrmq.remoting.server import RequestContext, handles

log = logging.getLogger("pyrmq.broker.admin")


class ReplicasProcessor:
    def __init__(self, *, config, message_store, replicas_manager) -> None:
        self.config = config
        self.message_store = message_store
        self.replicas_manager = replicas_manager

    @handles(RequestCode.GET_BROKER_EPOCH_CACHE)
    async def get_broker_epoch_cache(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        rm = self.replicas_manager
        if not self.config["enableControllerMode"] or rm is None:
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, "this request only for controllerMode ")
        entries = [EpochEntry(e.epoch, e.start_offset, e.end_offset) for e in rm.ha.epoch_cache.entries()]
        cache = EpochEntryCache(
            cluster_name=self.config["brokerClusterName"],
            broker_name=self.config["brokerName"],
            broker_id=int(self.config["brokerId"]),
            epoch_list=entries,
            max_offset=self.message_store.get_max_phy_offset(),
        )
        return cmd.make_response(ResponseCode.SUCCESS, None, None, cache.encode())

    @handles(RequestCode.NOTIFY_BROKER_ROLE_CHANGED)
    async def notify_broker_role_changed(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = NotifyBrokerRoleChangedRequestHeader.from_ext_fields(cmd.ext_fields)
        try:
            sss = SyncStateSet.decode(cmd.body) if cmd.body else SyncStateSet()
        except Exception as e:
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"bad SyncStateSet body: {e}")
        log.info("Receive notifyBrokerRoleChanged request, try to change brokerRole, request:%s", h)
        rm = self.replicas_manager
        if rm is not None:
            try:
                await rm.change_broker_role(
                    h.master_broker_id,
                    h.master_address,
                    h.master_epoch,
                    h.sync_state_set_epoch,
                    set(sss.sync_state_set),
                )
            except Exception as e:
                log.exception("change broker role failed")
                return cmd.make_response(ResponseCode.SYSTEM_ERROR, str(e))
        return cmd.make_response(ResponseCode.SUCCESS)
