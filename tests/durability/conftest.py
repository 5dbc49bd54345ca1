"""Durability suite: a store writer killed with SIGKILL, then recovered and checked.

Every test here gets the `durability` marker (tests/support/suites.py).
"""

from __future__ import annotations

import pytest
from support.suites import mark_suite


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_suite(items, __file__)
