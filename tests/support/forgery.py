"""Forged and mutated ACL-signed requests for the auth tests: each one is a request a broker
with authentication and authorization must refuse (NO_PERMISSION).

The account they attack is a normal user (`ak`/`sk`) allowed to Pub on `ok_topic` only, with
no group rights; `super_users` are names whose secrets the forger does not know.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from pyrmq.auth.signature import SIGNATURE, sign_request
from pyrmq.protocol.codes import RequestCode
from pyrmq.protocol.command import RemotingCommand
from support.requests import send_v2

#: plain_acl.yml of the attacked account: `app` may Pub and Sub on AuthOk, Sub on AuthSubOnly (the
#: Target the tests build), every other topic denied; no group rights
PLAIN_ACL = """\
accounts:
  - accessKey: app
    secretKey: app-secret
    defaultTopicPerm: DENY
    topicPerms:
      - AuthOk=PUB|SUB
      - AuthSubOnly=SUB
"""

KINDS = (
    "field_value",
    "body_byte",
    "body_cut",
    "signature_char",
    "other_access_key",
    "no_signature",
    "extra_field",
    "dropped_field",
    "wrong_secret",
    "unknown_user",
    "admin_code",
    "denied_topic",
    "denied_group",
)


@dataclass(frozen=True)
class Target:
    ak: str
    sk: str
    ok_topic: str
    denied_topic: str
    broker_name: str
    super_users: tuple[str, ...]


def _copy(cmd: RemotingCommand) -> RemotingCommand:
    return RemotingCommand.request(cmd.code, dict(cmd.ext_fields or {}), cmd.body)


def _signed(cmd: RemotingCommand, ak: str, sk: str) -> RemotingCommand:
    sign_request(cmd, ak, sk)
    return cmd


def forgeries(t: Target, count: int, seed: int = 14) -> Iterator[tuple[str, RemotingCommand]]:
    """``count`` (kind, request) pairs, the kinds in turn, each mutation drawn from ``seed``."""
    rnd = random.Random(seed)
    template = _signed(send_v2(t.ok_topic, t.broker_name, b"payload-" + bytes(range(32))), t.ak, t.sk)
    plain_ok = send_v2(t.ok_topic, t.broker_name, b"x")
    plain_denied = send_v2(t.denied_topic, t.broker_name, b"x")
    names = [k for k in template.ext_fields or {} if k not in (SIGNATURE, "AccessKey")]
    for i in range(count):
        kind = KINDS[i % len(KINDS)]
        c = _copy(template)
        f = c.ext_fields
        assert f is not None
        if kind == "field_value":
            key = rnd.choice(names)
            f[key] = (f[key] or "") + rnd.choice("x0%|é")
        elif kind == "body_byte":
            body = bytearray(c.body or b"")
            pos = rnd.randrange(len(body))
            body[pos] ^= 1 << rnd.randrange(8)
            c.body = bytes(body)
        elif kind == "body_cut":
            c.body = (c.body or b"")[: rnd.randrange(len(c.body or b""))]
        elif kind == "signature_char":
            sig = f[SIGNATURE]
            pos = rnd.randrange(len(sig) - 1)  # the last char may be '=' padding
            f[SIGNATURE] = sig[:pos] + rnd.choice([ch for ch in "AQgw+/09" if ch != sig[pos]]) + sig[pos + 1 :]
        elif kind == "other_access_key":
            f["AccessKey"] = rnd.choice([*t.super_users, t.ak.upper(), t.ak + " ", "", " " + t.ak])
        elif kind == "no_signature":
            del f[SIGNATURE]
        elif kind == "dropped_field":  # signed over more fields than are sent
            del f[rnd.choice([k for k in names if f[k]])]
        elif kind == "extra_field":
            f[rnd.choice(["zz", "AAA", "n", "topic"])] = rnd.choice(["1", "TopicX", "true"])
        elif kind == "wrong_secret":
            c = _signed(_copy(plain_ok), t.ak, t.sk + rnd.choice(["x", "0", " "]))
        elif kind == "unknown_user":
            c = _signed(_copy(plain_ok), f"ghost{rnd.randrange(1000)}", "whatever")
        elif kind == "admin_code":
            code = rnd.choice(
                [
                    (RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": t.ok_topic, "readQueueNums": "8"}),
                    (RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": t.ok_topic}),
                    (RequestCode.AUTH_CREATE_USER, {"username": "mallory"}),
                    (RequestCode.AUTH_LIST_USER, {}),
                    (RequestCode.UPDATE_BROKER_CONFIG, {}),
                ]
            )
            c = _signed(RemotingCommand.request(code[0], dict(code[1]), b'{"password":"p"}'), t.ak, t.sk)
        elif kind == "denied_topic":
            c = _signed(_copy(plain_denied), t.ak, t.sk)
        else:  # denied_group: a pull for a group the account has no right on
            fields = {"consumerGroup": f"group{rnd.randrange(100)}", "topic": t.ok_topic, "queueId": "0"}
            fields.update({"queueOffset": "0", "maxMsgNums": "1", "sysFlag": "0", "commitOffset": "0"})
            fields.update({"suspendTimeoutMillis": "0", "subVersion": "0"})
            c = _signed(RemotingCommand.request(RequestCode.PULL_MESSAGE, fields), t.ak, t.sk)
        yield kind, c
