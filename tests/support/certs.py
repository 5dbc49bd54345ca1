"""Certificates for TLS tests, made at test time (never committed).

`make_pki(folder)` writes a CA, a server and a client certificate signed by it
(keys as encrypted PKCS#8 PEM under `PASSWORD`), and a second, unrelated CA
with its own client, for the "wrong CA" cases.
"""

from __future__ import annotations

import datetime
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

PASSWORD = "123456"


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path  # encrypted PKCS#8, PASSWORD
    client_cert: Path
    client_key: Path  # encrypted PKCS#8, PASSWORD
    other_ca: Path  # trusts neither of the above
    other_client_cert: Path
    other_client_key: Path


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _key(rsa_key: bool) -> rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey:
    return rsa.generate_private_key(65537, 2048) if rsa_key else ec.generate_private_key(ec.SECP256R1())


def _cert(subject: str, key, issuer: str, issuer_key, ca: bool) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
    return builder.sign(issuer_key, hashes.SHA256())


def _write_cert(path: Path, cert: x509.Certificate) -> Path:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def write_key(path: Path, key, password: str | None = PASSWORD) -> Path:
    enc = serialization.BestAvailableEncryption(password.encode()) if password else serialization.NoEncryption()
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc))
    return path


def make_pki(folder: Path, *, rsa_keys: bool = True) -> Pki:
    folder.mkdir(parents=True, exist_ok=True)
    ca_key = _key(rsa_keys)
    ca = _cert("pyrmq test CA", ca_key, "pyrmq test CA", ca_key, ca=True)
    server_key = _key(rsa_keys)
    client_key = _key(rsa_keys)
    other_ca_key = _key(rsa_keys)
    other_ca = _cert("other CA", other_ca_key, "other CA", other_ca_key, ca=True)
    other_client_key = _key(rsa_keys)
    return Pki(
        ca=_write_cert(folder / "ca.pem", ca),
        server_cert=_write_cert(folder / "server.pem", _cert("localhost", server_key, "pyrmq test CA", ca_key, False)),
        server_key=write_key(folder / "server.key", server_key),
        client_cert=_write_cert(folder / "client.pem", _cert("client", client_key, "pyrmq test CA", ca_key, False)),
        client_key=write_key(folder / "client.key", client_key),
        other_ca=_write_cert(folder / "other-ca.pem", other_ca),
        other_client_cert=_write_cert(
            folder / "other-client.pem", _cert("other", other_client_key, "other CA", other_ca_key, False)
        ),
        other_client_key=write_key(folder / "other-client.key", other_client_key),
    )


def openssl_pkcs8_rc4(src: Path, dst: Path, password: str = PASSWORD) -> Path:
    """RocketMQ's TLS guide's key format (`openssl pkcs8 -topk8 -v1 PBE-SHA1-RC4-128`), which
    the cryptography package reads but does not write; OpenSSL 3 needs its legacy provider."""
    argv = ["openssl", "pkcs8", "-topk8", "-v1", "PBE-SHA1-RC4-128", "-in", str(src), "-out", str(dst)]
    argv += ["-passin", f"pass:{password}", "-passout", f"pass:{password}"]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        done = subprocess.run([*argv, "-provider", "legacy", "-provider", "default"], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"openssl could not write a PBE-SHA1-RC4-128 key: {done.stderr}")
    return dst
