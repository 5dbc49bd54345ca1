"""TLS for remoting: the tls.* settings, the server's and client's SSL contexts, the peek.

Java: remoting.netty.TlsSystemConfig (system properties, overridden by the
``tls.config.file`` properties file except ``tls.server.mode`` and
``tls.enable``), TlsHelper#buildSslContext and TlsMode. Java's defaults hold:
a server is ``permissive`` in test mode, so it accepts plain remoting and TLS
(with a generated self-signed certificate) on the same port, telling them
apart by the first byte (0x16, a TLS handshake record), as
NettyRemotingServer's TlsModeHandler does.

Keys are PEM: PKCS#8 (plain or encrypted, including the PBE-SHA1-RC4-128 of
RocketMQ's TLS guide, which OpenSSL 3 no longer reads itself) and also PKCS#1,
read with the ``cryptography`` package and handed to ``ssl`` re-encrypted
under a one-time password, so no clear key is written anywhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import enum
import hashlib
import logging
import os
import secrets
import ssl
import tempfile
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from pyrmq.common.properties import PropertiesError, load_properties

log = logging.getLogger("pyrmq.remoting.tls")

__all__ = [
    "HANDSHAKE_MAGIC",
    "ClientAuth",
    "ServerTls",
    "TlsConfig",
    "TlsConfigError",
    "TlsMode",
    "server_pem_pair",
    "set_system_property",
    "system_properties",
]

HANDSHAKE_MAGIC = 0x16  # TLS record type "handshake": the first byte of a ClientHello

DEFAULT_CONFIG_FILE = "/etc/rocketmq/tls.properties"


class TlsConfigError(ValueError):
    """A TLS setting that cannot be used (missing or unreadable key/certificate, wrong password)."""


class TlsMode(enum.StrEnum):
    DISABLED = "disabled"  # a TLS handshake is refused (connection closed)
    PERMISSIVE = "permissive"  # plain and TLS on the same port
    ENFORCING = "enforcing"  # a plain connection is refused (connection closed)

    @classmethod
    def parse(cls, name: str) -> TlsMode:
        """Java TlsMode#parse: exact lower-case names; anything else is permissive."""
        for mode in cls:
            if mode.value == name:
                return mode
        return cls.PERMISSIVE


class ClientAuth(enum.StrEnum):
    NONE = "none"
    OPTIONAL = "optional"
    REQUIRE = "require"

    @classmethod
    def parse(cls, name: str | None) -> ClientAuth:
        """Java TlsHelper#parseClientAuthMode: case-insensitive; blank or unknown is none."""
        value = (name or "").strip().lower()
        for auth in cls:
            if auth.value == value:
                return auth
        return cls.NONE


# Java's System properties, as far as pyrmq reads them: filled from `-D name=value` options.
_system: dict[str, str] = {}


def set_system_property(name: str, value: str) -> None:
    _system[name] = value


def system_properties() -> dict[str, str]:
    return dict(_system)


def _bool(raw: str | None, default: bool) -> bool:
    # Java Boolean.parseBoolean: "true" in any case is true, anything else false
    return default if raw is None else raw.strip().lower() == "true"


# property name -> TlsConfig field, for the keys the tls.config.file may override (TlsHelper)
_FILE_KEYS = {
    "tls.test.mode.enable": "test_mode_enable",
    "tls.server.need.client.auth": "server_need_client_auth",
    "tls.server.keyPath": "server_key_path",
    "tls.server.keyPassword": "server_key_password",
    "tls.server.certPath": "server_cert_path",
    "tls.server.authClient": "server_auth_client",
    "tls.server.trustCertPath": "server_trust_cert_path",
    "tls.client.keyPath": "client_key_path",
    "tls.client.keyPassword": "client_key_password",
    "tls.client.certPath": "client_cert_path",
    "tls.client.authServer": "client_auth_server",
    "tls.client.trustCertPath": "client_trust_cert_path",
}
_BOOL_FIELDS = {"test_mode_enable", "server_auth_client", "client_auth_server"}


