"""A DLedger broker group (issue 13) under the official 5.5.0 client, through three faults in a row.

One group of three brokers (enableDLegerCommitLog=true) and one name server serve one load that
lasts the whole test: the Java scenario FaultPhasesLoadTest sends sync from two producer threads
(unique keys, 32 KiB bodies, so megabytes pile up in seconds) with a push consumer on the topic,
until the test writes its `stop` file. Meanwhile:

1. **SIGSTOP of the leader** (a partition: alive, sockets open, silent). The others elect a new
   leader once its heartbeats stay away, it registers as brokerId 0 and the producer goes on there;
   measured: SIGSTOP -> the first SEND_OK stored on the new leader. Then SIGCONT: the old leader
   meets a higher term, steps down, registers as a slave and follows; its ledger is then
   byte-identical to the new leader's (whatever it held that was not committed is gone).
2. **A follower far behind, and an uncommitted tail**: follower A SIGKILLed, several MiB written
   without it (far beyond one push); then follower B SIGKILLed: the leader, alone, appends entries
   nobody else gets (none answered SEND_OK) and is SIGSTOPped. A and B restarted on their stores:
   B leads, A catches up (its DLedger data byte-identical to the new leader's, read through
   pyrmq's DLedgerStoreReader), writes resume. On SIGCONT the old leader steps down and truncates
   its tail: the new leader's entries replace it.
3. **Two of three down**: both followers SIGKILLed under load. No send that started after that is
   acknowledged before a member is back (the client sees failures and timeouts); one follower
   restarted: a leader again, writes resume.

At the end every body the producer saw SEND_OK for is consumed (duplicates allowed, none lost),
and the live members' ledgers are byte-identical.

`broker_kind` "pyrmq": pyrmq name server and brokers (the default run). "java": the Java 5.5.0 name
server and three Java brokers with a small heap (the reference run, PYRMQ_COMPAT_REFERENCE=1): the
same assertions, and the SIGSTOP -> first SEND_OK time to compare. The mixed groups (opt-in too):
one Java broker (n0) and two pyrmq brokers at the pyrmq name server, the leadership placed by
LEADERSHIP_TRANSFER so that every pairing is met:

- "mixed-java-leader": the Java leader SIGSTOPped, a pyrmq member elected; in phase 2 the Java
  member leads again and a pyrmq follower catches up MiBs from it.
- "mixed-pyrmq-leader": a pyrmq leader SIGSTOPped while the Java member follows, the other pyrmq
  member leads; in phase 2 the Java member is the far-behind one and catches up from a pyrmq
  leader, entry for entry the bytes pyrmq wrote.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from compat.test_dledger_brokers_java_client import MIXED, _create_topic, _wait_table, dledger_member
from support import java
from support.failover_load import load_argv, rows, store_host
from support.ports import free_port
from support.pyrmq_proc import restart_broker

from pyrmq.dledger import protocol as p
from pyrmq.dledger.store_files import DLedgerStoreReader, StoreFormatError, default_path
from pyrmq.remoting.client import RemotingClient
from pyrmq.store.cli import inspect_store, verify_store

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.slow]

CLUSTER = "DlFaultCluster"
IDS = ("n0", "n1", "n2")
THREADS = 2
BODY_BYTES = 32 * 1024  # a broker's cost is per message: big bodies pile up MiBs sooner
#: what the leader writes while a follower is down: several MiB, over a hundred entries
FAR_BEHIND_BYTES = 4 * 1024 * 1024
#: both followers down this long: longer than maxWaitAckTimeMs (2.5 s), so sends time out
TWO_DOWN_S = 3.0
DRAIN_MS = 40_000
#: a Java broker restarted on a loaded machine spent 50 s opening its RocksDB store alone
RESTART_TIMEOUT = {"pyrmq": 90, "java": 240}
#: the Java leader writes hundreds of MiB while a Java follower restarts, and the load goes on
CATCH_UP_TIMEOUT = {"pyrmq": 60, "java": 300}
#: the kind of each member (n0 n1 n2), the member placed as leader before the load (the one
#: SIGSTOPped first) and the one placed as leader after phase 1 (None: wherever the votes went).
#: Phase 2 kills first the follower that is neither the leader nor phase 1's frozen one: that
#: member falls far behind, and phase 1's frozen one leads after the restarts.
PLANS: dict[str, tuple[tuple[str, ...], str | None, str | None]] = {
    "pyrmq": (("pyrmq",) * 3, None, None),
    "java": (("java",) * 3, None, None),
    # Java frozen, a pyrmq member leads, then Java again with a pyrmq member far behind it
    "mixed-java-leader": (MIXED, "n0", None),
    # pyrmq frozen with Java following, pyrmq n2 leads, then n1 with the Java member far behind it
    "mixed-pyrmq-leader": (MIXED, "n1", "n2"),
}


@dataclass
class Load:
    """The FaultPhasesLoadTest process and its files."""

    out: Path
    proc: subprocess.Popen
    log: Path

    def progress(self) -> tuple[int, int, int]:
        """(SEND_OK count, ms of the last SEND_OK, failed count)."""
        try:
            acks, last, fails = (int(x) for x in (self.out / "progress").read_text().split())
        except (FileNotFoundError, ValueError):
            return 0, 0, 0
        return acks, last, fails

    def wait(self, ok, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not ok(*self.progress()):
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            assert time.monotonic() < deadline, f"{what} not within {timeout} s: {self.progress()}"
            time.sleep(0.05)

    def more_acks(self, n: int, timeout: float, what: str, after_ms: float = 0) -> None:
        """Until `n` more SEND_OK than now, the last one after `after_ms`."""
        base = self.progress()[0]
        self.wait(lambda a, last, _: a >= base + n and last > after_ms, timeout, what)


def _start_load(ns: str, topic: str, java_home: Path, out: Path) -> Load:
    props = {
        "namesrv": ns,
        "topic": topic,
        "group": f"{topic}_c",
        "threads": THREADS,
        "bodyBytes": BODY_BYTES,
        "drainMs": DRAIN_MS,
        "goWaitMs": 300_000,
        "maxLoadMs": 900_000,  # a safety net: the test ends the load with its `stop` file
        "out": out,
    }
    argv = load_argv("FaultPhasesLoadTest", props, java_home)
    out.mkdir(parents=True)
    log = out.with_suffix(".log")
    with log.open("w") as sink:
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, env=java.java_env(java_home))
    return Load(out, proc, log)


def _ask_transfer(peers: str, group: str, leader: str, transferee: str, term: int) -> int:
    """A LEADERSHIP_TRANSFER to the leader's DLedger port, as a DLedger admin client asks it; its code."""
    addr = dict(peer.split("-", 1) for peer in peers.split(";"))[leader]
    req = p.LeadershipTransferRequest(
        group=group, remote_id=leader, term=term, transfer_id=leader, transferee_id=transferee
    )

    async def ask() -> int:
        async with RemotingClient() as client:
            return p.LeadershipTransferResponse.decode(
                (await client.invoke(addr, p.request_command(req), 10)).body
            ).code

    return asyncio.run(ask())


