"""pytest plugin (entry point ``pyrmq``): a ``pyrmq_server`` fixture and ``--broker-mode``.

``--broker-mode`` (or ``$PYRMQ_BROKER_MODE``): ``process`` (default: ``pyrmq dev`` subprocess),
``inprocess`` (embedded, on a thread) or ``container`` (``RocketMQContainer``, image from
``--pyrmq-image`` / ``$PYRMQ_IMAGE``, default ``pyrmq:local``; network from ``$PYRMQ_DOCKER_NETWORK``).
pyrmq's own compat fixtures read the same option.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Protocol

import pytest

MODES = ("process", "inprocess", "container")


class PyrmqServer(Protocol):
    """What every kind of server gives a test: PyrmqDevProcess, EmbeddedPyrmqDev, RocketMQContainer."""

    @property
    def namesrv_addr(self) -> str: ...

    def get_namesrv_addr(self) -> str: ...

    def stop(self) -> object: ...


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pyrmq")
    group.addoption(
        "--broker-mode",
        choices=MODES,
        default=None,
        help="how pyrmq servers are started: process (default), inprocess, container (env PYRMQ_BROKER_MODE)",
    )
    group.addoption("--pyrmq-image", default=None, help="image for --broker-mode=container (env PYRMQ_IMAGE)")


def broker_mode(config: pytest.Config) -> str:
    mode = config.getoption("broker_mode", None) or os.environ.get("PYRMQ_BROKER_MODE") or "process"
    if mode not in MODES:
        raise pytest.UsageError(f"PYRMQ_BROKER_MODE must be one of {MODES}, not {mode!r}")
    return mode


def start_server(config: pytest.Config) -> PyrmqServer:
    """A started pyrmq dev server of the configured kind; the caller stops it."""
    mode = broker_mode(config)
    if mode == "container":
        from pyrmq.testing.container import DEFAULT_IMAGE, RocketMQContainer

        image = config.getoption("pyrmq_image", None) or os.environ.get("PYRMQ_IMAGE") or DEFAULT_IMAGE
        return RocketMQContainer(image).start()
    from pyrmq.testing.process import EmbeddedPyrmqDev, PyrmqDevProcess

    return (EmbeddedPyrmqDev() if mode == "inprocess" else PyrmqDevProcess()).start()


@pytest.fixture(scope="session")
def pyrmq_server(request: pytest.FixtureRequest) -> Iterator[PyrmqServer]:
    """A running pyrmq (NameServer + Broker) for the session; use ``pyrmq_server.namesrv_addr``."""
    server = start_server(request.config)
    yield server
    server.stop()