@dataclass(frozen=True, slots=True)
class TlsConfig:
    """Java TlsSystemConfig, one value per tls.* property (Java's defaults)."""

    server_mode: TlsMode = TlsMode.PERMISSIVE
    enable: bool | None = None  # tls.enable; unset: clients use TLS when the server mode is enforcing
    config_file: str = DEFAULT_CONFIG_FILE
    test_mode_enable: bool = True
    server_need_client_auth: str = "none"
    server_key_path: str | None = None
    server_key_password: str | None = field(default=None, repr=False)
    server_cert_path: str | None = None
    server_auth_client: bool = False
    server_trust_cert_path: str | None = None
    client_key_path: str | None = None
    client_key_password: str | None = field(default=None, repr=False)
    client_cert_path: str | None = None
    client_auth_server: bool = False
    client_trust_cert_path: str | None = None

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> TlsConfig:
        """From Java's property names (the -D options of Java's start scripts)."""
        values: dict[str, object] = {}
        if "tls.server.mode" in props:
            values["server_mode"] = TlsMode.parse(props["tls.server.mode"])
        if "tls.enable" in props:
            values["enable"] = _bool(props["tls.enable"], False)
        if "tls.config.file" in props:
            values["config_file"] = props["tls.config.file"]
        return replace(cls(**values), **_file_values(props, cls()))  # type: ignore[arg-type]

    @classmethod
    def system(cls) -> TlsConfig:
        """From the process's system properties (`-D` options), like Java's static TlsSystemConfig."""
        return cls.from_properties(_system)

    @property
    def client_enabled(self) -> bool:
        """Java NettyClientConfig#useTLS's default: tls.enable, else whether the server mode is enforcing."""
        return self.enable if self.enable is not None else self.server_mode is TlsMode.ENFORCING

    def outgoing_context(self) -> ssl.SSLContext | None:
        """The context of a server process's own connections (controller, DLedger peers): TLS
        when ``client_enabled`` (Java builds their NettyClientConfig with that default)."""
        return self.client_context() if self.client_enabled else None

    def with_config_file(self) -> TlsConfig:
        """TlsHelper#extractTlsConfigFromFile: a readable tls.config.file overrides the keys it has."""
        path = Path(self.config_file) if self.config_file else None
        if path is None or not path.is_file() or not os.access(path, os.R_OK):
            return self
        try:
            props = load_properties(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, PropertiesError) as e:
            log.warning("cannot read the TLS config file %s: %s", path, e)  # Java ignores it too
            return self
        return replace(self, **_file_values(props, self))  # type: ignore[arg-type]

    # -- SSL contexts ---------------------------------------------------------------------------

    def server_context(self) -> ssl.SSLContext:
        """TlsHelper#buildSslContext(false), after the config file; TlsConfigError if unusable."""
        cfg = self.with_config_file()
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        if cfg.test_mode_enable:
            cert, key = _self_signed_files()
            ctx.load_cert_chain(cert, key)
            ctx.verify_mode = ssl.CERT_OPTIONAL  # Java: ClientAuth.OPTIONAL with the default trust store
            ctx.load_default_certs(ssl.Purpose.CLIENT_AUTH)
            return ctx
        if not cfg.server_cert_path or not cfg.server_key_path:
            raise TlsConfigError(
                "tls.server.certPath and tls.server.keyPath are needed when tls.test.mode.enable=false"
            )
        _load_key_pair(ctx, cfg.server_cert_path, cfg.server_key_path, cfg.server_key_password, "tls.server")
        auth = ClientAuth.parse(cfg.server_need_client_auth)
        if auth is not ClientAuth.NONE:
            ctx.verify_mode = ssl.CERT_REQUIRED if auth is ClientAuth.REQUIRE else ssl.CERT_OPTIONAL
            # Java with tls.server.authClient=false accepts any client certificate; OpenSSL cannot,
            # so a presented certificate is always checked against the trusted ones (stricter)
            _load_trust(ctx, cfg.server_trust_cert_path, ssl.Purpose.CLIENT_AUTH, "tls.server.trustCertPath")
        return ctx

    def client_context(self) -> ssl.SSLContext:
        """TlsHelper#buildSslContext(true): no host name check (Java has none); the server's
        certificate is verified only with tls.client.authServer=true."""
        cfg = self.with_config_file()
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        if cfg.test_mode_enable:
            return ctx
        if cfg.client_auth_server:
            ctx.verify_mode = ssl.CERT_REQUIRED
            _load_trust(ctx, cfg.client_trust_cert_path, ssl.Purpose.SERVER_AUTH, "tls.client.trustCertPath")
        if cfg.client_cert_path or cfg.client_key_path:
            if not (cfg.client_cert_path and cfg.client_key_path):
                raise TlsConfigError("tls.client.certPath and tls.client.keyPath go together")
            _load_key_pair(ctx, cfg.client_cert_path, cfg.client_key_path, cfg.client_key_password, "tls.client")
        return ctx


