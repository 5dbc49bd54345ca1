"""Name servers and brokers for the compat suites, each a real process.

- JavaNamesrv / JavaBroker / JavaController: the official 5.5.0 servers (module `servers`),
  loopback only, small heaps, ROCKETMQ_HOME and user.home in the test's
  directory (logs in <home>/logs/rocketmqlogs, shown on failure).
- PyrmqNamesrv: `python -m pyrmq namesrv -c <file>` from this checkout.

All of them expose .addr ("127.0.0.1:port"), .proc (the subprocess.Popen),
.stop() (SIGTERM, then SIGKILL) and .kill9().
"""

from __future__ import annotations

import itertools
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from support import probe
from support.java import SERVER_HEAP, java_argv, java_env, prepare_home
from support.ports import broker_port, free_port
from support.procs import ManagedProcess, ProcessFailed, tail_file

ROOT = Path(__file__).resolve().parents[2]
_seq = itertools.count(1)

# rocketmq-logback-classic (shaded logback) reads rmq.logback.configurationFile: pick the
# server's own config from its jar (the first one on the classpath wins otherwise) and keep
# logback's status chatter out of the process output.
_LOGBACK_QUIET = "org.apache.rocketmq.logging.ch.qos.logback.core.status.NopStatusListener"


def write_properties(path: Path, conf: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in conf.items()))
    return path


def _bind_race(proc: ManagedProcess) -> bool:
    return "Address already in use" in tail_file(proc.log, 200)


class _Server:
    name: str
    port: int
    managed: ManagedProcess

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def proc(self):
        return self.managed.proc

    @property
    def pid(self) -> int:
        return self.managed.pid

    def alive(self) -> bool:
        return self.managed.alive()

    def stop(self, timeout: float = 15.0) -> int | None:
        return self.managed.stop(timeout)

    def kill9(self) -> None:
        self.managed.kill9()

    def pause(self) -> None:
        self.managed.pause()

    def resume(self) -> None:
        self.managed.resume()

    def tail(self, lines: int = 60) -> str:
        return self.managed.tail(lines)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self.addr} pid={self.managed.pid}>"


def _java_main(main: str, logback: str) -> Callable[[_Server, Path], list[str]]:
    """The argv of an official server class, given its config file (small heap, quiet logback)."""

    def argv(server: _Server, cfg: Path) -> list[str]:
        props = {"rmq.logback.configurationFile": logback, "logback.statusListenerClass": _LOGBACK_QUIET}
        props.update(getattr(server, "system_props", {}))
        return java_argv("servers", main, ["-c", str(cfg)], server.home, props, heap=SERVER_HEAP)

    return argv


def _pyrmq_command(command: str) -> Callable[[_Server, Path], list[str]]:
    """`<venv python> -m pyrmq <command> -c <config file>`."""

    def argv(server: _Server, cfg: Path) -> list[str]:
        venv_python = ROOT / ".venv" / "bin" / "python"
        python = str(venv_python) if venv_python.exists() else sys.executable
        system = [f"-D{k}={v}" for k, v in getattr(server, "system_props", {}).items()]
        return [python, "-m", "pyrmq", command, "-c", str(cfg), *system]

    return argv


class _ConfiguredServer(_Server):
    """A server started from one properties file on a free port, retried on a lost bind race.

    Subclasses give the file name, the properties for a port, and the command line."""

    config_name: str
    kind: str
    command: Callable[[_Server, Path], list[str]]
    java = False

    def __init__(self, workdir: Path, start_timeout: float = 60, system_props: dict | None = None, **conf):
        self.workdir = workdir
        self.system_props = system_props or {}  # -D options (tls.*), for Java and pyrmq alike
        if self.java:
            self.home = prepare_home(workdir / "home")
        else:
            self.home = workdir / "home"
            self.home.mkdir(parents=True, exist_ok=True)
        self.name = f"{self.kind}-{next(_seq)}"
        env = java_env(self.home) if self.java else dict(os.environ, HOME=str(self.home), PYTHONUNBUFFERED="1")
        for attempt in range(3):
            self.port = free_port()
            cfg = write_properties(workdir / self.config_name, {**self.properties(self.port), **conf})
            self.managed = ManagedProcess(
                self.name,
                type(self).command(self, cfg),
                workdir / f"{self.kind}-{self.port}.out",
                env=env,
                cwd=workdir if self.java else ROOT,
                extra_logs=self.extra_logs(),
            )
            try:
                self.managed.wait_port(self.port, start_timeout)
                return
            except ProcessFailed:
                self.managed.kill9()
                if attempt == 2 or not _bind_race(self.managed):
                    raise

    def properties(self, port: int) -> dict:
        raise NotImplementedError

    def extra_logs(self) -> list[Path]:
        return []


