"""Docker HEALTHCHECK: the servers this container started answer a RemotingCommand.

Targets come from ``/tmp/pyrmq/health.json`` (written by entrypoint.py): a name server must
answer GET_BROKER_CLUSTER_INFO, a broker GET_BROKER_CONFIG, a controller CONTROLLER_GET_METADATA_INFO,
and in ``dev`` the broker must also be registered at its name server. Exit 0 healthy, 1 not (Docker's contract).
"""

from __future__ import annotations

import json
import os
import sys

from pyrmq.testing.probe import GET_BROKER_CLUSTER_INFO, SUCCESS, broker_ok, namesrv_ok, request

CONTROLLER_GET_METADATA_INFO = 1005


def controller_ok(addr: str) -> bool:
    try:
        return request(addr, CONTROLLER_GET_METADATA_INFO).code == SUCCESS
    except (OSError, ValueError):
        return False


def healthy(targets: dict[str, str]) -> bool:
    if not targets:
        return True  # a one-off command (store inspect, --version): nothing to serve
    if "namesrv" in targets and not namesrv_ok(targets["namesrv"]):
        return False
    if "broker" in targets and not broker_ok(targets["broker"]):
        return False
    if "controller" in targets and not controller_ok(targets["controller"]):
        return False
    if "namesrv" in targets and "broker" in targets:
        port = targets["broker"].rsplit(":", 1)[1]
        body = request(targets["namesrv"], GET_BROKER_CLUSTER_INFO).body
        return f':{port}"'.encode() in body
    return True


def main() -> int:
    path = os.path.join(os.environ.get("PYRMQ_RUN_DIR", "/tmp/pyrmq"), "health.json")
    try:
        with open(path, encoding="utf-8") as f:
            targets = json.load(f)
        return 0 if healthy(targets) else 1
    except (OSError, ValueError) as e:
        print(f"unhealthy: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
