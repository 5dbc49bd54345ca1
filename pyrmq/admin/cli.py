"""`pyrmq admin <command> [options]`: mqadmin's core commands without a JVM.

Java: ``tools/command/MQAdminStartup``. Same command names (case-insensitive), flags, help and
output as mqadmin 5.x. One difference on purpose: the exit status. mqadmin exits 0 even when
a command fails; `pyrmq admin` exits 0 on success, 1 when the command failed (the failure is
printed on stderr the way Java prints the exception's first lines) or the command line was
bad (help on stdout, commons-cli's message on stderr, like mqadmin, which also exits 1 there).
"""

from __future__ import annotations

import asyncio
import sys

from pyrmq.admin import broker, group, message, offset, pop, topic  # noqa: F401  (registers the commands)
from pyrmq.admin.base import REGISTRY, Command, Ctx, NumberFormatError, PrintHelp
from pyrmq.admin.client import AdminClient, AdminError
from pyrmq.admin.options import UsageError
from pyrmq.remoting.tls import TlsConfig, set_system_property

#: mqadmin's listing order of the core commands
ORDER = [
    "updateTopic",
    "deleteTopic",
    "updateSubGroup",
    "deleteSubGroup",
    "updateBrokerConfig",
    "updateTopicPerm",
    "topicRoute",
    "topicStatus",
    "topicClusterList",
    "brokerStatus",
    "queryMsgById",
    "queryMsgByKey",
    "queryMsgByUniqueKey",
    "queryMsgByOffset",
    "printMsg",
    "printMsgByQueue",
    "producerConnection",
    "consumerConnection",
    "consumerProgress",
    "consumerStatus",
    "clusterList",
    "topicList",
    "resetOffsetByTime",
    "skipAccumulatedMessage",
    "getBrokerConfig",
    "getConsumerConfig",
    "sendMessage",
    "consumeMessage",
    "setConsumeMode",
]


def listing() -> str:
    lines = ["The most commonly used mqadmin commands are:"]
    for name in ORDER:
        lines.append(f"   {name:<35} {REGISTRY[name].desc}")
    lines += ["", "See 'pyrmq admin help <command>' for more information on a specific command.", ""]
    return "\n".join(lines)


def find(name: str) -> Command | None:
    low = name.lower()
    return next((c for n, c in REGISTRY.items() if n.lower() == low), None)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    while argv and argv[0].startswith("-D"):  # mqadmin's JAVA_OPT: -Dtls.enable=true, -Dtls.config.file=...
        name, _, value = argv.pop(0)[2:].partition("=")
        set_system_property(name, value)
    if not argv or argv[0] in ("-h", "--help"):
        print(listing())
        return 0
    if argv[0] == "help" and len(argv) == 2:
        cmd = find(argv[1])
        if cmd is None:
            print(f"The sub command {argv[1]} not exist.")
            return 1
        print(cmd.options.help_text(f"mqadmin {cmd.name}"), end="")
        return 0
    cmd = find(argv[0])
    if cmd is None:
        print(f"The sub command {argv[0]} not exist.")
        return 1
    app = f"mqadmin {cmd.name}"
    try:
        opts = cmd.options.parse(argv[1:])
    except UsageError as e:
        print(e, file=sys.stderr)
        print(cmd.options.help_text(app), end="")
        return 1
    if "h" in opts:
        print(cmd.options.help_text(app), end="")
        return 0
    try:
        return asyncio.run(_run(cmd, opts))
    except BrokenPipeError:  # `pyrmq admin ... | head`
        sys.stderr.close()
        return 1
    except KeyboardInterrupt:  # clusterList -i loops until stopped
        return 130


async def _run(cmd: Command, opts: dict) -> int:
    ns = opts.get("n")
    tls = TlsConfig.system()  # Java ClientConfig.useTLS: tls.enable alone, no enforcing default
    client = AdminClient(ns.strip() if isinstance(ns, str) else None, tls=tls.client_context() if tls.enable else None)
    ctx = Ctx(client, opts)
    try:
        await cmd.run(ctx)
        return 0
    except PrintHelp:
        print(cmd.options.help_text(f"mqadmin {cmd.name}"), end="")
        return 1
    except (AdminError, NumberFormatError) as e:
        sys.stdout.flush()
        print(
            f"org.apache.rocketmq.tools.command.SubCommandException: {cmd.java_class} command failed", file=sys.stderr
        )
        cause = e.java_line() if isinstance(e, AdminError) else f"{e.java_class}: {e}"
        print(f"Caused by: {cause}", file=sys.stderr)
        return 1
    finally:
        await client.close()
