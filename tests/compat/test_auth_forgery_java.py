"""The forged-request suite (tests/support/forgery.py, every kind) against pyrmq's broker and the
Java 5.5.0 broker with the same auth config and plain_acl.yml, in one test: pyrmq accepts none;
what Java accepts is the documented list (docs/security.md, "Forged requests").

A reference run (opt-in, PYRMQ_COMPAT_REFERENCE=1): a Java broker start and 13,000 requests (1,000 of each kind) to each.
"""

from __future__ import annotations

import asyncio
import collections
import json

import pytest
from compat.test_acl_java import AUTH_CONF
from support.forgery import KINDS, Target, forgeries
from support.java import prepare_home
from support.pyrmq_proc import PyrmqBroker
from support.requests import send_v2
from support.servers import JavaBroker

from pyrmq.auth.signature import sign_request
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.remoting.client import RemotingClient

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.reference, pytest.mark.timeout(900)]

PLAIN_ACL = """\
accounts:
  - accessKey: app
    secretKey: app-secret
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - AuthOk=PUB|SUB
      - AuthSubOnly=SUB
"""
CONF = {**AUTH_CONF, "initAuthenticationUser": json.dumps({"username": "root", "password": "root-secret"})}
PER_KIND = 1_000

#: What the Java 5.5.0 broker lets through, by kind and request code: UPDATE_BROKER_CONFIG has no
#: annotated header, so any authenticated user may send it (pyrmq's STRICTER list checks it).
JAVA_ACCEPTS = {("admin_code", RequestCode.UPDATE_BROKER_CONFIG)}


def _home(workdir):
    home = prepare_home(workdir / "home")  # the Java broker's ROCKETMQ_HOME too
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL)
    return home


async def _fire(addr: str, target: Target) -> tuple[collections.Counter, set, int]:
    """(accepted per kind, the accepted (kind, code) pairs, a valid send's answer code afterwards)."""
    accepted: collections.Counter[str] = collections.Counter()
    pairs: set[tuple[str, int]] = set()
    async with RemotingClient() as c:
        batch: list = []

        async def flush() -> None:
            answers = await asyncio.gather(*(c.invoke(addr, cmd, 30) for _k, cmd in batch))
            for (kind, cmd), r in zip(batch, answers, strict=True):
                if r.code != ResponseCode.NO_PERMISSION:
                    accepted[kind] += 1
                    pairs.add((kind, cmd.code))
            batch.clear()

        for item in forgeries(target, PER_KIND * len(KINDS), seed=5):
            batch.append(item)
            if len(batch) == 200:
                await flush()
        await flush()
        ok = send_v2(target.ok_topic, target.broker_name, b"still serving")
        sign_request(ok, target.ak, target.sk)
        valid = (await c.invoke(addr, ok, 10)).code
    return accepted, pairs, valid


def test_forgeries_against_pyrmq_and_java(pyrmq_namesrv, java_namesrv, tmp_path):
    results = {}
    for kind, ns in (("pyrmq", pyrmq_namesrv), ("java", java_namesrv)):
        work = tmp_path / kind
        home = _home(work)
        name = f"forge-{kind}"
        if kind == "pyrmq":
            broker = PyrmqBroker(ns.addr, work, name=name, rocketmqHome=str(home), **CONF)
        else:
            broker = JavaBroker(ns.addr, work, name=name, **CONF)
        try:
            target = Target("app", "app-secret", "AuthOk", "AuthSubOnly", name, ("root",))
            results[kind] = asyncio.run(_fire(broker.addr, target))
        finally:
            broker.stop()
    print({k: (dict(v[0]), sorted(v[1]), v[2]) for k, v in results.items()})
    accepted, _pairs, valid = results["pyrmq"]
    assert accepted == {} and valid == ResponseCode.SUCCESS
    accepted, pairs, valid = results["java"]
    assert valid == ResponseCode.SUCCESS  # the Java broker serves the account: the refusals are real
    assert pairs == JAVA_ACCEPTS, pairs
