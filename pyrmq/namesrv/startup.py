"""``pyrmq namesrv``: run a NameServer. Java: ``namesrv/NamesrvStartup``.

Options as Java's ``mqnamesrv``: ``-c <file>`` (properties file), ``-p``
(print every config item and exit), ``-n`` (accepted and ignored, as in
Java), ``-h``; plus ``--host`` to bind another address (tests use 127.0.0.1).
Prints ``The Name Server boot success...`` once listening; SIGTERM/SIGINT
shut down gracefully (KV config persisted, connections closed, exit 0).
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import os
import sys

from pyrmq.namesrv.config import NAMESRV_KEYS, NamesrvConfig, format_value, load_properties
from pyrmq.remoting.loop import install_uvloop_if_available, setup_logging, stop_on_signals

log = logging.getLogger("pyrmq.namesrv")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pyrmq namesrv", description="Run a RocketMQ-compatible NameServer.")
    p.add_argument("-c", "--configFile", metavar="FILE", help="Name server config properties file")
    p.add_argument("-p", "--printConfigItem", action="store_true", help="Print all config items")
    p.add_argument("-n", "--namesrvAddr", metavar="ADDR", help="Name server address list (accepted, unused)")
    p.add_argument("--host", metavar="HOST", help="address to bind (config key bindAddress/listenHost)")
    p.add_argument("--log-level", default=os.environ.get("PYRMQ_LOG_LEVEL", "INFO"), help="logging level")
    return p


def build_config(args: argparse.Namespace) -> NamesrvConfig:
    """Defaults, then the -c file (its path becomes configStorePath like Java), then --host."""
    if args.configFile:
        with open(args.configFile, encoding="utf-8") as f:
            props = load_properties(f.read())
        cfg = NamesrvConfig.from_properties(props)
        cfg["configStorePath"] = args.configFile
        print(f"load config properties file OK, {args.configFile}", flush=True)
        unknown = cfg.unknown_keys()
        if unknown:
            log.warning("config keys unknown to the NameServer (kept, not used): %s", ", ".join(unknown))
    else:
        cfg = NamesrvConfig()
    if args.host:
        cfg["bindAddress"] = args.host
    return cfg


def print_config(cfg: NamesrvConfig) -> None:
    for key in NAMESRV_KEYS:
        value = cfg[key]
        print(f"{key}={'' if value is None else format_value(value)}")


async def serve(cfg: NamesrvConfig, stop: asyncio.Event | None = None) -> int:
    """Run until SIGTERM/SIGINT (or ``stop`` is set)."""
    from pyrmq.namesrv.controller import NamesrvController

    stop = stop or asyncio.Event()
    stop_on_signals(stop)
    controller = NamesrvController(cfg)
    try:
        await controller.start()
    except OSError as e:
        # Java prints "java.net.BindException: Address already in use"; scripts grep for it
        why = "Address already in use" if e.errno == errno.EADDRINUSE else str(e)
        print(f"pyrmq namesrv: cannot listen on {cfg['bindAddress']}:{cfg['listenPort']}: {why}", file=sys.stderr)
        return 1
    print(
        f"The Name Server boot success. serializeType=JSON, address {cfg['bindAddress']}:{controller.port}",
        flush=True,
    )
    try:
        await stop.wait()
    finally:
        log.info("shutting down the name server")
        await controller.shutdown()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    setup_logging(args.log_level, logging.INFO)
    try:
        cfg = build_config(args)
    except OSError as e:
        print(f"pyrmq namesrv: cannot read config file: {e}", file=sys.stderr)
        return 1
    if args.printConfigItem:
        print_config(cfg)
        return 0
    install_uvloop_if_available()
    return asyncio.run(serve(cfg))


__all__ = ["build_config", "main", "serve"]
