"""The official Java quickstart (rocketmq-client 5.5.0: send 1,000, consume 1,000) against pyrmq
started by Testcontainers for Java (compat/java-tests/container, PyrmqContainer: host network)."""

from __future__ import annotations

import pytest
from support.java import run_junit

pytestmark = [pytest.mark.container, pytest.mark.java]


def test_quickstart_through_testcontainers_java(pyrmq_image, java_home):
    r = run_junit(
        "container",
        "io.pyrmq.compat.container.PyrmqContainerQuickstartTest",
        "quickstartAgainstContainer",
        props={"image": pyrmq_image, "count": 1000, "timeoutSec": 90},
        home=java_home,
        timeout=240,
    )
    assert "quickstart: received 1000 distinct of 1000" in r.stdout, r.stdout[-3000:]
