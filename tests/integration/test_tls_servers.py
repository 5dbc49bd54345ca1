"""pyrmq namesrv (with its controller) and broker as processes in TLS enforcing mode, set as
Java's are (`-Dtls.server.mode=enforcing -Dtls.config.file=...`): the broker registers over
TLS on its own (useTLS follows the enforcing mode), the name server, controller, main and VIP
ports serve TLS and refuse plain connections, `pyrmq admin -Dtls.enable=true` works and plain
admin is refused; a TLS setting that cannot work stops the start."""

from __future__ import annotations

import asyncio
import os
import ssl
import subprocess
import time
from pathlib import Path

import pytest
from support.certs import PASSWORD, make_pki
from support.ports import free_port, free_port_block
from support.procs import ManagedProcess
from support.pyrmq_proc import venv_python
from support.requests import pull, send_v2
from support.servers import write_properties

from pyrmq.protocol.bodies.namesrv import TopicRouteData
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.errors import RemotingConnectError, RemotingSendRequestError
from pyrmq.remoting.client import RemotingClient
from pyrmq.remoting.tls import TlsConfig
from pyrmq.store import message as m

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(120)


def _start(name: str, argv: list[str], tmp_path: Path) -> ManagedProcess:
    return ManagedProcess(
        name,
        [venv_python(), "-m", "pyrmq", *argv],
        tmp_path / f"{name}.out",
        cwd=ROOT,
        env=dict(os.environ, HOME=str(tmp_path)),
    )


def _tls_file(tmp_path: Path) -> Path:
    """A server certificate of a test CA, and the client side trusting that CA only."""
    pki = make_pki(tmp_path / "pki", rsa_keys=False)
    return write_properties(
        tmp_path / "tls.properties",
        {
            "tls.test.mode.enable": "false",
            "tls.server.certPath": pki.server_cert,
            "tls.server.keyPath": pki.server_key,
            "tls.server.keyPassword": PASSWORD,
            "tls.client.authServer": "true",
            "tls.client.trustCertPath": pki.ca,
        },
    )


