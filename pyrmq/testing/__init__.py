"""Test helpers for applications that talk to RocketMQ: pyrmq as a throw-away server.

* ``PyrmqDevProcess`` / ``EmbeddedPyrmqDev``: ``pyrmq dev`` as a subprocess / in this process (no Docker);
* ``RocketMQContainer``: the pyrmq image through testcontainers-python (``pyrmq[container]``);
* the pytest plugin (``pyrmq.testing.pytest_plugin``, auto-loaded) gives the ``pyrmq_server`` fixture,
  whose kind is picked by ``--broker-mode=process|inprocess|container`` or ``$PYRMQ_BROKER_MODE``.

Everything exposes ``get_namesrv_addr()`` / ``namesrv_addr`` (``127.0.0.1:<port>``).
"""

from __future__ import annotations

from typing import Any

from pyrmq.testing.process import EmbeddedPyrmqDev, PyrmqDevProcess, StartupError

__all__ = ["EmbeddedPyrmqDev", "PyrmqDevProcess", "RocketMQContainer", "StartupError"]


def __getattr__(name: str) -> Any:
    # testcontainers is an optional dependency: import it only when the container class is wanted.
    if name == "RocketMQContainer":
        from pyrmq.testing.container import RocketMQContainer

        return RocketMQContainer
    raise AttributeError(name)
