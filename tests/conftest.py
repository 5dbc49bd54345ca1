"""Checks every collected test carries its suite's marker (tests/support/suites.py)."""

from __future__ import annotations

import pytest
from support.suites import SUITES, unmarked


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Runs after the suite conftests' tryfirst hooks and before pytest's own -m selection.
    missing = unmarked(items)
    if missing:
        raise pytest.UsageError(
            f"{len(missing)} tests carry no suite marker {SUITES} (is their folder's conftest.py missing?): "
            + ", ".join(missing[:5])
        )
