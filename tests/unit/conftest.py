"""Unit suite: tests/unit/<package>/ mirrors pyrmq/; processors and stores are called directly, no ports.

Every test here gets the `unit` marker (tests/support/suites.py); `tools/test --fast` runs
this suite and tests/integration.
"""

from __future__ import annotations

import pytest
from support.suites import mark_suite


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_suite(items, __file__)
