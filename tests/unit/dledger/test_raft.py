"""pyrmq.dledger.raft: DLedger's rules on simulated groups of three (and one of five), with a
virtual clock and a network that drops whatever crosses a partition. Every message goes through
its JSON body, so what the state machine sends is what the wire carries."""

from __future__ import annotations

import dataclasses
import random
from collections import deque
from collections.abc import Mapping
from pathlib import Path

import pytest

from pyrmq.dledger import protocol as p
from pyrmq.dledger.entry import DLedgerEntry
from pyrmq.dledger.raft import (
    Committed,
    DLedgerMember,
    LeaderTransferringError,
    Ledger,
    MemoryLedger,
    NotLeaderError,
    Output,
    Reply,
    Role,
    RoleChanged,
    Send,
    TermPersisted,
    network_error,
)
from pyrmq.dledger.store_files import DLedgerStoreReader, DLedgerStoreWriter, StoreFormatError, TermState

IDS = ["n0", "n1", "n2"]


def wire(bean: p.RequestOrResponse) -> p.RequestOrResponse:
    return type(bean).decode(bean.encode())


class Group:
    """Three members (or ``ids``), a clock and a network. No message reaches or leaves a member in
    ``cut`` (a partition: it still runs its timers); a member in ``stopped`` does not run at all
    (SIGSTOP or SIGKILL)."""

    def __init__(
        self,
        seed: int = 7,
        ledgers: Mapping[str, Ledger] | None = None,
        preferred: str | None = None,
        ids: list[str] = IDS,
    ) -> None:
        self.seed = seed
        self.now = 0
        self.ids = ids
        self.ledgers: Mapping[str, Ledger] = ledgers or {i: MemoryLedger() for i in ids}
        self.members = {
            i: DLedgerMember(
                "g1", i, ids, self.ledgers[i], rng=random.Random(f"{seed}-{i}"), preferred_leader_ids=preferred
            )
            for i in ids
        }
        #: held answers to requests a test sent as an outside client (local_id not a member)
        self.client_replies: list[Reply] = []
        self.cut: set[str] = set()
        self.stopped: set[str] = set()
        self.queue: deque[tuple[str, Output]] = deque()
        self.persisted: dict[str, TermState] = {}
        self.roles: list[tuple[int, str, RoleChanged]] = []

    def emit(self, src: str, outs: list[Output]) -> None:
        for o in outs:
            if isinstance(o, TermPersisted):
                self.persisted[src] = o.state
            elif isinstance(o, RoleChanged):
                self.roles.append((self.now, src, o))
            elif isinstance(o, (Send, Reply)):
                self.queue.append((src, o))

    def off(self, i: str) -> bool:
        return i in self.cut or i in self.stopped

    def deliver(self) -> None:
        budget = 100_000  # a message storm within one instant is a bug (an endless exchange), not a slow test
        while self.queue:
            budget -= 1
            assert budget > 0, f"endless exchange at {self.now} ms: {self.queue[0]}"
            src, o = self.queue.popleft()
            if isinstance(o, Reply):  # a held answer travels back to the asker
                asker = o.request.local_id or ""
                if asker not in self.members:
                    self.client_replies.append(o)
                    continue
                if self.off(src) or self.off(asker):
                    continue
                self.emit(asker, self.members[asker].handle_response(o.request, wire(o.response), self.now))
                continue
            req = wire(o.request)
            dst = req.remote_id or ""
            if self.off(src) or self.off(dst):
                self.emit(src, self.members[src].handle_response(o.request, network_error(req), self.now))
                continue
            resp, outs = self.members[dst].handle_request(req, self.now)
            self.emit(dst, outs)
            if resp is not None:
                self.emit(src, self.members[src].handle_response(o.request, wire(resp), self.now))

    def run(self, ms: int, step: int = 10) -> None:
        for _ in range(ms // step):
            self.now += step
            for i, m in self.members.items():
                if i not in self.stopped:
                    self.emit(i, m.tick(self.now))
            self.deliver()

    def leaders(self, among: set[str] | None = None) -> list[str]:
        ids = among or set(self.ids) - self.cut - self.stopped
        return sorted(i for i in ids if self.members[i].role is Role.LEADER)

    def leader(self) -> DLedgerMember:
        (lid,) = self.leaders()
        return self.members[lid]

    def append(self, body: bytes) -> DLedgerEntry:
        m = self.leader()
        entry, outs = m.append(body, self.now)
        self.emit(m.self_id, outs)
        self.deliver()
        return entry

    def bodies(self, i: str) -> list[bytes]:
        ledger = self.ledgers[i]
        return (
            [ledger.get(k).body for k in range(ledger.begin_index, ledger.end_index + 1)]
            if ledger.end_index >= 0
            else []
        )


@pytest.mark.parametrize("seed", range(5))
def test_one_leader_is_elected(seed: int) -> None:
    g = Group(seed)
    g.run(5000)
    leader = g.leader()
    for i in IDS:
        m = g.members[i]
        assert m.curr_term == leader.curr_term, f"seed {seed}"
        assert m.leader_id == leader.self_id
        assert m.role is (Role.LEADER if m is leader else Role.FOLLOWER)
    assert g.persisted[leader.self_id] == TermState(leader.curr_term, leader.self_id)


def test_replicate_and_commit() -> None:
    g = Group()
    g.run(5000)
    for k in range(20):
        g.append(b"m%d" % k)
    g.run(1500)  # an idle COMMIT push carries the commit index to the followers
    want = [b"m%d" % k for k in range(20)]
    assert all(g.bodies(i) == want for i in IDS)
    assert {g.members[i].committed_index for i in IDS} == {19}
    assert g.members["n0"].ledger.get(19) == g.members["n1"].ledger.get(19) == g.members["n2"].ledger.get(19)


def test_no_commit_without_a_majority() -> None:
    g = Group()
    g.run(5000)
    g.append(b"ok")
    leader = g.leader()
    assert leader.committed_index == 0
    g.stopped = set(IDS) - {leader.self_id}
    entry, outs = leader.append(b"lonely", g.now)
    g.emit(leader.self_id, outs)
    g.deliver()
    assert leader.committed_index == 0
    assert not any(isinstance(o, Committed) and o.index >= entry.index for o in outs)
    g.run(7000)
    assert leader.role is Role.CANDIDATE  # no majority answers heartbeats: it steps down
    with pytest.raises(NotLeaderError):
        leader.append(b"no", g.now)


def test_a_group_of_five_commits_on_three_and_stops_at_two() -> None:
    """RocketMQ's groups of 5: two members down, the other three still commit; a third down, the
    two left commit nothing and the leader steps down; all back, one ledger again, every
    acknowledged entry in it."""
    five = [f"n{k}" for k in range(5)]
    g = Group(ids=five)
    g.run(5000)
    leader = g.leader()
    acked = [g.append(b"all %d" % k) for k in range(5)]
    followers = [i for i in five if i != leader.self_id]
    g.stopped = set(followers[:2])
    acked += [g.append(b"three %d" % k) for k in range(5)]
    assert leader.committed_index == acked[-1].index  # a majority of five is three
    g.stopped = set(followers[:3])
    lonely = g.append(b"two of five")
    g.run(1000)
    assert leader.committed_index == acked[-1].index < lonely.index
    g.run(7000)
    assert leader.role is not Role.LEADER  # no majority answers its heartbeats
    g.stopped = set()
    g.run(15000)
    new = g.leader()
    g.append(b"all back")
    g.run(1500)
    ledgers = {tuple(g.bodies(i)) for i in five}
    assert len(ledgers) == 1, ledgers
    (bodies,) = ledgers
    assert list(bodies[: len(acked)]) == [e.body for e in acked] and bodies[-1] == b"all back"
    assert {g.members[i].committed_index for i in five} == {new.ledger.end_index}


def test_partitioned_leader_steps_down_and_its_tail_is_truncated() -> None:
    g = Group(seed=3)
    g.run(5000)
    for k in range(3):
        g.append(b"c%d" % k)
    old = g.leader()
    old_term = old.curr_term
    g.cut = {old.self_id}  # SIGSTOP / partition
    stray, outs = old.append(b"never-acknowledged", g.now)
    g.emit(old.self_id, outs)
    g.deliver()
    g.run(10000)
    (new_id,) = g.leaders(set(IDS) - {old.self_id})
    new = g.members[new_id]
    assert new.curr_term > old_term
    g.append(b"after")
    # the old leader, still cut off, stepped down after maxHeartBeatLeak heartbeats without a majority
    assert old.role is Role.CANDIDATE
    g.cut = set()
    g.run(10000)
    assert g.leaders() == [new_id]
    want = [b"c0", b"c1", b"c2", b"after"]
    assert all(g.bodies(i) == want for i in IDS), {i: g.bodies(i) for i in IDS}
    assert stray.body not in g.bodies(old.self_id)
    assert old.role is Role.FOLLOWER and old.leader_id == new_id


def test_follower_far_behind_catches_up() -> None:
    g = Group(seed=11)
    g.run(5000)
    leader = g.leader()
    lagging = next(i for i in IDS if i != leader.self_id)
    g.stopped = {lagging}
    for k in range(50):
        g.append(b"x%d" % k)
    assert leader.committed_index == 49  # the other follower makes the majority
    g.run(3000)
    assert g.leaders() == [leader.self_id]
    g.stopped = set()
    g.run(5000)
    assert g.bodies(lagging) == [b"x%d" % k for k in range(50)]
    assert g.members[lagging].committed_index == 49


def test_divergent_follower_is_repaired_by_compare_and_truncate() -> None:
    """A follower holding entries of an older term that the leader never had."""
    common = [DLedgerEntry(index=i, term=1, pos=i * 50, body=b"c%d" % i) for i in range(3)]
    stale = [DLedgerEntry(index=3 + i, term=1, pos=150 + i * 60, body=b"stale%d" % i) for i in range(3)]
    good = [DLedgerEntry(index=3, term=2, pos=150, body=b"good3")]
    ledgers = {
        "n0": MemoryLedger(common + good),
        "n1": MemoryLedger(common + good),
        "n2": MemoryLedger(common + stale),
    }
    g = Group(seed=5, ledgers=ledgers)
    g.run(8000)
    # n2's ledger end term (1) is older: it can never win a vote
    assert g.leaders() in (["n0"], ["n1"])
    g.append(b"new")
    g.run(3000)
    want = [b"c0", b"c1", b"c2", b"good3", b"new"]
    assert all(g.bodies(i) == want for i in IDS), {i: g.bodies(i) for i in IDS}


def test_two_of_three_down_stops_writes() -> None:
    g = Group(seed=2)
    g.run(5000)
    leader = g.leader()
    g.append(b"a")
    g.stopped = set(IDS) - {leader.self_id}
    g.run(20000)
    assert g.leaders({leader.self_id}) == []
    with pytest.raises(NotLeaderError):
        leader.append(b"b", g.now)
    assert leader.committed_index == 0


def test_group_on_disk_ends_with_identical_stores(tmp_path: Path) -> None:
    """The same partition story over DLedgerStoreWriter ledgers: afterwards the three data and
    index directories hold the same bytes and read back as the same ledger."""
    ledgers = {
        i: DLedgerStoreWriter(str(tmp_path / f"dledger-{i}"), data_file_size=512, index_file_size=128) for i in IDS
    }
    g = Group(seed=3, ledgers=ledgers)
    g.run(5000)
    for k in range(6):
        g.append(b"c%d" % k * 10)
    old = g.leader()
    g.cut = {old.self_id}
    for k in range(3):
        _, outs = old.append(b"stray%d" % k * 10, g.now)
        g.emit(old.self_id, outs)
    g.deliver()
    g.run(10000)
    for k in range(4):
        g.append(b"after%d" % k * 10)
    g.cut = set()
    g.run(10000)
    want = [b"c%d" % k * 10 for k in range(6)] + [b"after%d" % k * 10 for k in range(4)]
    readers = {i: DLedgerStoreReader(str(tmp_path / f"dledger-{i}")) for i in IDS}
    for i in IDS:
        assert [e.body for e in readers[i].entries()] == want, i
    for sub in ("data", "index"):
        files = {i: {p.name: p.read_bytes() for p in (tmp_path / f"dledger-{i}" / sub).iterdir()} for i in IDS}
        assert files["n0"] == files["n1"] == files["n2"], sub


# --------------------------------------------------------------------------- single rules


def member(ledger: MemoryLedger | None = None, term: int = 5, vote: str | None = None) -> DLedgerMember:
    return DLedgerMember("g1", "n1", IDS, ledger or MemoryLedger(), term_state=TermState(term, vote))


def vote(term: int, end_index: int = -1, end_term: int = -1, leader: str = "n0") -> p.VoteRequest:
    return p.VoteRequest(
        group="g1",
        local_id=leader,
        remote_id="n1",
        leader_id=leader,
        term=term,
        ledger_end_index=end_index,
        ledger_end_term=end_term,
    )


def test_vote_rules_in_javas_order() -> None:
    ledger = MemoryLedger([DLedgerEntry(index=0, term=4, body=b""), DLedgerEntry(index=1, term=4, body=b"")])
    m = member(ledger)
    r, _ = m.handle_request(vote(9, 1, 3), 0)
    assert isinstance(r, p.VoteResponse) and r.vote_result is p.VoteResult.REJECT_EXPIRED_LEDGER_TERM
    r, _ = m.handle_request(vote(9, 0, 4), 0)
    assert isinstance(r, p.VoteResponse) and r.vote_result is p.VoteResult.REJECT_SMALL_LEDGER_END_INDEX
    r, _ = m.handle_request(vote(4, 1, 4), 0)
    assert isinstance(r, p.VoteResponse) and (r.vote_result, r.term) == (p.VoteResult.REJECT_EXPIRED_VOTE_TERM, 5)
    r, outs = m.handle_request(vote(5, 1, 4), 0)
    assert isinstance(r, p.VoteResponse) and r.vote_result is p.VoteResult.ACCEPT
    assert outs == [TermPersisted(TermState(5, "n0"))]
    r, _ = m.handle_request(vote(5, 1, 4, leader="n2"), 0)
    assert isinstance(r, p.VoteResponse) and r.vote_result is p.VoteResult.REJECT_ALREADY_VOTED
    r, _ = m.handle_request(vote(7, 1, 4), 0)
    assert isinstance(r, p.VoteResponse) and r.vote_result is p.VoteResult.REJECT_TERM_NOT_READY
    assert m.role is Role.CANDIDATE and m.need_increase_term_immediately
    outs = m.tick(1)
    assert outs == [TermPersisted(TermState(7, None))] and m.curr_term == 7


def test_unknown_member_group_and_leader() -> None:
    m = member()
    bad = vote(6)
    bad.remote_id = "n9"
    r, _ = m.handle_request(bad, 0)
    assert r is not None and r.code == p.DLedgerResponseCode.UNKNOWN_MEMBER
    bad = vote(6)
    bad.group = "other"
    r, _ = m.handle_request(bad, 0)
    assert r is not None and r.code == p.DLedgerResponseCode.UNKNOWN_GROUP
    r, _ = m.handle_request(vote(6, leader="n7"), 0)
    assert isinstance(r, p.VoteResponse) and r.vote_result is p.VoteResult.REJECT_UNKNOWN_LEADER


def test_heartbeat_rules() -> None:
    m = member()
    hb = p.HeartBeatRequest(group="g1", local_id="n0", remote_id="n1", leader_id="n0", term=4)
    r, _ = m.handle_request(hb, 0)
    assert r is not None and (r.code, r.term) == (p.DLedgerResponseCode.EXPIRED_TERM, 5)
    hb.term = 5
    r, outs = m.handle_request(hb, 0)
    assert r is not None and r.code == p.DLedgerResponseCode.SUCCESS
    assert outs == [RoleChanged(5, Role.FOLLOWER, "n0")]
    hb2 = p.HeartBeatRequest(group="g1", local_id="n2", remote_id="n1", leader_id="n2", term=5)
    r, _ = m.handle_request(hb2, 0)
    assert r is not None and r.code == p.DLedgerResponseCode.INCONSISTENT_LEADER
    hb.term = 6
    r, _ = m.handle_request(hb, 0)
    assert r is not None and r.code == p.DLedgerResponseCode.TERM_NOT_READY and m.role is Role.CANDIDATE


def test_out_of_order_append_is_held_until_its_predecessor() -> None:
    m = member()
    hb = p.HeartBeatRequest(group="g1", local_id="n0", remote_id="n1", leader_id="n0", term=5)
    m.handle_request(hb, 0)

    def push(i: int) -> p.PushEntryRequest:
        e = DLedgerEntry(index=i, term=5, pos=i * 49, body=b"%d" % i)
        return p.PushEntryRequest(group="g1", local_id="n0", remote_id="n1", leader_id="n0", term=5, entry=e)

    r1, _ = m.handle_request(push(1), 0)
    assert r1 is None
    r0, outs = m.handle_request(push(0), 0)
    assert r0 is not None and r0.code == p.DLedgerResponseCode.SUCCESS
    (late,) = [o for o in outs if isinstance(o, Reply)]
    assert late.response.code == p.DLedgerResponseCode.SUCCESS and m.ledger.end_index == 1
    again, _ = m.handle_request(push(1), 0)  # a retry of what is here: SUCCESS, nothing appended
    assert again is not None and again.code == p.DLedgerResponseCode.SUCCESS and m.ledger.end_index == 1
    r3, _ = m.handle_request(push(3), 0)
    assert r3 is None
    outs = m.tick(1500)
    (timeout,) = [o for o in outs if isinstance(o, Reply)]
    assert timeout.response.code == p.DLedgerResponseCode.INCONSISTENT_STATE


@pytest.mark.parametrize("seed", range(6))
def test_random_faults_lose_no_acknowledged_entry(seed: int) -> None:
    """Random partitions, stops and heals under a steady write load. An entry is acknowledged when
    its leader, still in the term it appended it in, saw the commit index reach it (what a broker
    answers SEND_OK on). Invariants: one leader per term, and after healing every member holds
    every acknowledged entry at its index."""
    g = Group(seed=seed)
    rng = random.Random(seed)
    appended: dict[tuple[str, int], DLedgerEntry] = {}  # (leader, term) -> entries it appended
    acked: dict[int, bytes] = {}
    k = 0

    def note(src: str, outs: list[Output]) -> None:
        m = g.members[src]
        for o in outs:
            if isinstance(o, Committed) and m.role is Role.LEADER:
                for e in list(appended.values()):
                    if e.term == m.curr_term and e.index <= o.index and appended.get((src, e.index)) is e:
                        acked[e.index] = e.body

    emit = g.emit

    def emit_and_note(src: str, outs: list[Output]) -> None:
        note(src, outs)
        emit(src, outs)

    g.emit = emit_and_note  # type: ignore[method-assign]
    for _ in range(40):
        fault = rng.random()
        if fault < 0.3:
            g.cut, g.stopped = {rng.choice(IDS)}, set()
        elif fault < 0.45:
            g.cut, g.stopped = set(), {rng.choice(IDS)}
        elif fault < 0.55:
            g.cut, g.stopped = set(rng.sample(IDS, 2)), set()
        else:
            g.cut, g.stopped = set(), set()
        for _ in range(rng.randrange(5, 20)):
            g.run(100)
            for i in IDS:
                m = g.members[i]
                if m.role is Role.LEADER and i not in g.stopped:
                    k += 1
                    entry, outs = m.append(b"s%d-%d" % (seed, k), g.now)
                    appended[(i, entry.index)] = entry
                    g.emit(i, outs)
                    g.deliver()
    g.cut, g.stopped = set(), set()
    g.run(15000)
    terms: dict[int, set[str]] = {}
    for _, src, rc in g.roles:
        if rc.role is Role.LEADER:
            terms.setdefault(rc.term, set()).add(src)
    assert all(len(v) == 1 for v in terms.values()), terms
    assert acked, "the schedule acknowledged nothing"
    for i in IDS:
        ledger = g.members[i].ledger
        for index, body in acked.items():
            assert ledger.get(index).body == body, f"seed {seed}: {i} lost acknowledged entry {index}"
    assert len({tuple(g.bodies(i)) for i in IDS}) == 1


# ---------------------------------------------------------------------- leadership transfer


@pytest.mark.parametrize("seed", range(3))
def test_preferred_leader_takes_the_leadership(seed: int) -> None:
    """preferredLeaderIds: whoever is elected first hands the leadership to the preferred member
    (checkPreferredLeader every second), which wins in the next term; nothing is lost."""
    g = Group(seed, preferred="n2")
    g.run(3000)
    first = g.leader()
    for k in range(5):
        g.append(b"p%d" % k)
    g.run(4000)
    leader = g.leader()
    assert leader.self_id == "n2", f"seed {seed}: leader {leader.self_id}"
    if first.self_id != "n2":
        assert leader.curr_term > first.curr_term
    g.append(b"after")
    g.run(1500)
    assert all(g.bodies(i) == [*(b"p%d" % k for k in range(5)), b"after"] for i in IDS)
    g.run(2500)
    assert g.leader().self_id == "n2"  # and it stays


def test_leadership_transfer_on_request() -> None:
    """A LEADERSHIP_TRANSFER to the leader (what an admin tool sends): appends are refused while it
    runs, the transferee takes over in the next term and the answer relayed to the asker is its own."""
    g = Group(seed=5)
    g.run(3000)
    old = g.leader()
    g.append(b"x")
    target = next(i for i in IDS if i != old.self_id)
    ask = p.LeadershipTransferRequest(
        group="g1",
        local_id="admin",
        remote_id=old.self_id,
        term=old.curr_term,
        transfer_id=old.self_id,
        transferee_id=target,
    )
    resp, outs = old.handle_request(wire(ask), g.now)
    assert resp is None  # answered when the transferee has answered
    g.emit(old.self_id, outs)
    with pytest.raises(LeaderTransferringError):
        old.append(b"during", g.now)
    g.deliver()
    g.run(3000)
    assert g.leader().self_id == target
    assert len(g.client_replies) == 1
    answer = g.client_replies[0].response
    assert answer.code == p.DLedgerResponseCode.SUCCESS and answer.term == old.curr_term
    assert old.role is Role.FOLLOWER and old.transferee is None
    g.append(b"y")
    g.run(1500)
    assert all(g.bodies(i) == [b"x", b"y"] for i in IDS)


def test_leadership_transfer_refusals() -> None:
    g = Group(seed=2)
    g.run(3000)
    leader = g.leader()
    follower = next(i for i in IDS if i != leader.self_id)

    def ask(to: DLedgerMember, **kw: object) -> p.RequestOrResponse | None:
        fields = {"group": "g1", "local_id": "admin", "remote_id": to.self_id, "term": leader.curr_term}
        fields.update(kw)
        resp, _ = to.handle_request(wire(p.LeadershipTransferRequest(**fields)), g.now)  # type: ignore[arg-type]
        return resp

    def code(resp: p.RequestOrResponse | None) -> int:
        assert resp is not None
        return resp.code

    assert code(ask(leader, transfer_id=leader.self_id, transferee_id="n9")) == p.DLedgerResponseCode.UNKNOWN_MEMBER
    stale = ask(leader, transfer_id=leader.self_id, transferee_id=follower, term=leader.curr_term - 1)
    assert code(stale) == p.DLedgerResponseCode.INCONSISTENT_TERM
    not_leader = ask(g.members[follower], transfer_id=follower, transferee_id=leader.self_id)
    assert code(not_leader) == p.DLedgerResponseCode.NOT_LEADER
    # to a member that is neither side
    assert (
        code(ask(g.members[follower], transfer_id="n9", transferee_id="n8"))
        == p.DLedgerResponseCode.UNEXPECTED_ARGUMENT
    )
    # a transferee told by someone who is not its leader
    wrong = ask(g.members[follower], transfer_id=follower, transferee_id=follower)
    assert code(wrong) in (p.DLedgerResponseCode.NOT_LEADER, p.DLedgerResponseCode.INCONSISTENT_LEADER)
    # a transferee far behind: the leader's watermark for it is old
    g.stopped = {follower}
    for k in range(5):
        _, outs = leader.append(b"z%d" % k, g.now)
        g.emit(leader.self_id, outs)
        g.deliver()
    leader.timing = dataclasses.replace(leader.timing, max_leadership_transfer_wait_index=3)
    behind = ask(leader, transfer_id=leader.self_id, transferee_id=follower)
    assert code(behind) == p.DLedgerResponseCode.FALL_BEHIND_TOO_MUCH


def test_compare_of_an_unreadable_entry_is_a_mismatch() -> None:
    """EntryHandler#handleDoCompare answers INCONSISTENT_STATE whatever fails, so the leader walks
    down to an entry both hold and truncates there instead of asking again forever."""

    class Unreadable(MemoryLedger):
        def get(self, index: int) -> DLedgerEntry:
            if index == 1:
                raise StoreFormatError("entry 1: entry at 0: 0 bytes, a header needs 48")
            return super().get(index)

    entries = [DLedgerEntry(index=i, term=5, pos=i * 49, body=b"%d" % i) for i in range(2)]
    m = member(Unreadable(entries))
    m.handle_request(p.HeartBeatRequest(group="g1", local_id="n0", remote_id="n1", leader_id="n0", term=5), 0)

    def compare(e: DLedgerEntry) -> p.PushEntryRequest:
        return p.PushEntryRequest(
            group="g1", local_id="n0", remote_id="n1", leader_id="n0", term=5, type=p.PushType.COMPARE, entry=e
        )

    bad, _ = m.handle_request(compare(entries[1]), 0)
    assert bad is not None and bad.code == p.DLedgerResponseCode.INCONSISTENT_STATE
    good, _ = m.handle_request(compare(entries[0]), 0)
    assert good is not None and good.code == p.DLedgerResponseCode.SUCCESS
