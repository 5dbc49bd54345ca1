"""`pyrmq` console script: one subcommand per server or tool.

Each subcommand lives in its own module and exposes ``main(argv) -> int``, so
this file only routes; importing it stays cheap (no asyncio, no store).
"""

from __future__ import annotations

import importlib
import sys

#: subcommand -> (module with main(argv), one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "namesrv": ("pyrmq.namesrv.startup", "run a NameServer (Java NamesrvStartup)"),
    "controller": ("pyrmq.controller.startup", "run a controller for 5.x controller mode (Java ControllerStartup)"),
    "store": ("pyrmq.store.cli", "inspect or verify a store directory"),
    "broker": ("pyrmq.broker.startup", "run a Broker (Java BrokerStartup)"),
    "dev": ("pyrmq.broker.dev", "NameServer + Broker in one process, embedded defaults"),
    "admin": ("pyrmq.admin.cli", "mqadmin's core commands (same names, flags and output)"),
}


def _usage() -> str:
    lines = ["usage: pyrmq <command> [options]", "", "commands:"]
    for name, (_, text) in SUBCOMMANDS.items():
        lines.append(f"  {name:<10} {text}")
    lines.append("")
    lines.append("Run 'pyrmq <command> --help' for the options of one command.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        from pyrmq import __version__

        print(f"pyrmq {__version__}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        print(f"pyrmq: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(SUBCOMMANDS[name][0])
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
