"""The one Properties reader/writer and the properties2Object policy shared by every config."""

from __future__ import annotations

import enum
import logging
import os

import pytest

from pyrmq.common.files import write_file_atomically
from pyrmq.common.properties import (
    KeyTable,
    PropertiesError,
    format_value,
    load_properties,
    parse_value,
    properties_text,
)


def test_load_properties_java_syntax() -> None:
    text = (
        "# comment\n! other comment\n"
        "listenPort=9877\n"
        "  kvConfigPath : /tmp/a\\\n    b.json\n"
        "enableTopicList false\n"
        "odd\\=key=x\\ty\n"
        "empty=\n"
        "uni=\\u00e9\r\n"
    )
    assert load_properties(text) == {
        "listenPort": "9877",
        "kvConfigPath": "/tmp/ab.json",
        "enableTopicList": "false",
        "odd=key": "x\ty",
        "empty": "",
        "uni": "é",
    }


@pytest.mark.parametrize("bad", ["k=\\u12\n", "k=\\u12zz\n"])
def test_malformed_unicode_escape_is_refused_like_java(bad: str) -> None:
    with pytest.raises(PropertiesError):
        load_properties(bad)


def test_properties_text_sorted_and_escaped_round_trip() -> None:
    assert properties_text({"b": "2", "a": "1"}) == "a=1\nb=2\n"
    props = {"path": "C:\\dir", "name": "é", "a.b": "x=y"}
    text = properties_text(props, escape=True)
    assert text == "a.b=x=y\nname=\\u00e9\npath=C:\\\\dir\n"
    assert load_properties(text) == props


class Color(enum.StrEnum):
    RED = "RED"
    BLUE = "BLUE"


def test_parse_value_per_type() -> None:
    assert parse_value(bool, " TRUE ") is True
    assert parse_value(bool, "yes") is False  # Boolean.parseBoolean
    assert parse_value(int, " 42 ") == 42
    assert parse_value(float, "0.5") == 0.5
    assert parse_value(str, "  x  ") == "x"
    assert parse_value(Color, "blue") is Color.BLUE
    for tp, raw in ((int, "4MB"), (Color, "GREEN"), (float, "x")):
        with pytest.raises(ValueError):
            parse_value(tp, raw)
    assert format_value(Color.RED) == "RED" and format_value(False) == "false"


def test_key_table_policy(caplog: pytest.LogCaptureFixture) -> None:
    table = KeyTable.of({"maxMessageSize": 4194304, "flag": False, "color": Color.RED}, {"size": "maxMessageSize"})
    values = {"maxMessageSize": 1, "flag": True, "color": Color.BLUE}
    with caplog.at_level(logging.WARNING, "pyrmq.config"):
        unknown = table.apply(
            {"maxMessageSize": "4MB", "flag": "false", "color": "RED", "other": "1"},
            values.__setitem__,
            values.__getitem__,
        )
    assert unknown == ["other"]
    # a bad value keeps the old one; a value equal to the default is still set
    assert values == {"maxMessageSize": 1, "flag": False, "color": Color.RED}
    assert "maxMessageSize='4MB'" in caplog.text and "keeping 1" in caplog.text
    table.apply({"size": "7"}, values.__setitem__, values.__getitem__)
    assert values["maxMessageSize"] == 7 and "size" in table and table.canonical("nope") is None


def test_write_file_atomically_keeps_backup(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(tmp_path, "sub", "f.json")
    write_file_atomically(path, "one")
    assert not os.path.exists(path + ".bak")
    write_file_atomically(path, b"two")
    with open(path) as f, open(path + ".bak") as b:
        assert (f.read(), b.read()) == ("two", "one")
    assert not os.path.exists(path + ".tmp")