class _NamesrvProps:
    workdir: Path
    config_name = "namesrv.properties"

    def properties(self, port: int) -> dict:
        return {
            "listenPort": port,
            "bindAddress": "127.0.0.1",
            "scanNotActiveBrokerInterval": 1000,
            "kvConfigPath": self.workdir / "kvConfig.json",
            "configStorePath": self.workdir / "namesrv.properties.store",
        }


class _ControllerProps:
    """A DLedger controller group of one: requests are served on the peer port (`.port`)."""

    workdir: Path
    config_name = "controller.conf"

    def properties(self, port: int) -> dict:
        return {
            "controllerDLegerGroup": "group1",
            "controllerDLegerPeers": f"n0-127.0.0.1:{port}",
            "controllerDLegerSelfId": "n0",
            "controllerStorePath": self.workdir / "controller-store",
            "configStorePath": self.workdir / "controller.properties.store",
            "mappedFileSize": 4 * 1024 * 1024,
            "scanNotActiveBrokerInterval": 1000,
            "listenPort": free_port(),
            "bindAddress": "127.0.0.1",
        }


class JavaNamesrv(_NamesrvProps, _ConfiguredServer):
    """org.apache.rocketmq.namesrv.NamesrvStartup 5.5.0."""

    kind, java = "java-namesrv", True
    command = _java_main("org.apache.rocketmq.namesrv.NamesrvStartup", "rmq.namesrv.logback.xml")

    def extra_logs(self) -> list[Path]:
        return [self.home / "logs/rocketmqlogs/namesrv.log"]


class PyrmqNamesrv(_NamesrvProps, _ConfiguredServer):
    """pyrmq's NameServer: `<venv python> -m pyrmq namesrv -c <workdir>/namesrv.properties`."""

    kind = "pyrmq-namesrv"
    command = _pyrmq_command("namesrv")

    def __init__(self, workdir: Path, start_timeout: float = 30, system_props: dict | None = None, **conf):
        super().__init__(workdir, start_timeout, system_props, **conf)


class JavaController(_ControllerProps, _ConfiguredServer):
    """org.apache.rocketmq.controller.ControllerStartup 5.5.0, a DLedger controller group of one.

    Java serves the CONTROLLER_* requests on the DLedger peer port, so `.addr` is
    what brokers take as controllerAddr and mqadmin as -a. `conf` extends controller.conf.
    """

    kind, java = "java-controller", True
    command = _java_main("org.apache.rocketmq.controller.ControllerStartup", "rmq.controller.logback.xml")

    def extra_logs(self) -> list[Path]:
        return [self.home / "logs/rocketmqlogs/controller.log"]


class PyrmqController(_ControllerProps, _ConfiguredServer):
    """pyrmq's controller: `<venv python> -m pyrmq controller -c <workdir>/controller.conf`.

    Same properties as JavaController (a group of one; requests on the peer port, `.addr`).
    """

    kind = "pyrmq-controller"
    command = _pyrmq_command("controller")

    def __init__(self, workdir: Path, start_timeout: float = 30, **conf):
        super().__init__(workdir, start_timeout, **conf)


class _ControllerMember:
    """One member of a controller group of several: it serves on its own peer port, which is
    fixed before any member starts (every member's controllerDLegerPeers lists them all)."""

    fixed_port: int
    port: int

    def __init__(self, workdir: Path, self_id: str, port: int, peers: str, **conf):
        self.fixed_port = port
        super().__init__(workdir, controllerDLegerPeers=peers, controllerDLegerSelfId=self_id, **conf)  # type: ignore[call-arg]

    def properties(self, port: int) -> dict:
        self.port = self.fixed_port
        return super().properties(self.fixed_port)  # type: ignore[misc]


class PyrmqControllerMember(_ControllerMember, PyrmqController):
    """`pyrmq controller` as one member of a group (its events replicated over DLedger)."""


