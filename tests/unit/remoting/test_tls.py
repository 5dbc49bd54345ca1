"""tls.py without sockets: Java's tls.* properties and file, the SSL contexts, key formats."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from support.certs import PASSWORD, make_pki, openssl_pkcs8_rc4, write_key

from pyrmq.remoting.tls import ClientAuth, ServerTls, TlsConfig, TlsConfigError, TlsMode


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory):
    return make_pki(tmp_path_factory.mktemp("pki"), rsa_keys=False)  # EC: quick to make


def test_java_defaults() -> None:
    cfg = TlsConfig.from_properties({})
    assert cfg.server_mode is TlsMode.PERMISSIVE
    assert cfg.test_mode_enable is True
    assert cfg.config_file == "/etc/rocketmq/tls.properties"
    assert cfg.client_enabled is False
    assert ClientAuth.parse(cfg.server_need_client_auth) is ClientAuth.NONE


def test_mode_and_client_auth_parse_like_java() -> None:
    assert TlsMode.parse("enforcing") is TlsMode.ENFORCING
    assert TlsMode.parse("disabled") is TlsMode.DISABLED
    assert TlsMode.parse("ENFORCING") is TlsMode.PERMISSIVE  # Java compares names exactly
    assert TlsMode.parse("bogus") is TlsMode.PERMISSIVE
    assert ClientAuth.parse("REQUIRE") is ClientAuth.REQUIRE
    assert ClientAuth.parse(" optional".strip()) is ClientAuth.OPTIONAL
    assert ClientAuth.parse("") is ClientAuth.NONE
    assert ClientAuth.parse("always") is ClientAuth.NONE


def test_client_tls_defaults_to_enforcing_server_mode() -> None:
    """NettyClientConfig: useTLS = tls.enable, else tls.server.mode == enforcing."""
    assert TlsConfig.from_properties({"tls.server.mode": "enforcing"}).client_enabled is True
    assert TlsConfig.from_properties({"tls.server.mode": "enforcing", "tls.enable": "false"}).client_enabled is False
    assert TlsConfig.from_properties({"tls.enable": "TRUE"}).client_enabled is True


def test_config_file_overrides_all_but_mode_and_enable(tmp_path: Path) -> None:
    f = tmp_path / "tls.properties"
    f.write_text(
        "tls.server.mode=disabled\ntls.enable=true\ntls.test.mode.enable=false\n"
        "tls.server.need.client.auth=require\ntls.server.keyPath=/k\ntls.server.keyPassword=pw\n"
        "tls.server.certPath=/c\ntls.server.authClient=true\ntls.server.trustCertPath=/t\n"
        "tls.client.keyPath=/ck\ntls.client.certPath=/cc\ntls.client.authServer=true\n"
        "tls.client.trustCertPath=/ct\ntls.client.keyPassword=cpw\n"
    )
    base = TlsConfig.from_properties(
        {"tls.server.mode": "enforcing", "tls.config.file": str(f), "tls.server.keyPath": "/from-system"}
    )
    assert base.server_key_path == "/from-system"
    cfg = base.with_config_file()
    assert cfg.server_mode is TlsMode.ENFORCING and cfg.enable is None  # not read from the file (Java)
    assert cfg.test_mode_enable is False
    assert cfg.server_need_client_auth == "require"
    assert (cfg.server_key_path, cfg.server_key_password, cfg.server_cert_path) == ("/k", "pw", "/c")
    assert cfg.server_auth_client is True and cfg.server_trust_cert_path == "/t"
    assert (cfg.client_key_path, cfg.client_cert_path, cfg.client_trust_cert_path) == ("/ck", "/cc", "/ct")
    assert cfg.client_auth_server is True and cfg.client_key_password == "cpw"
    assert "pw" not in repr(cfg)  # passwords stay out of logs


def test_missing_config_file_is_skipped(tmp_path: Path) -> None:
    cfg = TlsConfig.from_properties({"tls.config.file": str(tmp_path / "none.properties")})
    assert cfg.with_config_file() == cfg


def test_test_mode_server_context_has_a_self_signed_certificate() -> None:
    ctx = TlsConfig().server_context()
    assert ctx.verify_mode == ssl.CERT_OPTIONAL  # Java: ClientAuth.OPTIONAL in test mode
    client = TlsConfig().client_context()
    assert client.verify_mode == ssl.CERT_NONE and client.check_hostname is False


def _file_config(tmp_path: Path, **props: str) -> TlsConfig:
    f = tmp_path / "tls.properties"
    f.write_text("".join(f"{k}={v}\n" for k, v in {"tls.test.mode.enable": "false", **props}.items()))
    return TlsConfig.from_properties({"tls.config.file": str(f)})


def test_server_context_with_encrypted_pkcs8_key_and_require(tmp_path: Path, pki) -> None:
    cfg = _file_config(
        tmp_path,
        **{
            "tls.server.certPath": str(pki.server_cert),
            "tls.server.keyPath": str(pki.server_key),
            "tls.server.keyPassword": PASSWORD,
            "tls.server.need.client.auth": "require",
            "tls.server.trustCertPath": str(pki.ca),
        },
    )
    ctx = cfg.server_context()
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    assert [c["subject"] for c in ctx.get_ca_certs()] == [((("commonName", "pyrmq test CA"),),)]


def test_rocketmq_guide_rc4_pkcs8_key_is_read(tmp_path: Path, pki) -> None:
    """RocketMQ's TLS guide encrypts keys with PBE-SHA1-RC4-128, which OpenSSL 3 refuses by default."""
    rc4 = openssl_pkcs8_rc4(pki.server_key, tmp_path / "server-rc4.key")
    assert rc4.read_text().startswith("-----BEGIN ENCRYPTED PRIVATE KEY-----")
    cfg = _file_config(
        tmp_path,
        **{
            "tls.server.certPath": str(pki.server_cert),
            "tls.server.keyPath": str(rc4),
            "tls.server.keyPassword": PASSWORD,
        },
    )
    assert cfg.server_context().verify_mode == ssl.CERT_NONE


