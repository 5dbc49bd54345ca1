"""Container entry point: ``namesrv``, ``broker``, ``controller`` or ``dev`` (default), from file and environment.

Java counterpart: the official image's ``docker-entrypoint`` + ``runserver.sh``/``runbroker.sh``.

* ``broker``: properties from ``$PYRMQ_CONF_DIR/broker.conf`` (or ``-c FILE``), then every ``RMQ_<KEY>``
  environment variable, where KEY is the Java key in any case with optional underscores
  (``RMQ_BROKER_NAME``, ``RMQ_brokerIP1``, ``RMQ_FLUSH_DISK_TYPE``); ``NAMESRV_ADDR`` works as in Java.
  ``storePathRootDir`` defaults to the ``/home/rocketmq/store`` volume.
* ``namesrv``: the same with ``namesrv.conf``; kvConfig/namesrv.properties live under the store volume.
* ``controller``: the same with ``controller.conf`` (Java ``mqcontroller``); ``controllerStorePath`` and
  ``configStorePath`` default to the store volume. It serves on its ``controllerDLegerPeers`` port.
* ``dev``: ``pyrmq dev`` binding 0.0.0.0 with the store on the volume; ports and the advertised
  address from ``PYRMQ_NAMESRV_PORT``, ``PYRMQ_BROKER_PORT``, ``PYRMQ_HOST``/``PYRMQ_ADVERTISE`` or flags.
* anything else runs ``pyrmq <args>`` (``store inspect /home/rocketmq/store``, ``--version``).

The server replaces this process (``os.execv``), so SIGTERM from ``docker stop`` reaches it directly
and it shuts down cleanly (abort file removed, offsets and configs flushed).
"""

from __future__ import annotations

import json
import os
import sys

STORE = os.environ.get("PYRMQ_STORE", "/home/rocketmq/store")
CONF_DIR = os.environ.get("PYRMQ_CONF_DIR", "/home/rocketmq/conf")
RUN_DIR = os.environ.get("PYRMQ_RUN_DIR", "/tmp/pyrmq")
ENV_PREFIX = "RMQ_"
ROLES = ("broker", "namesrv", "controller")


def _norm(key: str) -> str:
    return key.replace("_", "").replace(".", "").lower()


def known_keys(role: str) -> dict[str, str]:
    """normalised -> Java spelling, for every key the role's config understands."""
    if role == "broker":
        from pyrmq.broker.config import BrokerConfig
        from pyrmq.store.store_config import MessageStoreConfig

        keys = set(BrokerConfig().all_properties()) | set(MessageStoreConfig.KEYS.types)
    elif role == "controller":
        from pyrmq.controller.config import CONTROLLER_KEYS

        keys = set(CONTROLLER_KEYS)
    else:
        from pyrmq.namesrv.config import NamesrvConfig

        keys = set(NamesrvConfig().all_properties())
    return {_norm(k): k for k in keys}


def env_properties(role: str, environ: dict[str, str]) -> dict[str, str]:
    """``RMQ_*`` variables as Java properties; an unknown key keeps its spelling after the prefix."""
    keys = known_keys(role)
    props: dict[str, str] = {}
    for name, value in sorted(environ.items()):
        if name.startswith(ENV_PREFIX) and len(name) > len(ENV_PREFIX):
            raw = name[len(ENV_PREFIX) :]
            props[keys.get(_norm(raw), raw)] = value
    return props


def _split_conf_flag(args: list[str]) -> tuple[str | None, list[str]]:
    """Pull ``-c FILE`` / ``--configFile FILE`` out of args (the merged file replaces it)."""
    conf, rest, i = None, [], 0
    while i < len(args):
        a = args[i]
        if a in ("-c", "--configFile") and i + 1 < len(args):
            conf, i = args[i + 1], i + 2
            continue
        if a.startswith("--configFile="):
            conf = a.split("=", 1)[1]
        else:
            rest.append(a)
        i += 1
    return conf, rest


