"""The name server's opt-in auth (stricter than Java 5.5.0, whose name server authenticates
nothing): the broker's auth keys in its file; its users are the initial user, the inner
credentials the brokers register with, and plain_acl.yml's accounts; the keys are hidden from
GET_NAMESRV_CONFIG and refused by UPDATE_NAMESRV_CONFIG."""

from __future__ import annotations

import json
from pathlib import Path

from support.fakes import FakeChannel
from support.forgery import PLAIN_ACL

from pyrmq.auth.config import LOCAL_AUTHENTICATION_METADATA_PROVIDER, LOCAL_AUTHORIZATION_METADATA_PROVIDER
from pyrmq.auth.signature import sign_request
from pyrmq.namesrv.config import NamesrvConfig
from pyrmq.namesrv.controller import auth_of
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand


def _config(tmp_path: Path, **extra: str) -> NamesrvConfig:
    home = tmp_path / "home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL)
    return NamesrvConfig.from_properties(
        {
            "kvConfigPath": str(tmp_path / "ns" / "kvConfig.json"),
            "rocketmqHome": str(home),
            "authenticationEnabled": "true",
            "authorizationEnabled": "true",
            "authenticationMetadataProvider": LOCAL_AUTHENTICATION_METADATA_PROVIDER,
            "authorizationMetadataProvider": LOCAL_AUTHORIZATION_METADATA_PROVIDER,
            "initAuthenticationUser": json.dumps({"username": "root", "password": "root-secret"}),
            "innerClientAuthenticationCredentials": json.dumps({"accessKey": "broker", "secretKey": "broker-secret"}),
            "migrateAuthFromV1Enabled": "true",
            **extra,
        }
    )


def _request(code: int, fields: dict[str, str], key: tuple[str, str] | None) -> RemotingCommand:
    cmd = RemotingCommand.request(code, dict(fields), b"{}")
    if key is not None:
        sign_request(cmd, *key)
    return cmd


def test_name_server_checks_registrations_and_route_queries(tmp_path: Path) -> None:
    config = _config(tmp_path)
    check = auth_of(config).request_check()
    assert check is not None
    channel = FakeChannel()

    def answer(cmd: RemotingCommand) -> tuple[int, str | None] | None:
        r = check(channel, cmd)
        return None if r is None else (r.code, r.remark)

    register = {
        "brokerName": "b",
        "brokerAddr": "127.0.0.1:10911",
        "clusterName": "C",
        "haServerAddr": "",
        "brokerId": "0",
    }
    assert answer(_request(RequestCode.REGISTER_BROKER, register, ("broker", "broker-secret"))) is None
    assert answer(_request(RequestCode.REGISTER_BROKER, register, None)) == (
        ResponseCode.NO_PERMISSION,
        "username cannot be null.",
    )
    assert answer(_request(RequestCode.REGISTER_BROKER, register, ("broker", "wrong"))) == (
        ResponseCode.NO_PERMISSION,
        "check signature failed.",
    )
    refused = answer(_request(RequestCode.REGISTER_BROKER, register, ("app", "app-secret")))
    assert refused is not None and "User:app has no permission to access Cluster:C" in str(refused[1])
    # a client's route query: its own topic yes, another no; the super user anything
    assert answer(_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "AuthOk"}, ("app", "app-secret"))) is None
    denied = answer(_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Other"}, ("app", "app-secret")))
    assert denied is not None and "Topic:Other" in str(denied[1]) and "the decision is deny." in str(denied[1])
    assert answer(_request(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "AuthOk"}, ("app", "app-secret")))
    assert answer(_request(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "AuthOk"}, ("root", "root-secret"))) is None
    # the users live next to kvConfigPath
    users = json.loads((tmp_path / "ns" / "auth_users.json").read_text())
    assert {u["username"] for u in users} == {"root", "broker", "app"}


def test_auth_keys_are_known_hidden_and_fixed(tmp_path: Path) -> None:
    config = _config(tmp_path)
    assert config.unknown_keys() == []
    shown = config.all_properties()
    assert "initAuthenticationUser" not in shown and "authenticationEnabled" not in shown
    assert not any("secret" in v for v in shown.values())
    assert {"authenticationEnabled", "authorizationEnabled", "initAuthenticationUser"} <= config.black_list()


def test_without_auth_keys_nothing_is_checked(tmp_path: Path) -> None:
    config = NamesrvConfig.from_properties({"kvConfigPath": str(tmp_path / "kv.json")})
    assert auth_of(config).request_check() is None
    assert not (tmp_path / "auth_users.json").exists()
