"""Suite markers: each tests/<suite>/conftest.py marks the items under its own folder.

The folder is the suite (unit, integration, durability, reliability, compat, spark, container), so
`pytest -m "unit or integration"` (what `tools/test --fast` runs) selects by what a test
needs without listing paths. tests/conftest.py fails the run when a collected test carries
no suite marker, so a new folder without its conftest cannot silently leave the fast path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

#: tests/<name>/ folders that hold tests; each has a conftest calling mark_suite.
SUITES = ("unit", "integration", "durability", "reliability", "compat", "spark", "container")

TESTS_DIR = Path(__file__).resolve().parents[1]


def mark_suite(items: list[pytest.Item], conftest: str) -> None:
    """Add the marker named after the folder of `conftest` to every item collected under it."""
    folder = Path(conftest).resolve().parent
    if folder.name not in SUITES or folder.parent != TESTS_DIR:
        raise ValueError(f"{folder} is not a suite folder of {TESTS_DIR} {SUITES}")
    marker = getattr(pytest.mark, folder.name)
    for item in items:
        if item.path.is_relative_to(folder):
            item.add_marker(marker)


def unmarked(items: list[pytest.Item]) -> list[str]:
    """Node ids of the items under tests/ that no suite conftest marked."""
    return [
        item.nodeid
        for item in items
        if item.path.is_relative_to(TESTS_DIR) and not any(item.get_closest_marker(s) for s in SUITES)
    ]