def _file_values(props: Mapping[str, str], base: TlsConfig) -> dict[str, object]:
    out: dict[str, object] = {}
    for name, attr in _FILE_KEYS.items():
        if name in props:
            raw = props[name]
            out[attr] = _bool(raw, getattr(base, attr)) if attr in _BOOL_FIELDS else raw
    return out


def _load_trust(ctx: ssl.SSLContext, path: str | None, purpose: ssl.Purpose, key: str) -> None:
    if not path:
        ctx.load_default_certs(purpose)  # Java: the JDK's default trust store
        return
    try:
        ctx.load_verify_locations(cafile=path)
    except (OSError, ssl.SSLError) as e:
        raise TlsConfigError(f"{key}={path}: cannot read trusted certificates: {e}") from None


def _load_key_pair(ctx: ssl.SSLContext, cert_path: str, key_path: str, password: str | None, prefix: str) -> None:
    """The certificate chain and its private key (PEM), the key decrypted with ``password``."""
    from cryptography.hazmat.primitives import serialization

    try:
        key_pem = Path(key_path).read_bytes()
    except OSError as e:
        raise TlsConfigError(f"{prefix}.keyPath={key_path}: {e.strerror or e}") from None
    secret = password.encode() if password else None
    try:
        try:
            key = serialization.load_pem_private_key(key_pem, secret)
        except TypeError:
            if secret is None:
                raise TlsConfigError(f"{prefix}.keyPath={key_path} is encrypted: set {prefix}.keyPassword") from None
            key = serialization.load_pem_private_key(key_pem, None)  # a password for a clear key: unused
    except TlsConfigError:
        raise
    except ValueError as e:
        raise TlsConfigError(
            f"{prefix}.keyPath={key_path}: cannot read the private key (wrong password?): {e}"
        ) from None
    except Exception as e:  # unsupported algorithm and the like
        raise TlsConfigError(f"{prefix}.keyPath={key_path}: cannot read the private key: {e}") from None
    once = secrets.token_urlsafe(24).encode()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(once),
    )
    try:
        with _key_file(pem) as path:
            ctx.load_cert_chain(cert_path, path, password=once)
    except (OSError, ssl.SSLError) as e:
        raise TlsConfigError(f"{prefix}.certPath={cert_path}: cannot use the certificate with its key: {e}") from None


def server_pem_pair(config: TlsConfig) -> tuple[bytes, bytes]:
    """The server side's (certificate chain, unencrypted PKCS#8 key) as PEM, for servers that take
    bytes rather than an SSLContext (the gRPC endpoint): test mode's self-signed pair, else
    tls.server.certPath and tls.server.keyPath (decrypted with tls.server.keyPassword)."""
    from cryptography.hazmat.primitives import serialization

    cfg = config.with_config_file()
    if cfg.test_mode_enable:
        cert_path, key_path = _self_signed_files()
        return Path(cert_path).read_bytes(), Path(key_path).read_bytes()
    if not cfg.server_cert_path or not cfg.server_key_path:
        raise TlsConfigError("tls.server.certPath and tls.server.keyPath are needed when tls.test.mode.enable=false")
    _load_key_pair(
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER),
        cfg.server_cert_path,
        cfg.server_key_path,
        cfg.server_key_password,
        "tls.server",
    )  # the same checks and messages as the remoting ports
    secret = cfg.server_key_password.encode() if cfg.server_key_password else None
    key_pem = Path(cfg.server_key_path).read_bytes()
    try:
        key = serialization.load_pem_private_key(key_pem, secret)
    except TypeError:
        key = serialization.load_pem_private_key(key_pem, None)
    clear = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return Path(cfg.server_cert_path).read_bytes(), clear


