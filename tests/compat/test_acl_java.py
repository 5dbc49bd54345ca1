"""ACL with the official Java clients (5.5.0 and 4.9.8 AclClientRPCHook) and mqadmin's tools.yml.

The same broker.conf auth keys and the same plain_acl.yml (imported with
migrateAuthFromV1Enabled, as a 5.5.0 user upgrading from ACL 1.0 does) on pyrmq's broker and
on Java 5.5.0's, in the same test: every outcome line of compat/java-tests AclTest must be the
same on both (codes and remarks), and the expected ones.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from compat.test_go_clients import go_compat_binary, run_go_case  # noqa: F401 (a fixture)
from support import probe
from support.java import CLIENT_MODULE, java_argv, java_env, prepare_home, run_junit
from support.pyrmq_proc import PyrmqBroker
from support.requests import send_v2
from support.servers import JavaBroker, PyrmqNamesrv

from pyrmq.auth.signature import sign_request
from pyrmq.protocol.codes import ResponseCode
from pyrmq.remoting.client import RemotingClient

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
      - {group}_go=SUB
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


#: the 4.9.8 client's run and the mqadmin sequence are opt-in (PYRMQ_SOAK=1): the default run
#: keeps within the suite's time budget with the 5.5.0 client and the Go client
SOAK = pytest.mark.soak


@pytest.mark.parametrize("client", ["5.5.0", pytest.param("4.9.8", marks=SOAK)])
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


def _batch(
    ns_addr: str,
    broker_addr: str | None,
    home: Path,
    wd: Path,
    lines: list[list[str]],
    names: dict[str, str] | None = None,
) -> list[str]:
    """mqadmin 5.5.0 commands in one MqadminBatch JVM (its tools.yml read from ``home``), each
    given ``-b broker_addr`` unless it is None, each answer with the broker addresses replaced
    (``broker_addr`` by <broker>, ``names``' values by their keys) and without stack frames and links."""
    wd.mkdir(parents=True, exist_ok=True)
    target = ["-b", broker_addr] if broker_addr else []
    script = ["\t".join([*args, *target, "-n", ns_addr]) for args in lines]
    (wd / "script.txt").write_text("\n".join(script) + "\n")
    argv = java_argv(
        CLIENT_MODULE["5.5.0"],
        "io.pyrmq.compat.scenarios.MqadminBatch",
        [str(wd / "script.txt"), str(wd / "out")],
        home,
        {"namesrv": ns_addr, "java.security.manager": "allow"},
        with_tests=True,
    )
    r = subprocess.run(
        argv, capture_output=True, text=True, env=java_env(home), cwd=wd, timeout=240, stdin=subprocess.DEVNULL
    )
    assert r.returncode == 0 and "DONE" in r.stdout, f"{r.stdout}\n{r.stderr}"
    out = wd / "out"
    texts = []
    for i, args in enumerate(lines):
        text = (out / f"{i}.out").read_text() + (out / f"{i}.err").read_text()
        for name, addr in {**(names or {}), **({"<broker>": broker_addr} if broker_addr else {})}.items():
            text, args = text.replace(addr, name), [a.replace(addr, name) for a in args]
        texts.append(f"{' '.join(args)}\n{_essence(text)}")
    return texts


ADMIN_LINES = [
    ["getUser", "-u", "app_user"],
    ["createUser", "-u", "mq_user1", "-p", "pw_1"],
    ["createUser", "-u", "mq_user1", "-p", "pw_1"],
    ["getUser", "-u", "mq_user1"],
    ["updateUser", "-u", "mq_user1", "-s", "disable"],
    ["listUser", "-f", "mq_user"],
    ["createAcl", "-s", "User:mq_user1", "-r", "Topic:orders,Group:g1", "-a", "Pub,Sub", "-d", "Allow"],
    ["updateAcl", "-s", "User:mq_user1", "-r", "Topic:orders", "-a", "Sub", "-d", "Deny", "-i", "10.0.0.0/8"],
    ["getAcl", "-s", "User:mq_user1"],
    ["listAcl", "-s", "mq_user1"],
    ["deleteAcl", "-s", "User:mq_user1", "-r", "Topic:orders"],
    ["getAcl", "-s", "User:mq_user1"],
    ["deleteUser", "-u", "mq_user1"],
    ["getUser", "-u", "mq_user1"],
]
APP_LINES = [
    ["updateTopic", "-t", "AclAdminT_app"],
    ["createUser", "-u", "mq_user2", "-p", "pw_2"],
    ["listUser"],
]
#: the super user's access key with a wrong secret in tools.yml
WRONG_LINES = [["getUser", "-u", "app_user"]]


@SOAK  # six mqadmin JVMs: outside the default run's time budget
def test_mqadmin_tools_yml_and_user_acl_commands(clusters, tmp_path):
    """Official mqadmin 5.5.0 signs with $ROCKETMQ_HOME/conf/tools.yml: the super user runs the
    user and ACL commands (createUser, getUser, updateUser, listUser,
    createAcl, updateAcl, getAcl, listAcl, deleteAcl, deleteUser), a normal user is refused,
    the super user's key with a wrong secret too; pyrmq's answers are Java's, broker addresses aside."""
    outputs: dict[str, list[str]] = {}
    for kind, (ns, broker) in clusters.items():
        outputs[kind] = []
        for who, ak, sk, lines in (
            ("admin", "admin_user", "admin_secret_1", ADMIN_LINES),
            ("app", "app_user", "app_secret_1", APP_LINES),
            ("wrong", "admin_user", "not_admin_secret_1", WRONG_LINES),
        ):
            home = prepare_home(tmp_path / kind / who / "home")
            (home / "conf" / "tools.yml").write_text(f"accessKey: {ak}\nsecretKey: {sk}\n")
            outputs[kind] += _batch(ns.addr, broker.addr, home, tmp_path / kind / who, lines)
    for p, j in zip(outputs["pyrmq"], outputs["java"], strict=True):
        assert p == j, f"pyrmq:\n{p}\njava:\n{j}"
    out = outputs["pyrmq"]
    assert "app_user" in out[0] and "Normal" in out[0]
    assert "mq_user1" in out[5] and "disable" in out[5]
    app = out[len(ADMIN_LINES) :]
    assert "CODE: 16" in app[0] and "User:app_user has no permission to access Topic:AclAdminT_app" in app[0]
    assert "User:app_user has no permission to access Cluster:" in app[1]
    wrong = out[len(ADMIN_LINES) + len(APP_LINES) :]
    assert "CODE: 16" in wrong[0] and "check signature failed." in wrong[0] and "Normal" not in wrong[0]


def test_mqadmin_copy_user_and_acl_between_java_and_pyrmq(clusters, tmp_path):
    """copyUser and copyAcl (made of getUser/listUser/createUser/updateUser and their ACL twins)
    move a user and its policy from the Java broker to pyrmq's and back, as between two Java
    brokers: a store moved between the two keeps its users this way (docs/security.md)."""
    java, pyrmq = clusters["java"][1].addr, clusters["pyrmq"][1].addr
    run = uuid.uuid4().hex[:6]
    u1, u2 = f"copy_j{run}", f"copy_p{run}"
    lines = [
        ["createUser", "-u", u1, "-p", "pw_j", "-b", java],
        ["createAcl", "-s", f"User:{u1}", "-r", "Topic:copied", "-a", "Pub", "-d", "Allow", "-b", java],
        ["copyUser", "-f", java, "-t", pyrmq, "-u", u1],
        ["copyAcl", "-f", java, "-t", pyrmq, "-s", f"User:{u1}"],
        ["getUser", "-u", u1, "-b", pyrmq],
        ["getAcl", "-s", f"User:{u1}", "-b", pyrmq],
        ["createUser", "-u", u2, "-p", "pw_p", "-b", pyrmq],
        ["updateUser", "-u", u1, "-p", "pw_j2", "-b", pyrmq],
        ["copyUser", "-f", pyrmq, "-t", java],  # every user: u1 exists there (update), u2 not (create)
        ["getUser", "-u", u1, "-b", java],
        ["getUser", "-u", u2, "-b", java],
    ]
    home = prepare_home(tmp_path / "home")
    (home / "conf" / "tools.yml").write_text("accessKey: admin_user\nsecretKey: admin_secret_1\n")
    ns = clusters["pyrmq"][0].addr
    out = _batch(ns, None, home, tmp_path / "batch", lines, {"<java>": java, "<pyrmq>": pyrmq})
    text = "\n\n".join(out)
    print(text)
    for i in (2, 8):
        assert "success" in out[i] and "Exception" not in out[i], out[i]
    assert f"copy user of {u1} from <java> to <pyrmq> success." in out[2]
    assert f"copy acl of User:{u1} from <java> to <pyrmq> success." in out[3]
    assert u1 in out[4] and "pw_j" in out[4], out[4]
    assert "copied" in out[5] and "Pub" in out[5] and "Allow" in out[5], out[5]
    assert f"copy user of {u2} from <pyrmq> to <java> success." in out[8]
    assert "pw_j2" in out[9], out[9]
    assert u2 in out[10] and "pw_p" in out[10], out[10]


def _essence(text: str) -> str:
    """mqadmin's lines without stack frames and the doc links of exceptions."""
    keep = []
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("at ") or "For more information" in s or s.startswith("...") or "SLF4J" in s:
            continue
        keep.append(s)
    return "\n".join(keep)


@pytest.mark.go
def test_go_client_credentials_match_java_broker(clusters, names, request):
    """The official Go client v2.1.2 with producer.WithCredentials: right key, wrong secret,
    unknown key, a topic without Pub: pyrmq answers as the Java broker does."""
    binary = request.getfixturevalue("go_compat_binary")  # imported from test_go_clients
    results = {}
    for kind, (ns, _broker) in clusters.items():
        env = {
            "NAMESRV_ADDR": ns.addr,
            "TOPIC": names["topic"],
            "DENIED_TOPIC": names["denied"],
            "APP_AK": "app_user",
            "APP_SK": "app_secret_1",
        }
        out = run_go_case(binary, "TestAclSend", env)
        results[kind] = dict(line.split(" ", 2)[1:] for line in out.splitlines() if line.startswith("ACL "))
    assert results["pyrmq"] == results["java"], results
    r = results["pyrmq"]
    assert r["go_app_send"] == "SEND_OK"
    assert "check signature failed." in r["go_wrong_secret"]
    assert "User:nobody_app_user is not found." in r["go_unknown_key"]
    assert "the decision is deny." in r["go_denied_topic"]


@SOAK  # a name server, a Java broker and a client JVM of its own
def test_java_client_and_broker_through_a_name_server_with_auth(tmp_path, names, java_harness):
    """pyrmq's opt-in name server auth (stricter than Java, docs/security.md) with the official
    5.5.0 pieces: the Java broker signs its registration with innerClientAuthenticationCredentials
    and is listed; the 5.5.0 client with AclClientRPCHook gets its routes, sends and consumes; an
    unsigned route query is refused. (GET_BROKER_CLUSTER_INFO is whitelisted on this name server:
    the harness waits for the broker with an unsigned probe.)"""
    inner = json.dumps({"accessKey": "inner_user", "secretKey": "inner_secret_1"})
    conf = {**AUTH_CONF, "innerClientAuthenticationCredentials": inner}
    ns = PyrmqNamesrv(
        tmp_path / "ns", rocketmqHome=str(_home(tmp_path / "ns", names)), authenticationWhitelist="106", **conf
    )
    broker = None
    try:
        _home(tmp_path / "broker", names)  # the broker's ROCKETMQ_HOME: the same plain_acl.yml
        broker = JavaBroker(ns.addr, tmp_path / "broker", name="acl-ns-java", **conf)
        unsigned = probe.topic_route(ns.addr, names["topic"])
        assert (unsigned.code, unsigned.remark) == (16, "username cannot be null."), unsigned
        r = outcomes("5.5.0", ns.addr, names, prepare_home(tmp_path / "client"))
        assert r["admin_creates_topic"] == "SEND_OK", r
        assert r["app_send"] == "SEND_OK", r
        assert r["app_consume"] == "CONSUMED some", r
        assert r["no_credentials"] != "SEND_OK" and r["wrong_secret_consume"] == "CONSUMED none", r
    finally:
        if broker is not None:
            broker.stop()
        ns.stop()


@SOAK  # two Go push consumers per broker
@pytest.mark.go
def test_go_client_consumes_with_credentials(clusters, names, request):
    """The Go client v2.1.2's push consumer with consumer.WithCredentials: with the app's key it
    consumes, with a wrong secret nothing; the same from both brokers."""
    binary = request.getfixturevalue("go_compat_binary")
    results = {}
    for kind, (ns, broker) in clusters.items():

        async def put(addr: str = broker.addr, name: str = broker.name) -> int:
            cmd = send_v2(names["topic"], name, b"for the go consumer")
            sign_request(cmd, "admin_user", "admin_secret_1")
            async with RemotingClient() as c:
                return (await c.invoke(addr, cmd, 10)).code

        assert asyncio.run(put()) == ResponseCode.SUCCESS
        for _ in range(60):  # the topic's route (auto-created by that send) at the name server
            if probe.topic_route(ns.addr, names["topic"]).code == ResponseCode.SUCCESS:
                break
            time.sleep(0.5)
        env = {
            "NAMESRV_ADDR": ns.addr,
            "TOPIC": names["topic"],
            "GROUP": names["group"] + "_go",
            "APP_AK": "app_user",
            "APP_SK": "app_secret_1",
        }
        out = run_go_case(binary, "TestAclConsume", env)
        results[kind] = dict(line.split(" ", 2)[1:] for line in out.splitlines() if line.startswith("ACL "))
    expected = {"go_app_consume": "CONSUMED some", "go_wrong_secret_consume": "CONSUMED none"}
    assert results["pyrmq"] == results["java"] == expected, results