def merged_config(role: str, args: list[str], environ: dict[str, str]) -> tuple[str, list[str]]:
    """Write base file + role defaults + environment to ``$PYRMQ_RUN_DIR/<role>.conf``; return it and the rest of args."""
    from pyrmq.common.properties import load_properties, properties_text

    conf, rest = _split_conf_flag(args)
    if conf is None:
        candidate = os.path.join(CONF_DIR, f"{role}.conf")
        conf = candidate if os.path.isfile(candidate) else None
    props: dict[str, str] = {}
    if role == "broker":
        props["storePathRootDir"] = STORE
    elif role == "controller":
        props["controllerStorePath"] = os.path.join(STORE, "controller")
        props["configStorePath"] = os.path.join(STORE, "controller", "controller.properties")
    else:
        props["kvConfigPath"] = os.path.join(STORE, "namesrv", "kvConfig.json")
        props["configStorePath"] = os.path.join(STORE, "namesrv", "namesrv.properties")
    if conf is not None:
        with open(conf, encoding="utf-8") as f:
            props.update(load_properties(f.read()))
    props.update(env_properties(role, environ))
    os.makedirs(RUN_DIR, exist_ok=True)
    path = os.path.join(RUN_DIR, f"{role}.conf")
    with open(path, "w", encoding="utf-8") as f:
        f.write(properties_text(props))
    return path, rest


def dev_args(args: list[str], environ: dict[str, str]) -> list[str]:
    """``pyrmq dev`` flags: container defaults first, explicit flags win (argparse keeps the last)."""
    out = ["--store", STORE, "--host", environ.get("PYRMQ_HOST", "0.0.0.0")]
    if environ.get("PYRMQ_ADVERTISE"):
        out += ["--advertise", environ["PYRMQ_ADVERTISE"]]
    for var, flag in (("PYRMQ_NAMESRV_PORT", "--namesrv-port"), ("PYRMQ_BROKER_PORT", "--broker-port")):
        if environ.get(var):
            out += [flag, environ[var]]
    return out + args


def _last_flag(args: list[str], flag: str, default: str) -> str:
    value = default
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            value = args[i + 1]
        elif a.startswith(flag + "="):
            value = a.split("=", 1)[1]
    return value


def _local(host: str) -> str:
    return "127.0.0.1" if host in ("", "0.0.0.0", "::") else host


def health_targets(mode: str, args: list[str], conf: str | None) -> dict[str, str]:
    """What healthcheck.py probes: {"namesrv": addr}, {"broker": addr} and/or {"controller": addr}."""
    if mode == "dev":
        host = _local(_last_flag(args, "--host", "127.0.0.1"))
        return {
            "namesrv": f"{host}:{_last_flag(args, '--namesrv-port', '9876')}",
            "broker": f"{host}:{_last_flag(args, '--broker-port', '10911')}",
        }
    from pyrmq.common.properties import load_properties

    assert conf is not None, "namesrv and broker always run from a merged config file"
    with open(conf, encoding="utf-8") as f:
        props = load_properties(f.read())
    host = _local(props.get("bindAddress", props.get("listenHost", "")))
    if mode == "controller":
        # served on this node's peer port (docs/controller.md), whatever listenPort says
        self_id = props.get("controllerDLegerSelfId", "")
        for peer in props.get("controllerDLegerPeers", "").split(";"):
            peer_id, _, addr = peer.strip().partition("-")
            if peer_id == self_id and ":" in addr:
                return {mode: f"{host}:{addr.rpartition(':')[2]}"}
        return {}
    port = props.get("listenPort", "9876" if mode == "namesrv" else "10911")
    return {mode: f"{host}:{port}"}


def command(argv: list[str], environ: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The ``python -m pyrmq ...`` argv this container runs, and what the health check probes."""
    mode, args = (argv[0], argv[1:]) if argv else ("dev", [])
    base = [sys.executable, "-m", "pyrmq"]
    if mode in ROLES:
        conf, rest = merged_config(mode, args, environ)
        return [*base, mode, "-c", conf, *rest], health_targets(mode, rest, conf)
    if mode == "dev":
        args = dev_args(args, environ)
        return [*base, "dev", *args], health_targets(mode, args, None)
    return base + argv, {}


def main() -> None:
    argv, targets = command(sys.argv[1:], dict(os.environ))
    os.makedirs(RUN_DIR, exist_ok=True)
    with open(os.path.join(RUN_DIR, "health.json"), "w", encoding="utf-8") as f:
        json.dump(targets, f)
    sys.stdout.flush()
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
