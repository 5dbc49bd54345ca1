"""Forged or mutated signed requests (every kind of tests/support/forgery.py: altered
values, bodies and signatures, other or unknown access keys, missing signatures, extra fields,
wrong secrets, admin-only codes from a normal user, denied topics and groups): the auth decision
accepts none of 20,000 (100,000 in the soak run), and 2,000 of them (100,000 soak), pipelined
over the wire, are refused by a broker process, which then still serves a valid request."""

from __future__ import annotations

import asyncio
import collections
import json

import pytest
from support.forgery import KINDS, PLAIN_ACL, Target, forgeries
from support.pyrmq_proc import PyrmqBroker
from support.requests import send_v2
from support.servers import PyrmqNamesrv

from pyrmq.auth.config import AuthConfig
from pyrmq.auth.evaluator import AuthEvaluator
from pyrmq.auth.model import Acl, Action, Decision, Policy, PolicyEntry, PolicyType, Resource, User, UserType
from pyrmq.auth.signature import sign_request
from pyrmq.auth.store import AuthMetadataStore
from pyrmq.protocol.codes import ResponseCode
from pyrmq.remoting.client import RemotingClient

PROVIDERS = {
    "authenticationMetadataProvider": "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider",
    "authorizationMetadataProvider": "org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider",
}
TARGET = Target("app", "app-secret", "AuthOk", "AuthSubOnly", "rel-auth", ("root", "inner"))


SOAK = pytest.mark.soak


@pytest.mark.parametrize("count", [20_000, pytest.param(100_000, marks=SOAK)])
def test_forgeries_none_accepted_by_the_decision(count: int) -> None:
    store = AuthMetadataStore(None)
    store.put_user(User("root", "root-secret", UserType.SUPER))
    store.put_user(User("inner", "inner-secret", UserType.SUPER))
    store.put_user(User("app", "app-secret"))
    entries = [
        PolicyEntry(Resource.topic("AuthOk"), [Action.PUB, Action.SUB]),
        PolicyEntry(Resource.topic("AuthSubOnly"), [Action.SUB]),
    ]
    default = [PolicyEntry(Resource.parse("Topic:*"), [Action.ALL], [], Decision.DENY)]  # type: ignore[arg-type]
    store.put_acl(Acl("User:app", [Policy(PolicyType.CUSTOM, entries), Policy(PolicyType.DEFAULT, default)]))
    cfg = AuthConfig.from_properties({"authenticationEnabled": "true", "authorizationEnabled": "true", **PROVIDERS})
    ev = AuthEvaluator(cfg, store)
    seen: collections.Counter[str] = collections.Counter()
    accepted = []
    for kind, cmd in forgeries(TARGET, count):
        seen[kind] += 1
        if ev.check(cmd, "127.0.0.1:40000") is None:
            accepted.append((kind, cmd))
    assert accepted == []
    assert set(seen) == set(KINDS) and min(seen.values()) >= count // len(KINDS)
    ok = send_v2("AuthOk", TARGET.broker_name, b"x")
    sign_request(ok, "app", "app-secret")
    assert ev.check(ok, "127.0.0.1:40000") is None  # the checker is not simply refusing everything


@pytest.fixture
def broker(tmp_path):
    home = tmp_path / "home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL)
    ns = PyrmqNamesrv(tmp_path / "ns")
    conf = {
        "authenticationEnabled": "true",
        "authorizationEnabled": "true",
        **PROVIDERS,
        "migrateAuthFromV1Enabled": "true",
        "initAuthenticationUser": json.dumps({"username": "root", "password": "root-secret"}),
    }
    try:
        b = PyrmqBroker(ns.addr, tmp_path / "b", name=TARGET.broker_name, rocketmqHome=str(home), **conf)
        yield b
        b.stop()
    finally:
        ns.stop()


@pytest.mark.parametrize("count", [2_000, pytest.param(100_000, marks=SOAK)])
def test_forgeries_over_the_wire_refused_broker_keeps_serving(broker, count: int) -> None:
    async def run() -> None:
        async with RemotingClient() as c:
            batch: list = []
            accepted = []

            async def flush() -> None:
                answers = await asyncio.gather(*(c.invoke(broker.addr, cmd, 30) for _kind, cmd in batch))
                accepted.extend(
                    k for (k, _), r in zip(batch, answers, strict=True) if r.code != ResponseCode.NO_PERMISSION
                )
                batch.clear()

            for item in forgeries(TARGET, count, seed=41):
                batch.append(item)
                if len(batch) == 200:
                    await flush()
            await flush()
            assert accepted == []
            ok = send_v2("AuthOk", TARGET.broker_name, b"still serving")
            sign_request(ok, "app", "app-secret")
            assert (await c.invoke(broker.addr, ok, 10)).code == ResponseCode.SUCCESS

    asyncio.run(run())
