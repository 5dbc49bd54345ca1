"""Whether and where the gRPC endpoint runs; importable without the ``grpc`` extra.

The key is the Java proxy's ``grpcServerPort`` (ProxyConfig, default 8081), read from the
broker's config file: ``pyrmq broker`` serves gRPC only when the file sets it, ``-1`` turns it
off, ``0`` takes any free port. ``pyrmq dev`` sets it itself (``--grpc-port``).
"""

from __future__ import annotations

import importlib.util
from typing import Any

GRPC_SERVER_PORT = "grpcServerPort"
DEFAULT_GRPC_PORT = 8081  # Java ProxyConfig#grpcServerPort
#: ProxyConfig keys a broker config file may carry for the endpoint (known, so not reported as unknown)
GRPC_CONFIG_KEYS = frozenset({GRPC_SERVER_PORT})
EXTRA_HINT = 'install the grpc extra: pip install "pyrmq[grpc]" (grpcio and rocketmq-python-client)'


def grpc_port_of(cfg: Any) -> int | None:
    """The port to serve gRPC on, or None (key absent or -1). A bad value is a ValueError."""
    props = getattr(cfg, "file_properties", {}) or {}
    raw = props.get(GRPC_SERVER_PORT)
    if raw is None or str(raw).strip() == "":
        return None
    try:
        port = int(str(raw).strip())
    except ValueError:
        raise ValueError(f"{GRPC_SERVER_PORT}={raw!r} is not a port number") from None
    if port == -1:
        return None
    if not 0 <= port <= 65535:
        raise ValueError(f"{GRPC_SERVER_PORT}={port} is out of range (0..65535, -1 for off)")
    return port


def grpc_missing() -> str | None:
    """None when grpcio and the SDK's generated v2 modules can be imported, else why not (one line)."""
    for module in ("grpc", "google.protobuf", "rocketmq.grpc_protocol"):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return f"{module} is not installed; {EXTRA_HINT}"
    return None


__all__ = ["DEFAULT_GRPC_PORT", "EXTRA_HINT", "GRPC_CONFIG_KEYS", "GRPC_SERVER_PORT", "grpc_missing", "grpc_port_of"]
