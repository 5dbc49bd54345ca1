"""RocketMQ's names are defined once, in pyrmq/common/constants.py: no module of pyrmq/
assigns one of its values to a module-level name or spells a system topic literally."""

from __future__ import annotations

import ast
from pathlib import Path

from pyrmq.common import constants
from pyrmq.protocol.bodies.common import TopicConfig

PKG = Path(constants.__file__).resolve().parents[1]
VALUES = {
    v for k, v in vars(constants).items() if k.isupper() and isinstance(v, str) and not k.startswith("_") and len(v) > 3
} | {v for k, v in vars(constants.MessageConst).items() if k.isupper() and isinstance(v, str) and len(v) > 5}


def test_no_copy_of_a_constant_in_pyrmq() -> None:
    copies = []
    for path in PKG.rglob("*.py"):
        if path == Path(constants.__file__).resolve():
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value in VALUES:
                copies.append(f"{path.relative_to(PKG)}:{node.lineno} {ast.unparse(node)}")
    assert copies == []


def test_topic_config_java_string() -> None:
    tc = TopicConfig("T", 4, 2, constants.PERM_READ | constants.PERM_INHERIT, attributes={"+a": "b"})
    assert tc.java_string() == (
        "TopicConfig [topicName=T, readQueueNums=4, writeQueueNums=2, perm=R-X, topicFilterType=SINGLE_TAG, "
        "topicSysFlag=0, order=false, attributes={+a=b}]"
    )
    assert constants.retry_topic("g") == "%RETRY%g" and constants.dlq_topic("g") == "%DLQ%g"
    assert constants.is_system_topic("rmq_sys_x") and not constants.is_system_topic("x")
