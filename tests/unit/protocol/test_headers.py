"""Typed headers <-> ext_fields with Java's reflection rules (spec §1.7)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyrmq.common.java_lang import double_to_string
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.errors import InvalidParameter, MissingHeaderField
from pyrmq.protocol.headers.base import RemotingHeader, camel_case, key


class BoundaryType(enum.Enum):
    LOWER = "lower"
    UPPER = "upper"


@dataclass(slots=True)
class SendHeaderV2(RemotingHeader):
    producer_group: str = key("a")
    topic: str = key("b")
    queue_id: int = key("e")
    born_timestamp: int = key("g")
    batch: bool | None = key("m", default=None)


@dataclass(slots=True)
class SampleHeader(RemotingHeader):
    topic: str
    queue_id: int
    max_msg_nums: int = 32
    unit_mode: bool = False
    tps: float | None = None
    boundary_type: BoundaryType | None = None
    bname: str | None = None


def test_camel_case():
    assert camel_case("producer_group") == "producerGroup"
    assert camel_case("max_msg_nums") == "maxMsgNums"
    assert camel_case("bname") == "bname"
    assert camel_case("commit_log_offset") == "commitLogOffset"


def test_decode_types_defaults_and_unknown_keys():
    h = SampleHeader.from_ext_fields(
        {"topic": "T", "queueId": "-3", "unitMode": "TRUE", "tps": "1.5", "boundaryType": "UPPER", "zzz": "1"}
    )
    assert h == SampleHeader(
        topic="T", queue_id=-3, max_msg_nums=32, unit_mode=True, tps=1.5, boundary_type=BoundaryType.UPPER
    )


@pytest.mark.parametrize(
    "text,value", [("true", True), ("True", True), ("TRUE", True), ("1", False), ("yes", False), ("", False)]
)
def test_bool_only_true_is_true(text, value):
    assert SampleHeader.from_ext_fields({"topic": "T", "queueId": "1", "unitMode": text}).unit_mode is value


def test_missing_required_field():
    with pytest.raises(MissingHeaderField, match=r"the custom field <queueId> is null") as ei:
        SampleHeader.from_ext_fields({"topic": "T"})
    assert ei.value.code == 29
    with pytest.raises(MissingHeaderField):
        SampleHeader.from_ext_fields(None)
    # a Java null (zero-length ROCKETMQ value -> None) is missing too
    with pytest.raises(MissingHeaderField):
        SampleHeader.from_ext_fields({"topic": "T", "queueId": None})


def test_bad_values():
    # required: error; optional: Java keeps the default
    with pytest.raises(InvalidParameter, match="queueId"):
        SampleHeader.from_ext_fields({"topic": "T", "queueId": "1.5"})
    with pytest.raises(InvalidParameter):
        SampleHeader.from_ext_fields({"topic": "T", "queueId": " 1"})  # Integer.parseInt rejects spaces
    h = SampleHeader.from_ext_fields(
        {"topic": "T", "queueId": "+7", "maxMsgNums": "x", "tps": "?", "boundaryType": "MID"}
    )
    assert (h.queue_id, h.max_msg_nums, h.tps, h.boundary_type) == (7, 32, None, None)


def test_encode_skips_none_and_formats_like_java():
    h = SampleHeader(topic="T", queue_id=3, unit_mode=False, tps=1e7, boundary_type=BoundaryType.LOWER)
    assert h.to_ext_fields() == {
        "topic": "T",
        "queueId": "3",
        "maxMsgNums": "32",
        "unitMode": "false",
        "tps": "1.0E7",
        "boundaryType": "LOWER",
    }


def test_explicit_keys_and_command_helper():
    h = SendHeaderV2(producer_group="PG", topic="T", queue_id=1, born_timestamp=1700000000123)
    ext = h.to_ext_fields()
    assert ext == {"a": "PG", "b": "T", "e": "1", "g": "1700000000123"}
    cmd = RemotingCommand.request(310, ext)
    assert SendHeaderV2.from_command(cmd) == h


@pytest.mark.parametrize(
    "value,text",
    [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (1.5, "1.5"),
        (100.0, "100.0"),
        (0.1, "0.1"),
        (0.001, "0.001"),
        (0.0001, "1.0E-4"),
        (9999999.0, "9999999.0"),
        (1e7, "1.0E7"),
        (123456789.0, "1.23456789E8"),
        (-2.5e-10, "-2.5E-10"),
        (1.7976931348623157e308, "1.7976931348623157E308"),
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
    ],
)
def test_java_double_to_string(value, text):
    assert double_to_string(value) == text


@given(st.floats(allow_nan=False))
def test_java_double_to_string_parses_back(x):
    s = double_to_string(x)
    assert float(s.replace("Infinity", "inf")) == x


@given(
    st.text(min_size=1),
    st.integers(-(2**63), 2**63 - 1),
    st.booleans(),
    st.none() | st.floats(allow_nan=False),
)
def test_roundtrip(topic, qid, unit, tps):
    h = SampleHeader(topic=topic, queue_id=qid, unit_mode=unit, tps=tps)
    assert SampleHeader.from_ext_fields(h.to_ext_fields()) == h


def test_unsupported_type_is_rejected_at_first_use():
    @dataclass(slots=True)
    class Bad(RemotingHeader):
        values: list[str]

    with pytest.raises(TypeError):
        Bad.from_ext_fields({})
