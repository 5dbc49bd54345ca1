"""Topic attribute modifications with the Java 5.5.0 texts (each checked against the 5.5.0 jar)."""

import pytest

from pyrmq.common.attributes import (
    TOPIC_ATTRIBUTES,
    AttributeModificationError,
    alter_current_attributes,
    parse_to_map,
    parse_to_string,
)

pytestmark = pytest.mark.unit


def test_parse_to_map_keeps_the_signs_and_refuses_like_java() -> None:
    assert parse_to_map("+message.type=FIFO,-reserve.time") == {"+message.type": "FIFO", "-reserve.time": ""}
    assert parse_to_map(None) == parse_to_map("") == {}
    for text, message in (
        ("+a=b,c", "delete attribute format is wrong: c"),
        ("a=b", "add/alter attribute format is wrong: a"),
        ("+a=b,+a=c", "key duplication: +a"),
    ):
        with pytest.raises(AttributeModificationError) as e:
            parse_to_map(text)
        assert str(e.value) == message
    assert parse_to_string({"+a": "b", "-c": ""}) == "+a=b,-c"


def alter(create: bool, current: dict[str, str], text: str) -> dict[str, str]:
    return alter_current_attributes(create, TOPIC_ATTRIBUTES, current, parse_to_map(text))


def test_create_update_and_delete() -> None:
    assert alter(True, {}, "+message.type=NORMAL") == {"message.type": "NORMAL"}
    assert alter(False, {"message.type": "NORMAL"}, "+message.type=FIFO") == {"message.type": "FIFO"}
    assert alter(False, {"message.type": "NORMAL"}, "-message.type") == {}
    assert alter(False, {"message.type": "NORMAL"}, "+reserve.time=7") == {
        "message.type": "NORMAL",
        "reserve.time": "7",
    }


@pytest.mark.parametrize(
    ("create", "current", "text", "message"),
    [
        (True, {}, "-message.type", "only add attribute is supported while creating topic. key: message.type"),
        (
            False,
            {"queue.type": "SimpleCQ"},
            "+queue.type=BatchCQ",
            "attempt to update an unchangeable attribute. key: queue.type",
        ),
        (False, {}, "-message.type", "attempt to delete a nonexistent key: message.type"),
        (True, {}, "+color=red", "unsupported key: color"),
        (True, {}, "+a-b=1", "kv string format wrong."),
        (
            True,
            {},
            "+message.type=X",
            "value is not in set: [UNSPECIFIED, MIXED, TRANSACTION, PRIORITY, FIFO, DELAY, LITE, NORMAL]",
        ),
        (True, {}, "+queue.type=X", "value is not in set: [SimpleCQ, BatchCQ]"),
        (True, {}, "+cleanup.policy=X", "value is not in set: [DELETE, COMPACTION]"),
        (True, {}, "+reserve.time=-5", "value is not in range(-1, 9223372036854775807)"),
        (True, {}, "+reserve.time=abc", 'For input string: "abc"'),
    ],
)
def test_refusals_say_what_java_says(create: bool, current: dict[str, str], text: str, message: str) -> None:
    with pytest.raises(AttributeModificationError) as e:
        alter(create, current, text)
    assert str(e.value) == message