class JavaControllerMember(_ControllerMember, JavaController):
    """ControllerStartup 5.5.0 as one member of a group (Java's DLedgerController)."""


class _InNamesrvControllerMember:
    """A name server with enableControllerInNamesrv=true, one member of a controller group:
    `.addr` is the name server (a free port), `.controller_addr` its controller, serving on its
    own peer port, fixed before any member starts."""

    controller_port: int

    def __init__(self, workdir: Path, self_id: str, controller_port: int, peers: str, **conf):
        self.controller_port = controller_port
        conf = {
            "enableControllerInNamesrv": "true",
            "controllerDLegerPeers": peers,
            "controllerDLegerSelfId": self_id,
            "controllerStorePath": workdir / "controller-store",
            "mappedFileSize": 4 * 1024 * 1024,
            **conf,
        }
        super().__init__(workdir, **conf)  # type: ignore[call-arg]

    @property
    def controller_addr(self) -> str:
        return f"127.0.0.1:{self.controller_port}"


class PyrmqNamesrvControllerMember(_InNamesrvControllerMember, PyrmqNamesrv):
    """`pyrmq namesrv` with its embedded controller one member of a group."""


class JavaNamesrvControllerMember(_InNamesrvControllerMember, JavaNamesrv):
    """NamesrvStartup 5.5.0 with its embedded controller one member of a group."""


def controller_peers(ports: list[int]) -> str:
    """controllerDLegerPeers of a group on loopback: n0, n1, ... on `ports`."""
    return ";".join(f"n{i}-127.0.0.1:{p}" for i, p in enumerate(ports))


def _java_broker_conf(broker: JavaBroker, namesrv_addr: str, conf: dict) -> dict:
    """broker.conf of a small Java test broker (JavaBroker, and the one JavaLocalProxy runs)."""
    return {
        "brokerClusterName": broker.cluster,
        "brokerName": broker.name,
        "brokerId": 0,
        "namesrvAddr": namesrv_addr,
        "listenPort": broker.port,
        "bindAddress": "127.0.0.1",
        "brokerIP1": "127.0.0.1",
        "storePathRootDir": broker.store_dir,
        "storePathCommitLog": broker.store_dir / "commitlog",
        "autoCreateTopicEnable": "true",
        "autoCreateSubscriptionGroup": "true",
        "mappedFileSizeCommitLog": 16 * 1024 * 1024,
        "mappedFileSizeConsumeQueue": 300000 * 20 // 100,
        "flushDiskType": "ASYNC_FLUSH",
        "deleteWhen": "04",
        **conf,
    }


