"""Fixtures for the container suite: a Docker engine, the pyrmq image, Java client runs.

The engine and the base image come from tools/docker-up.sh (Debian docker.io + dockerd +
a debootstrapped base image when no engine or registry is available); the image from
docker/build.sh (reused while the files it contains are unchanged). Every container uses
host networking (all traffic on 127.0.0.1) and Ryuk is off: nothing can be pulled here.
A missing engine fails loudly; nothing is skipped.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from support.suites import mark_suite

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")  # before testcontainers reads its config
os.environ.setdefault("PYRMQ_DOCKER_NETWORK", "host")
os.environ.setdefault("TESTCONTAINERS_CHECKS_DISABLE", "true")  # Java: no alpine start-up check container
# Java: the Docker host is this machine (else Testcontainers runs an alpine container to find its gateway).
os.environ.setdefault("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")

ROOT = Path(__file__).resolve().parents[2]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here is marked `container` (tests/support/suites.py)."""
    mark_suite(items, __file__)


@pytest.fixture(scope="session")
def pyrmq_image() -> str:
    """The image built from this checkout (docker/build.sh prints its reference)."""
    r = subprocess.run([str(ROOT / "docker" / "build.sh")], cwd=ROOT, capture_output=True, text=True, timeout=1200)
    if r.returncode != 0:
        pytest.fail(f"docker/build.sh failed (exit {r.returncode})\n{r.stderr[-6000:]}")
    image = r.stdout.strip().splitlines()[-1]
    os.environ["PYRMQ_IMAGE"] = image
    return image


@pytest.fixture(scope="session")
def docker_client(pyrmq_image):
    import docker

    return docker.from_env()


@pytest.fixture(scope="session")
def java_home(tmp_path_factory):
    from support import java

    java.ensure_built()
    return java.prepare_home(tmp_path_factory.mktemp("java-home"))


@pytest.fixture
def world_writable(tmp_path):
    """A host directory the image's non-root user (uid 3000) can write: for bind-mounted stores."""

    def make(name: str) -> Path:
        d = tmp_path / name
        d.mkdir(parents=True, exist_ok=True)
        for p in (tmp_path, d):
            p.chmod(0o777)
        return d

    return make


@pytest.fixture(scope="session")
def compose_cmd(pyrmq_image) -> list[str]:
    """`docker compose` (v2 plugin) when available, else `docker-compose` (tools/docker-up.sh installs it)."""
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if subprocess.run(["docker-compose", "version"], capture_output=True).returncode == 0:
        return ["docker-compose"]
    pytest.fail("neither `docker compose` nor `docker-compose` works (tools/docker-up.sh installs docker-compose)")
