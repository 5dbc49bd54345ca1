"""The official 5.5.0 client under load while a test kills a master (FailoverLoadTest), and what it saw.

`run_load` starts the Java scenario (compat/java-tests scenarios: producer threads sending sync,
one unique body after another, and a push consumer), waits for the first SEND_OK, lets the load
run `kill_after_s`, calls `kill()` and waits for the scenario to finish its drain. `measure` reads
the scenario's files: acknowledged bodies never consumed (lost), duplicate deliveries, bodies
stored twice, and kill -> the first SEND_OK stored on a new master (the offsetMsgId names it).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from support import java


@dataclass
class Measured:
    acked: int
    failed: int
    kill_to_first_ok: float
    kill_to_last_failure: float
    lost: int
    duplicate_deliveries: int
    stored_twice: int
    failed_but_stored: int

    def line(self, group: str) -> str:
        return (
            f"{group}: kill -> first SEND_OK on the new master {self.kill_to_first_ok:.2f} s, "
            f"-> last failed send {self.kill_to_last_failure:.2f} s; {self.acked} SEND_OK, "
            f"{self.failed} failed sends ({self.failed_but_stored} of them stored and consumed anyway), "
            f"{self.lost} acknowledged lost, {self.duplicate_deliveries} duplicate deliveries, "
            f"{self.stored_twice} bodies stored twice"
        )


@dataclass
class LoadRun:
    """Where the scenario wrote its files, when the kill happened and how many SEND_OK came before."""

    out: Path
    killed_ms: float
    before_kill: int


def store_host(offset_msg_id: str) -> str:
    """The broker address in an offsetMsgId (Java MessageDecoder#createMessageId: IPv4, port, offset)."""
    raw = bytes.fromhex(offset_msg_id[:16])
    return f"{raw[0]}.{raw[1]}.{raw[2]}.{raw[3]}:{int.from_bytes(raw[4:8], 'big')}"


def rows(path: Path) -> list[list[str]]:
    return [ln.split("\t") for ln in path.read_text().splitlines() if ln]


def load_argv(scenario: str, props: dict, java_home: Path) -> list[str]:
    """The 5.5.0 client's JVM running `<scenario>#load` (FailoverLoadTest, FaultPhasesLoadTest)."""
    return java.java_argv(
        "client5",
        "org.junit.platform.console.ConsoleLauncher",
        [
            "execute",
            f"--select-method={java.SCENARIO_PACKAGE}.{scenario}#load",
            "--disable-banner",
            "--disable-ansi-colors",
            "--details=tree",
            "--fail-if-no-tests",
        ],
        java.prepare_home(java_home),
        props,
        with_tests=True,
    )


def run_load(
    namesrv: str,
    topic: str,
    group: str,
    java_home: Path,
    out: Path,
    kill: Callable[[], None],
    *,
    threads: int,
    load_ms: int,
    drain_ms: int,
    kill_after_s: float,
) -> LoadRun:
    """The scenario from start to `done`; `kill()` runs `kill_after_s` after the first SEND_OK."""
    props = {
        "namesrv": namesrv,
        "topic": topic,
        "group": group,
        "threads": threads,
        "loadMs": load_ms,
        "drainMs": drain_ms,
        "out": out,
    }
    argv = load_argv("FailoverLoadTest", props, java_home)
    log = out.with_suffix(".log")
    with log.open("w") as sink:
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, env=java.java_env(java_home))
    try:
        progress = out / "progress"
        deadline = time.monotonic() + 60
        while not (progress.exists() and int(progress.read_text() or 0) > 0):
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "no SEND_OK within 60 s of load\n" + log.read_text()[-3000:]
            time.sleep(0.05)
        time.sleep(kill_after_s)
        before_kill = int(progress.read_text())
        killed_ms = time.time() * 1000
        kill()
        rc = proc.wait(timeout=(load_ms + drain_ms) / 1000 + 60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == 0 and (out / "done").exists(), log.read_text()[-5000:]
    return LoadRun(out, killed_ms, before_kill)


def measure(run: LoadRun, new_masters: Iterable[str]) -> Measured:
    """The scenario's records; at least one SEND_OK after the kill must be stored on one of `new_masters`."""
    acked = rows(run.out / "acked.tsv")
    failed = rows(run.out / "failed.tsv")
    consumed = rows(run.out / "consumed.tsv")
    masters = set(new_masters)
    after = [int(a[3]) for a in acked if int(a[3]) > run.killed_ms and store_host(a[1]) in masters]
    assert after, f"no SEND_OK from a new master {sorted(masters)}; failures: {failed[-5:]}"
    bodies = [c[0] for c in consumed]
    seen = set(bodies)
    copies: dict[str, set[str]] = {}
    for body, offset_id, _ in consumed:
        copies.setdefault(body, set()).add(offset_id)
    return Measured(
        acked=len(acked),
        failed=len(failed),
        kill_to_first_ok=(min(after) - run.killed_ms) / 1000,
        kill_to_last_failure=(max((int(f[2]) for f in failed), default=run.killed_ms) - run.killed_ms) / 1000,
        lost=sum(1 for a in acked if a[0] not in seen),
        duplicate_deliveries=len(bodies) - len(seen),
        stored_twice=sum(1 for ids in copies.values() if len(ids) > 1),
        failed_but_stored=sum(1 for f in failed if f[0] in seen),
    )
