"""``pyrmq namesrv``: run a NameServer. Java: ``namesrv/NamesrvStartup``.

Options as Java's ``mqnamesrv``: ``-c <file>`` (properties file), ``-p``
(print every config item and exit), ``-n`` (accepted and ignored, as in
Java), ``-h``; plus ``--host`` to bind another address (tests use 127.0.0.1).
Prints ``The Name Server boot success...`` once listening; SIGTERM/SIGINT
shut down gracefully (KV config persisted, connections closed, exit 0).
The sequence itself is ``pyrmq.startup``'s, shared with the broker.

``enableControllerInNamesrv=true`` also starts a controller in this process, as
Java's NamesrvStartup does: its ControllerConfig is read from the same file and
it serves on its own ``controllerDLegerPeers`` port, not on ``listenPort``.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable

from pyrmq.common.properties import format_value
from pyrmq.namesrv.config import NAMESRV_KEYS, NamesrvConfig
from pyrmq.startup import Server, base_parser, load_config, run_command, run_servers

PROG = "pyrmq namesrv"


def _parser() -> argparse.ArgumentParser:
    p = base_parser(PROG, "Run a RocketMQ-compatible NameServer.")
    p.add_argument("-n", "--namesrvAddr", metavar="ADDR", help="Name server address list (accepted, unused)")
    return p


def build_config(args: argparse.Namespace) -> NamesrvConfig:
    """Defaults, then the -c file (its path becomes configStorePath like Java), then --host."""
    cfg = load_config(NamesrvConfig, args.configFile, "NameServer")
    if args.configFile:
        cfg["configStorePath"] = args.configFile
    if args.host:
        cfg["bindAddress"] = args.host
    return cfg


def print_config(cfg: NamesrvConfig) -> None:
    for key in NAMESRV_KEYS:
        value = cfg[key]
        print(f"{key}={'' if value is None else format_value(value)}")
    if cfg["enableControllerInNamesrv"]:
        # NamesrvStartup -p also prints the ControllerConfig read from the same file
        from pyrmq.controller.config import ControllerConfig
        from pyrmq.controller.startup import print_config as print_controller_config

        print_controller_config(ControllerConfig.from_properties(cfg.file_properties))


async def serve(cfg: NamesrvConfig, stop: asyncio.Event | None = None) -> int:
    """Run until SIGTERM/SIGINT (or ``stop`` is set)."""
    from pyrmq.namesrv.controller import NamesrvController

    controller = NamesrvController(cfg)
    servers: list[tuple[str, Callable[[], Server]]] = [("name server", lambda: controller)]
    lines = [
        lambda: f"The Name Server boot success. serializeType=JSON, address {cfg['bindAddress']}:{controller.port}"
    ]
    if cfg["enableControllerInNamesrv"]:
        from pyrmq.controller.config import ControllerConfig
        from pyrmq.controller.manager import ControllerManager

        # NamesrvStartup: the same file fills a ControllerConfig (and a copy of the netty settings)
        ccfg = ControllerConfig.from_properties(cfg.file_properties)
        ccfg["bindAddress"] = cfg["bindAddress"]
        servers.append(("controller", lambda: ControllerManager(ccfg)))
        lines.append(lambda: "The ControllerManager boot success. serializeType=JSON")
    return await run_servers(PROG, servers, lambda: "\n".join(line() for line in lines), stop)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return run_command(PROG, args, lambda: build_config(args), serve, print_items=print_config)


__all__ = ["build_config", "main", "serve"]