def _reader(broker, self_id: str) -> DLedgerStoreReader:
    """The member's DLedger store (`<storePathRootDir>/dledger-<selfId>`), recovered from its files.

    A live Java member creates its next data file empty and then sizes it: read again then."""
    for _ in range(50):
        try:
            return DLedgerStoreReader(default_path(str(broker.store_dir), self_id))
        except StoreFormatError:
            time.sleep(0.1)
    return DLedgerStoreReader(default_path(str(broker.store_dir), self_id))


def _data(reader: DLedgerStoreReader, end: int) -> bytes:
    """The member's DLedger data files from their start up to `end` (an entry boundary)."""
    out = bytearray()
    for start, path in reader.data_files:
        if start >= end:
            break
        with open(path, "rb") as f:
            out += f.read(min(reader.data_file_size, end - start))
    return bytes(out)


def _caught_up(brokers, follower: str, leader: str, timeout: float) -> tuple[int, int]:
    """Wait until `follower` holds everything `leader` holds now; their data files are then
    byte-identical up to there. Returns (entries, bytes) compared."""
    target = _reader(brokers[leader], leader)
    deadline = time.monotonic() + timeout
    while (r := _reader(brokers[follower], follower)).ledger_end_index < target.ledger_end_index:
        assert time.monotonic() < deadline, (
            f"{follower} at index {r.ledger_end_index}, {leader} was at {target.ledger_end_index}"
        )
        time.sleep(0.2)
    assert _data(r, target.write_pos) == _data(target, target.write_pos), f"{follower} differs from {leader}"
    return target.ledger_end_index + 1, target.write_pos