class JavaBroker(_Server):
    """org.apache.rocketmq.broker.BrokerStartup 5.5.0, registered at `namesrv_addr`.

    Binds listenPort and listenPort-2 on 127.0.0.1 and the HA port
    listenPort+1. `conf` entries override/extend broker.conf (camelCase keys).
    Construction returns once the name server lists this broker.
    """

    def __init__(
        self,
        namesrv_addr: str,
        workdir: Path,
        store_dir: Path | None = None,
        name: str | None = None,
        cluster: str = "DefaultCluster",
        start_timeout: float = 90,
        system_props: dict | None = None,
        **conf,
    ):
        self.namesrv_addr = namesrv_addr
        self.workdir = workdir
        self.home = prepare_home(workdir / "home")
        self.name = name or f"broker-{os.getpid()}-{next(_seq)}"
        self.cluster = cluster
        self.store_dir = Path(store_dir) if store_dir else workdir / "store"
        for attempt in range(3):
            self.port = broker_port()
            props = _java_broker_conf(self, namesrv_addr, conf)
            cfg = write_properties(workdir / f"broker-{self.name}.conf", props)
            self.conf_file = cfg
            argv = java_argv(
                "servers",
                "org.apache.rocketmq.broker.BrokerStartup",
                ["-c", str(cfg)],
                self.home,
                {
                    "rmq.logback.configurationFile": "rmq.broker.logback.xml",
                    "logback.statusListenerClass": _LOGBACK_QUIET,
                    **(system_props or {}),
                },
                heap=SERVER_HEAP,
            )
            self.managed = ManagedProcess(
                self.name,
                argv,
                workdir / f"broker-{self.name}-{self.port}.out",
                env=java_env(self.home),
                cwd=workdir,
                extra_logs=[self.home / "logs/rocketmqlogs/broker.log"],
            )
            try:
                self.managed.wait_port(self.port, start_timeout)
                break
            except ProcessFailed:
                self.managed.kill9()
                if attempt == 2 or not _bind_race(self.managed):
                    raise
        self.wait_registered(start_timeout)

    def wait_registered(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise ProcessFailed(
                    f"{self.name} exited ({self.proc.returncode}) before registering at "
                    f"{self.namesrv_addr}\n{self.tail()}"
                )
            if probe.broker_registered(self.namesrv_addr, self.name, self.addr):
                return
            time.sleep(0.3)
        raise ProcessFailed(
            f"{self.name} ({self.addr}) not registered at {self.namesrv_addr} after {timeout}s\n{self.tail()}"
        )


def namesrv_under_test(workdir: Path, **conf) -> _Server:
    """pyrmq's NameServer; with PYRMQ_COMPAT_NAMESRV=java the Java one stands in for it.

    The switch is the harness's self-check: every pyrmq test must pass with it
    (docs/compat.md). It never applies by default.
    """
    if os.environ.get("PYRMQ_COMPAT_NAMESRV", "pyrmq") == "java":
        from support.java import ensure_built

        ensure_built()
        conf.pop("brokerChannelExpiredTime", None)  # pyrmq's key; Java's expiry is fixed
        return JavaNamesrv(workdir, **conf)
    return PyrmqNamesrv(workdir, **conf)


class JavaLocalProxy(JavaBroker):
    """org.apache.rocketmq.proxy.ProxyStartup 5.5.0 in local mode (module `proxy`).

    One JVM: the proxy starts a BrokerController from broker.conf (`.addr`, `.port`: its remoting
    port, registered at `namesrv_addr`) and serves the 5.x SDKs' gRPC on `.grpc_port` (the
    proxy's own remoting server on another free port). `conf` extends broker.conf, `proxy_conf`
    rmq-proxy.json (ProxyConfig keys).
    """

    def __init__(
        self,
        namesrv_addr: str,
        workdir: Path,
        name: str | None = None,
        cluster: str = "DefaultCluster",
        start_timeout: float = 240,
        proxy_conf: dict | None = None,
        system_props: dict | None = None,
        **conf,
    ):
        import json

        self.namesrv_addr = namesrv_addr
        self.workdir = workdir
        self.home = prepare_home(workdir / "home")
        self.name = name or f"proxy-broker-{os.getpid()}-{next(_seq)}"
        self.cluster = cluster
        self.store_dir = workdir / "store"
        for attempt in range(3):
            self.port, self.grpc_port = broker_port(), free_port()
            broker_conf = _java_broker_conf(self, namesrv_addr, conf)
            self.conf_file = write_properties(workdir / f"broker-{self.name}.conf", broker_conf)
            proxy = {
                "rocketMQClusterName": cluster,
                "namesrvAddr": namesrv_addr,
                "proxyMode": "local",
                "brokerConfigPath": str(self.conf_file),
                "grpcServerPort": self.grpc_port,
                "remotingListenPort": free_port(),
                "localServeAddr": "127.0.0.1",
                **(proxy_conf or {}),
            }
            proxy_file = workdir / "rmq-proxy.json"
            proxy_file.write_text(json.dumps(proxy, indent=1))
            argv = java_argv(
                "proxy",
                "org.apache.rocketmq.proxy.ProxyStartup",
                ["-pc", str(proxy_file), "-pm", "local"],
                self.home,
                {
                    "rmq.logback.configurationFile": "rmq.proxy.logback.xml",
                    "logback.statusListenerClass": _LOGBACK_QUIET,
                    **(system_props or {}),
                },
                heap=["-Xms128m", "-Xmx384m", "-XX:MaxDirectMemorySize=256m"],
            )
            self.managed = ManagedProcess(
                self.name,
                argv,
                workdir / f"proxy-{self.name}-{self.grpc_port}.out",
                env=java_env(self.home),
                cwd=workdir,
                extra_logs=[self.home / "logs/rocketmqlogs/proxy.log", self.home / "logs/rocketmqlogs/broker.log"],
            )
            try:
                self.managed.wait_port(self.grpc_port, start_timeout)
                break
            except ProcessFailed:
                self.managed.kill9()
                if attempt == 2 or not _bind_race(self.managed):
                    raise
        self.wait_registered(start_timeout)

    @property
    def grpc_addr(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"
