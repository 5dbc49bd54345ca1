"""``pyrmq broker``: run a Broker. Java: ``broker/BrokerStartup``.

Options as Java's ``mqbroker``: ``-c <file>`` (properties file), ``-n
<namesrvAddr>`` (overrides the file), ``-p`` (print every config item and
exit), ``-h``; plus ``--host`` to bind another address. Prints ``The
broker[<name>, <ip:port>] boot success. serializeType=JSON and name server is
<addrs>`` once listening and registered; SIGTERM/SIGINT shut down cleanly
(unregister from the name servers, persist offsets and configs, store
shutdown removes the abort file) and exit 0. The sequence itself is
``pyrmq.startup``'s, shared with the NameServer.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from pyrmq._speedups import describe as speedups_in_use
from pyrmq.broker.config import BrokerConfig
from pyrmq.startup import base_parser, load_config, run_command, run_servers

PROG = "pyrmq broker"


def _parser() -> argparse.ArgumentParser:
    p = base_parser(PROG, "Run a RocketMQ-compatible Broker.")
    p.add_argument(
        "-n", "--namesrvAddr", metavar="ADDR", help="Name server address list, eg: '192.168.0.1:9876;192.168.0.2:9876'"
    )
    return p


def build_config(args: argparse.Namespace) -> BrokerConfig:
    """Defaults, then the -c file (where UPDATE_BROKER_CONFIG persists, like Java), then -n and --host."""
    cfg = load_config(BrokerConfig, args.configFile, "broker")
    if args.configFile:  # BrokerStartup: UPDATE_BROKER_CONFIG persists to the -c file
        cfg.config_file = args.configFile
    if args.namesrvAddr:
        cfg["namesrvAddr"] = args.namesrvAddr
    if args.host:
        cfg["bindAddress"] = args.host
    return cfg


def print_config(cfg: BrokerConfig) -> None:
    for k, v in sorted(cfg.all_properties().items()):
        print(f"{k}={v}")


async def serve(cfg: BrokerConfig, stop: asyncio.Event | None = None) -> int:
    from pyrmq.broker.controller import BrokerController

    refusal = cfg.check_role() or cfg.check_supported()  # BrokerStartup: after -p, before the controller
    if refusal:
        print(f"{PROG}: {refusal}", file=sys.stderr)
        return 1

    from pyrmq.grpc.config import grpc_missing, grpc_port_of

    try:
        grpc_port = grpc_port_of(cfg)  # the proxy's grpcServerPort, when the file sets it
    except ValueError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    if grpc_port is not None and (missing := grpc_missing()):
        print(
            f"{PROG}: grpcServerPort={grpc_port} is set but the gRPC endpoint cannot start: {missing}", file=sys.stderr
        )
        return 1
    print(f"{PROG}: {speedups_in_use()}", flush=True)  # compiled codecs or the pure-Python reference
    controller = BrokerController(cfg)
    servers: list[tuple[str, Any]] = [("broker", lambda: controller)]
    if grpc_port is not None:
        from pyrmq.grpc.server import GrpcEndpoint

        servers.append(("gRPC endpoint", lambda: GrpcEndpoint(controller, grpc_port)))
    return await run_servers(
        PROG,
        servers,
        lambda: (
            f"The broker[{cfg['brokerName']}, {controller.broker_addr}] boot success. serializeType=JSON and "
            f"name server is {cfg['namesrvAddr']}"
        ),
        stop,
    )


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return run_command(PROG, args, lambda: build_config(args), serve, print_items=print_config)


__all__ = ["build_config", "main", "serve"]
