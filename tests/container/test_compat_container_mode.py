"""tests/compat with --broker-mode=container: the Java client cases against pyrmq's NameServer and
Broker started as containers (support/containers.py, docker SDK as testcontainers-python uses it),
in a child pytest. Docker's event log proves the servers really were containers."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.container, pytest.mark.java]

ROOT = Path(__file__).resolve().parents[2]


def test_java_client_compat_cases_in_container_mode(pyrmq_image):
    since = int(time.time()) - 1
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/compat/test_broker_java_clients.py",
            "--broker-mode=container",
            "-k",
            "pyrmq and (quickstart or offsets_survive_restart) and 5.5.0",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env=dict(os.environ),
    )
    assert r.returncode == 0 and "2 passed" in r.stdout, r.stdout[-6000:] + r.stderr[-3000:]
    ev = subprocess.run(
        [
            "docker",
            "events",
            "--since",
            str(since),
            "--until",
            str(int(time.time()) + 1),
            "--filter",
            "event=start",
            "--format",
            "{{.Actor.Attributes.name}}",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    started = ev.stdout.split()
    assert any(n.startswith("pyrmq-namesrv-c") for n in started), started
    # one broker container, plus a second one for the restart in the offsets case
    assert sum(n.startswith("broker-core-compat-") for n in started) >= 2, started