@contextlib.contextmanager
def _key_file(data: bytes) -> Iterator[str]:
    """A path that reads as ``data``: an in-memory file on Linux, else a private temporary file."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("pyrmq-tls-key")
        try:
            os.write(fd, data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="pyrmq-tls-") as d:
        path = os.path.join(d, "key.pem")
        with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
            f.write(data)
        yield path


_self_signed: tuple[str, str] | None = None
_self_signed_lock = threading.Lock()


def self_signed_pem() -> tuple[bytes, bytes]:
    """A fresh (certificate, unencrypted PKCS#8 key) pair like Netty's SelfSignedCertificate:
    RSA 2048, CN=localhost, valid from a year ago to 9999-12-31."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=365))
        .not_valid_after(datetime.datetime(9999, 12, 31, 23, 59, 59, tzinfo=datetime.UTC))
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def _self_signed_files() -> tuple[str, str]:
    """Test mode's certificate, made once per process in a private temporary directory."""
    global _self_signed
    with _self_signed_lock:
        if _self_signed is None or not all(os.path.exists(p) for p in _self_signed):
            cert_pem, key_pem = self_signed_pem()
            d = tempfile.mkdtemp(prefix="pyrmq-tls-test-")
            paths = (os.path.join(d, "cert.pem"), os.path.join(d, "key.pem"))
            for path, data in zip(paths, (cert_pem, key_pem), strict=True):
                with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
                    f.write(data)
            _self_signed = paths
        return _self_signed


class FileDigests:
    """Which of some files changed since the last look (Java FileWatchService: content digests,
    a missing file counts as empty)."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = [p for p in dict.fromkeys(paths) if p]
        self._seen = {p: _digest(p) for p in self.paths}

    def changed(self) -> list[str]:
        out = []
        for path in self.paths:
            now = _digest(path)
            if now != self._seen[path]:
                self._seen[path] = now
                out.append(path)
        return out


def _digest(path: str) -> bytes:
    try:
        return hashlib.sha256(Path(path).read_bytes()).digest()
    except OSError:
        return b""


class ServerTls:
    """What a RemotingServer needs: its mode, and the server context built once (lazily in test
    mode, where making the self-signed key takes a moment; else at start, to fail early).

    Like Java's BrokerController/NamesrvController file watch, the context is rebuilt when the
    trusted certificates change, or once both the certificate and the key have changed; new
    connections get it, open ones keep theirs; a rebuild that fails keeps the old context."""

    WATCH_INTERVAL_S = 0.5  # Java FileWatchService

    def __init__(self, config: TlsConfig | None = None) -> None:
        self.config = config or TlsConfig.system()
        self.mode = self.config.server_mode
        self._context: ssl.SSLContext | None = None
        self._files: FileDigests | None = None
        self._cert_changed = self._key_changed = False
        self._watch_task: asyncio.Task | None = None
        self._building: asyncio.Future[ssl.SSLContext] | None = None

    def prepare(self) -> None:
        """Build the context now unless it is test mode's; raises TlsConfigError."""
        cfg = self.config.with_config_file()
        if self.mode is not TlsMode.DISABLED and not cfg.test_mode_enable:
            self.context()
            if self._files is None:
                self._files = FileDigests(
                    [cfg.server_cert_path or "", cfg.server_key_path or "", cfg.server_trust_cert_path or ""]
                )

    def context(self) -> ssl.SSLContext:
        if self._context is None:
            self._context = self.config.server_context()
        return self._context

    async def context_async(self) -> ssl.SSLContext:
        """``context()`` built off the event loop: test mode's RSA key takes a while on a busy
        machine, and other connections must not wait for it."""
        if self._context is None:
            if self._building is None:
                self._building = asyncio.ensure_future(asyncio.to_thread(self.config.server_context))
            built = await asyncio.shield(self._building)
            if self._context is None:
                self._context = built
        return self._context

    def admits(self, first_byte: int) -> bool | None:
        """None: refuse the connection; True: TLS; False: plain (Java TlsModeHandler)."""
        if first_byte == HANDSHAKE_MAGIC:
            return None if self.mode is TlsMode.DISABLED else True
        return None if self.mode is TlsMode.ENFORCING else False

    def check_files(self) -> bool:
        """One look at the watched files; True when the context was rebuilt."""
        if self._files is None:
            return False
        cfg = self.config.with_config_file()
        reload = False
        for path in self._files.changed():
            if path == cfg.server_trust_cert_path:
                reload = True
            if path == cfg.server_cert_path:
                self._cert_changed = True
            if path == cfg.server_key_path:
                self._key_changed = True
        if self._cert_changed and self._key_changed:
            reload = True
        if not reload:
            return False
        try:
            self._context = self.config.server_context()
        except TlsConfigError as e:
            # unlike Java, the pair stays "changed": fixing either file alone is tried again
            log.error("TLS files changed but cannot be used, keeping the previous ones: %s", e)
            return False
        self._cert_changed = self._key_changed = False
        log.info("TLS certificate files changed: new connections use them")
        return True

    def start_watching(self) -> None:
        """Watch the files (once, however many servers share this object)."""
        if self._files is not None and self._watch_task is None:
            self._watch_task = asyncio.get_running_loop().create_task(self._watch(), name="tls-file-watch")

    def stop_watching(self) -> None:
        if self._watch_task is not None:
            self._watch_task.cancel()
            self._watch_task = None

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.WATCH_INTERVAL_S)
            await asyncio.to_thread(self.check_files)
