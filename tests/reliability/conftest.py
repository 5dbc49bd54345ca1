"""Reliability suite: pyrmq's servers under floods, connection storms, fuzzed frames and full disks.

Every test here gets the `reliability` marker (tests/support/suites.py). Each test is bounded in
time and count and talks to 127.0.0.1 only; the hour-long soak runs are marked `soak` and run
only with PYRMQ_SOAK=1 (tests/conftest.py).
"""

from __future__ import annotations

import pytest
from support.suites import mark_suite


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_suite(items, __file__)