def test_traditional_and_clear_keys_are_read(tmp_path: Path, pki) -> None:
    key = serialization.load_pem_private_key(pki.server_key.read_bytes(), PASSWORD.encode())
    pkcs1 = tmp_path / "pkcs1.key"
    pkcs1.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        )
    )
    clear = write_key(tmp_path / "clear.key", key, None)
    for path, password in ((pkcs1, None), (clear, None), (clear, "unused")):
        props = {"tls.server.certPath": str(pki.server_cert), "tls.server.keyPath": str(path)}
        if password:
            props["tls.server.keyPassword"] = password
        _file_config(tmp_path, **props).server_context()


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({}, "tls.server.certPath and tls.server.keyPath are needed"),
        ({"tls.server.certPath": "{cert}", "tls.server.keyPath": "{key}"}, "is encrypted: set tls.server.keyPassword"),
        (
            {"tls.server.certPath": "{cert}", "tls.server.keyPath": "{key}", "tls.server.keyPassword": "wrong"},
            "wrong password",
        ),
        ({"tls.server.certPath": "{cert}", "tls.server.keyPath": "/nonexistent/key.pem"}, "No such file"),
        (
            {"tls.server.certPath": "{ca}", "tls.server.keyPath": "{key}", "tls.server.keyPassword": PASSWORD},
            "cannot use the certificate with its key",
        ),
        (
            {
                "tls.server.certPath": "{cert}",
                "tls.server.keyPath": "{key}",
                "tls.server.keyPassword": PASSWORD,
                "tls.server.need.client.auth": "optional",
                "tls.server.trustCertPath": "/nonexistent/ca.pem",
            },
            "tls.server.trustCertPath=/nonexistent/ca.pem",
        ),
    ],
)
def test_unusable_server_settings_fail_clearly(tmp_path: Path, pki, props: dict, message: str) -> None:
    paths = {"cert": pki.server_cert, "key": pki.server_key, "ca": pki.ca}
    props = {k: v.format(**paths) for k, v in props.items()}
    tls = ServerTls(_file_config(tmp_path, **props))
    with pytest.raises(TlsConfigError, match=message) as err:
        tls.prepare()
    assert PASSWORD not in str(err.value)


def test_client_context_verifies_the_server_only_with_auth_server(tmp_path: Path, pki) -> None:
    base = {
        "tls.client.certPath": str(pki.client_cert),
        "tls.client.keyPath": str(pki.client_key),
        "tls.client.keyPassword": PASSWORD,
    }
    assert _file_config(tmp_path, **base).client_context().verify_mode == ssl.CERT_NONE
    strict = _file_config(
        tmp_path, **base, **{"tls.client.authServer": "true", "tls.client.trustCertPath": str(pki.ca)}
    ).client_context()
    assert strict.verify_mode == ssl.CERT_REQUIRED and strict.check_hostname is False
    with pytest.raises(TlsConfigError, match="go together"):
        _file_config(tmp_path, **{"tls.client.certPath": str(pki.client_cert)}).client_context()


def test_first_byte_decides_per_mode() -> None:
    def admits(mode: str, first: int) -> bool | None:
        return ServerTls(TlsConfig.from_properties({"tls.server.mode": mode})).admits(first)

    assert admits("permissive", 0x16) is True and admits("permissive", 0x00) is False
    assert admits("enforcing", 0x16) is True and admits("enforcing", 0x00) is None
    assert admits("disabled", 0x16) is None and admits("disabled", 0x00) is False
