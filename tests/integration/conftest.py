"""Integration suite: pyrmq's servers on loopback ports driven by pyrmq's own client.

Every test here gets the `integration` marker (tests/support/suites.py); `tools/test --fast`
runs this suite and tests/unit.
"""

from __future__ import annotations

import pytest
from support.suites import mark_suite


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_suite(items, __file__)
