"""``pyrmq controller``: run a standalone controller. Java: ``controller/ControllerStartup``.

Options as Java's ``mqcontroller``: ``-c <file>`` (properties file), ``-p``
(print every config item and exit), ``-h``; plus ``--host`` to bind another
address. Requests are served on this node's ``controllerDLegerPeers`` port.
Prints ``The Controller Server boot success. serializeType=JSON`` once
listening; SIGTERM/SIGINT shut down gracefully.
"""

from __future__ import annotations

import argparse
import asyncio

from pyrmq.common.properties import format_value
from pyrmq.controller.config import CONTROLLER_KEYS, ControllerConfig, ControllerConfigError
from pyrmq.startup import StartupError, base_parser, load_config, run_command, run_servers

PROG = "pyrmq controller"
BOOT_LINE = "The Controller Server boot success. serializeType=JSON"


def build_config(args: argparse.Namespace) -> ControllerConfig:
    cfg = load_config(ControllerConfig, args.configFile, "controller")
    if args.host:
        cfg["bindAddress"] = args.host
    if not args.printConfigItem:
        try:
            cfg.check()
        except ControllerConfigError as e:
            raise StartupError(str(e)) from None
    return cfg


def print_config(cfg: ControllerConfig) -> None:
    for key in CONTROLLER_KEYS:
        value = cfg[key]
        print(f"{key}={'' if value is None else format_value(value)}")


async def serve(cfg: ControllerConfig, stop: asyncio.Event | None = None) -> int:
    from pyrmq.controller.manager import ControllerManager

    return await run_servers(PROG, [("controller", lambda: ControllerManager(cfg))], lambda: BOOT_LINE, stop)


def main(argv: list[str] | None = None) -> int:
    args = base_parser(PROG, "Run a RocketMQ-compatible controller (5.x controller mode).").parse_args(argv)
    return run_command(PROG, args, lambda: build_config(args), serve, print_items=print_config)


__all__ = ["BOOT_LINE", "build_config", "main", "serve"]
