"""pyrmq's broker with authentication and authorization on, as a process behind pyrmq's name
server: signed requests pass on both ports (main and VIP), forged ones are refused with
NO_PERMISSION before any processor runs, and a bounded flood of forgeries is refused
while the broker keeps serving."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from support.forgery import PLAIN_ACL, Target, forgeries
from support.ports import free_port, free_port_block
from support.procs import ManagedProcess
from support.pyrmq_proc import PyrmqBroker, venv_python
from support.requests import send_v2
from support.servers import PyrmqNamesrv

from pyrmq.auth.signature import sign_request
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.remoting.client import RemotingClient

AUTH_CONF = {
    "authenticationEnabled": "true",
    "authorizationEnabled": "true",
    "authenticationMetadataProvider": "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider",
    "authorizationMetadataProvider": "org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider",
    "migrateAuthFromV1Enabled": "true",
    "initAuthenticationUser": json.dumps({"username": "root", "password": "root-secret"}),
    "innerClientAuthenticationCredentials": json.dumps({"accessKey": "inner", "secretKey": "inner-secret"}),
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    work = tmp_path_factory.mktemp("auth")
    home = work / "home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL)
    ns = PyrmqNamesrv(work / "ns")
    level = os.environ.get("PYRMQ_LOG_LEVEL")
    os.environ["PYRMQ_LOG_LEVEL"] = "DEBUG"  # test_secrets_are_not_in_the_log reads every line
    try:
        b = PyrmqBroker(ns.addr, work / "b", name="auth-broker", rocketmqHome=str(home), grpc_port=0, **AUTH_CONF)
        yield b
        b.stop()
    finally:
        if level is None:
            os.environ.pop("PYRMQ_LOG_LEVEL", None)
        else:
            os.environ["PYRMQ_LOG_LEVEL"] = level
        ns.stop()


def _signed(cmd: RemotingCommand, ak: str, sk: str) -> RemotingCommand:
    sign_request(cmd, ak, sk)
    return cmd


async def _invoke(addr: str, cmd: RemotingCommand) -> RemotingCommand:
    async with RemotingClient() as c:
        return await c.invoke(addr, cmd, 10)


def _vip(addr: str) -> str:
    host, port = addr.rsplit(":", 1)
    return f"{host}:{int(port) - 2}"


def test_signed_requests_pass_forged_are_refused(broker) -> None:
    async def run() -> None:
        for addr in (broker.addr, _vip(broker.addr)):
            ok = await _invoke(addr, _signed(send_v2("AuthOk", broker.name, b"hi"), "app", "app-secret"))
            assert ok.code == ResponseCode.SUCCESS, ok.remark
            bad = await _invoke(addr, _signed(send_v2("AuthOk", broker.name, b"hi"), "app", "wrong"))
            assert (bad.code, bad.remark) == (ResponseCode.NO_PERMISSION, "check signature failed.")
            denied = await _invoke(addr, _signed(send_v2("AuthSubOnly", broker.name, b"hi"), "app", "app-secret"))
            assert denied.code == ResponseCode.NO_PERMISSION
            assert denied.remark.startswith("User:app has no permission to access Topic:AuthSubOnly from 127.0.0.1")
            bare = await _invoke(addr, send_v2("AuthOk", broker.name, b"hi"))
            assert (bare.code, bare.remark) == (ResponseCode.NO_PERMISSION, "username cannot be null.")
            # the initial and the inner users are super users
            for ak, sk in (("root", "root-secret"), ("inner", "inner-secret")):
                sup = await _invoke(addr, _signed(send_v2("AuthSubOnly", broker.name, b"hi"), ak, sk))
                assert sup.code == ResponseCode.SUCCESS, sup.remark

    asyncio.run(run())


def test_users_persist_in_the_store(broker) -> None:
    users = json.loads((Path(broker.store_dir) / "config" / "auth_users.json").read_text())
    assert {u["username"]: u["userType"] for u in users} == {"root": "Super", "inner": "Super", "app": "Normal"}


def test_forged_flood_is_refused_and_broker_keeps_serving(broker) -> None:
    """600 forged or mutated requests of every kind in support/forgery.py: none is accepted;
    a valid request still succeeds afterwards. (100,000 in tests/reliability.)"""
    target = Target("app", "app-secret", "AuthOk", "AuthSubOnly", broker.name, ("root", "inner"))

    async def run() -> None:
        async with RemotingClient() as c:
            accepted = [
                kind
                for kind, cmd in forgeries(target, 600)
                if (await c.invoke(broker.addr, cmd, 10)).code != ResponseCode.NO_PERMISSION
            ]
            assert accepted == []
            ok = await c.invoke(broker.addr, _signed(send_v2("AuthOk", broker.name, b"hi"), "app", "app-secret"), 10)
            assert ok.code == ResponseCode.SUCCESS

    asyncio.run(run())


def _pyrmq_admin(broker, home: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, ROCKETMQ_HOME=str(home))
    argv = [venv_python(), "-m", "pyrmq", "admin", *args, "-n", broker.namesrv_addr]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)


def test_pyrmq_admin_signs_with_tools_yml(broker, tmp_path) -> None:
    """`pyrmq admin` signs like mqadmin with $ROCKETMQ_HOME/conf/tools.yml; the secret is not printed."""
    for who, ak, sk in (("root", "root", "root-secret"), ("app", "app", "app-secret")):
        (tmp_path / who / "conf").mkdir(parents=True)
        (tmp_path / who / "conf" / "tools.yml").write_text(f"accessKey: {ak}\nsecretKey: {sk}\n")
    ok = _pyrmq_admin(broker, tmp_path / "root", "updateTopic", "-b", broker.addr, "-t", "AdminMade")
    assert "success" in ok.stdout, ok.stdout + ok.stderr
    refused = _pyrmq_admin(broker, tmp_path / "app", "updateTopic", "-b", broker.addr, "-t", "AdminMade2")
    out = refused.stdout + refused.stderr
    assert "CODE: 16" in out and "User:app has no permission to access Topic:AdminMade2" in out, out
    assert "app-secret" not in out and "root-secret" not in out


def test_dev_acl(tmp_path) -> None:
    """`pyrmq dev --acl` prints an admin and an app account; the app account's signed send
    passes, an unsigned one is refused, an admin code from the app account too; its gRPC
    endpoint (on by default) refuses an unsigned call."""
    ns_port, b_port = free_port(), free_port_block((-2, 0))
    argv = [venv_python(), "-m", "pyrmq", "dev", "--acl", "--namesrv-port", str(ns_port)]
    argv += ["--broker-port", str(b_port), "--store", str(tmp_path / "s"), "--grpc-port", "0"]
    dev = ManagedProcess("dev-acl", argv, tmp_path / "dev.out", env=dict(os.environ, HOME=str(tmp_path)))
    try:
        dev.wait_line("secretKey=")
        dev.wait_line("app (Pub/Sub")
        text = (tmp_path / "dev.out").read_text()
        keys = dict(re.findall(r"accessKey=(\S+) secretKey=(\S+)", text))
        assert set(keys) == {"rocketmq-admin", "rocketmq-app"}
        addr = f"127.0.0.1:{b_port}"

        async def run() -> None:
            async with RemotingClient() as c:
                ok = _signed(send_v2("DevAclT", "broker-a", b"x"), "rocketmq-app", keys["rocketmq-app"])
                assert (await c.invoke(addr, ok, 10)).code == ResponseCode.SUCCESS
                assert (
                    await c.invoke(addr, send_v2("DevAclT", "broker-a", b"x"), 10)
                ).code == ResponseCode.NO_PERMISSION
                admin = RemotingCommand.request(RequestCode.AUTH_LIST_USER, {})
                refused = await c.invoke(addr, _signed(admin, "rocketmq-app", keys["rocketmq-app"]), 10)
                assert refused.code == ResponseCode.NO_PERMISSION
                admin = RemotingCommand.request(RequestCode.AUTH_LIST_USER, {})
                listed = await c.invoke(addr, _signed(admin, "rocketmq-admin", keys["rocketmq-admin"]), 10)
                assert listed.code == ResponseCode.SUCCESS

        asyncio.run(run())
        grpc_addr = re.search(r" grpc (\S+)", text)
        assert grpc_addr is not None, text
        assert _unsigned_grpc_route(grpc_addr.group(1)) == "UNAUTHORIZED username cannot be null."
    finally:
        assert dev.stop(10) == 0


def _unsigned_grpc_route(addr: str) -> str:
    """A QueryRoute with the SDK's client id and no credentials: the Status' code name and message."""
    import grpc
    from rocketmq.grpc_protocol import definition_pb2 as pb
    from rocketmq.grpc_protocol import service_pb2 as spb
    from rocketmq.grpc_protocol import service_pb2_grpc

    with grpc.insecure_channel(addr) as channel:
        stub = service_pb2_grpc.MessagingServiceStub(channel)
        request = spb.QueryRouteRequest(topic=pb.Resource(name="DevAclT"))
        status = stub.QueryRoute(request, timeout=10, metadata=(("x-mq-client-id", "unsigned"),)).status
    return f"{pb.Code.Name(status.code)} {status.message}"


def test_grpc_sdk_is_held_to_the_same_users(broker) -> None:
    """The official Python 5.x SDK at the broker's gRPC endpoint: with the app's key its producer
    sends; with a wrong secret, or with no credentials, it gets no route and sends nothing. Raw
    calls signed by the SDK's own signer show the statuses: UNAUTHORIZED with the remoting
    messages, also for a topic without Pub."""
    import grpc
    import rocketmq
    from rocketmq.grpc_protocol import definition_pb2 as pb
    from rocketmq.grpc_protocol import service_pb2 as spb
    from rocketmq.grpc_protocol import service_pb2_grpc
    from rocketmq.v5.util import Signature
    from support.grpc_sdk import current_loop

    async def create() -> None:  # the topics exist on the broker (auto-created by a signed send)
        for topic in ("AuthOk", "AuthSubOnly"):
            r = await _invoke(broker.addr, _signed(send_v2(topic, broker.name, b"x"), "root", "root-secret"))
            assert r.code == ResponseCode.SUCCESS, r.remark

    asyncio.run(create())

    def config(ak: str, sk: str) -> rocketmq.ClientConfiguration:
        return rocketmq.ClientConfiguration(broker.grpc_addr, rocketmq.Credentials(ak, sk), request_timeout=10)

    def produce(ak: str, sk: str) -> str:
        producer = rocketmq.Producer(config(ak, sk), ("AuthOk",))
        try:
            producer.startup()  # a producer starts even when its route query is refused (logged)
            msg = rocketmq.Message()
            msg.topic, msg.body = "AuthOk", b"over grpc"
            return f"sent {producer.send(msg).message_id}"
        except Exception as e:
            return f"refused {e}"
        finally:
            try:
                producer.shutdown()
            except Exception:  # a producer whose start failed
                pass

    with current_loop():
        ok = produce("app", "app-secret")
        wrong = produce("app", "not-the-secret")
        anonymous = produce("", "")
    assert ok.startswith("sent "), ok
    assert wrong.startswith("refused") and "route" in wrong, wrong
    assert anonymous.startswith("refused") and "route" in anonymous, anonymous

    with grpc.insecure_channel(broker.grpc_addr) as channel:
        stub = service_pb2_grpc.MessagingServiceStub(channel)

        def route(ak: str, sk: str) -> tuple[str, str]:
            meta = Signature.metadata(config(ak, sk), "auth-test-client")
            request = spb.QueryRouteRequest(topic=pb.Resource(name="AuthOk"))
            status = stub.QueryRoute(request, timeout=10, metadata=meta).status
            return pb.Code.Name(status.code), status.message

        assert route("app", "app-secret") == ("OK", "OK")
        assert route("app", "not-the-secret") == ("UNAUTHORIZED", "check signature failed.")
        assert route("", "") == ("UNAUTHORIZED", "username cannot be null.")
        assert route("ghost", "x") == ("UNAUTHORIZED", "User:ghost is not found.")

        meta = Signature.metadata(config("app", "app-secret"), "auth-test-client")
        sp = pb.SystemProperties(message_id="01AB", message_type=pb.NORMAL)
        message = pb.Message(topic=pb.Resource(name="AuthSubOnly"), system_properties=sp, body=b"x")
        denied = stub.SendMessage(spb.SendMessageRequest(messages=[message]), timeout=10, metadata=meta).status
        assert denied.code == pb.Code.UNAUTHORIZED
        assert denied.message.startswith("User:app has no permission to access Topic:AuthSubOnly from 127.0.0.1")
        message.topic.name = "AuthOk"
        sent = stub.SendMessage(spb.SendMessageRequest(messages=[message]), timeout=10, metadata=meta).status
        assert sent.code == pb.Code.OK, sent


def test_secrets_are_not_in_the_log(broker) -> None:
    """After every test above (refusals, the flood, the gRPC calls), at DEBUG level: the broker's
    log names the users it refused but holds none of their secrets (broker.conf's initial and
    inner users' passwords included)."""
    text = Path(broker.managed.log).read_text(errors="replace")
    assert "User:app is authenticated failed" in text  # the refusals were logged
    for secret in ("app-secret", "root-secret", "inner-secret", "not-the-secret"):
        assert secret not in text, secret


def test_name_server_with_auth(tmp_path) -> None:
    """Opt-in, stricter than Java: `pyrmq namesrv` with the auth keys. A broker that signs its
    registration with the name server's inner credentials is listed; one without credentials is
    refused (its log says so) and not listed; a signed client gets its topic's route, an
    unsigned one and another user's topic are refused."""
    from integration.test_ha_brokers import _broker

    home = tmp_path / "home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL)
    # the name server's inner credentials are the ones the good broker registers with
    ns = PyrmqNamesrv(tmp_path / "ns", rocketmqHome=str(home), **AUTH_CONF)
    procs = []
    try:
        ns_port = int(ns.addr.rsplit(":", 1)[1])
        good_port, bad_port = free_port_block((-2, 0, 1)), free_port_block((-2, 0, 1))
        good, _ = _broker(
            tmp_path, "good", ns_port, good_port, brokerName="ns-auth-good", rocketmqHome=str(home), **AUTH_CONF
        )
        procs.append(good)
        bad, _ = _broker(tmp_path, "bad", ns_port, bad_port, brokerName="ns-auth-bad")
        procs.append(bad)
        for p, name, port in ((good, "ns-auth-good", good_port), (bad, "ns-auth-bad", bad_port)):
            p.wait_line(f"The broker[{name}, 127.0.0.1:{port}] boot success.")
        bad.wait_line("code 16 username cannot be null.")

        async def run() -> None:
            async with RemotingClient() as c:
                info = RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO, {})
                for _ in range(50):
                    r = await c.invoke(ns.addr, _signed(info, "root", "root-secret"), 5)
                    assert r.code == ResponseCode.SUCCESS, r.remark
                    if b"ns-auth-good" in (r.body or b""):
                        break
                    await asyncio.sleep(0.2)
                    info = RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO, {})
                assert b"ns-auth-good" in (r.body or b"") and b"ns-auth-bad" not in (r.body or b""), r.body
                unsigned = await c.invoke(ns.addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO, {}), 5)
                assert (unsigned.code, unsigned.remark) == (ResponseCode.NO_PERMISSION, "username cannot be null.")
                send = _signed(send_v2("AuthOk", "ns-auth-good", b"x"), "app", "app-secret")
                ok = await c.invoke(f"127.0.0.1:{good_port}", send, 5)
                assert ok.code == ResponseCode.SUCCESS, ok.remark
                route = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "AuthOk"})
                for _ in range(50):
                    r = await c.invoke(ns.addr, _signed(route, "app", "app-secret"), 5)
                    if r.code == ResponseCode.SUCCESS:
                        break
                    assert r.code == ResponseCode.TOPIC_NOT_EXIST, r.remark  # until the next registration
                    await asyncio.sleep(0.5)
                    route = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "AuthOk"})
                assert r.code == ResponseCode.SUCCESS, r.remark
                other = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "AuthSubOnly2"})
                denied = await c.invoke(ns.addr, _signed(other, "app", "app-secret"), 5)
                assert denied.code == ResponseCode.NO_PERMISSION and "Topic:AuthSubOnly2" in (denied.remark or "")

        asyncio.run(run())
    finally:
        for p in reversed(procs):
            p.stop(10)
        ns.stop()
