"""The long run: mixed load against a pyrmq broker for an hour, then checks for drift.

Opt-in (`soak`): PYRMQ_SOAK=1 .venv/bin/python -m pytest tests/reliability/test_soak_flow.py -s
(PYRMQ_SOAK_SECONDS shortens or lengthens it; 3600 by default). Rounds of 60 s alternate a
256 KiB flood, a 1 KiB flood and a quiet spell; after each round the broker's anonymous memory
and the latency of a plain request are recorded. At the end: no timeout in any round, memory
after the last round within 32 MiB of the first round's, the request latency at rest not
grown by more than 50 ms, and the broker still answering.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time

import pytest
from support.flood import flood
from support.probe import request
from support.pyrmq_proc import PyrmqBroker
from support.servers import PyrmqNamesrv

from pyrmq.common.memory import anon_bytes
from pyrmq.protocol.codes import RequestCode, ResponseCode

pytestmark = [pytest.mark.soak, pytest.mark.timeout(int(os.environ.get("PYRMQ_SOAK_SECONDS", "3600")) + 600)]

MiB = 1024 * 1024
ROUND_S = 60
#: (message size, connections, window) of each load round; None = a quiet round
ROUNDS = ((256 * 1024, 32, 4), (1024, 64, 8), None)


def _latency_ms(addr: str, n: int = 20) -> float:
    times = []
    for _ in range(n):
        t0 = time.monotonic()
        assert request(addr, RequestCode.GET_BROKER_RUNTIME_INFO).code == ResponseCode.SUCCESS
        times.append((time.monotonic() - t0) * 1000)
    return statistics.median(times)


def test_an_hour_of_mixed_load_leaves_no_drift(tmp_path):
    total = float(os.environ.get("PYRMQ_SOAK_SECONDS", "3600"))
    ns = PyrmqNamesrv(tmp_path / "ns")
    broker = None
    try:
        broker = PyrmqBroker(ns.addr, tmp_path / "b", mappedFileSizeCommitLog=256 * MiB, fileReservedTime=1)
        rounds: list[tuple[int, float, dict]] = []
        end = time.monotonic() + total
        i = 0
        while time.monotonic() < end:
            kind = ROUNDS[i % len(ROUNDS)]
            counts: dict = {}
            if kind is None:
                time.sleep(ROUND_S)
            else:
                size, conns, window = kind
                counts = dict(
                    asyncio.run(
                        flood(
                            broker.addr,
                            "SoakTopic",
                            broker.name,
                            size=size,
                            connections=conns,
                            window=window,
                            seconds=ROUND_S,
                        )
                    )
                )
            time.sleep(3)
            rounds.append((anon_bytes(broker.pid), _latency_ms(broker.addr), counts))
            print(f"round {i}: anon {rounds[-1][0] / MiB:.0f} MiB, latency {rounds[-1][1]:.1f} ms, {counts}")
            i += 1
        assert len(rounds) >= 2
        assert all(c.get("timeout", 0) == 0 and c.get("closed", 0) == 0 for _, _, c in rounds), rounds
        assert rounds[-1][0] - rounds[0][0] < 32 * MiB, [r[0] // MiB for r in rounds]
        assert rounds[-1][1] - rounds[0][1] < 50, [r[1] for r in rounds]
        assert broker.alive()
    finally:
        if broker is not None:
            broker.stop()
        ns.stop()
