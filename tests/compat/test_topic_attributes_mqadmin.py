"""Topic attributes through the official mqadmin 5.5.0 `updateTopic -a`, against pyrmq and against
the Java 5.5.0 broker: a create with `+message.type=FIFO` succeeds on both, and the refusals Java's
AttributeUtil makes (an unchangeable attribute, a value outside the set, a delete of a missing key)
reach the tool with the same remark from both brokers. The official admin API's examineTopicConfig
(the dashboard's Topic Config page) reads the stored map as `message.type=FIFO` from both."""

from __future__ import annotations

import re
import uuid

import pytest
from support.java import mqadmin, run_junit

pytestmark = [pytest.mark.compat, pytest.mark.java]

CLUSTER = "AttrCluster"
BROKER = "attr-broker"


def _update(broker_addr: str, topic: str, attributes: str, java_home) -> str:
    out = mqadmin("5.5.0", "updateTopic", "-b", broker_addr, "-t", topic, f"--attributes={attributes}", home=java_home)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout + out.stderr
    return re.sub(r"\d+\.\d+\.\d+\.\d+:\d+", "<addr>", text)


def _remark(text: str) -> str | None:
    """The broker's remark as the tool prints it (MQBrokerException: CODE: 1  DESC: <remark>)."""
    m = re.search(r"CODE: (\d+)\s+DESC: ([^\n]*?)(?:\n|$|For more)", text)
    return f"{m.group(1)} {m.group(2).strip()}" if m else None


def test_update_topic_attributes_like_java(pyrmq_namesrv, pyrmq_broker, java_namesrv, java_broker, java_home):
    brokers = {
        "pyrmq": pyrmq_broker(pyrmq_namesrv.addr, name=BROKER, cluster=CLUSTER),
        "java": java_broker(java_namesrv.addr, name=BROKER, cluster=CLUSTER),
    }
    seen: dict[str, list[str | None]] = {}
    for kind, broker in brokers.items():
        topic = f"AttrT_{uuid.uuid4().hex[:8]}"
        created = _update(broker.addr, topic, "+message.type=FIFO", java_home)
        assert "success" in created and _remark(created) is None, created
        # stored without the sign, read back flat (the dashboard's Topic Config page)
        ns = pyrmq_namesrv if kind == "pyrmq" else java_namesrv
        props = {
            "namesrv": ns.addr,
            "broker": broker.addr,
            "topic": topic,
            "queues": 8,
            "attributes": "message.type=FIFO",
        }
        run_junit("5.5.0", "TopicConfigReadTest", "read", props=props, home=java_home, timeout=120)
        seen[kind] = [
            _remark(_update(broker.addr, topic, attrs, java_home))
            for attrs in ("+queue.type=BatchCQ", "+message.type=NOPE", "-reserve.time")
        ]
    assert all(seen["java"]), seen  # each of the three is refused
    assert seen["pyrmq"] == seen["java"], seen
    assert seen["pyrmq"][0] == "1 attempt to update an unchangeable attribute. key: queue.type", seen