@dataclass
class Marks:
    """Wall-clock ms of the faults, to read the client's records against."""

    times: dict[str, float] = field(default_factory=dict)

    def __call__(self, what: str) -> float:
        self.times[what] = time.time() * 1000
        return self.times[what]


@pytest.mark.parametrize(
    "broker_kind",
    [
        "pyrmq",
        "java",
        pytest.param("mixed-java-leader", marks=pytest.mark.reference),
        pytest.param("mixed-pyrmq-leader", marks=pytest.mark.reference),
    ],
)
def test_official_client_through_sigstop_far_behind_follower_and_two_down(
    broker_kind, java_harness, request, java_home, tmp_path
):
    started = time.monotonic()
    member_kinds, first_leader, second_leader = PLANS[broker_kind]
    kinds = dict(zip(IDS, member_kinds, strict=True))
    ns = request.getfixturevalue("java_namesrv" if broker_kind == "java" else "pyrmq_namesrv")
    factories = {k: request.getfixturevalue(f"{k}_broker") for k in set(member_kinds)}
    slowest = "java" if "java" in member_kinds else "pyrmq"  # a restart waits for a leader: for all kinds
    name = f"dl-faults-{broker_kind}"
    peers = ";".join(f"{i}-127.0.0.1:{free_port()}" for i in IDS)

    def start(self_id: str):
        return factories[kinds[self_id]](ns.addr, **dledger_member(CLUSTER, name, peers, self_id))

    topic = f"DlFaults_{broker_kind}"

    def start_load() -> Load:
        load = _start_load(ns.addr, topic, java_home, tmp_path / "load")

        def end() -> None:
            if load.proc.poll() is None:
                load.proc.kill()
                load.proc.wait()

        request.addfinalizer(end)
        return load

    # the client's JVM starts with pyrmq brokers (its sends wait for the `go` file); next to a
    # starting Java broker on the loaded machine its first name server request failed (twice), so
    # with a Java member it starts once the group is up
    early = "java" not in member_kinds
    if early:
        load = start_load()
    with ThreadPoolExecutor(len(IDS)) as pool:  # a member registers only once the group has a leader
        brokers = dict(zip(IDS, pool.map(start, IDS), strict=True))
    if not early:
        load = start_load()
    request.addfinalizer(lambda: [b.stop() for b in brokers.values()])
    addrs = {i: b.addr for i, b in brokers.items()}
    ids = {a: i for i, a in addrs.items()}

    def slave_id(member: str) -> int:
        return int(member[1:]) + 1

    def master(timeout: float, among: set[str]) -> str:
        table = _wait_table(ns.addr, name, lambda t: t.get(0) in {addrs[i] for i in among}, timeout)
        return ids[table[0]]

    def place(current: str, target: str | None) -> str:
        """The leadership handed from `current` to `target` (LEADERSHIP_TRANSFER; DLedger's transferee
        may lose its election to a member the new term woke up, so asked again until it lands)."""
        deadline = time.monotonic() + 60
        while target is not None and current != target:
            assert time.monotonic() < deadline, f"the leadership never moved from {current} to {target}"
            term = _reader(brokers[current], current).term.curr_term
            code = _ask_transfer(peers, name, current, target, term)
            try:
                current = master(10, {target})
            except AssertionError:  # refused, or elected elsewhere: ask whoever leads now
                print(f"\nLEADERSHIP_TRANSFER {current} -> {target}: code {code}, not landed; again")
                time.sleep(1)
                current = master(30, set(IDS))
        return current

    leader = place(master(60, set(IDS)), first_leader)
    _create_topic(topic, list(addrs.values()))
    mark = Marks()
    mark("group_up")
    (load.out / "go").write_text("go")
    try:
        load.wait(lambda a, *_: a >= 10, 60, "10 SEND_OK before the first fault")
        mark("load_up")

        # 1. SIGSTOP the leader; a new one is elected and takes the sends; SIGCONT: it follows.
        old = first = leader
        mark("sigstop")
        brokers[old].managed.pause()
        # what it held when it stopped (entries are written through the page cache: nothing moves now)
        frozen = _reader(brokers[old], old)
        paused = [(e.index, e.term) for e in frozen.entries()]
        leader = master(60, set(IDS) - {old})
        mark("new_master")
        load.more_acks(20, 60, "SEND_OK on the new leader", after_ms=mark.times["sigstop"])
        mark("sigcont")
        brokers[old].managed.resume()
        _wait_table(ns.addr, name, lambda t: t.get(slave_id(old)) == addrs[old] and t.get(0) == addrs[leader], 60)
        mark("slave_again")
        rejoined = _caught_up(brokers, old, leader, 30)
        after = _reader(brokers[old], old)
        assert after.term.curr_term > frozen.term.curr_term, (frozen.term, after.term)  # it stepped down
        replaced = sum(1 for index, term in paused if index <= after.ledger_end_index and after.get(index).term != term)
        elected = leader
        leader = place(leader, second_leader)
        if leader != elected:
            load.more_acks(5, 60, f"SEND_OK after the transfer to {leader}")

        # 2. A follower far behind, and a leader's uncommitted tail. Follower A SIGKILLed and MiBs
        #    written without it; then follower B too: the leader, alone, appends entries nobody else
        #    gets (no SEND_OK for them) and is SIGSTOPped. A and B restarted: B, which holds every
        #    committed entry, leads; A catches up from MiBs behind; writes resume. On SIGCONT the
        #    old leader meets the higher term and truncates its tail: the new leader's entries
        #    replace it.
        lone = leader
        behind = next(i for i in IDS if i not in (leader, old))
        brokers[behind].kill9()
        mark("follower_killed")
        # (+ THREADS: the sends in flight at the kill may have reached it)
        load.more_acks(FAR_BEHIND_BYTES // BODY_BYTES + THREADS, 120, f"{FAR_BEHIND_BYTES} B written without {behind}")
        # the acks counted may include sends from before the kill: write on until the follower
        # that stays up holds FAR_BEHIND_BYTES more than the killed one
        while _reader(brokers[old], old).write_pos - _reader(brokers[behind], behind).write_pos < FAR_BEHIND_BYTES:
            load.more_acks(8, 60, f"{FAR_BEHIND_BYTES} B more on {old} than on {behind}")
        brokers[old].kill9()
        mark("leader_alone")
        others_end = max(_reader(brokers[i], i).ledger_end_index for i in (old, behind))
        deadline = time.monotonic() + 30
        while _reader(brokers[lone], lone).ledger_end_index <= others_end:
            assert time.monotonic() < deadline, "the lone leader appended nothing"
            time.sleep(0.02)
        brokers[lone].managed.pause()
        mark("lone_frozen")
        tail = [(e.index, e.term) for e in _reader(brokers[lone], lone).entries() if e.index > others_end]
        gap = _reader(brokers[old], old).write_pos - _reader(brokers[behind], behind).write_pos
        assert gap >= FAR_BEHIND_BYTES, gap
        mark("restart")
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda i: restart_broker(brokers[i], RESTART_TIMEOUT[slowest]), (old, behind)))
        leader = master(60, {old, behind})
        assert leader == old, f"{behind}, far behind, was elected"
        roles = (
            f"{kinds[first]} {first} frozen, {kinds[elected]} {elected} elected; {kinds[behind]} {behind} far behind "
            f"{kinds[leader]} {leader}"
        )
        caught_up = _caught_up(brokers, behind, leader, CATCH_UP_TIMEOUT[slowest])
        mark("follower_caught_up")
        load.more_acks(20, 60, "SEND_OK without the frozen leader", after_ms=mark.times["lone_frozen"])
        mark("lone_resumed")
        brokers[lone].managed.resume()
        _wait_table(ns.addr, name, lambda t: t.get(slave_id(lone)) == addrs[lone] and t.get(0) == addrs[leader], 60)
        _caught_up(brokers, lone, leader, CATCH_UP_TIMEOUT[slowest])
        after = _reader(brokers[lone], lone)
        truncated = sum(1 for index, term in tail if index > after.ledger_end_index or after.get(index).term != term)
        assert truncated >= 1, (tail, after.ledger_end_index)

        # 3. Both followers SIGKILLed: nothing new acknowledged until one is back.
        followers = [i for i in IDS if i != leader]
        for f in followers:
            brokers[f].kill9()
        mark("two_down")
        fails = load.progress()[2]
        load.wait(lambda a, last, failed: failed > fails, 30, "a failed send with two of three down")
        time.sleep(max(0.0, TWO_DOWN_S - (time.time() * 1000 - mark.times["two_down"]) / 1000))
        back = min(followers, key=lambda i: kinds[i] == "java")  # a pyrmq member starts sooner
        mark("one_back")
        restart_broker(brokers[back], RESTART_TIMEOUT[kinds[back]])
        leader = master(60, {leader, back})
        load.more_acks(20, 60, "SEND_OK with one member back", after_ms=mark.times["one_back"])
        mark("resumed")
    finally:
        (load.out / "stop").write_text("stop")
        rc = load.proc.wait(timeout=DRAIN_MS / 1000 + 60)
        mark("drained")
    assert rc == 0 and (load.out / "done").exists(), load.log.read_text()[-5000:]

    acked = rows(load.out / "acked.tsv")
    failed = rows(load.out / "failed.tsv")
    consumed = {c[0] for c in rows(load.out / "consumed.tsv")}
    lost = [a[0] for a in acked if a[0] not in consumed]
    t = mark.times
    on_new = [int(a[3]) for a in acked if int(a[3]) > t["sigstop"] and store_host(a[1]) != addrs[old]]
    first_ok = (min(on_new) - t["sigstop"]) / 1000
    # sends started with two of three down (or the leader alone) and answered SEND_OK before a member
    # was back: none may be
    unsafe = [
        a
        for a in acked
        for down, up in (("leader_alone", "restart"), ("two_down", "one_back"))
        if t[down] < int(a[2]) and int(a[3]) < t[up]
    ]
    window_failures = [f for f in failed if t["two_down"] <= int(f[2]) <= t["one_back"] + 1000]
    reasons = sorted({f[3].split(":")[0] for f in window_failures})
    print(
        f"\nDLedger group of three {broker_kind} brokers ({roles}): SIGSTOP of the leader -> first SEND_OK on the new "
        f"leader {first_ok:.2f} s (registered at the name server after {(t['new_master'] - t['sigstop']) / 1000:.1f} s); the resumed leader followed (ledgers identical over {rejoined[0]} "
        f"entries, {replaced} of its entries replaced); a follower {gap / 2**20:.1f} MiB behind caught up in "
        f"{(t['follower_caught_up'] - t['restart']) / 1000:.1f} s (restart included, "
        f"{caught_up[0]} entries, {caught_up[1]} B identical); two of three down: {len(window_failures)} "
        f"failed sends ({', '.join(reasons)}), {len(unsafe)} acknowledged, one back -> writes resumed "
        f"{(t['resumed'] - t['one_back']) / 1000:.1f} s (restart included); the frozen lone leader's {len(tail)} "
        f"uncommitted entries: {truncated} truncated and replaced; {len(acked)} SEND_OK, {len(failed)} failed, "
        f"{len(lost)} acknowledged lost; phases (s): "
        + ", ".join(f"{k} {(v - t['sigstop']) / 1000:.1f}" for k, v in t.items())
        + f"; {time.monotonic() - started:.0f} s in all"
    )
    assert not lost, lost[:20]
    assert not unsafe, unsafe[:5]
    assert window_failures, "no failed send with two of three down"
    # the live members' ledgers end up byte-identical
    for member in {back} - {leader}:
        _caught_up(brokers, member, leader, CATCH_UP_TIMEOUT[slowest])
    # `pyrmq store verify` on each live member's store, a Java broker's too: every DLedger entry's
    # record (CRC), the consume queues and the index agree with the ledger
    for member in {back, leader}:
        report, stats = verify_store(str(brokers[member].store_dir))
        assert not report.problems and stats.records >= len(acked), (
            member,
            kinds[member],
            stats.records,
            [str(x) for x in report.problems[:5]],
        )
        # and `pyrmq store inspect` shows the ledger: one record per entry, the last ones decoded
        ledger = inspect_store(str(brokers[member].store_dir))["dledger"]
        assert ledger["entries"] == stats.records, (member, kinds[member], ledger)
        assert ledger["tail"] and all("topic" in r for r in ledger["tail"]), (member, kinds[member], ledger["tail"])
