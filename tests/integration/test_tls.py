"""TLS on a real RemotingServer (127.0.0.1, free port) with pyrmq's RemotingClient, per mode:
enforcing refuses plain, permissive serves both on one port, disabled refuses TLS; mutual TLS."""

from __future__ import annotations

import asyncio
import functools
import socket
import ssl
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from support.certs import PASSWORD, make_pki

from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand, encode
from pyrmq.protocol.errors import RemotingConnectError, RemotingSendRequestError
from pyrmq.remoting.client import RemotingClient
from pyrmq.remoting.server import RemotingServer, RequestContext, handles
from pyrmq.remoting.tls import ServerTls, TlsConfig

pytestmark = pytest.mark.timeout(60)


def sync(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test body on a fresh event loop (the suite has no asyncio plugin)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


CODE = int(RequestCode.GET_BROKER_CLUSTER_INFO)


class Echo:
    """Answers with whether the connection is TLS and the client certificate's CN, if any."""

    @handles(CODE)
    async def echo(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        transport = ctx.channel.transport
        ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
        peer = ssl_object.getpeercert() if ssl_object is not None else None
        cn = dict(x[0] for x in peer["subject"]).get("commonName", "") if peer else ""
        return cmd.make_response(ResponseCode.SUCCESS, f"tls={ssl_object is not None} cn={cn}")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory):
    return make_pki(tmp_path_factory.mktemp("pki"), rsa_keys=False)


def _config(tmp_path: Path, system: dict[str, str], file: dict[str, str] | None = None) -> TlsConfig:
    props = dict(system)
    if file is not None:
        f = tmp_path / f"tls-{len(list(tmp_path.iterdir()))}.properties"
        f.write_text("".join(f"{k}={v}\n" for k, v in file.items()))
        props["tls.config.file"] = str(f)
    else:
        props["tls.config.file"] = str(tmp_path / "absent.properties")
    return TlsConfig.from_properties(props)


async def _serve(cfg: TlsConfig, frontends: int = 0) -> RemotingServer:
    server = RemotingServer("127.0.0.1", 0, name="tls-test", tls=ServerTls(cfg), frontends=frontends)
    server.accept_in_core = False  # with a front-end, it accepts every connection
    server.register(Echo())
    await server.start()
    return server


async def _ask(port: int, tls: ssl.SSLContext | None) -> str:
    async with RemotingClient(tls=tls, connect_timeout_s=5) as client:
        reply = await client.invoke(f"127.0.0.1:{port}", RemotingCommand(code=CODE), timeout_s=5)
        assert reply.code == ResponseCode.SUCCESS
        return reply.remark or ""


async def _refused(port: int, tls: ssl.SSLContext | None) -> None:
    with pytest.raises((RemotingConnectError, RemotingSendRequestError)):
        await _ask(port, tls)


def _plain_socket_closed(port: int) -> bool:
    """A plain request on a raw socket: the server closes without a byte of answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(encode(RemotingCommand(code=CODE)))
        try:
            return s.recv(1) == b""
        except ConnectionResetError:
            return True


@pytest.mark.parametrize("frontends", [0, 1], ids=["one-process", "front-end"])
@sync
async def test_permissive_test_mode_serves_plain_and_tls_on_one_port(tmp_path: Path, frontends: int) -> None:
    """With a front-end process, plain connections are pumped by it and a TLS one is handed to
    the core (SCM_RIGHTS), which terminates TLS: both answer on the one port."""
    server = await _serve(_config(tmp_path, {}), frontends)  # Java's defaults: permissive, test mode
    try:
        assert await _ask(server.port, None) == "tls=False cn="
        assert await _ask(server.port, TlsConfig().client_context()) == "tls=True cn="
        assert await _ask(server.port, None) == "tls=False cn="
    finally:
        await server.close()


@sync
async def test_enforcing_refuses_plain_and_serves_tls(tmp_path: Path, pki) -> None:
    server_file = {
        "tls.test.mode.enable": "false",
        "tls.server.certPath": str(pki.server_cert),
        "tls.server.keyPath": str(pki.server_key),
        "tls.server.keyPassword": PASSWORD,
    }
    server = await _serve(_config(tmp_path, {"tls.server.mode": "enforcing"}, server_file))
    try:
        await _refused(server.port, None)
        assert await asyncio.to_thread(_plain_socket_closed, server.port)
        trusting = _config(
            tmp_path,
            {},
            {"tls.test.mode.enable": "false", "tls.client.authServer": "true", "tls.client.trustCertPath": str(pki.ca)},
        )
        assert await _ask(server.port, trusting.client_context()) == "tls=True cn="
        wrong_ca = _config(
            tmp_path,
            {},
            {
                "tls.test.mode.enable": "false",
                "tls.client.authServer": "true",
                "tls.client.trustCertPath": str(pki.other_ca),
            },
        )
        await _refused(server.port, wrong_ca.client_context())
    finally:
        await server.close()


@sync
async def test_disabled_refuses_tls_and_serves_plain(tmp_path: Path) -> None:
    server = await _serve(_config(tmp_path, {"tls.server.mode": "disabled"}))
    try:
        await _refused(server.port, TlsConfig().client_context())
        assert await _ask(server.port, None) == "tls=False cn="
    finally:
        await server.close()


@sync
async def test_mutual_tls_with_require(tmp_path: Path, pki) -> None:
    server = await _serve(
        _config(
            tmp_path,
            {"tls.server.mode": "enforcing"},
            {
                "tls.test.mode.enable": "false",
                "tls.server.certPath": str(pki.server_cert),
                "tls.server.keyPath": str(pki.server_key),
                "tls.server.keyPassword": PASSWORD,
                "tls.server.need.client.auth": "require",
                "tls.server.trustCertPath": str(pki.ca),
            },
        )
    )

    def client(cert: Path | None, key: Path | None) -> ssl.SSLContext:
        file = {
            "tls.test.mode.enable": "false",
            "tls.client.authServer": "true",
            "tls.client.trustCertPath": str(pki.ca),
        }
        if cert and key:
            file |= {
                "tls.client.certPath": str(cert),
                "tls.client.keyPath": str(key),
                "tls.client.keyPassword": PASSWORD,
            }
        return _config(tmp_path, {}, file).client_context()

    try:
        assert await _ask(server.port, client(pki.client_cert, pki.client_key)) == "tls=True cn=client"
        await _refused(server.port, client(None, None))  # no certificate
        await _refused(server.port, client(pki.other_client_cert, pki.other_client_key))  # another CA's
        await _refused(server.port, None)
        # the server keeps serving after the refusals
        assert await _ask(server.port, client(pki.client_cert, pki.client_key)) == "tls=True cn=client"
    finally:
        await server.close()


@sync
async def test_silent_connection_is_dropped_after_idle_time() -> None:
    server = RemotingServer("127.0.0.1", 0, name="tls-idle", idle_seconds=0.5)
    server.register(Echo())
    await server.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        async with asyncio.timeout(5):
            assert await reader.read(1) == b""  # closed by the server, never admitted
        writer.close()
        assert server.channels == set()
    finally:
        await server.close()


@sync
async def test_new_certificate_files_are_used_without_restart(tmp_path: Path, pki) -> None:
    """Java's file watch: the context is rebuilt once both certificate and key changed."""
    other = make_pki(tmp_path / "pki2", rsa_keys=False)
    cert, key = tmp_path / "server.pem", tmp_path / "server.key"
    cert.write_bytes(pki.server_cert.read_bytes())
    key.write_bytes(pki.server_key.read_bytes())
    server_file = {
        "tls.test.mode.enable": "false",
        "tls.server.certPath": str(cert),
        "tls.server.keyPath": str(key),
        "tls.server.keyPassword": PASSWORD,
    }
    server = await _serve(_config(tmp_path, {"tls.server.mode": "enforcing"}, server_file))

    def trusting(ca: Path) -> ssl.SSLContext:
        file = {"tls.test.mode.enable": "false", "tls.client.authServer": "true", "tls.client.trustCertPath": str(ca)}
        return _config(tmp_path, {}, file).client_context()

    try:
        assert await _ask(server.port, trusting(pki.ca)) == "tls=True cn="
        cert.write_bytes(other.server_cert.read_bytes())
        await asyncio.sleep(1.2)  # the watch looks every 0.5 s: a certificate alone changes nothing
        assert await _ask(server.port, trusting(pki.ca)) == "tls=True cn="
        key.write_bytes(b"not a key")  # both changed, but unusable: the old context stays
        await asyncio.sleep(1.2)
        assert await _ask(server.port, trusting(pki.ca)) == "tls=True cn="
        key.write_bytes(other.server_key.read_bytes())
        async with asyncio.timeout(10):
            while True:
                try:
                    assert await _ask(server.port, trusting(other.ca)) == "tls=True cn="
                    break
                except (RemotingConnectError, RemotingSendRequestError):
                    await asyncio.sleep(0.2)
        await _refused(server.port, trusting(pki.ca))
    finally:
        await server.close()
