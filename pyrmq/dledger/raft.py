"""A DLedger member as a sans-IO state machine: events in, messages out.

Java: ``DLedgerLeaderElector`` (roles, terms, votes, heartbeats), ``MemberState``,
``DLedgerEntryPusher`` (the leader's per-peer EntryDispatcher, the follower's EntryHandler, the
QuorumAckChecker) and ``DLedgerServer`` (the remote-id and group checks). The rules are DLedger's,
not textbook Raft's where they differ (docs/dledger.md):

* a vote is refused on the ledger (end term, then end index) before the term is looked at; a vote
  or heartbeat of a *higher* term is refused with REJECT_TERM_NOT_READY / TERM_NOT_READY and turns
  the receiver into a candidate that moves to that term at once, so the sender retries at once;
* the leader sends no entry on election; its per-peer dispatcher starts in COMPARE from its own
  end index, walks down to the last entry both hold, TRUNCATEs the follower there and then APPENDs;
* the commit index is the watermark a majority has reached (the sorted watermarks' middle), of any
  term, and is sent to followers with each push or in a COMMIT push when idle.

Nothing here reads a clock, sleeps, or does I/O: every call takes ``now`` (ms) and returns
``Output``s. ``Send`` asks the driver to deliver a request to a peer and to call
``handle_response`` with the answer (or with ``network_error(request)`` when none came);
``Reply`` is an answer that was held back (an APPEND that arrived before its predecessor);
``RoleChanged`` and ``Committed`` are for the embedding server. The ``Ledger`` is the log itself
(store_files.py on disk, ``MemoryLedger`` in tests).
"""

from __future__ import annotations

import enum
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias

from .entry import DLedgerEntry
from .protocol import (
    RESPONSE_TYPES,
    DLedgerResponseCode,
    HeartBeatRequest,
    HeartBeatResponse,
    LeadershipTransferRequest,
    LeadershipTransferResponse,
    PushEntryRequest,
    PushEntryResponse,
    PushType,
    RequestOrResponse,
    VoteRequest,
    VoteResponse,
    VoteResult,
    failure,
)
from .store_files import StoreFormatError, TermState

__all__ = [
    "AppendError",
    "Committed",
    "DLedgerMember",
    "LeaderTransferringError",
    "Ledger",
    "MemoryLedger",
    "NotLeaderError",
    "Output",
    "Reply",
    "Role",
    "RoleChanged",
    "Send",
    "TermPersisted",
    "Timing",
    "network_error",
    "same_entry",
]

Code = DLedgerResponseCode


class Role(enum.Enum):
    """MemberState.Role (UNKNOWN is never used by a running member)."""

    CANDIDATE = "CANDIDATE"
    LEADER = "LEADER"
    FOLLOWER = "FOLLOWER"


@dataclass(frozen=True, slots=True)
class Send:
    """Deliver ``request`` to ``request.remote_id``; answer through ``handle_response``."""

    request: RequestOrResponse


@dataclass(frozen=True, slots=True)
class Reply:
    """The late answer to a request ``handle_request`` returned None for."""

    request: RequestOrResponse
    response: RequestOrResponse


@dataclass(frozen=True, slots=True)
class RoleChanged:
    term: int
    role: Role
    leader_id: str | None


@dataclass(frozen=True, slots=True)
class Committed:
    """The commit index moved forward (leader: a majority has it; follower: the leader said so)."""

    index: int


@dataclass(frozen=True, slots=True)
class TermPersisted:
    """The term or vote changed: the driver writes the ``currterm`` file before sending anything
    that follows (MemberState#persistTerm runs inside the same lock)."""

    state: TermState


Output: TypeAlias = Send | Reply | RoleChanged | Committed | TermPersisted


@dataclass(frozen=True, slots=True)
class Timing:
    """DLedgerConfig's timing keys and their defaults."""

    heart_beat_time_interval_ms: int = 2000
    max_heart_beat_leak: int = 3
    min_vote_interval_ms: int = 300
    max_vote_interval_ms: int = 1000
    max_push_timeout_ms: int = 1000
    max_pending_size: int = 1000  # EntryDispatcher.maxPendingSize
    commit_push_interval_ms: int = 1000  # EntryDispatcher#doCommit
    append_hold_timeout_ms: int = 1000  # EntryHandler's TimeoutFuture
    push_error_backoff_ms: int = 500  # EntryDispatcher#doWork sleeps this long after a failed compare/truncate
    max_leadership_transfer_wait_index: int = 1000  # maxLeadershipTransferWaitIndex
    leadership_transfer_wait_timeout_ms: int = 1000  # leadershipTransferWaitTimeout
    min_take_leadership_vote_interval_ms: int = 30  # minTakeLeadershipVoteIntervalMs
    max_take_leadership_vote_interval_ms: int = 100  # maxTakeLeadershipVoteIntervalMs
    check_preferred_leader_interval_ms: int = 1000  # DLedgerServer's checkPreferredLeader schedule


class Ledger(Protocol):
    """What a member needs from its log (DLedgerStore). ``truncate(entry)`` leaves the ledger
    ending at ``entry``, keeping the local one if it is the same (DLedgerMmapFileStore#truncate)."""

    @property
    def begin_index(self) -> int: ...
    @property
    def end_index(self) -> int: ...
    @property
    def end_term(self) -> int: ...
    def get(self, index: int) -> DLedgerEntry: ...
    def append_as_leader(self, body: bytes, term: int) -> DLedgerEntry: ...
    def append_as_follower(self, entry: DLedgerEntry) -> None: ...
    def truncate(self, entry: DLedgerEntry) -> None: ...


