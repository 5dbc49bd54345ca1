"""``pyrmq dev``: a NameServer and a Broker in one process, for development.

Embedded defaults: name server on 9876, broker on 10911 (VIP 10909), store
under ``./.pyrmq/store`` (``--store DIR``), brokerIP1 127.0.0.1, topic and
group auto-creation on, Prometheus metrics (metricsExporterType=PROM) on 5557, or
on a free port when 5557 is taken (``--metrics-port``, 0 for any free port, -1 for none).
The gRPC endpoint (MessagingService v2 for the 5.x SDKs, docs/grpc.md) on 8081, or on a free
port when 8081 is taken (``--grpc-port``, -1 for none; off without the ``grpc`` extra).
Prints the addresses and the metrics URL once ready; SIGTERM/SIGINT stop both cleanly.
``--acl`` turns authentication and authorization on with an admin and a normal
account (written once to ``<store>/../acl/conf/plain_acl.yml`` with random secrets, imported as
Java 5.5.0 imports it) and prints both accounts.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
from typing import TYPE_CHECKING

from pyrmq._speedups import describe as speedups_in_use
from pyrmq.auth.config import LOCAL_AUTHENTICATION_METADATA_PROVIDER, LOCAL_AUTHORIZATION_METADATA_PROVIDER
from pyrmq.grpc.config import DEFAULT_GRPC_PORT
from pyrmq.startup import run_command, run_servers

if TYPE_CHECKING:
    from pyrmq.grpc.server import GrpcEndpoint

log = logging.getLogger("pyrmq.dev")

PROG = "pyrmq dev"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="NameServer + Broker in one process.")
    p.add_argument("--namesrv-port", type=int, default=9876)
    p.add_argument("--broker-port", type=int, default=10911)
    p.add_argument("--store", default=os.path.join(".pyrmq", "store"), help="store directory (default ./.pyrmq/store)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind and advertise (default 127.0.0.1)")
    p.add_argument(
        "--advertise",
        default=None,
        help="address the broker registers (brokerIP1) when it differs from --host, e.g. in a "
        "container binding 0.0.0.0 (default: --host, or 127.0.0.1 for a wildcard --host)",
    )
    p.add_argument(
        "--metrics-port",
        type=int,
        default=5557,
        help="Prometheus endpoint port (metricsPromExporterPort; default 5557, a free port when taken; -1: off)",
    )
    p.add_argument(
        "--grpc-port",
        type=int,
        default=DEFAULT_GRPC_PORT,
        help="gRPC endpoint port (grpcServerPort; default 8081, a free port when taken; -1: off)",
    )
    p.add_argument("--cluster", default="DefaultCluster")
    p.add_argument("--broker-name", default="broker-a")
    p.add_argument("--log-level", default=os.environ.get("PYRMQ_LOG_LEVEL", "WARNING"))
    p.add_argument("--acl", action="store_true", help="authentication and authorization on, with two accounts")
    return p


DEV_ACCOUNTS = (("rocketmq-admin", True), ("rocketmq-app", False))


def dev_acl(home: str) -> tuple[dict[str, str], str]:
    """The broker.conf auth keys of ``pyrmq dev --acl`` and the lines that name the accounts;
    ``home/conf/plain_acl.yml`` is written with random secrets when absent, kept otherwise."""
    import secrets

    import yaml

    path = os.path.join(home, "conf", "plain_acl.yml")
    if not os.path.exists(path):
        accounts = [
            {"accessKey": ak, "secretKey": secrets.token_hex(12), "admin": admin}
            | ({} if admin else {"defaultTopicPerm": "PUB|SUB", "defaultGroupPerm": "SUB"})
            for ak, admin in DEV_ACCOUNTS
        ]
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            yaml.safe_dump({"accounts": accounts}, f, sort_keys=False)
    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    lines = [f"ACL on ({path}):"]
    for acc in data.get("accounts") or []:
        role = "admin (super user)" if acc.get("admin") else "app (Pub/Sub on every topic, Sub on every group)"
        lines.append(f"  {role}: accessKey={acc['accessKey']} secretKey={acc['secretKey']}")
    conf = {
        "authenticationEnabled": "true",
        "authorizationEnabled": "true",
        "authenticationMetadataProvider": LOCAL_AUTHENTICATION_METADATA_PROVIDER,
        "authorizationMetadataProvider": LOCAL_AUTHORIZATION_METADATA_PROVIDER,
        "migrateAuthFromV1Enabled": "true",
        "rocketmqHome": home,
    }
    return conf, "\n".join(lines)


async def serve(args: argparse.Namespace, stop: asyncio.Event | None = None) -> int:
    from pyrmq.broker.config import BrokerConfig
    from pyrmq.broker.controller import BrokerController
    from pyrmq.namesrv.config import NamesrvConfig
    from pyrmq.namesrv.controller import NamesrvController

    print(f"{PROG}: {speedups_in_use()}", flush=True)  # compiled codecs or the pure-Python reference
    store = os.path.abspath(args.store)
    advertise = getattr(args, "advertise", None) or ("127.0.0.1" if args.host in ("0.0.0.0", "::", "") else args.host)
    ns_cfg = NamesrvConfig()
    ns_cfg["bindAddress"] = args.host
    ns_cfg["listenPort"] = args.namesrv_port
    ns_cfg["kvConfigPath"] = os.path.join(os.path.dirname(store), "namesrv", "kvConfig.json")
    ns_cfg["configStorePath"] = os.path.join(os.path.dirname(store), "namesrv", "namesrv.properties")
    namesrv = NamesrvController(ns_cfg)
    brokers: list[BrokerController] = []

    def ns_addr() -> str:
        return f"{advertise}:{namesrv.port}"

    acl_conf, acl_lines = (
        dev_acl(os.path.join(os.path.dirname(store), "acl")) if getattr(args, "acl", False) else ({}, "")
    )
    metrics_port = getattr(args, "metrics_port", 5557)
    metrics = {}
    if metrics_port >= 0:
        metrics = {
            "metricsExporterType": "PROM",
            "metricsPromExporterHost": args.host,
            "metricsPromExporterPort": str(_free_or_any(args.host, metrics_port)),
        }

    grpc_port = getattr(args, "grpc_port", -1)  # starters that build their own Namespace leave it off
    grpc = {}
    if grpc_port >= 0:
        from pyrmq.grpc.config import grpc_missing

        missing = grpc_missing()
        if missing:
            print(f"{PROG}: gRPC endpoint off: {missing}", flush=True)
        else:
            grpc = {"grpcServerPort": str(_free_or_any(args.host, grpc_port, "gRPC"))}

    def make_broker() -> BrokerController:
        """After the name server started: its port is known even when 0 was asked."""
        cfg = BrokerConfig.from_properties(
            {
                **acl_conf,
                **metrics,
                **grpc,
                "brokerClusterName": args.cluster,
                "brokerName": args.broker_name,
                "brokerId": "0",
                "namesrvAddr": ns_addr(),
                "listenPort": str(args.broker_port),
                "brokerIP1": advertise,
                "bindAddress": args.host,
                "storePathRootDir": store,
                "autoCreateTopicEnable": "true",
                "autoCreateSubscriptionGroup": "true",
                # more broker.conf keys (tests shorten housekeeping intervals this way)
                **getattr(args, "broker_properties", {}),
            }
        )
        brokers.append(BrokerController(cfg))
        return brokers[0]

    endpoints: list[GrpcEndpoint] = []

    def make_grpc() -> GrpcEndpoint:
        from pyrmq.grpc.server import GrpcEndpoint

        endpoints.append(GrpcEndpoint(brokers[0], int(grpc["grpcServerPort"])))
        return endpoints[0]

    return await run_servers(
        PROG,
        [("name server", lambda: namesrv), ("broker", make_broker), *([("gRPC endpoint", make_grpc)] if grpc else [])],
        lambda: (
            f"pyrmq dev ready: namesrv {ns_addr()}  broker {brokers[0].broker_addr}  store {store}"
            + (f"  metrics {brokers[0].broker_metrics.url}" if brokers[0].broker_metrics.url else "")
            + (f"  grpc {endpoints[0].address}" if endpoints else "")
            + (f"\n{acl_lines}" if acl_lines else "")
        ),
        stop,
    )


def _free_or_any(host: str, port: int, what: str = "metrics") -> int:
    """`port` when it can be bound now, else 0 (any free port): a second `pyrmq dev` still starts."""
    if port == 0:
        return 0
    try:
        with socket.create_server((host or "0.0.0.0", port)):
            return port
    except OSError:
        log.warning("%s port %d is taken; serving %s on a free port", what, port, what)
        return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return run_command(PROG, args, lambda: args, serve, default_level=logging.WARNING)


__all__ = ["main", "serve"]
