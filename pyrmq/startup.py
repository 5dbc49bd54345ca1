"""The start/stop skeleton every server command shares (namesrv, broker, dev).

Java's ``NamesrvStartup``/``BrokerStartup`` each parse ``-c``/``-p``, fill a
config with ``properties2Object``, start a controller, print a boot line that
scripts wait for, and run until a signal. Here that sequence is written once:
a command gives its parser options, its config class and the servers to start;
this module reads the file, reports a bad file or a busy port in one readable
line (exit 1, never a traceback), starts the servers in order, prints the
ready line, and on SIGTERM/SIGINT shuts them down in reverse order (exit 0).
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol, TypeVar

from pyrmq.common.memory import fix_mmap_threshold
from pyrmq.common.properties import PropertiesError
from pyrmq.common.settings import KeyedSettings
from pyrmq.remoting.gc_policy import GcPolicy
from pyrmq.remoting.loop import install_uvloop_if_available, setup_logging, stop_on_signals
from pyrmq.remoting.tls import set_system_property

__all__ = ["Server", "StartupError", "base_parser", "load_config", "run_command", "run_servers"]

log = logging.getLogger("pyrmq")

S = TypeVar("S", bound=KeyedSettings)
C = TypeVar("C")


class Server(Protocol):
    async def start(self) -> None: ...

    async def shutdown(self) -> None: ...


class StartupError(Exception):
    """A reason not to start, printed as ``<prog>: <reason>``; exit status 1."""


def base_parser(prog: str, description: str, *, log_level: str = "INFO") -> argparse.ArgumentParser:
    """The options Java's start scripts share (``-c``, ``-p``), plus ``--host`` and ``--log-level``."""
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("-c", "--configFile", metavar="FILE", help="config properties file")
    p.add_argument("-p", "--printConfigItem", action="store_true", help="Print all config items")
    p.add_argument("--host", metavar="HOST", help="address to bind (config key bindAddress/listenHost)")
    p.add_argument("--log-level", default=os.environ.get("PYRMQ_LOG_LEVEL", log_level), help="logging level")
    p.add_argument(
        "-D",
        dest="system_properties",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a Java system property pyrmq reads (tls.*), as in Java's JAVA_OPT",
    )
    return p


def load_config(cls: type[S], path: str | None, what: str) -> S:
    """Defaults, or defaults filled from the ``-c`` file; unknown keys are logged, not fatal."""
    if not path:
        return cls()
    try:
        cfg = cls.from_file(path)
    except OSError as e:
        raise StartupError(f"cannot read config file: {e}") from None
    except (PropertiesError, UnicodeDecodeError) as e:
        raise StartupError(f"cannot read config file {path}: {e}") from None
    print(f"load config properties file OK, {path}", flush=True)
    unknown = cfg.unknown_keys()
    if unknown:
        log.warning("config keys unknown to the %s (kept, not used): %s", what, ", ".join(unknown))
    return cfg


def _why(e: Exception) -> str:
    # Java prints "java.net.BindException: Address already in use"; scripts and tests grep for it
    if isinstance(e, OSError) and e.errno == errno.EADDRINUSE:
        named = e.strerror or ""  # e.g. the metrics endpoint says which address it could not bind
        return named if named.endswith("Address already in use") else "Address already in use"
    return str(e) or type(e).__name__


async def run_servers(
    prog: str,
    servers: Sequence[tuple[str, Callable[[], Server]]],
    ready: Callable[[], str],
    stop: asyncio.Event | None = None,
) -> int:
    """Create and start each server in order (a factory may use the ones before it),
    print ``ready()``, run until ``stop`` or a signal, shut down in reverse order."""
    stop = stop or asyncio.Event()
    stop_on_signals(stop)
    started: list[tuple[str, Server]] = []
    try:
        for name, make in servers:
            server = make()
            started.append((name, server))
            await server.start()
    except Exception as e:
        # a busy port, a locked or unreadable store, a config file that does not parse:
        # one line for the operator; the traceback only at debug level
        log.debug("start failed", exc_info=True)
        print(f"{prog}: cannot start the {started[-1][0]}: {_why(e)}", file=sys.stderr)
        await _shutdown(started)
        return 1
    gc_policy = GcPolicy()
    if os.environ.get("PYRMQ_GC_FREEZE", "1") != "0":  # 0: CPython's own schedule (for measurements)
        gc_policy.start()
    print(ready(), flush=True)
    try:
        await stop.wait()
    finally:
        log.info("%s: shutting down", prog)
        gc_policy.stop()
        await _shutdown(started)
    return 0


async def _shutdown(started: list[tuple[str, Server]]) -> None:
    for name, server in reversed(started):
        try:
            await server.shutdown()
        except Exception:
            log.exception("shutting down the %s failed", name)


def run_command(
    prog: str,
    args: argparse.Namespace,
    build: Callable[[], C],
    serve: Callable[[C], Coroutine[Any, Any, int]],
    *,
    print_items: Callable[[C], None] | None = None,
    default_level: int = logging.INFO,
) -> int:
    """A server command's main: logging, its config (a StartupError is one line on
    stderr, exit 1), ``-p`` prints the config and exits, else serve on the event
    loop (uvloop when installed)."""
    setup_logging(args.log_level, default_level)
    for item in getattr(args, "system_properties", None) or []:
        name, _, value = item.partition("=")
        set_system_property(name.strip(), value)
    try:
        cfg = build()
    except StartupError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 1
    if print_items is not None and getattr(args, "printConfigItem", False):
        print_items(cfg)
        return 0
    fix_mmap_threshold()  # large bodies freed after a burst go back to the OS (common/memory.py)
    install_uvloop_if_available()
    return asyncio.run(serve(cfg))
