"""Checks every collected test carries its suite's marker (tests/support/suites.py); the shared clock fixture."""

from __future__ import annotations

import pytest
from support.fakes import ManualClock
from support.suites import SUITES, unmarked


@pytest.fixture
def clock() -> ManualClock:
    """Epoch ms that move only on ``clock.advance(ms)``: pass it as the ``clock`` of a
    controller, store or manager instead of sleeping (pyrmq.common.clock)."""
    return ManualClock()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Runs after the suite conftests' tryfirst hooks and before pytest's own -m selection.
    missing = unmarked(items)
    if missing:
        raise pytest.UsageError(
            f"{len(missing)} tests carry no suite marker {SUITES} (is their folder's conftest.py missing?): "
            + ", ".join(missing[:5])
        )
