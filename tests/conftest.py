"""Checks every collected test carries its suite's marker (tests/support/suites.py); deselects the
opt-in `soak` runs unless PYRMQ_SOAK=1; a hard limit on every test (support.watchdog); the shared
clock fixture."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from support.fakes import ManualClock
from support.suites import SUITES, unmarked
from support.watchdog import Watchdog, hard_limit


@pytest.fixture
def clock() -> ManualClock:
    """Epoch ms that move only on ``clock.advance(ms)``: pass it as the ``clock`` of a
    controller, store or manager instead of sleeping (pyrmq.common.clock)."""
    return ManualClock()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Runs after the suite conftests' tryfirst hooks and before pytest's own -m selection.
    missing = unmarked(items)
    if missing:
        raise pytest.UsageError(
            f"{len(missing)} tests carry no suite marker {SUITES} (is their folder's conftest.py missing?): "
            + ", ".join(missing[:5])
        )
    if os.environ.get("PYRMQ_SOAK") != "1":
        soak = [item for item in items if item.get_closest_marker("soak") is not None]
        if soak:
            # Deselected, never skipped: the hour-long runs are reported in docs, not in CI.
            config.hook.pytest_deselected(items=soak)
            items[:] = [item for item in items if item.get_closest_marker("soak") is None]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    limit = hard_limit(item)
    if limit is None:
        yield
        return
    with Watchdog(item.config, item.nodeid, limit):
        yield