def test_enforcing_cluster_serves_tls_only(tmp_path: Path) -> None:
    tls_file = _tls_file(tmp_path)
    system = ["-Dtls.server.mode=enforcing", f"-Dtls.config.file={tls_file}"]
    ns_port, ctl_port = free_port(), free_port()
    b_port = free_port_block((-2, 0))
    ns_conf = write_properties(
        tmp_path / "namesrv.conf",
        {
            "listenPort": ns_port,
            "kvConfigPath": tmp_path / "kv.json",
            "enableControllerInNamesrv": "true",
            "controllerDLegerGroup": "g",
            "controllerDLegerPeers": f"n0-127.0.0.1:{ctl_port}",
            "controllerDLegerSelfId": "n0",
            "controllerStorePath": tmp_path / "ctl-store",
        },
    )
    procs = [_start("namesrv", ["namesrv", "-c", str(ns_conf), "--host", "127.0.0.1", *system], tmp_path)]
    try:
        procs[0].wait_line("The ControllerManager boot success")
        b_conf = write_properties(
            tmp_path / "broker.conf",
            {
                "brokerClusterName": "TlsCluster",
                "brokerName": "tls-broker",
                "namesrvAddr": f"127.0.0.1:{ns_port}",
                "listenPort": b_port,
                "brokerIP1": "127.0.0.1",
                "bindAddress": "127.0.0.1",
                "storePathRootDir": tmp_path / "store",
                "mappedFileSizeCommitLog": 4 * 1024 * 1024,
            },
        )
        procs.append(_start("broker", ["broker", "-c", str(b_conf), *system], tmp_path))
        procs[1].wait_line(f"The broker[tls-broker, 127.0.0.1:{b_port}] boot success.")
        asyncio.run(_check(tls_file, ns_port, ctl_port, b_port))
        # pyrmq admin takes mqadmin's JAVA_OPT settings as leading -D options
        admin = [venv_python(), "-m", "pyrmq", "admin"]
        status = ["brokerStatus", "-b", f"127.0.0.1:{b_port}"]
        tls = ["-Dtls.enable=true", f"-Dtls.config.file={tls_file}"]
        ok = subprocess.run([*admin, *tls, *status], capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert ok.returncode == 0 and "brokerVersionDesc" in ok.stdout, ok
        plain = subprocess.run([*admin, *status], capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert plain.returncode == 1 and "brokerVersionDesc" not in plain.stdout, plain
        assert "SubCommandException" in plain.stderr, plain
    finally:
        for p in reversed(procs):
            p.stop(10)


async def _check(tls_file: Path, ns_port: int, ctl_port: int, b_port: int) -> None:
    ctx = TlsConfig.from_properties({"tls.config.file": str(tls_file)}).client_context()
    ns, ctl, broker, vip = (f"127.0.0.1:{p}" for p in (ns_port, ctl_port, b_port, b_port - 2))
    async with RemotingClient(tls=ctx) as c:
        # the broker registered with the name server over TLS, with no tls.enable of its own
        for _ in range(50):
            info = await c.invoke(ns, RemotingCommand(code=RequestCode.GET_BROKER_CLUSTER_INFO), 5)
            if info.code == ResponseCode.SUCCESS and b"tls-broker" in (info.body or b""):
                break
            await asyncio.sleep(0.2)
        else:
            raise AssertionError(f"broker not registered: {info}")
        r = await c.invoke(broker, send_v2("TlsT", "tls-broker", b"over tls"), 5)
        assert r.code == ResponseCode.SUCCESS, r
        r = await c.invoke(vip, send_v2("TlsT", "tls-broker", b"over tls, vip"), 5)
        assert r.code == ResponseCode.SUCCESS, r
        route = await c.invoke(ns, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TlsT"}), 5)
        assert TopicRouteData.decode(route.body).broker_datas[0].broker_addrs[0] == broker
        r = await c.invoke(broker, pull("TlsT", "tlsg", 0), 5)
        assert [x.body for x in m.decode_messages(r.body)] == [b"over tls", b"over tls, vip"]
        r = await c.invoke(ctl, RemotingCommand(code=RequestCode.CONTROLLER_GET_METADATA_INFO), 5)
        assert r.code == ResponseCode.SUCCESS, r
    for addr in (ns, ctl, broker, vip):
        async with RemotingClient() as plain:
            with pytest.raises((RemotingConnectError, RemotingSendRequestError)):
                await plain.invoke(addr, RemotingCommand(code=RequestCode.GET_BROKER_CLUSTER_INFO), 3)
    wrong = TlsConfig.from_properties({"tls.config.file": "/nonexistent"}).client_context()
    wrong.verify_mode = ssl.CERT_REQUIRED  # trusts only the system CAs, not the test CA
    wrong.load_default_certs()
    async with RemotingClient(tls=wrong) as c:
        with pytest.raises(RemotingConnectError):
            await c.invoke(broker, RemotingCommand(code=RequestCode.GET_BROKER_CLUSTER_INFO), 3)


def test_unusable_tls_settings_stop_the_start_in_one_line(tmp_path: Path) -> None:
    conf = write_properties(tmp_path / "namesrv.conf", {"listenPort": free_port(), "kvConfigPath": tmp_path / "kv"})
    tls_file = write_properties(tmp_path / "tls.properties", {"tls.test.mode.enable": "false"})
    system = ["-Dtls.server.mode=enforcing", f"-Dtls.config.file={tls_file}"]
    done = subprocess.run(
        [venv_python(), "-m", "pyrmq", "namesrv", "-c", str(conf), "--host", "127.0.0.1", *system],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=dict(os.environ, HOME=str(tmp_path)),
    )
    assert done.returncode == 1, done
    assert (
        "cannot start the name server: tls.server.certPath and tls.server.keyPath are needed when "
        "tls.test.mode.enable=false" in done.stderr
    )
    assert "Traceback" not in done.stderr


@pytest.mark.soak  # the slave's first metadata sync comes 10 s after its start (SlaveSynchronize)
def test_master_and_slave_over_tls(tmp_path: Path) -> None:
    """A name server, a master and a slave, all enforcing: the slave registers, learns its master
    and syncs the master's topic config over TLS (the master refuses plain), and replicates the
    commit log over the HA port (plain, as Java's HAService)."""
    from integration.test_ha_brokers import _pair

    tls_file = _tls_file(tmp_path)
    system = ("-Dtls.server.mode=enforcing", f"-Dtls.config.file={tls_file}")
    ctx = TlsConfig.from_properties({"tls.config.file": str(tls_file)}).client_context()
    bodies = [f"tls-ha-{i}".encode() for i in range(3)]

    async def scenario(master: str, slave: str) -> None:
        async with RemotingClient(tls=ctx) as c:
            header = {"topic": "TlsHaT", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}
            r = await c.invoke(master, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header), 5)
            assert r.code == ResponseCode.SUCCESS, r
            for body in bodies:
                r = await c.invoke(master, send_v2("TlsHaT", "ha-broker", body), 5)
                assert r.code == ResponseCode.SUCCESS, r
            deadline = time.monotonic() + 40
            while True:  # created on the master only: the slave has it from its sync over TLS
                r = await c.invoke(slave, RemotingCommand(code=RequestCode.GET_ALL_TOPIC_CONFIG), 5)
                if r.code == ResponseCode.SUCCESS and b"TlsHaT" in (r.body or b""):
                    break
                assert time.monotonic() < deadline, "the slave never synced the master's topic config"
                await asyncio.sleep(0.5)
            got: list[bytes] = []
            while len(got) < len(bodies):
                r = await c.invoke(slave, pull("TlsHaT", "tlshag", len(got)), 5)
                if r.code == ResponseCode.SUCCESS:
                    got += [x.body for x in m.decode_messages(r.body)]
                else:
                    assert time.monotonic() < deadline, f"the slave has {len(got)} of {len(bodies)}"
                    await asyncio.sleep(0.2)
            assert got == bodies
        async with RemotingClient() as plain:
            with pytest.raises((RemotingConnectError, RemotingSendRequestError)):
                await plain.invoke(slave, RemotingCommand(code=RequestCode.GET_BROKER_CLUSTER_INFO), 3)

    with _pair(tmp_path, system=system) as p:
        asyncio.run(scenario(p.master_addr, p.slave_addr))
        assert "Traceback" not in p.slave.tail(400)