class MemoryLedger:
    """DLedgerMemoryStore's role: a list of entries; ``pos`` advances like the data files would."""

    def __init__(self, entries: Iterable[DLedgerEntry] = ()) -> None:
        self.entries: list[DLedgerEntry] = list(entries)

    @property
    def begin_index(self) -> int:
        return self.entries[0].index if self.entries else -1

    @property
    def end_index(self) -> int:
        return self.entries[-1].index if self.entries else -1

    @property
    def end_term(self) -> int:
        return self.entries[-1].term if self.entries else -1

    def get(self, index: int) -> DLedgerEntry:
        if not self.entries or not self.begin_index <= index <= self.end_index:
            raise KeyError(index)
        return self.entries[index - self.begin_index]

    def _next_pos(self) -> int:
        return self.entries[-1].pos + self.entries[-1].size if self.entries else 0

    def append_as_leader(self, body: bytes, term: int) -> DLedgerEntry:
        entry = DLedgerEntry(index=self.end_index + 1, term=term, pos=self._next_pos(), body=body)
        self.entries.append(entry)
        return entry

    def append_as_follower(self, entry: DLedgerEntry) -> None:
        if entry.index != self.end_index + 1:
            raise ValueError(f"append {entry.index} after {self.end_index}")
        self.entries.append(entry)

    def truncate(self, entry: DLedgerEntry) -> None:
        keep = [e for e in self.entries if e.index < entry.index]
        self.entries = [*keep, entry]


def same_entry(a: DLedgerEntry | None, b: DLedgerEntry | None) -> bool:
    """DLedgerEntry#equals: size, magic, index, term, channel, pos and body; the crcs do not count."""
    if a is None or b is None:
        return False
    return (a.magic, a.index, a.term, a.channel, a.pos, a.body) == (b.magic, b.index, b.term, b.channel, b.pos, b.body)


def network_error(request: RequestOrResponse) -> RequestOrResponse:
    """What DLedgerRpcNettyService completes a failed call with: the response bean, NETWORK_ERROR."""
    if isinstance(request, VoteRequest):
        return VoteResponse(code=Code.NETWORK_ERROR)
    if isinstance(request, HeartBeatRequest):
        return HeartBeatResponse(code=Code.NETWORK_ERROR)
    return PushEntryResponse(code=Code.NETWORK_ERROR)


@dataclass(slots=True)
class _Round:
    """One vote or heartbeat round: the answers so far, until all came or the deadline."""

    term: int
    deadline: int
    answers: dict[str, RequestOrResponse] = field(default_factory=dict)


@dataclass(slots=True)
class _PeerPush:
    """EntryDispatcher's state for one follower."""

    type: PushType = PushType.COMPARE
    compare_index: int = -1
    write_index: int = -1
    in_flight: PushEntryRequest | None = None  # the COMPARE or TRUNCATE awaiting its answer
    pending: dict[int, int] = field(default_factory=dict)  # APPEND index -> sent at
    retry_at: int = 0  # no COMPARE before this (after a failure)
    last_push_commit: int = -1


