"""Spark suite: one SparkSession for the whole run (local[2], no UI, 2 shuffle partitions) and a
pyrmq-written store with every record shape the sources must handle."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from spark.store_builder import Sent, build_store
from support.suites import mark_suite


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test here is marked `spark` (tests/support/suites.py). Tests marked `reference` (a
    run on the Java servers only) are deselected unless PYRMQ_COMPAT_REFERENCE=1, as in
    tests/compat."""
    mark_suite(items, __file__)
    if os.environ.get("PYRMQ_COMPAT_REFERENCE") != "1":
        reference = [item for item in items if "tests/spark/" in item.nodeid and item.get_closest_marker("reference")]
        if reference:
            config.hook.pytest_deselected(items=reference)
            items[:] = [item for item in items if item not in reference]


@pytest.fixture(scope="session")
def spark():
    from pyrmq.spark import spark_session

    s = spark_session(
        "pyrmq-tests",
        "local[2]",
        {
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.driver.memory": "512m",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC",
            "spark.driver.extraJavaOptions": "-Xss4m",
            "spark.python.worker.reuse": "true",
        },
    )
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def corrupt_log(spark):
    from pyrmq.spark import register

    return register(spark)


@pytest.fixture(scope="session")
def pyrmq_store(tmp_path_factory) -> tuple[Path, Sent]:
    root = tmp_path_factory.mktemp("spark-store") / "store"
    return root, build_store(root)
