"""The user and ACL admin codes (3001-3010) as mqadmin sends them, with Java's answers."""

from __future__ import annotations

import asyncio
import json

import pytest

from pyrmq.broker.auth import BrokerAuth
from pyrmq.broker.controller import BrokerController
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand

from .conftest import Broker, make_config

AUTH = {
    "authenticationEnabled": "true",
    "authorizationEnabled": "true",
    "authenticationMetadataProvider": "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider",
    "authorizationMetadataProvider": "org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider",
    "initAuthenticationUser": json.dumps({"username": "root", "password": "rootpw"}),
}


@pytest.fixture
def auth_broker(tmp_path, clock):
    def make(**props: str) -> Broker:
        c = BrokerController(make_config(tmp_path, **props), clock=clock)
        c.load()
        c.auth = BrokerAuth.from_broker_config(c.config)
        return Broker(c)

    return make


def call(b: Broker, code: int, fields: dict[str, str], body: object = None, ak: str | None = "root") -> RemotingCommand:
    ext = dict(fields)
    if ak is not None:
        ext["AccessKey"] = ak
    data = None if body is None else json.dumps(body).encode()
    resp = asyncio.run(b.call(RemotingCommand.request(code, ext_fields=ext, body=data)))
    assert resp is not None
    return resp


def test_users_lifecycle(auth_broker) -> None:
    b = auth_broker(**AUTH)
    r = call(b, RequestCode.AUTH_CREATE_USER, {"username": "alice"}, {"password": "pw1"})
    assert r.code == ResponseCode.SUCCESS, r.remark
    r = call(b, RequestCode.AUTH_CREATE_USER, {"username": "alice"}, {"password": "pw1"})
    assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "The user is existed")
    r = call(b, RequestCode.AUTH_CREATE_USER, {"username": "bob"}, {})
    assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "password can not be blank")
    r = call(b, RequestCode.AUTH_CREATE_USER, {}, {"password": "x"})
    assert (r.code, r.remark) == (ResponseCode.INVALID_PARAMETER, "The username is blank")
    r = call(b, RequestCode.AUTH_GET_USER, {"username": "alice"})
    assert json.loads(r.body) == {"password": "pw1", "userStatus": "enable", "userType": "Normal", "username": "alice"}
    r = call(b, RequestCode.AUTH_UPDATE_USER, {"username": "alice"}, {"userStatus": "disable"})
    assert r.code == ResponseCode.SUCCESS
    r = call(b, RequestCode.AUTH_LIST_USER, {"filter": "ali"})
    assert [(u["username"], u["userStatus"], u["password"]) for u in json.loads(r.body)] == [
        ("alice", "disable", "pw1")
    ]
    # a normal user may not make a super user (Java answers SYSTEM_ERROR here)
    r = call(b, RequestCode.AUTH_CREATE_USER, {"username": "evil"}, {"password": "p", "userType": "Super"}, ak="alice")
    assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, "The super user can only be create by super user")
    r = call(b, RequestCode.AUTH_DELETE_USER, {"username": "root"}, ak="alice")
    assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "The super user can only be update by super user")
    r = call(b, RequestCode.AUTH_DELETE_USER, {"username": "alice"})
    assert r.code == ResponseCode.SUCCESS
    r = call(b, RequestCode.AUTH_GET_USER, {"username": "alice"})
    assert (r.code, r.body) == (ResponseCode.SUCCESS, None)


def test_acls_lifecycle(auth_broker) -> None:
    b = auth_broker(**AUTH)
    call(b, RequestCode.AUTH_CREATE_USER, {"username": "app"}, {"password": "pw"})
    acl = {
        "subject": "User:app",
        "policies": [
            {
                "policyType": "Custom",
                "entries": [
                    {
                        "resource": "Topic:orders",
                        "actions": ["Pub", "Sub"],
                        "sourceIps": ["10.0.0.0/8"],
                        "decision": "Allow",
                    },
                    {"resource": "Group:g*", "actions": ["Sub"], "decision": "Allow"},
                ],
            }
        ],
    }
    r = call(b, RequestCode.AUTH_CREATE_ACL, {"subject": "User:app"}, acl)
    assert r.code == ResponseCode.SUCCESS, r.remark
    # update replaces an entry by resource and appends new ones
    upd = {"policies": [{"entries": [{"resource": "Topic:orders", "actions": ["Sub"], "decision": "Deny"}]}]}
    assert call(b, RequestCode.AUTH_UPDATE_ACL, {"subject": "User:app"}, upd).code == ResponseCode.SUCCESS
    got = json.loads(call(b, RequestCode.AUTH_GET_ACL, {"subject": "User:app"}).body)
    entries = {e["resource"]: e for e in got["policies"][0]["entries"]}
    assert entries["Topic:orders"]["decision"] == "Deny" and entries["Topic:orders"]["actions"] == ["Sub"]
    assert entries["Group:g*"]["actions"] == ["Sub"]
    listed = json.loads(call(b, RequestCode.AUTH_LIST_ACL, {"resourceFilter": "Group"}).body)
    assert [[e["resource"] for e in p["entries"]] for a in listed for p in a["policies"]] == [["Group:g*"]]
    r = call(b, RequestCode.AUTH_DELETE_ACL, {"subject": "User:app", "resource": "Topic:orders"})
    assert r.code == ResponseCode.SUCCESS
    got = json.loads(call(b, RequestCode.AUTH_GET_ACL, {"subject": "User:app"}).body)
    assert [e["resource"] for e in got["policies"][0]["entries"]] == ["Group:g*"]
    # bad bodies and subjects: Java's messages
    bad_ip = {
        "policies": [
            {"entries": [{"resource": "Topic:t", "actions": ["Pub"], "sourceIps": ["10.0.0.300"], "decision": "Allow"}]}
        ]
    }
    r = call(b, RequestCode.AUTH_CREATE_ACL, {"subject": "User:app"}, bad_ip)
    assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "The source ip is invalid.")
    bad_decision = {"policies": [{"entries": [{"resource": "Topic:t", "actions": ["Pub"], "decision": "Maybe"}]}]}
    r = call(b, RequestCode.AUTH_CREATE_ACL, {"subject": "User:app"}, bad_decision)
    assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "The decision is null or illegal.")
    r = call(b, RequestCode.AUTH_CREATE_ACL, {"subject": "User:ghost"}, acl | {"subject": "User:ghost"})
    assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "The subject of User:ghost is not exist.")
    r = call(b, RequestCode.AUTH_CREATE_ACL, {"subject": "User:app"}, None)
    assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "The body of acl is null")
    # deleting the user deletes its ACL
    call(b, RequestCode.AUTH_DELETE_USER, {"username": "app"})
    assert b.c.auth is not None and b.c.auth.store is not None and b.c.auth.store.get_acl("User:app") is None


def test_without_metadata_provider_is_a_system_error(auth_broker) -> None:
    b = auth_broker()
    r = call(b, RequestCode.AUTH_LIST_USER, {}, ak=None)
    assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, "An system error occurred, please try again later.")
