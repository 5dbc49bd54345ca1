"""TLS with the official Java 5.5.0 client and mqadmin (TlsTest.java, one JVM), against pyrmq
and against the Java name server and broker set up the same way: the same table of outcomes.

Both sides run as RocketMQ's TLS guide says: the name server in the default permissive mode,
the broker with `-Dtls.server.mode=enforcing`, both with `-Dtls.config.file` naming one
properties file (server certificate with an encrypted PKCS#8 key in the guide's
PBE-SHA1-RC4-128, client certificates required and checked against the CA, and the client
section the broker's own registration uses). Clients set `-Dtls.enable=true` and their own
tls.config.file. Certificates are made in the test.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from support.certs import PASSWORD, make_pki, openssl_pkcs8_rc4
from support.java import JUnitFailed, run_junit
from support.pyrmq_proc import PyrmqBroker
from support.servers import JavaBroker, JavaNamesrv, PyrmqNamesrv, write_properties

pytestmark = pytest.mark.timeout(600)


def _tls_files(tmp_path: Path) -> dict[str, Path]:
    """The servers' file and one client file per case; each client file names every tls.client.*
    key (empty when unused): Java keeps a key's earlier value when a later file lacks it."""
    pki = make_pki(tmp_path / "pki")
    key = {
        name: openssl_pkcs8_rc4(path, tmp_path / f"{name}-rc4.key")
        for name, path in (("server", pki.server_key), ("client", pki.client_key), ("other", pki.other_client_key))
    }

    def client(cert: Path | str, key_path: Path | str, trust: Path) -> dict[str, object]:
        return {
            "tls.test.mode.enable": "false",
            "tls.client.authServer": "true",
            "tls.client.trustCertPath": trust,
            "tls.client.certPath": cert,
            "tls.client.keyPath": key_path,
            "tls.client.keyPassword": PASSWORD if key_path else "",
        }

    right = client(pki.client_cert, key["client"], pki.ca)
    server = {
        **right,  # the broker's registration is a client of the name server
        "tls.server.certPath": pki.server_cert,
        "tls.server.keyPath": key["server"],
        "tls.server.keyPassword": PASSWORD,
        "tls.server.need.client.auth": "require",
        "tls.server.authClient": "true",
        "tls.server.trustCertPath": pki.ca,
    }
    files = {
        "server": server,
        "client": right,
        "no client certificate": client("", "", pki.ca),
        "another CA's certificate": client(pki.other_client_cert, key["other"], pki.ca),
        "server not trusted": client(pki.client_cert, key["client"], pki.other_ca),
    }
    return {
        name: write_properties(tmp_path / f"tls-{i}.properties", props) for i, (name, props) in enumerate(files.items())
    }


REFUSALS = ("no client certificate", "another CA's certificate", "server not trusted")

EXPECTED = {
    "java client, right certificates": True,
    "mqadmin, right certificates": True,
    "mqadmin, no client certificate": False,
    "mqadmin, another CA's certificate": False,
    "mqadmin, server not trusted": False,
    "mqadmin, plain": False,
}


def _outcomes(side: str, client: str, tmp_path: Path, files: dict[str, Path], java_home: Path) -> dict[str, bool]:
    server_tls = {"tls.config.file": files["server"]}
    enforcing = {**server_tls, "tls.server.mode": "enforcing"}
    if side == "java":
        ns = JavaNamesrv(tmp_path / "ns", system_props=server_tls)
        broker = JavaBroker(ns.addr, tmp_path / "broker", name="tls-broker-java", system_props=enforcing)
    else:
        ns = PyrmqNamesrv(tmp_path / "ns", system_props=server_tls)
        broker = PyrmqBroker(ns.addr, tmp_path / "broker", name="tls-broker-pyrmq", system_props=enforcing)
    try:
        r = run_junit(
            client,
            "TlsTest",
            "tls",
            home=java_home,
            timeout=240,
            props={
                "namesrv": ns.addr,
                "broker": broker.addr,
                "topic": f"TlsQuickstart_{uuid.uuid4().hex[:8]}",
                "count": 20,
                "timeoutSec": 60,
                "tls.enable": "true",
                "tls.config.file": files["client"],
                "tlsCases": ",".join(f"{case}={files[case]}" for case in REFUSALS),
            },
        )
    finally:
        broker.stop()
        ns.stop()
    lines = [line.split("OUTCOME ", 1)[1] for line in r.stdout.splitlines() if "OUTCOME " in line]
    return {case: value == "true" for case, _, value in (line.rpartition("=") for line in lines)}


@pytest.mark.parametrize(
    ("broker_kind", "client"),
    [("pyrmq", "5.5.0"), ("java", "5.5.0"), pytest.param("pyrmq", "4.9.8", marks=pytest.mark.reference)],
)
def test_java_client_and_mqadmin_over_tls(
    broker_kind: str, client: str, tmp_path: Path, java_harness, java_home
) -> None:
    """Against pyrmq with the 5.5.0 client by default; against Java's servers, and with the
    4.9.8 client and tools, in the reference run (opt-in, PYRMQ_COMPAT_REFERENCE=1), which must
    give the same table: that is how EXPECTED was checked."""
    files = _tls_files(tmp_path)
    try:
        outcomes = _outcomes(broker_kind, client, tmp_path / broker_kind, files, java_home)
    except JUnitFailed as e:
        raise AssertionError(f"the Java client over TLS failed against {broker_kind}") from e
    assert outcomes == EXPECTED