class DLedgerMember:
    """One member of a DLedger group. Not thread-safe: one driver calls it.

    ``peers`` maps every member id (this one included) to its address; only the ids matter here.
    """

    def __init__(
        self,
        group: str,
        self_id: str,
        peers: Iterable[str],
        ledger: Ledger,
        *,
        term_state: TermState = TermState(),
        timing: Timing = Timing(),
        rng: random.Random | None = None,
        committed_index: int = -1,
        preferred_leader_ids: str | None = None,
    ) -> None:
        self.group = group
        self.self_id = self_id
        self.peers = list(dict.fromkeys(peers))
        if self_id not in self.peers:
            raise ValueError(f"{self_id} is not one of the peers {self.peers}")
        self.ledger = ledger
        self.timing = timing
        self.rng = rng or random.Random()
        self.role = Role.CANDIDATE
        self.curr_term = term_state.curr_term
        self.vote_for = term_state.vote_for
        self.leader_id: str | None = None
        self.known_max_term = self.curr_term
        self.committed_index = committed_index
        # DLedgerLeaderElector's clocks
        self.need_increase_term_immediately = False
        self.wait_to_vote_next = False  # lastParseResult == WAIT_TO_VOTE_NEXT
        self.next_time_to_request_vote = -1
        self.last_leader_heartbeat = -1
        self.last_send_heartbeat = -1
        # -1 as in Java: a first leadership whose first round misses a majority ends at once
        self.last_succ_heartbeat = -1
        self._vote_round: _Round | None = None
        self._heartbeat_round: _Round | None = None
        # the leader's pusher
        self.watermarks: dict[str, int] = {}
        self._push: dict[str, _PeerPush] = {}
        # the follower's held APPENDs: first index -> (request, received at)
        self._held: dict[int, tuple[PushEntryRequest, int]] = {}
        # leadership transfer (DLedgerConfig.preferredLeaderIds, MemberState.transferee, ...)
        self.preferred_leader_ids = [i for i in (preferred_leader_ids or "").split(";") if i] or None
        self.transferee: str | None = None
        self.term_to_take_leadership = -1
        self.peers_live: dict[str, bool] = {}
        self._next_preferred_check = 0
        # the leader: per (transferee, term), the request it relays (a client's; None for its own check)
        self._transfer_asked: dict[tuple[str, int], LeadershipTransferRequest | None] = {}
        # the transferee: the take-leadership request it answers on a role change (TakeLeadershipTask)
        self._take_leadership: LeadershipTransferRequest | None = None
        # the transferee still catching up: (request, received at)
        self._take_waiting: tuple[LeadershipTransferRequest, int] | None = None

    # ------------------------------------------------------------------ helpers

    def is_quorum(self, n: int) -> bool:
        return n >= len(self.peers) // 2 + 1

    def _persist(self) -> TermPersisted:
        return TermPersisted(TermState(self.curr_term, self.vote_for))

    def _next_vote_time(self, now: int) -> int:
        lo, hi = self.timing.min_vote_interval_ms, self.timing.max_vote_interval_ms
        if self._is_taking_leadership():
            lo, hi = self.timing.min_take_leadership_vote_interval_ms, self.timing.max_take_leadership_vote_interval_ms
        return now + lo + self.rng.randrange(hi - lo)

    def _is_taking_leadership(self) -> bool:
        """DLedgerLeaderElector#isTakingLeadership: only a preferred member takes it this fast."""
        return (
            self.preferred_leader_ids is not None
            and self.term_to_take_leadership == self.curr_term
            and self.self_id in self.preferred_leader_ids
        )

    def _to_candidate(self, term: int) -> list[Output]:
        """changeRoleToCandidate: the term itself moves only in the next vote round."""
        if term < self.curr_term:
            return []
        self.known_max_term = max(self.known_max_term, term)
        was = self.role
        self.role = Role.CANDIDATE
        self.leader_id = None
        self._heartbeat_round = None
        self._held.clear()
        self.transferee = None
        if was is Role.CANDIDATE:
            return []
        return [RoleChanged(term, Role.CANDIDATE, None), *self._check_take_leadership(term, Role.CANDIDATE)]

    def _to_follower(self, term: int, leader_id: str, now: int) -> list[Output]:
        self.role = Role.FOLLOWER
        self.leader_id = leader_id
        self.wait_to_vote_next = False
        self.last_leader_heartbeat = now
        self._vote_round = None
        self.transferee = None
        return [RoleChanged(term, Role.FOLLOWER, leader_id), *self._check_take_leadership(term, Role.FOLLOWER)]

    def _to_leader(self, term: int, now: int) -> list[Output]:
        self.role = Role.LEADER
        self.leader_id = self.self_id
        self.last_send_heartbeat = -1
        self._vote_round = None
        self.watermarks = {p: -1 for p in self.peers}
        self.watermarks[self.self_id] = self.ledger.end_index
        self._push = {p: _PeerPush() for p in self.peers if p != self.self_id}
        self.peers_live.clear()
        self._next_preferred_check = now + self.timing.check_preferred_leader_interval_ms
        return [RoleChanged(term, Role.LEADER, self.self_id), *self._check_take_leadership(term, Role.LEADER)]

    # ------------------------------------------------------------------ time

    def tick(self, now: int) -> list[Output]:
        """DLedgerLeaderElector#maintainState plus the dispatchers' and handler's periodic work."""
        out: list[Output] = []
        if self._take_waiting is not None:
            out += self._try_take_leadership(now)
        if self.role is Role.LEADER:
            out += self._maintain_as_leader(now)
            if self.preferred_leader_ids is not None and now >= self._next_preferred_check:
                self._next_preferred_check = now + self.timing.check_preferred_leader_interval_ms
                out += self._check_preferred_leader()
        elif self.role is Role.FOLLOWER:
            out += self._maintain_as_follower(now)
        else:
            out += self._maintain_as_candidate(now)
        return out

    def _maintain_as_follower(self, now: int) -> list[Output]:
        out: list[Output] = []
        t = self.timing
        if now - self.last_leader_heartbeat > t.max_heart_beat_leak * t.heart_beat_time_interval_ms:
            return self._to_candidate(self.curr_term)
        for index, (req, at) in sorted(self._held.items()):
            if now - at > t.append_hold_timeout_ms:
                del self._held[index]
                out.append(Reply(req, self._push_response(req, Code.INCONSISTENT_STATE)))
        return out

    def _maintain_as_candidate(self, now: int) -> list[Output]:
        out: list[Output] = []
        if self._vote_round is not None:
            if now >= self._vote_round.deadline:
                out += self._finish_vote(now)
            return out
        if now < self.next_time_to_request_vote and not self.need_increase_term_immediately:
            return out
        if self.wait_to_vote_next or self.need_increase_term_immediately:
            self.curr_term = self.known_max_term if self.known_max_term > self.curr_term else self.curr_term + 1
            self.known_max_term = self.curr_term
            self.vote_for = None
            self.wait_to_vote_next = False
            out.append(self._persist())
        if self.need_increase_term_immediately:
            self.need_increase_term_immediately = False
            self.next_time_to_request_vote = self._next_vote_time(now)
            return out
        term = self.curr_term
        self._vote_round = _Round(term, now + 2000 + self.rng.randrange(self.timing.max_vote_interval_ms))
        for peer in self.peers:
            req = VoteRequest(
                group=self.group,
                local_id=self.self_id,
                remote_id=peer,
                leader_id=self.self_id,
                term=term,
                ledger_end_index=self.ledger.end_index,
                ledger_end_term=self.ledger.end_term,
            )
            if peer == self.self_id:
                resp, more = self._handle_vote(req, self_vote=True)
                out += more
                self._vote_round.answers[peer] = resp
            else:
                out.append(Send(req))
        out += self._maybe_finish_vote(now)
        return out

    def _maintain_as_leader(self, now: int) -> list[Output]:
        out: list[Output] = []
        t = self.timing
        hb = self._heartbeat_round
        if hb is not None and now >= hb.deadline:
            out += self._finish_heartbeats(now)
        if self.role is not Role.LEADER:
            return out
        if self._heartbeat_round is None and now - self.last_send_heartbeat > t.heart_beat_time_interval_ms:
            self.last_send_heartbeat = now
            self._heartbeat_round = _Round(self.curr_term, now + t.heart_beat_time_interval_ms - 10)
            for peer in self.peers:
                if peer != self.self_id:
                    out.append(
                        Send(
                            HeartBeatRequest(
                                group=self.group,
                                local_id=self.self_id,
                                remote_id=peer,
                                leader_id=self.self_id,
                                term=self.curr_term,
                            )
                        )
                    )
        out += self._dispatch_all(now)
        return out

    # ------------------------------------------------------------------ requests from peers

    def handle_request(self, request: RequestOrResponse, now: int) -> tuple[RequestOrResponse | None, list[Output]]:
        """Answer a peer. The response is None when it is held back (it comes later as a Reply)."""
        if request.remote_id != self.self_id or request.group != self.group:
            code = Code.UNKNOWN_MEMBER if request.remote_id != self.self_id else Code.UNKNOWN_GROUP
            return failure(request, code, self.leader_id), []
        if isinstance(request, VoteRequest):
            return self._handle_vote(request, self_vote=False)
        if isinstance(request, HeartBeatRequest):
            return self._handle_heartbeat(request, now)
        if isinstance(request, PushEntryRequest):
            return self._handle_push(request, now)
        if isinstance(request, LeadershipTransferRequest):
            return self._handle_leadership_transfer(request, now)
        return _response_type(request)(group=self.group, term=self.curr_term, code=Code.UNSUPPORTED), []

    def _vote_answer(self, req: VoteRequest, result: VoteResult, term: int | None = None) -> VoteResponse:
        return VoteResponse(
            group=req.group,
            local_id=req.local_id,
            remote_id=req.remote_id,
            leader_id=req.leader_id,
            code=req.code,
            term=self.curr_term if term is None else term,
            vote_result=result,
        )

    def _handle_vote(self, req: VoteRequest, *, self_vote: bool) -> tuple[VoteResponse, list[Output]]:
        """DLedgerLeaderElector#handleVote, in its order of checks."""
        if req.leader_id not in self.peers:
            return self._vote_answer(req, VoteResult.REJECT_UNKNOWN_LEADER), []
        if not self_vote and req.leader_id == self.self_id:
            return self._vote_answer(req, VoteResult.REJECT_UNEXPECTED_LEADER), []
        if req.ledger_end_term < self.ledger.end_term:
            return self._vote_answer(req, VoteResult.REJECT_EXPIRED_LEDGER_TERM), []
        if req.ledger_end_term == self.ledger.end_term and req.ledger_end_index < self.ledger.end_index:
            return self._vote_answer(req, VoteResult.REJECT_SMALL_LEDGER_END_INDEX), []
        if req.term < self.curr_term:
            return self._vote_answer(req, VoteResult.REJECT_EXPIRED_VOTE_TERM), []
        if req.term == self.curr_term:
            if self.vote_for is not None and self.vote_for != req.leader_id:
                if self.leader_id is not None:
                    return self._vote_answer(req, VoteResult.REJECT_ALREADY_HAS_LEADER), []
                return self._vote_answer(req, VoteResult.REJECT_ALREADY_VOTED), []
        else:
            out = self._to_candidate(req.term)
            self.need_increase_term_immediately = True
            return self._vote_answer(req, VoteResult.REJECT_TERM_NOT_READY), out
        if req.term < self.ledger.end_term:
            return self._vote_answer(req, VoteResult.REJECT_TERM_SMALL_THAN_LEDGER, self.ledger.end_term), []
        if (
            not self_vote
            and self._is_taking_leadership()
            and req.ledger_end_term == self.ledger.end_term
            and self.ledger.end_index >= req.ledger_end_index
        ):
            return self._vote_answer(req, VoteResult.REJECT_TAKING_LEADERSHIP), []
        self.vote_for = req.leader_id
        return self._vote_answer(req, VoteResult.ACCEPT), [self._persist()]

    def _handle_heartbeat(self, req: HeartBeatRequest, now: int) -> tuple[HeartBeatResponse, list[Output]]:
        """DLedgerLeaderElector#handleHeartBeat."""
        if req.leader_id not in self.peers:
            return HeartBeatResponse(term=self.curr_term, code=Code.UNKNOWN_MEMBER), []
        if req.leader_id == self.self_id:
            return HeartBeatResponse(term=self.curr_term, code=Code.UNEXPECTED_MEMBER), []
        if req.term < self.curr_term:
            return HeartBeatResponse(term=self.curr_term, code=Code.EXPIRED_TERM), []
        if req.term == self.curr_term:
            if self.leader_id is None:
                return HeartBeatResponse(), self._to_follower(req.term, req.leader_id or "", now)
            if req.leader_id == self.leader_id:
                self.last_leader_heartbeat = now
                return HeartBeatResponse(), []
            return HeartBeatResponse(code=Code.INCONSISTENT_LEADER), []
        out = self._to_candidate(req.term)
        self.need_increase_term_immediately = True
        return HeartBeatResponse(code=Code.TERM_NOT_READY), out

    # ------------------------------------------------------------------ the follower side of push

    def _push_response(self, req: PushEntryRequest, code: int) -> PushEntryResponse:
        """EntryHandler#buildResponse."""
        resp = PushEntryResponse(
            group=req.group,
            code=code,
            term=req.term,
            begin_index=self.ledger.begin_index,
            end_index=self.ledger.end_index,
        )
        if req.type is not PushType.COMMIT:
            resp.index = req.first_entry_index
            resp.count = req.count
        return resp

    def _follows(self, req: PushEntryRequest) -> bool:
        return self.role is Role.FOLLOWER and req.term == self.curr_term and req.leader_id == self.leader_id

    def _update_committed(self, term: int, index: int) -> list[Output]:
        """DLedgerMmapFileStore#updateCommittedIndex: forward only, capped at the ledger end."""
        if index == -1 or self.ledger.end_index == -1 or term < self.curr_term:
            return []
        index = min(index, self.ledger.end_index)
        if index <= self.committed_index or index < self.ledger.begin_index:
            return []
        self.committed_index = index
        return [Committed(index)]

    def _handle_push(self, req: PushEntryRequest, now: int) -> tuple[PushEntryResponse | None, list[Output]]:
        """EntryHandler#handlePush and #doWork, run at once instead of on a thread."""
        if self.role is not Role.FOLLOWER:
            # Java queues it and its handler thread never takes it: the leader's call times out
            return self._push_response(req, Code.NOT_FOLLOWER), []
        if req.type is PushType.COMMIT:
            if not self._follows(req):
                return self._push_response(req, Code.UNKNOWN), []
            return self._push_response(req, Code.SUCCESS), self._update_committed(req.term, req.commit_index)
        if req.type in (PushType.COMPARE, PushType.TRUNCATE):
            if req.entry is None:
                return self._push_response(req, Code.UNEXPECTED_ARGUMENT), []
            held = [Reply(r, self._push_response(r, Code.INCONSISTENT_STATE)) for r, _ in self._held.values()]
            self._held.clear()
            out: list[Output] = list(held)
            if req.type is PushType.COMPARE:
                try:
                    local: DLedgerEntry | None = self.ledger.get(req.entry.index)
                except (KeyError, StoreFormatError):  # handleDoCompare: any failure is a mismatch
                    local = None
                code = Code.SUCCESS if same_entry(req.entry, local) else Code.INCONSISTENT_STATE
                return self._push_response(req, code), out
            if not self._follows(req):
                return self._push_response(req, Code.INCONSISTENT_STATE), out
            self.ledger.truncate(req.entry)
            out += self._update_committed(req.term, req.commit_index)
            return self._push_response(req, Code.SUCCESS), out
        entries = req.batch_entry or ([req.entry] if req.entry is not None else [])
        if not entries:
            return self._push_response(req, Code.UNEXPECTED_ARGUMENT), []
        first = req.first_entry_index
        end = self.ledger.end_index
        if req.last_entry_index <= end:  # a retry of what is here already (checkAppendFuture)
            ok = all(same_entry(e, self._get(e.index)) for e in entries)
            return self._push_response(req, Code.SUCCESS if ok else Code.INCONSISTENT_STATE), []
        if first > end + 1:
            if first in self._held:
                return self._push_response(req, Code.REPEATED_PUSH), []
            self._held[first] = (req, now)
            return None, []
        resp, out = self._do_append(req, entries)
        out += self._drain_held()
        return resp, out

    def _get(self, index: int) -> DLedgerEntry | None:
        try:
            return self.ledger.get(index)
        except KeyError:
            return None

    def _do_append(self, req: PushEntryRequest, entries: list[DLedgerEntry]) -> tuple[PushEntryResponse, list[Output]]:
        if not self._follows(req) or entries[0].index != self.ledger.end_index + 1:
            return self._push_response(req, Code.INCONSISTENT_STATE), []
        for e in entries:
            self.ledger.append_as_follower(e)
        return self._push_response(req, Code.SUCCESS), self._update_committed(req.term, req.commit_index)

    def _drain_held(self) -> list[Output]:
        out: list[Output] = []
        while (item := self._held.pop(self.ledger.end_index + 1, None)) is not None:
            req = item[0]
            resp, more = self._do_append(req, req.batch_entry or ([req.entry] if req.entry else []))
            out.append(Reply(req, resp))
            out += more
        return out

    # ------------------------------------------------------------------ answers to our requests

    def handle_response(self, request: RequestOrResponse, response: RequestOrResponse, now: int) -> list[Output]:
        """The answer to a ``Send`` (``network_error(request)`` when the call failed)."""
        if isinstance(request, VoteRequest) and isinstance(response, VoteResponse):
            rnd = self._vote_round
            if rnd is None or rnd.term != request.term or request.remote_id is None:
                return []
            rnd.answers[request.remote_id] = response
            return self._maybe_finish_vote(now)
        if isinstance(request, HeartBeatRequest) and isinstance(response, HeartBeatResponse):
            if request.remote_id is not None and request.term == self.curr_term:
                self.peers_live[request.remote_id] = response.code != Code.NETWORK_ERROR
            hb = self._heartbeat_round
            if hb is None or hb.term != request.term or request.remote_id is None:
                return []
            hb.answers[request.remote_id] = response
            return self._maybe_finish_heartbeats(now)
        if isinstance(request, PushEntryRequest) and isinstance(response, PushEntryResponse):
            return self._on_push_response(request, response, now)
        if isinstance(request, LeadershipTransferRequest) and isinstance(response, LeadershipTransferResponse):
            return self._on_transfer_response(request, response)
        return []

    # votes ------------------------------------------------------------

    def _vote_counts(self) -> tuple[int, int, int, int, int, bool, int]:
        assert self._vote_round is not None
        valid = accepted = not_ready = bigger_ledger = 0
        has_leader = False
        max_term = self._vote_round.term
        for a in self._vote_round.answers.values():
            assert isinstance(a, VoteResponse)
            r = a.vote_result
            if r is not VoteResult.UNKNOWN:
                valid += 1
            if r is VoteResult.ACCEPT:
                accepted += 1
            elif r is VoteResult.REJECT_ALREADY_HAS_LEADER:
                has_leader = True
            elif r in (VoteResult.REJECT_TERM_SMALL_THAN_LEDGER, VoteResult.REJECT_EXPIRED_VOTE_TERM):
                max_term = max(max_term, a.term)
            elif r in (VoteResult.REJECT_EXPIRED_LEDGER_TERM, VoteResult.REJECT_SMALL_LEDGER_END_INDEX):
                bigger_ledger += 1
            elif r is VoteResult.REJECT_TERM_NOT_READY:
                not_ready += 1
        return len(self._vote_round.answers), valid, accepted, not_ready, bigger_ledger, has_leader, max_term

    def _maybe_finish_vote(self, now: int) -> list[Output]:
        total, _, accepted, not_ready, _, has_leader, _ = self._vote_counts()
        if has_leader or self.is_quorum(accepted) or self.is_quorum(accepted + not_ready) or total == len(self.peers):
            return self._finish_vote(now)
        return []

    def _finish_vote(self, now: int) -> list[Output]:
        """The end of maintainAsCandidate: what the round's answers mean."""
        rnd = self._vote_round
        assert rnd is not None
        _, valid, accepted, not_ready, bigger, has_leader, max_term = self._vote_counts()
        self._vote_round = None
        t = self.timing
        if self.role is not Role.CANDIDATE or rnd.term != self.curr_term:
            return []
        if max_term > rnd.term:
            self.wait_to_vote_next = True
            self.next_time_to_request_vote = self._next_vote_time(now)
            return self._to_candidate(max_term)
        if has_leader:
            self.next_time_to_request_vote = (
                self._next_vote_time(now) + t.heart_beat_time_interval_ms * t.max_heart_beat_leak
            )
        elif not self.is_quorum(valid):
            self.next_time_to_request_vote = self._next_vote_time(now)
        elif not self.is_quorum(valid - bigger):
            self.next_time_to_request_vote = self._next_vote_time(now) + t.max_vote_interval_ms
        elif self.is_quorum(accepted):
            return self._to_leader(rnd.term, now) + self._maintain_as_leader(now)
        elif self.is_quorum(accepted + not_ready):
            self.next_time_to_request_vote = now  # REVOTE_IMMEDIATELY
        else:
            self.wait_to_vote_next = True
            self.next_time_to_request_vote = self._next_vote_time(now)
        return []

    # heartbeats -------------------------------------------------------

    def _maybe_finish_heartbeats(self, now: int) -> list[Output]:
        hb = self._heartbeat_round
        assert hb is not None
        succ = 1 + sum(1 for a in hb.answers.values() if a.code == Code.SUCCESS)
        not_ready = sum(1 for a in hb.answers.values() if a.code == Code.TERM_NOT_READY)
        if self.is_quorum(succ) or self.is_quorum(succ + not_ready) or len(hb.answers) == len(self.peers) - 1:
            return self._finish_heartbeats(now)
        return []

    def _finish_heartbeats(self, now: int) -> list[Output]:
        """The end of sendHeartbeats."""
        hb = self._heartbeat_round
        assert hb is not None
        self._heartbeat_round = None
        if self.role is not Role.LEADER or hb.term != self.curr_term:
            return []
        succ = 1 + sum(1 for a in hb.answers.values() if a.code == Code.SUCCESS)
        not_ready = sum(1 for a in hb.answers.values() if a.code == Code.TERM_NOT_READY)
        inconsistent = any(a.code == Code.INCONSISTENT_LEADER for a in hb.answers.values())
        max_term = max((a.term for a in hb.answers.values() if a.code == Code.EXPIRED_TERM), default=-1)
        if max_term > hb.term:
            return self._to_candidate(max_term)
        t = self.timing
        if self.is_quorum(succ):
            self.last_succ_heartbeat = now
        elif self.is_quorum(succ + not_ready):
            self.last_send_heartbeat = -1
        elif inconsistent or now - self.last_succ_heartbeat > t.max_heart_beat_leak * t.heart_beat_time_interval_ms:
            return self._to_candidate(hb.term)
        return []

    # ------------------------------------------------------------------ the leader side of push

    def append(self, body: bytes, now: int) -> tuple[DLedgerEntry, list[Output]]:
        """appendAsLeader, then push. Raises NotLeaderError; the entry counts once ``Committed``
        reaches its index."""
        if self.role is not Role.LEADER:
            raise NotLeaderError(self.leader_id)
        if self.transferee is not None:
            raise LeaderTransferringError(self.transferee)
        entry = self.ledger.append_as_leader(body, self.curr_term)
        self.watermarks[self.self_id] = entry.index
        out = self._advance_commit()
        return entry, out + self._dispatch_all(now)

    def _advance_commit(self) -> list[Output]:
        """QuorumAckChecker: the middle of the watermarks sorted high to low."""
        marks = sorted(self.watermarks.values(), reverse=True)
        return self._update_committed(self.curr_term, marks[len(marks) // 2])

    def _push_request(self, peer: str, ptype: PushType, entry: DLedgerEntry | None) -> PushEntryRequest:
        return PushEntryRequest(
            group=self.group,
            local_id=self.self_id,
            remote_id=peer,
            leader_id=self.self_id,
            term=self.curr_term,
            type=ptype,
            entry=entry,
            commit_index=self.committed_index,
        )

    def _dispatch_all(self, now: int) -> list[Output]:
        out: list[Output] = []
        if self.role is Role.LEADER:
            for peer in self._push:
                out += self._dispatch(peer, now)
        return out

    def _dispatch(self, peer: str, now: int) -> list[Output]:
        """EntryDispatcher#doWork for one follower."""
        st = self._push[peer]
        out: list[Output] = []
        if st.type is not PushType.APPEND:
            if st.in_flight is None and now >= st.retry_at:
                out += self._send_compare(peer, st, now)
            return out
        t = self.timing
        end = self.ledger.end_index
        while st.write_index <= end and len(st.pending) < t.max_pending_size:
            st.pending[st.write_index] = now
            out.append(Send(self._push_request(peer, PushType.APPEND, self.ledger.get(st.write_index))))
            st.last_push_commit = now
            st.write_index += 1
        if st.write_index > end and now - st.last_push_commit > t.commit_push_interval_ms:
            st.last_push_commit = now
            out.append(Send(self._push_request(peer, PushType.COMMIT, None)))
        retry = self.watermarks.get(peer, -1) + 1
        sent = st.pending.get(retry)
        if sent is not None and now - sent > t.max_push_timeout_ms:
            st.pending[retry] = now
            out.append(Send(self._push_request(peer, PushType.APPEND, self.ledger.get(retry))))
        return out

    def _send_compare(self, peer: str, st: _PeerPush, now: int) -> list[Output]:
        del now
        if st.type is PushType.TRUNCATE:
            return []  # a truncate answer is awaited (in_flight) or the state was reset
        ledger = self.ledger
        if st.compare_index == -1 and ledger.end_index == -1:
            return []
        if st.compare_index == -1 or not ledger.begin_index <= st.compare_index <= ledger.end_index:
            st.compare_index = ledger.end_index
        req = self._push_request(peer, PushType.COMPARE, ledger.get(st.compare_index))
        st.in_flight = req
        return [Send(req)]

    def _change_state(self, st: _PeerPush, peer: str, index: int, target: PushType) -> list[Output]:
        """EntryDispatcher#changeState."""
        out: list[Output] = []
        if target is PushType.APPEND:
            st.compare_index = -1
            self.watermarks[peer] = max(self.watermarks.get(peer, -1), index)
            st.write_index = index + 1
            out += self._advance_commit()
        elif target is PushType.COMPARE:
            st.compare_index = -1
            st.pending.clear()
        else:
            st.compare_index = -1
        st.type = target
        return out

    def _on_push_response(self, req: PushEntryRequest, resp: PushEntryResponse, now: int) -> list[Output]:
        peer = req.remote_id
        if self.role is not Role.LEADER or req.term != self.curr_term or peer not in self._push:
            return []
        st = self._push[peer]
        out: list[Output] = []
        if req.type is PushType.APPEND:
            if resp.code == Code.SUCCESS:
                last = req.last_entry_index
                for i in range(req.first_entry_index, last + 1):
                    st.pending.pop(i, None)
                if last > self.watermarks.get(peer, -1):
                    self.watermarks[peer] = last
                    out += self._advance_commit()
            elif resp.code == Code.INCONSISTENT_STATE and st.type is PushType.APPEND:
                out += self._change_state(st, peer, -1, PushType.COMPARE)
                # Java compares again at once, paced by its network; here the answer may come in the
                # same call, and a member following another leader would bounce APPEND/COMPARE forever
                st.retry_at = now + self.timing.push_error_backoff_ms
            return out + self._dispatch_all(now)
        if req is not st.in_flight:
            return []
        st.in_flight = None
        if req.type is PushType.TRUNCATE:
            if resp.code == Code.SUCCESS and req.entry is not None:
                out += self._change_state(st, peer, req.entry.index, PushType.APPEND)
            else:
                out += self._change_state(st, peer, -1, PushType.COMPARE)
                st.retry_at = now + self.timing.push_error_backoff_ms
            return out + self._dispatch_all(now)
        if req.type is not PushType.COMPARE or req.entry is None:
            return []
        if resp.code not in (Code.SUCCESS, Code.INCONSISTENT_STATE):
            st.type = PushType.COMPARE  # a failed call: compare again after the backoff
            st.compare_index = -1
            st.retry_at = now + self.timing.push_error_backoff_ms
            return []
        out += self._after_compare(peer, st, req.entry.index, resp)
        return out + self._dispatch_all(now)

    def _after_compare(self, peer: str, st: _PeerPush, compare_index: int, resp: PushEntryResponse) -> list[Output]:
        """EntryDispatcher#doCompare's decision, one answer at a time."""
        ledger = self.ledger
        truncate_index = -1
        if resp.code == Code.SUCCESS:
            if compare_index == resp.end_index:
                return self._change_state(st, peer, compare_index, PushType.APPEND)
            truncate_index = compare_index
        elif (
            resp.end_index < ledger.begin_index
            or resp.begin_index > ledger.end_index
            or compare_index < resp.begin_index
        ):
            truncate_index = ledger.begin_index
        elif compare_index > resp.end_index:
            st.compare_index = resp.end_index
        else:
            st.compare_index = compare_index - 1
        if st.compare_index < ledger.begin_index and truncate_index == -1:
            truncate_index = ledger.begin_index
        if truncate_index != -1:
            self._change_state(st, peer, truncate_index, PushType.TRUNCATE)
            req = self._push_request(peer, PushType.TRUNCATE, ledger.get(truncate_index))
            st.in_flight = req
            return [Send(req)]
        return []

    # ------------------------------------------------------------------ leadership transfer

    def _transfer_answer(self, req: LeadershipTransferRequest, code: int) -> LeadershipTransferResponse:
        resp = failure(req, code, self.leader_id)
        assert isinstance(resp, LeadershipTransferResponse)
        return resp

    def _fall_behind(self, peer: str) -> int:
        return self.ledger.end_index - self.watermarks.get(peer, -1)

    def _handle_leadership_transfer(
        self, req: LeadershipTransferRequest, now: int
    ) -> tuple[LeadershipTransferResponse | None, list[Output]]:
        """DLedgerServer#handleLeadershipTransfer: to the leader (``transfer_id`` is this member) it
        starts a handover and answers with the transferee's answer; to the transferee it is the
        order to take the leadership once its ledger reaches ``take_leadership_ledger_index``."""
        if req.transfer_id == self.self_id:
            if req.transferee_id not in self.peers:
                return self._transfer_answer(req, Code.UNKNOWN_MEMBER), []
            if req.term != self.curr_term:
                return self._transfer_answer(req, Code.INCONSISTENT_TERM), []
            if self.role is not Role.LEADER:
                return self._transfer_answer(req, Code.NOT_LEADER), []
            if self._fall_behind(req.transferee_id) >= self.timing.max_leadership_transfer_wait_index:
                return self._transfer_answer(req, Code.FALL_BEHIND_TOO_MUCH), []
            return self._start_transfer(req.transferee_id, req)
        if req.transferee_id == self.self_id:
            if req.transfer_id != self.leader_id:
                return self._transfer_answer(req, Code.INCONSISTENT_LEADER), []
            if self._take_waiting is not None or self._take_leadership is not None:
                return self._transfer_answer(req, Code.LEADER_TRANSFERRING), []
            self._take_waiting = (req, now)
            return None, self._try_take_leadership(now)
        return LeadershipTransferResponse(term=self.curr_term, code=Code.UNEXPECTED_ARGUMENT), []

    def _start_transfer(
        self, transferee: str, asked: LeadershipTransferRequest | None
    ) -> tuple[LeadershipTransferResponse | None, list[Output]]:
        """DLedgerLeaderElector#handleLeadershipTransfer: appends stop (LEADER_TRANSFERRING) and the
        transferee is told the index to reach; the answer is relayed when it comes."""
        if self.transferee is not None:
            return LeadershipTransferResponse(term=self.curr_term, code=Code.LEADER_TRANSFERRING), []
        self.transferee = transferee
        take = LeadershipTransferRequest(
            group=self.group,
            leader_id=self.self_id,
            local_id=self.self_id,
            remote_id=transferee,
            term=self.curr_term,
            take_leadership_ledger_index=self.ledger.end_index,
            transfer_id=self.self_id,
            transferee_id=transferee,
        )
        self._transfer_asked[(transferee, self.curr_term)] = asked
        return None, [Send(take)]

    def _on_transfer_response(self, take: LeadershipTransferRequest, resp: LeadershipTransferResponse) -> list[Output]:
        asked = self._transfer_asked.pop((take.remote_id or "", take.term), None)
        if resp.code != Code.SUCCESS or (self.curr_term == take.term and self.transferee is not None):
            self.transferee = None
        return [Reply(asked, resp)] if asked is not None else []

    def _try_take_leadership(self, now: int) -> list[Output]:
        """The transferee's wait for its ledger (DLedgerServer polls every 10 ms for
        ``leadershipTransferWaitTimeout``), then DLedgerLeaderElector#handleTakeLeadership."""
        assert self._take_waiting is not None
        req, since = self._take_waiting
        if self.ledger.end_index < req.take_leadership_ledger_index:
            if now - since <= self.timing.leadership_transfer_wait_timeout_ms:
                return []
            self._take_waiting = None
            return [Reply(req, self._transfer_answer(req, Code.TAKE_LEADERSHIP_FAILED))]
        self._take_waiting = None
        if req.term != self.curr_term:
            return [Reply(req, LeadershipTransferResponse(term=self.curr_term, code=Code.INCONSISTENT_TERM))]
        target = req.term + 1
        self.term_to_take_leadership = target
        self._take_leadership = req
        out = self._to_candidate(target)
        self.need_increase_term_immediately = True
        return out

    def _check_take_leadership(self, term: int, role: Role) -> list[Output]:
        """TakeLeadershipTask#check, on every role change: the transferee's answer."""
        req = self._take_leadership
        if self.term_to_take_leadership == -1 or req is None:
            return []
        target = self.term_to_take_leadership
        if term > target:
            code = Code.EXPIRED_TERM
        elif term == target:
            if role is Role.CANDIDATE:
                return []
            code = Code.SUCCESS if role is Role.LEADER else Code.TAKE_LEADERSHIP_FAILED
        else:
            code = Code.TAKE_LEADERSHIP_FAILED if role is Role.FOLLOWER else Code.INTERNAL_ERROR
        self.term_to_take_leadership = -1
        self._take_leadership = None
        return [Reply(req, LeadershipTransferResponse(term=term, code=code))]

    def _check_preferred_leader(self) -> list[Output]:
        """DLedgerServer#checkPreferredLeader (every second on the leader): hand the leadership to
        the live preferred member that is least behind, if it is less than
        ``maxLeadershipTransferWaitIndex`` behind."""
        preferred = self.preferred_leader_ids
        if preferred is None or self.transferee is not None or self.self_id in preferred:
            return []
        candidates = [i for i in preferred if i in self.peers and self.peers_live.get(i, False)]
        if not candidates:
            return []
        best = min(candidates, key=self._fall_behind)  # the first of equals, as Java's strict <
        if self._fall_behind(best) >= self.timing.max_leadership_transfer_wait_index:
            return []
        return self._start_transfer(best, None)[1]


class AppendError(Exception):
    """An append that is not acknowledged: ``code`` is DLedger's reason (NOT_LEADER,
    WAIT_QUORUM_ACK_TIMEOUT, TERM_CHANGED); the entry may still commit later, or never."""

    def __init__(self, code: DLedgerResponseCode, message: str, leader_id: str | None = None) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.leader_id = leader_id


class NotLeaderError(Exception):
    """An append on a member that is not the leader; ``leader_id`` is whom it knows as leader."""

    code = DLedgerResponseCode.NOT_LEADER

    def __init__(self, leader_id: str | None) -> None:
        super().__init__(f"not the leader (leader: {leader_id})")
        self.leader_id = leader_id


class LeaderTransferringError(NotLeaderError):
    """An append while the leadership is being handed to ``transferee`` (LEADER_TRANSFERRING)."""

    code = DLedgerResponseCode.LEADER_TRANSFERRING

    def __init__(self, transferee: str) -> None:
        Exception.__init__(self, f"the leadership is being transferred to {transferee}")
        self.leader_id = None
        self.transferee = transferee


def _response_type(request: RequestOrResponse) -> type[RequestOrResponse]:
    return RESPONSE_TYPES.get(request.CODE, PushEntryResponse)
