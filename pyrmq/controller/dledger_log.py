"""The controller's events replicated through a DLedger group (a controller group of 2 or more).

Java: ``impl/DLedgerController`` (appendToDLedgerAndWait, RoleChangeHandler) and
``DLedgerControllerStateMachine`` (onApply). Each write request's events become consecutive
entries (one event per entry, EventSerializer's bytes, appended as one batch); every member
applies committed entries in index order to its ReplicasInfoManager, the leader included, so
the leader answers a request only once its events are committed and applied.

Leader state: a member that wins a DLedger election first appends an empty entry and waits
for it to commit (so every entry of earlier terms is applied) before it serves requests, as
Java's RoleChangeHandler does; until then, and on every other member, requests are answered
CONTROLLER_NOT_LEADER.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence

from pyrmq.controller.event_serializer import deserialize_event, serialize_event
from pyrmq.controller.events import Event
from pyrmq.dledger.config import DLedgerConfig
from pyrmq.dledger.raft import Role
from pyrmq.dledger.server import AppendError, DLedgerServer
from pyrmq.remoting.server import RemotingServer

log = logging.getLogger("pyrmq.controller")

#: DLedgerConfig's own group when controllerDLegerGroup is not set
DEFAULT_GROUP = "default"
#: Java appendToDLedgerAndWait: dLedgerFuture.get(5, SECONDS)
APPEND_WAIT_MS = 5000


class ControllerAppendError(Exception):
    """The events did not commit (not the leader any more, no majority): nothing is answered as done."""


class DLedgerEventLog:
    """One member of the controllers' DLedger group; ``apply`` is called once per committed event."""

    def __init__(
        self,
        *,
        group: str | None,
        self_id: str,
        peers: str,
        store_path: str,
        data_file_size: int,
        remoting: RemotingServer,
        apply: Callable[[Event], None],
    ) -> None:
        self.config = DLedgerConfig(
            group=group or DEFAULT_GROUP,
            self_id=self_id,
            peers=peers,
            store_base_dir=store_path,
            data_file_size=data_file_size,
        )
        self.server = DLedgerServer(self.config, remoting=remoting)
        self._apply = apply
        self.applied_index = -1
        self.leader_state = False
        self._initial: asyncio.Task[None] | None = None
        self.server.commit_listeners.append(self._on_committed)
        self.server.role_listeners.append(self._on_role_change)

    # ------------------------------------------------------------------ state

    @property
    def leader_id(self) -> str | None:
        return self.server.leader_id

    @property
    def leader_address(self) -> str | None:
        leader = self.server.leader_id
        return self.server.peers.get(leader) if leader else None

    @property
    def is_leader(self) -> bool:
        """The DLedger role (Java MemberState#isLeader), not yet ready to serve maybe."""
        return self.server.is_leader

    # ------------------------------------------------------------------ the state machine

    def _on_committed(self, committed_index: int) -> None:
        """DLedgerControllerStateMachine#onApply: committed entries in order, each at most once."""
        while self.applied_index < committed_index:
            index = self.applied_index + 1
            try:
                body = self.server.store.get(index).body
            except KeyError:
                log.error("controller: committed entry %d is not in the ledger", index)
                return
            self.applied_index = index
            if body:
                event = deserialize_event(bytes(body))
                if event is not None:
                    self._apply(event)

    def _on_role_change(self, term: int, role: Role, leader_id: str | None) -> None:
        if self._initial is not None:
            self._initial.cancel()  # a proposal of an earlier term; its append fails anyway
            self._initial = None
        if role is Role.LEADER:
            log.info("Controller %s change role to leader, try process a initial proposal", self.config.self_id)
            self._initial = asyncio.get_running_loop().create_task(self._initial_proposal(term))
            return
        if self.leader_state:
            log.info("Controller %s change role to %s, leaderId: %s", self.config.self_id, role.name, leader_id)
        self.leader_state = False

    async def _initial_proposal(self, term: int) -> None:
        tries = 0
        while self.server.is_leader and self.server.term == term:
            try:
                await self.server.append(b"")
            except AppendError as e:
                tries += 1
                log.error("Controller leader append initial log failed, try %d times: %s", tries, e)
                await asyncio.sleep(0.1)
                continue
            if self.server.is_leader and self.server.term == term:
                self.leader_state = True
                log.info("Controller %s serves as the leader of term %d", self.config.self_id, term)
            return

    # ------------------------------------------------------------------ appends

    async def append(self, events: Sequence[Event]) -> None:
        """appendToDLedgerAndWait: returns once the events are committed (and so applied here).
        No events: one empty entry (a read with isProcessReadEvent)."""
        bodies = [serialize_event(e) for e in events] or [b""]
        try:
            await self.server.append_batch(bodies, timeout_ms=APPEND_WAIT_MS)
        except AppendError as e:
            raise ControllerAppendError(f"Failed to append event to DLedger: {e}") from None

    # ------------------------------------------------------------------ life cycle

    async def start(self) -> None:
        """Apply what the store holds as committed, then join the group."""
        self._on_committed(self.server.committed_index)
        await self.server.start()

    async def close(self) -> None:
        self.leader_state = False
        if self._initial is not None:
            self._initial.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._initial
        await self.server.close()
