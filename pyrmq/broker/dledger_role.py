"""A broker on a DLedger commit log: the member built from the broker's keys, and the role
changes that make the leader the master (brokerId 0) and the others slaves.

Java: DLedgerCommitLog's constructor (the DLedgerConfig from MessageStoreConfig) and
broker.dledger.DLedgerRoleChangeHandler: a new leader waits until its whole ledger is committed and
dispatched, then changes to SYNC_MASTER with brokerId 0 and registers; a follower (or a candidate
that was not a slave already) changes to SLAVE with brokerId = the digits of dLegerSelfId + 1 and
registers. Until its first role the broker is fenced: no registration, puts refused (Java leaves
its first registerBrokerAll to the handler).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from pyrmq.dledger.config import DLedgerConfig
from pyrmq.dledger.raft import Role
from pyrmq.dledger.server import DLedgerServer
from pyrmq.store.dledger_store import DLedgerMessageStore
from pyrmq.store.store_config import BrokerRole, MessageStoreConfig

log = logging.getLogger(__name__)

__all__ = ["DLedgerRoleChangeHandler", "dledger_config"]

#: how often a new leader checks that its dispatch caught up (Java sleeps 100 ms)
_READY_POLL_S = 0.1


def _true(value: object) -> bool:
    return str(value).strip().lower() == "true"


def dledger_config(props: Mapping[str, object], store: MessageStoreConfig) -> DLedgerConfig | None:
    """The member's config from the broker's properties when enableDLegerCommitLog=true, else
    None. Raises ValueError when dLegerGroup, dLegerPeers or dLegerSelfId is missing, the peers do
    not parse or do not name dLegerSelfId."""
    if not _true(props.get("enableDLegerCommitLog", "false")):
        return None
    group, peers, self_id = (str(props.get(k) or "").strip() for k in ("dLegerGroup", "dLegerPeers", "dLegerSelfId"))
    if not group or not peers or not self_id:
        raise ValueError("enableDLegerCommitLog=true needs dLegerGroup, dLegerPeers and dLegerSelfId")
    out = DLedgerConfig(
        group=group,
        self_id=self_id,
        peers=peers,
        store_base_dir=store.store_path_root_dir,
        data_file_size=store.mapped_file_size_commit_log,
        data_store_path=str(props.get("storePathDLedgerCommitLog") or "").strip() or None,
        preferred_leader_ids=str(props.get("preferredLeaderId") or "").strip() or None,
    )
    out.peer_map()  # ValueError for bad peers or a self id not among them
    slave_id(self_id)
    return out


def slave_id(self_id: str) -> int:
    """DLedgerCommitLog#getId: the digits after the first character, + 1 (``n0`` -> 1)."""
    try:
        return int(self_id[1:]) + 1
    except ValueError:
        raise ValueError(f"dLegerSelfId {self_id!r}: expected a letter then digits (n0, n1, ...)") from None


class Broker(Protocol):
    """What a role change does to the broker (BrokerController)."""

    config: Any
    store_config: MessageStoreConfig

    def apply_role(self, role: BrokerRole, broker_id: int, master_addr: str | None, epoch: int | None) -> None: ...

    def set_fenced(self, fenced: bool) -> None: ...

    async def register_broker_all(self) -> None: ...


class DLedgerRoleChangeHandler:
    def __init__(self, controller: Broker, store: DLedgerMessageStore) -> None:
        self.controller = controller
        self.store = store
        server = store.dledger.server
        if not isinstance(server, DLedgerServer):
            raise TypeError(f"a broker's DLedger member is a DLedgerServer, not {type(server).__name__}")
        self.server = server
        self.broker_id = slave_id(self.server.config.self_id)
        self._task: asyncio.Task[None] | None = None
        self.server.role_listeners.append(self.handle)

    async def start(self) -> None:
        await self.server.start()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        await self.server.close()

    def may_register_periodically(self) -> bool:
        """Not while the broker is brokerId 0 and its leadership is unconfirmed (just resumed from a
        SIGSTOP or a partition): that registration would replace the new master at the name server
        (both stateVersion 0, as Java's) and the step-down right after removes it, leaving the
        route without a master until the new one's next registration, up to 30 s. Java's periodic
        registration has no such check; the role change registers as before."""
        return int(self.controller.config["brokerId"]) != 0 or self.server.leadership_confirmed()

    def handle(self, term: int, role: Role, leader_id: str | None) -> None:
        """DLedgerLeaderElector's RoleChangeHandler: the latest change replaces one still running."""
        if self._task is not None:
            self._task.cancel()
        self._task = asyncio.get_running_loop().create_task(self._change(term, role), name="dledger-role-change")

    async def _change(self, term: int, role: Role) -> None:
        controller = self.controller
        if role is Role.LEADER:
            while not self.store.dledger.ready:  # the ledger end committed and dispatched
                if self.server.role is not Role.LEADER or self.server.term != term:
                    return
                await asyncio.sleep(_READY_POLL_S)
            # the commit log took its queue offsets from what it dispatched (recoverTopicQueueTable)
            controller.apply_role(BrokerRole.SYNC_MASTER, 0, None, None)
        elif role is Role.FOLLOWER or controller.store_config.broker_role is not BrokerRole.SLAVE:
            controller.apply_role(BrokerRole.SLAVE, self.broker_id, None, None)
        else:
            return
        log.info(
            "DLedger %s: broker is %s (brokerId %s) in term %d",
            self.server.config.self_id,
            controller.store_config.broker_role.name,
            controller.config["brokerId"],
            term,
        )
        controller.set_fenced(False)
        try:
            await controller.register_broker_all()
        except Exception:
            log.exception("registerBrokerAll after a DLedger role change failed")
