"""The official example org.apache.rocketmq.example.simple.AclClient (rocketmq-example 5.5.0) run
unchanged against pyrmq and against the Java 5.5.0 broker, each with authentication and
authorization on (test_acl_java's AUTH_CONF) and the example's account in plain_acl.yml.

AclClient signs with the access key it hard-codes (RocketMQ / 1234567), sends 128 messages to
TopicTest, starts a push consumer, then pulls every queue of TopicTest with a pull consumer. It
also hard-codes 127.0.0.1:9876, so it runs in a private network namespace (support/netns.py,
as test_lmq_examples). Right key: the sends are SEND_OK and both consumers get every message sent.
Wrong key (the same broker after the super user changed the account's password with
AUTH_UPDATE_USER): every send is refused with CODE 16 "check signature failed." and nothing is
consumed. The same outcome from both brokers. Opt-in (PYRMQ_SOAK=1): two brokers and four JVMs.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path

import pytest
from compat.test_acl_java import AUTH_CONF
from compat.test_lmq_examples import _servers
from support import netns
from support.java import java_argv, java_env, prepare_home
from support.procs import ManagedProcess

from pyrmq.auth.signature import sign_request
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.remoting.client import RemotingClient

pytestmark = [pytest.mark.compat, pytest.mark.java, pytest.mark.soak, pytest.mark.timeout(900)]

COUNT = 128  # AclClient.producer's loop
PLAIN_ACL = """\
accounts:
  - accessKey: RocketMQ
    secretKey: "1234567"
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - TopicTest=PUB|SUB
    groupPerms:
      - please_rename_unique_group_name_5=SUB
      - please_rename_unique_group_name_6=SUB
"""
ROOT = ("root", "root-secret")
CONF = {**AUTH_CONF, "initAuthenticationUser": json.dumps({"username": ROOT[0], "password": ROOT[1]})}
SEND_OK = "SendResult [sendStatus=SEND_OK"
SENT_ID = re.compile(r"SendResult \[sendStatus=SEND_OK, msgId=([0-9A-F]+)")
REFUSED = "check signature failed."
MSG_ID = re.compile(r"msgId : ([0-9A-F]+) {2}body : Hello world")
#: AclClient prints a failed send and goes on; on a loaded machine a few may time out (as in
#: test_lmq_examples), so the right key's run asks for most of them, all of those consumed
MOST = COUNT - 8


def _run_example(workdir: Path, done, timeout: float = 180) -> str:
    """AclClient until `done(output)`; then it is stopped (its push consumer never exits)."""
    workdir.mkdir(parents=True)
    home = prepare_home(workdir / "home")
    argv = java_argv("client5", "org.apache.rocketmq.example.simple.AclClient", [], home)
    proc = ManagedProcess("AclClient", argv, workdir / "AclClient.out", env=java_env(home), cwd=workdir)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = proc.log.read_text(errors="replace")
            if done(text):
                time.sleep(1)  # a late redelivery or another refusal would show up now
                return proc.log.read_text(errors="replace")
            assert proc.alive() or done(text), f"AclClient exited early\n{proc.tail(80)}"
            time.sleep(0.5)
        raise AssertionError(f"AclClient: not done after {timeout}s\n{proc.tail(80)}")
    finally:
        proc.stop()


def _right_key_done(text: str) -> bool:
    """The producer is done (the push consumer started after it) and every message it was told
    was sent has been printed by the push consumer and by the pull consumer."""
    sent = set(SENT_ID.findall(text))
    seen = MSG_ID.findall(text)
    return "Consumer Started." in text and len(sent) >= MOST and all(seen.count(i) >= 2 for i in sent)


def _wrong_key_done(text: str) -> bool:
    # the producer's 128 refusals, the push consumer started, the pull consumer refused too
    return "Consumer Started." in text and text.count(REFUSED) > COUNT and "Consume from the queue" in text


def _change_password(addr: str) -> int:
    async def run() -> int:
        cmd = RemotingCommand.request(
            RequestCode.AUTH_UPDATE_USER,
            {"username": "RocketMQ"},
            json.dumps({"username": "RocketMQ", "password": "not-1234567"}).encode(),
        )
        sign_request(cmd, *ROOT)
        async with RemotingClient() as c:
            return (await c.invoke(addr, cmd, 10)).code

    return asyncio.run(run())


def _outcome(kind: str, tmp_path: Path, monkeypatch) -> dict[str, object]:
    (tmp_path / "namesrv").mkdir(parents=True)
    home = prepare_home(tmp_path / "broker" / "home")  # the Java broker's ROCKETMQ_HOME too
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL)
    conf = {**CONF, "rocketmqHome": str(home)} if kind == "pyrmq" else CONF
    started: list = []
    with netns.private_loopback():
        try:
            started += _servers(kind, tmp_path, monkeypatch, conf)
            right = _run_example(tmp_path / "right", _right_key_done)
            changed = _change_password(started[1].addr)
            wrong = _run_example(tmp_path / "wrong", _wrong_key_done)
        finally:
            for p in reversed(started):
                p.stop()
    sent = set(SENT_ID.findall(right))
    return {
        "right: most sends ok": len(sent) >= MOST,
        "right: every sent message consumed by both consumers": sent <= set(MSG_ID.findall(right)),
        "right: refusals": right.count("CODE: 16"),
        "password changed": changed,
        "wrong: sends ok": wrong.count(SEND_OK),
        "wrong: messages consumed": len(set(MSG_ID.findall(wrong))),
        "wrong: refused, check signature failed": REFUSED in wrong and "CODE: 16" in wrong,
    }


def test_acl_client_example_on_pyrmq_and_java(java_harness, tmp_path, monkeypatch):
    outcomes = {kind: _outcome(kind, tmp_path / kind, monkeypatch) for kind in ("pyrmq", "java")}
    print(outcomes)
    assert outcomes["pyrmq"] == outcomes["java"]
    assert outcomes["pyrmq"] == {
        "right: most sends ok": True,
        "right: every sent message consumed by both consumers": True,
        "right: refusals": 0,
        "password changed": ResponseCode.SUCCESS,
        "wrong: sends ok": 0,
        "wrong: messages consumed": 0,
        "wrong: refused, check signature failed": True,
    }
