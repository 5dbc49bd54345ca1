"""ACL with the official Java clients (5.5.0 and 4.9.8 AclClientRPCHook) and mqadmin's tools.yml.

The same broker.conf auth keys and the same plain_acl.yml (imported with
migrateAuthFromV1Enabled, as a 5.5.0 user upgrading from ACL 1.0 does) on pyrmq's broker and
on Java 5.5.0's, in the same test: every outcome line of compat/java-tests AclTest must be the
same on both (codes and remarks), and the expected ones.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from support.java import prepare_home, run_junit
from support.pyrmq_proc import PyrmqBroker
from support.servers import JavaBroker

pytestmark = [pytest.mark.compat, pytest.mark.java]

PLAIN_ACL = """\
accounts:
  - accessKey: app_user
    secretKey: app_secret_1
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - {topic}=PUB|SUB
      - {denied}=SUB
    groupPerms:
      - {group}=SUB
  - accessKey: admin_user
    secretKey: admin_secret_1
    admin: true
"""

AUTH_CONF = {
    "authenticationEnabled": "true",
    "authorizationEnabled": "true",
    "authenticationProvider": "org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider",
    "authenticationMetadataProvider": "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider",
    "authorizationProvider": "org.apache.rocketmq.auth.authorization.provider.DefaultAuthorizationProvider",
    "authorizationMetadataProvider": "org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider",
    "migrateAuthFromV1Enabled": "true",
    "brokerFastFailureEnable": "false",
}


def _home(workdir: Path, names: dict[str, str]) -> Path:
    home = prepare_home(workdir / "home")
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL.format(**names))
    return home


@pytest.fixture(scope="module")
def names() -> dict[str, str]:
    run = uuid.uuid4().hex[:8]
    return {"topic": f"AclT_{run}", "denied": f"AclD_{run}", "group": f"AclG_{run}", "denied_group": f"AclX_{run}"}


@pytest.fixture(scope="module")
def clusters(pyrmq_namesrv, java_namesrv, tmp_path_factory, names):
    """{"pyrmq": (name server, broker), "java": (...)}: pyrmq's broker at pyrmq's name server,
    Java's at Java's (the 5.5.0 name server does not authenticate, nor does pyrmq's)."""
    out = {}
    try:
        pw = tmp_path_factory.mktemp("acl-pyrmq")
        home = _home(pw, names)
        broker = PyrmqBroker(pyrmq_namesrv.addr, pw, name="acl-pyrmq", rocketmqHome=str(home), **AUTH_CONF)
        out["pyrmq"] = (pyrmq_namesrv, broker)
        jw = tmp_path_factory.mktemp("acl-java")
        _home(jw, names)
        out["java"] = (java_namesrv, JavaBroker(java_namesrv.addr, jw, name="acl-java", **AUTH_CONF))
        yield out
    finally:
        for _ns, b in out.values():
            b.stop()


def outcomes(client: str, ns_addr: str, names: dict[str, str], home: Path) -> dict[str, str]:
    props = {
        "namesrv": ns_addr,
        "topic": names["topic"],
        "deniedTopic": names["denied"],
        "group": names["group"],
        "deniedGroup": names["denied_group"],
        "appAk": "app_user",
        "appSk": "app_secret_1",
        "adminAk": "admin_user",
        "adminSk": "admin_secret_1",
    }
    r = run_junit(client, "AclTest", None, props=props, home=home, timeout=240)
    print(r.stdout[-3000:])
    got = {}
    for line in r.stdout.splitlines():
        if line.startswith("ACL "):
            _, case, outcome = line.split(" ", 2)
            got[case] = outcome
    return got


@pytest.mark.parametrize("client", ["5.5.0", "4.9.8"])
def test_java_client_outcomes_match_java_broker(client, clusters, names, tmp_path):
    """Right key, wrong secret, unknown key, no credentials, a topic without PUB, a group
    without SUB: the same answers from pyrmq and from the Java broker, and the expected ones."""
    results = {
        kind: outcomes(client, ns.addr, names, prepare_home(tmp_path / kind)) for kind, (ns, _b) in clusters.items()
    }
    assert results["pyrmq"] == results["java"], results
    r = results["pyrmq"]
    assert r["admin_creates_topic"] == "SEND_OK"
    assert r["app_send"] == "SEND_OK"
    assert r["app_wrong_secret"] == "16 check signature failed."
    assert r["unknown_access_key"] == "16 User:nobody_app_user is not found."
    assert r["no_credentials"] == "16 username cannot be null."
    assert r["app_send_denied_topic"] == (
        f"16 User:app_user has no permission to access Topic:{names['denied']} from 127.0.0.1, the decision is deny."
    )
    assert r["app_consume"] == "CONSUMED some"
    assert r["app_consume_denied_group"] == "CONSUMED none"
    assert r["wrong_secret_consume"] == "CONSUMED none"
