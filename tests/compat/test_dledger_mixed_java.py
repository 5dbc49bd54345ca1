"""A DLedger group of two pyrmq members and one official Java member (io.openmessaging.storage:
dledger 0.3.2, the jar the 5.5.0 broker uses, run by compat/dledger/DLedgerMemberMain.java).

First the Java member leads (it votes every 100-300 ms, the pyrmq members every 1.5-2 s): entries
appended through its APPEND RPC reach the pyrmq followers. Then it is SIGKILLed: a pyrmq member
is elected, appends on a majority of two, and the restarted Java member catches up as the pyrmq
leader's follower. At the end the three stores (data and index files) are byte-identical."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from support.dledger import GROUP, assert_stores_identical, member, one_leader, peers_string, run, until
from support.java import JVM_FLAGS, SERVER_HEAP, classpath, java_env, java_exe, prepare_home
from support.ports import free_port
from support.procs import ManagedProcess

from pyrmq.dledger import protocol as p
from pyrmq.dledger.raft import Role, Timing
from pyrmq.dledger.server import DLedgerServer
from pyrmq.dledger.store_files import DLedgerStoreReader, default_path
from pyrmq.protocol.codes import ResponseCode
from pyrmq.remoting.client import RemotingClient

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
IDS = ("n0", "n1", "j2")
JAVA_ID = "j2"
DATA_FILE = 4096
INDEX_FILE = 32 * 64
HEARTBEAT_MS = 300
#: the pyrmq members wait longer between vote rounds than the Java one, so Java wins the first election
SLOW_VOTER = Timing(heart_beat_time_interval_ms=HEARTBEAT_MS, min_vote_interval_ms=1500, max_vote_interval_ms=2000)


@pytest.fixture(scope="module")
def java_member_cp(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The servers classpath plus DLedgerMemberMain compiled against it."""
    cp = classpath("servers")
    out = tmp_path_factory.mktemp("dledger-java")
    javac = Path(java_exe()).with_name("javac")
    r = subprocess.run(
        [str(javac), "-nowarn", "-d", str(out), "-cp", cp, str(ROOT / "compat" / "dledger" / "DLedgerMemberMain.java")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, f"javac failed:\n{r.stdout}\n{r.stderr}"
    return f"{cp}:{out}"


def start_java(cp: str, base: Path, peers: str, log: Path, preferred: str | None = None) -> ManagedProcess:
    home = prepare_home(base / "java-home")
    argv = [
        java_exe(),
        *SERVER_HEAP,
        *JVM_FLAGS,
        f"-Duser.home={home}",
        "-cp",
        cp,
        "DLedgerMemberMain",
        GROUP,
        JAVA_ID,
        peers,
        str(base),
        str(DATA_FILE),
        str(INDEX_FILE),
        str(HEARTBEAT_MS),
        "100",
        "300",
        *([preferred] if preferred else []),
    ]
    return ManagedProcess("dledger-java", argv, log, env=java_env(home))


async def wait_printed(proc: ManagedProcess, text: str, timeout: float) -> None:
    def printed() -> bool:
        assert proc.alive(), proc.tail()
        return text in proc.log.read_text(errors="replace")

    await until(printed, timeout, f"{text!r} from {proc.name}")


async def append_rpc(client: RemotingClient, addr: str, remote_id: str, body: bytes) -> p.AppendEntryResponse:
    """A DLedgerClient's append (code 50001), as the Java member answers it."""
    req = p.AppendEntryRequest(group=GROUP, remote_id=remote_id, body=body)
    return p.AppendEntryResponse.decode((await client.invoke(addr, p.request_command(req), 5)).body)


def test_mixed_group_java_leader_then_pyrmq_leader(tmp_path: Path, java_member_cp: str) -> None:
    ports = {i: free_port() for i in IDS}
    peers = peers_string(ports)
    java_addr = f"127.0.0.1:{ports[JAVA_ID]}"
    procs: list[ManagedProcess] = []

    async def main() -> None:
        java = start_java(java_member_cp, tmp_path, peers, tmp_path / "java-1.log")
        procs.append(java)
        await wait_printed(java, "STARTED", 60)
        members: dict[str, DLedgerServer] = {i: member(tmp_path, i, peers, SLOW_VOTER) for i in IDS if i != JAVA_ID}
        try:
            for m in members.values():
                await m.start()
            # phase 1: the Java member leads, pyrmq follows
            await until(
                lambda: all(m.role is Role.FOLLOWER and m.leader_id == JAVA_ID for m in members.values()),
                20,
                "Java leader followed by both pyrmq members",
            )
            async with RemotingClient() as client:
                for k in range(20):
                    resp = await append_rpc(client, java_addr, JAVA_ID, f"from java leader {k}".encode())
                    assert (resp.code, resp.index) == (p.DLedgerResponseCode.SUCCESS, k), resp
            await until(lambda: all(m.committed_index == 19 for m in members.values()), 10, "commit on pyrmq")
            # PULL (51003), declared but not served by 0.3.2: the same remoting answer from both kinds
            async with RemotingClient() as client:
                ask = p.PullEntriesRequest(group=GROUP, remote_id=JAVA_ID, node_id="n0", begin_index=0)
                java_answer = await client.invoke(java_addr, p.request_command(ask), 5)
                ask.remote_id = "n0"
                py_answer = await client.invoke(members["n0"].address, p.request_command(ask), 5)
            assert java_answer.code == py_answer.code == ResponseCode.SYSTEM_ERROR, (java_answer, py_answer)
            assert "NullPointerException" in (java_answer.remark or ""), java_answer
            java_term = next(iter(members.values())).term
            # phase 2: SIGKILL the Java leader; a pyrmq member takes over
            killed_at = time.monotonic()
            java.kill9()
            leader = await one_leader(members, timeout=20)
            elected_in = time.monotonic() - killed_at
            assert leader.term > java_term
            for k in range(15):
                entry = await leader.append(f"from pyrmq leader {k}".encode())
                assert entry.index == 20 + k
            # the Java member restarts on its store and follows the pyrmq leader
            java = start_java(java_member_cp, tmp_path, peers, tmp_path / "java-2.log")
            procs.append(java)
            await wait_printed(java, f"FOLLOWER {leader.config.self_id}", 60)
            await leader.append(b"after the java restart")
            # the Java member has it all: the leader's watermark for it (its APPEND answers)
            await until(lambda: leader.member.watermarks.get(JAVA_ID, -1) == 35, 20, "Java member caught up")
            print(f"pyrmq leader elected {elected_in:.2f} s after the Java leader's SIGKILL")
        finally:
            for m in members.values():
                await m.close()
            for proc in procs:
                proc.stop()

    run(main, timeout=180)
    assert_stores_identical(tmp_path, IDS)
    bodies = [e.body for e in DLedgerStoreReader(default_path(str(tmp_path), JAVA_ID)).entries()]
    assert bodies == [
        *(f"from java leader {k}".encode() for k in range(20)),
        *(f"from pyrmq leader {k}".encode() for k in range(15)),
        b"after the java restart",
    ]


def test_mixed_group_leadership_transfer_both_ways(tmp_path: Path, java_member_cp: str) -> None:
    """preferredLeaderIds=n0 on all three: the Java member, elected first, hands the leadership to
    pyrmq's n0 (its LEADERSHIP_TRANSFER to a pyrmq transferee). Then a LEADERSHIP_TRANSFER sent to
    n0 names the Java member: it takes the next term (SUCCESS relayed by n0), and a second later its
    own checkPreferredLeader gives the leadership back to n0."""
    ports = {i: free_port() for i in IDS}
    peers = peers_string(ports)
    procs: list[ManagedProcess] = []

    async def main() -> None:
        java = start_java(java_member_cp, tmp_path, peers, tmp_path / "java.log", preferred="n0")
        procs.append(java)
        await wait_printed(java, "STARTED", 60)
        members = {i: member(tmp_path, i, peers, SLOW_VOTER, preferred_leader_ids="n0") for i in IDS if i != JAVA_ID}
        try:
            for m in members.values():
                await m.start()
            await wait_printed(java, "LEADER j2", 30)  # Java votes first and wins
            n0 = members["n0"]
            await until(
                lambda: n0.is_leader and members["n1"].leader_id == "n0", 20, "n0 leading after Java's transfer"
            )
            for k in range(5):
                await n0.append(f"n0 {k}".encode())
            term = n0.term
            ask = p.LeadershipTransferRequest(
                group=GROUP, remote_id="n0", term=term, transfer_id="n0", transferee_id=JAVA_ID
            )
            async with RemotingClient() as client:
                cmd = await client.invoke(f"127.0.0.1:{ports['n0']}", p.request_command(ask), 10)
            answer = p.LeadershipTransferResponse.decode(cmd.body)
            assert (answer.code, answer.term) == (p.DLedgerResponseCode.SUCCESS, term + 1), answer
            # Java led term + 1; its preferred-leader check hands the leadership back to n0
            await until(lambda: n0.is_leader and n0.term > term + 1, 20, "n0 leading again")
            await n0.append(b"back on n0")
            await until(lambda: n0.member.watermarks.get(JAVA_ID, -1) == 5, 10, "Java member has it all")
        finally:
            for m in members.values():
                await m.close()
            for proc in procs:
                proc.stop()

    run(main, timeout=180)
    assert_stores_identical(tmp_path, IDS)
