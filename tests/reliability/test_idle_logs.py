"""A fresh, idle `pyrmq dev` logs no warning: warnings must mean something.

The name server and broker of `pyrmq dev` run in this process on free ports, on a store whose
directories do not exist yet (on a tmpfs of its own), with their housekeeping shortened (disk-usage/cleaning rounds every
200 ms from the start instead of every 10 s after a minute, transaction checks every 200 ms,
offset persistence every 500 ms). Once each job has run six times not one record at WARNING or above may
have been logged, and each housekeeping job must have run (so the test can fail).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import pytest
from support.small_fs import small_filesystem

# imported before the servers start, so the idle time is not spent importing
import pyrmq.broker.controller
import pyrmq.namesrv.controller  # noqa: F401
from pyrmq.broker import dev
from pyrmq.broker.transaction.transactional_message_service import TransactionalMessageService
from pyrmq.store import cleanup
from pyrmq.store.cleanup import StoreCleaner

ROUNDS = 6  # of each housekeeping job
DEADLINE_S = 20.0


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def warnings_logged():
    handler = _Collect()
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)  # let every logger's records reach the handler
    try:
        yield handler.records
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)


def test_fresh_idle_dev_logs_no_warning(tmp_path, monkeypatch, warnings_logged):
    with contextlib.ExitStack() as stack:
        _idle_dev(tmp_path, monkeypatch, warnings_logged, stack)


def _idle_dev(tmp_path, monkeypatch, warnings_logged, stack: contextlib.ExitStack) -> None:
    rounds = {"clean": 0, "check": 0}
    clean_round = StoreCleaner.run_once
    check = TransactionalMessageService.check

    def counted_clean(self: StoreCleaner) -> cleanup.CleanRound:
        rounds["clean"] += 1
        return clean_round(self)

    async def counted_check(self: TransactionalMessageService, *a: object, **kw: object) -> None:
        rounds["check"] += 1
        await check(self, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(cleanup, "INITIAL_DELAY_MS", 200)
    monkeypatch.setattr(StoreCleaner, "run_once", counted_clean)
    monkeypatch.setattr(TransactionalMessageService, "check", counted_check)

    # the store on a filesystem of its own: on the machine's disk, a disk over 75% used
    # (diskMaxUsedSpaceRatio) rightly makes the cleaner warn, whatever the broker does
    mount = stack.enter_context(small_filesystem(tmp_path / "fresh", 64))
    store = mount / "store"
    args = dev._parser().parse_args(
        ["--namesrv-port", "0", "--broker-port", "0", "--store", str(store), "--cluster", "IdleCluster"]
    )
    args.metrics_port = 0  # the Prometheus exporter on a free port, not 5557
    args.grpc_port = -1  # no gRPC endpoint (8081 stays free)
    args.broker_properties = {
        "cleanResourceInterval": "200",
        "transactionCheckInterval": "200",
        "flushConsumerOffsetInterval": "500",
    }

    async def scenario() -> int:
        stop = asyncio.Event()

        async def idle() -> None:
            deadline = asyncio.get_running_loop().time() + DEADLINE_S
            while min(rounds.values()) < ROUNDS and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.1)
            stop.set()

        watcher = asyncio.create_task(idle())
        try:
            return await dev.serve(args, stop)
        finally:
            watcher.cancel()

    assert asyncio.run(scenario()) == 0
    assert not (store / "commitlog").exists(), "an idle broker wrote a commit log"
    assert min(rounds.values()) >= ROUNDS, rounds
    shown = [f"{r.name} {r.levelname}: {r.getMessage()}" for r in warnings_logged]
    assert shown == [], "\n".join(shown)
