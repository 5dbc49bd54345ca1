"""``pyrmq broker``: run a Broker. Java: ``broker/BrokerStartup``.

Options as Java's ``mqbroker``: ``-c <file>`` (properties file), ``-n
<namesrvAddr>`` (overrides the file), ``-p`` (print every config item and
exit), ``-h``; plus ``--host`` to bind another address. Prints ``The
broker[<name>, <ip:port>] boot success. serializeType=JSON and name server is
<addrs>`` once listening and registered; SIGTERM/SIGINT shut down cleanly
(unregister from the name servers, persist offsets and configs, store
shutdown removes the abort file) and exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from pyrmq.broker.config import BrokerConfig
from pyrmq.remoting.loop import install_uvloop_if_available, setup_logging, stop_on_signals

log = logging.getLogger("pyrmq.broker")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pyrmq broker", description="Run a RocketMQ-compatible Broker.")
    p.add_argument("-c", "--configFile", metavar="FILE", help="Broker config properties file")
    p.add_argument(
        "-n", "--namesrvAddr", metavar="ADDR", help="Name server address list, eg: '192.168.0.1:9876;192.168.0.2:9876'"
    )
    p.add_argument("-p", "--printConfigItem", action="store_true", help="Print all config items")
    p.add_argument("--host", metavar="HOST", help="address to bind (config key bindAddress/listenHost)")
    p.add_argument("--log-level", default=os.environ.get("PYRMQ_LOG_LEVEL", "INFO"), help="logging level")
    return p


def build_config(args: argparse.Namespace) -> BrokerConfig:
    if args.configFile:
        cfg = BrokerConfig.from_file(args.configFile)
        print(f"load config properties file OK, {args.configFile}", flush=True)
        unknown = cfg.unknown_keys()
        if unknown:
            log.warning("config keys unknown to the broker (kept, not used): %s", ", ".join(unknown))
    else:
        cfg = BrokerConfig()
    if args.namesrvAddr:
        cfg["namesrvAddr"] = args.namesrvAddr
    if args.host:
        cfg["bindAddress"] = args.host
    return cfg


async def serve(cfg: BrokerConfig, stop: asyncio.Event | None = None) -> int:
    from pyrmq.broker.controller import BrokerController

    stop = stop or asyncio.Event()
    stop_on_signals(stop)
    controller = BrokerController(cfg)
    try:
        await controller.start()
    except OSError as e:
        import errno

        why = "Address already in use" if e.errno == errno.EADDRINUSE else str(e)
        print(f"pyrmq broker: cannot start: {why} ({e})", file=sys.stderr)
        await controller.shutdown()
        return 1
    print(
        f"The broker[{cfg['brokerName']}, {controller.broker_addr}] boot success. serializeType=JSON and "
        f"name server is {cfg['namesrvAddr']}",
        flush=True,
    )
    try:
        await stop.wait()
    finally:
        log.info("shutting down the broker")
        await controller.shutdown()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    setup_logging(args.log_level, logging.INFO)
    try:
        cfg = build_config(args)
    except OSError as e:
        print(f"pyrmq broker: cannot read config file: {e}", file=sys.stderr)
        return 1
    if args.printConfigItem:
        for k, v in sorted(cfg.all_properties().items()):
            print(f"{k}={v}")
        return 0
    install_uvloop_if_available()
    return asyncio.run(serve(cfg))


__all__ = ["build_config", "main", "serve"]
