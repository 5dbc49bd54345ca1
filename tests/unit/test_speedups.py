"""The compiled codec functions (pyrmq/_speedups/_native.pyx) against their Python references.

Each compiled function must return the same value, the same bytes and raise the same exception
(type and message) as the Python function it replaces, on well-formed and malformed input.
tools/test sets PYRMQ_REQUIRE_SPEEDUPS=1, so a suite run where the extension did not build fails
here instead of quietly testing the pure-Python path twice.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import os
import struct
import subprocess
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyrmq.common.constants as constants
import pyrmq.common.java_lang as java_lang
import pyrmq.protocol.command as command
import pyrmq.protocol.headers.base as base
import pyrmq.store.message as message
from pyrmq import _speedups
from pyrmq.protocol.codes import SerializeType
from pyrmq.protocol.command import RemotingCommand

REQUIRED = os.environ.get("PYRMQ_REQUIRE_SPEEDUPS", "") not in ("", "0")
PURE = os.environ.get("PYRMQ_PURE", "") not in ("", "0")


def _native() -> ModuleType | None:
    try:
        return importlib.import_module("pyrmq._speedups._native")
    except ImportError:
        return None


NATIVE = _native()

PROFILE = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_extension_built_when_required() -> None:
    """Fails when tools/test expects the compiled path (PYRMQ_REQUIRE_SPEEDUPS=1) and it is absent."""
    if REQUIRED:
        assert NATIVE is not None, "PYRMQ_REQUIRE_SPEEDUPS=1 but pyrmq._speedups._native did not build"
        assert PURE or _speedups.active(), _speedups.describe()
    expect_compiled = NATIVE is not None and not PURE
    assert _speedups.active() is expect_compiled
    assert ("compiled" in _speedups.describe()) is expect_compiled


def test_selection_points_every_module_at_one_implementation() -> None:
    picked = {
        "java_string_hash": java_lang.java_string_hash,
        "parse_java_int": base._parse_java_int,
        "header_kwargs": base._header_kwargs,
        "encode_rocketmq_header": command._encode_rocketmq_header,
        "decode_rocketmq_header": command._decode_rocketmq_header,
        "message_properties_to_string": message.message_properties_to_string,
        "parse_java_bool": base._parse_java_bool,
        "validate_topic": constants.validate_topic,
        "string_to_message_properties": message.string_to_message_properties,
        "decode_frame": command.decode_frame,
        "decode_json_header": command._decode_json_header,
        "encode_json_header": command._encode_json_header,
        "header_ext_fields": base._header_ext_fields,
        "hashmap_order": java_lang.hashmap_order,
        "write_record": message.write_record,
    }
    if "walk_records" in _speedups.REFERENCES:  # registered when pyrmq.spark.bulk is imported (spark extra)
        bulk = importlib.import_module("pyrmq.spark.bulk")
        picked["walk_records"] = bulk.walk_records
        picked["record_fields"] = bulk.record_fields
        picked["copy_ranges"] = bulk.copy_ranges
    assert set(picked) == set(_speedups.REFERENCES)  # every pick() is listed here
    for name, fn in picked.items():
        if _speedups.active():
            assert NATIVE is not None
            assert fn is getattr(NATIVE, name), name
        else:
            assert fn is _speedups.reference(name), name


def test_pure_switch_selects_the_references() -> None:
    code = (
        "import pyrmq.protocol.command as c, pyrmq._speedups as s; "
        "print(s.active(), c._decode_rocketmq_header is s.reference('decode_rocketmq_header'), s.describe())"
    )
    env = {**os.environ, "PYRMQ_PURE": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.startswith("False True codec speed-ups: pure Python (PYRMQ_PURE is set)"), out


# --- the comparison -------------------------------------------------------------------------------


def _outcome(fn: Callable[..., Any], *args: Any) -> tuple[Any, ...]:
    try:
        r = fn(*args)
    except Exception as e:
        return ("raised", type(e), str(e))
    return ("returned", type(r), r, repr(r))


def same(name: str, *args: Any) -> Any:
    """Call the compiled function and its reference on the same arguments; both outcomes agree."""
    assert NATIVE is not None, "the extension is required but not built"
    ref = _outcome(_speedups.reference(name), *args)
    got = _outcome(getattr(NATIVE, name), *args)
    assert got == ref, (name, args)
    return ref


# --- java_string_hash ------------------------------------------------------------------------------

ANY_CHAR = st.characters(codec=None, exclude_categories=())  # lone surrogates included


@PROFILE
@given(st.one_of(st.text(), st.text(alphabet=ANY_CHAR), st.text(min_size=250, max_size=700)))
def test_java_string_hash(s: str) -> None:
    same("java_string_hash", s)


@pytest.mark.parametrize(
    "s",
    ["", "a", "TopicTest#KEY", "é", "中文", "😀", "a😀b", "\ud800", "x\udfff", "k" * 256, "k" * 257, "😀" * 300],
)
def test_java_string_hash_cases(s: str) -> None:
    same("java_string_hash", s)
    assert NATIVE is not None
    if s not in ("\ud800", "x\udfff"):
        assert -(2**31) <= NATIVE.java_string_hash(s) < 2**31


def test_java_string_hash_known_values() -> None:
    assert NATIVE is not None
    assert NATIVE.java_string_hash("abc") == 96354  # "abc".hashCode() in Java
    assert NATIVE.java_string_hash("polygenelubricants") == -(2**31)  # Integer.MIN_VALUE


@pytest.mark.parametrize("v", [None, b"abc", 5])
def test_java_string_hash_wrong_types(v: Any) -> None:
    assert same("java_string_hash", v)[0] == "raised"


# --- _parse_java_int and _header_kwargs ------------------------------------------------------------

INT_EDGES = [
    "", "+", "-", "+-1", "--1", "0", "-0", "+0", "007", "2147483647", "2147483648", "-2147483649",
    "9" * 18, "-" + "9" * 17, "-" + "9" * 18, "9" * 19, "9" * 40, "1_000", " 1", "1 ", "1\n", "0x1F",
    "٣", "²", "１", "1.0", "1e3", "\x00", "+" + "9" * 17,
]  # fmt: skip


@pytest.mark.parametrize("v", [*INT_EDGES, None, 5, b"12"])
def test_parse_java_int_cases(v: Any) -> None:
    same("parse_java_int", v)


@PROFILE
@given(st.one_of(st.from_regex(r"[+-]?[0-9]{1,30}", fullmatch=True), st.text(max_size=25)))
def test_parse_java_int(v: str) -> None:
    same("parse_java_int", v)


@pytest.mark.parametrize(
    "v", ["true", "TRUE", "True", "tRuE", "false", "", "t", "truex", "true ", " true", "ｔrue", "İ", "trUe\x00"]
)
def test_parse_java_bool_cases(v: str) -> None:
    same("parse_java_bool", v)


@PROFILE
@given(st.one_of(st.text(max_size=6), st.text(alphabet="tTrRuUeE\u0130K", max_size=5)))
def test_parse_java_bool(v: str) -> None:
    same("parse_java_bool", v)


@pytest.mark.parametrize(
    "topic",
    [
        None, "", " ", "TopicTest", "a", "%RETRY%group", "%DLQ%group", "rmq_sys_x", "a b", "a\n", "é",
        "t" * 127, "t" * 128, "%RETRY%" + "g" * 200, "%RETRY%" + "g" * 300, "%DLQ%" + "g" * 251, "%DLQ%" + "g" * 250,
        "a|b%c_d-e", "a.b", "a/b", "٣", 5,
    ],
)  # fmt: skip
def test_validate_topic_cases(topic: Any) -> None:
    same("validate_topic", topic)


@PROFILE
@given(st.one_of(st.text(max_size=140), st.text(alphabet="%|aZ09_-. ", max_size=300)))
def test_validate_topic(topic: str) -> None:
    same("validate_topic", topic)


class _Color(enum.Enum):
    RED = 1
    BLUE = 2


@dataclasses.dataclass(slots=True)
class _AllKinds(base.RemotingHeader):
    topic: str
    queue_id: int
    mode: _Color
    flag: int | None = None
    ratio: float | None = None
    unit_mode: bool | None = None
    color: _Color | None = None
    name: str | None = base.key("n", default=None)


_KEYS = ["topic", "queueId", "mode", "flag", "ratio", "unitMode", "color", "n", "other"]
_VALUES = st.one_of(
    st.none(),
    st.sampled_from(["1", "-7", "x", "", "RED", "BLUE", "red", "true", "TRUE", "1.5", "NaN", "9" * 30, "+3"]),
    st.text(max_size=8),
)


@PROFILE
@given(st.dictionaries(st.sampled_from(_KEYS), _VALUES))
def test_header_kwargs(ext: dict[str, str]) -> None:
    table = _AllKinds._fields_table()
    r = same("header_kwargs", table, ext)
    if r[0] == "returned":
        assert _AllKinds.from_ext_fields(ext) == _AllKinds(**r[2])


def test_header_kwargs_errors_and_mappings() -> None:
    table = _AllKinds._fields_table()
    ok = {"topic": "T", "queueId": "3", "mode": "RED"}
    assert same("header_kwargs", table, ok)[2] == {"topic": "T", "queue_id": 3, "mode": _Color.RED}
    assert same("header_kwargs", table, {"queueId": "3", "mode": "RED"})[0] == "raised"  # missing topic
    assert same("header_kwargs", table, {**ok, "queueId": "3x"})[0] == "raised"  # bad required int
    assert same("header_kwargs", table, {**ok, "mode": "GREEN"})[0] == "raised"  # bad required enum
    assert same("header_kwargs", table, {**ok, "flag": "bad", "color": "GREEN"})[0] == "returned"
    same("header_kwargs", table, dict(ok).items().mapping)  # a mapping that is not a dict


# --- the ROCKETMQ header codec ---------------------------------------------------------------------

_I16 = st.integers(-(2**15), 2**15 - 1)
_I32 = st.integers(-(2**31), 2**31 - 1)
_TEXT = st.one_of(st.text(max_size=20), st.text(alphabet=ANY_CHAR, max_size=6))
_EXT = st.dictionaries(_TEXT, st.one_of(st.none(), _TEXT), max_size=8)


@st.composite
def commands(draw: st.DrawFn, wide: bool = False) -> RemotingCommand:
    i16 = st.one_of(_I16, st.integers(-(2**40), 2**40)) if wide else _I16
    i32 = st.one_of(_I32, st.integers(-(2**70), 2**70)) if wide else _I32
    return RemotingCommand(
        code=draw(i16),
        language=draw(st.integers(0, 300) if wide else st.integers(0, 255)),
        version=draw(i16),
        opaque=draw(i32),
        flag=draw(i32),
        remark=draw(st.one_of(st.none(), _TEXT)),
        ext_fields=draw(st.one_of(st.none(), _EXT)),
        serialize_type=SerializeType.ROCKETMQ,
    )


@PROFILE
@given(commands(wide=True))
def test_encode_rocketmq_header(cmd: RemotingCommand) -> None:
    same("encode_rocketmq_header", cmd)


def test_encode_rocketmq_header_odd_values() -> None:
    base_cmd = RemotingCommand(code=10, serialize_type=SerializeType.ROCKETMQ)
    odd: list[dict[str, Any]] = [
        {"ext_fields": {"a": 1, "b": True, "c": False, "d": 2.5}},  # Java's String.valueOf
        {"ext_fields": {None: "x", "k": "v"}},  # null keys are skipped
        {"ext_fields": {7: "x"}},
        {"ext_fields": {"k" * 40000: "v"}},  # a key longer than the int16 length
        {"ext_fields": {"k\ud800": "v\udfff"}},  # lone surrogates -> '?'
        {"remark": b"bytes"},
        {"remark": ""},
        {"code": 2**15},
        {"opaque": -(2**31) - 1},
        {"flag": "1"},
        {"language": None},
        {"version": True},
        {"code": SerializeType.JSON},
    ]
    for change in odd:
        same("encode_rocketmq_header", dataclasses.replace(base_cmd, **change))


def _header_bytes(cmd: RemotingCommand) -> bytes:
    encoded: bytes = _speedups.reference("encode_rocketmq_header")(cmd)
    return encoded


@PROFILE
@given(commands(), st.data())
def test_decode_rocketmq_header(cmd: RemotingCommand, data: st.DataObject) -> None:
    h = _header_bytes(cmd)
    same("decode_rocketmq_header", memoryview(h))
    cut = data.draw(st.integers(0, len(h)))
    same("decode_rocketmq_header", memoryview(h[:cut]))  # truncated
    if h:
        at = data.draw(st.integers(0, len(h) - 1))
        flipped = bytearray(h)
        flipped[at] = data.draw(st.integers(0, 255))
        same("decode_rocketmq_header", memoryview(bytes(flipped)))
        same("decode_rocketmq_header", memoryview(flipped))  # a writable buffer


@PROFILE
@given(st.binary(max_size=80))
def test_decode_rocketmq_header_noise(h: bytes) -> None:
    same("decode_rocketmq_header", memoryview(h))


def _frame(remark_len: int, map_len: int, entries: bytes, tail: bytes = b"") -> bytes:
    return (
        struct.pack(">hBhii", 10, 0, 1, 2, 0)
        + struct.pack(">i", remark_len)
        + struct.pack(">i", map_len)
        + entries
        + tail
    )


@pytest.mark.parametrize(
    "h",
    [
        _frame(0, 0, b""),
        _frame(0, -5, b""),  # a negative map length is no map
        _frame(-1, 0, b""),  # negative remark length
        _frame(1000, 0, b""),  # remark beyond the header
        _frame(0, 11, b"\x00\x01k\x00\x00\x00\x02vv"),  # one entry
        _frame(0, 11, b"\x00\x01k\x00\x00\x00\x00" + b"\x00" * 4),  # zero-length value: None
        _frame(0, 4, b"\x00\x01k\x00\x00\x00\x02vv"),  # an entry running past the map length
        _frame(0, 9, b"\xff\xffk\x00\x00\x00\x02vv"),  # negative key length
        _frame(0, 9, b"\x00\x01k\xff\xff\xff\xffvv"),  # negative value length
        _frame(0, 9, b"\x00\x01k\x00\x00\x01\x00vv"),  # value length beyond the header
        _frame(0, 1, b"\x00"),  # truncated key length
        _frame(0, 12, b"\x00\x01k\x00\x00\x00\x02vv\x00"),  # a stray byte after the last entry
        _frame(0, 20, b"\x00\x02\xc3\x28\x00\x00\x00\x02\xff\xfe" + b"\x00" * 6),  # invalid UTF-8
        _frame(0, 2**31 - 1, b""),
        b"\x00" * 20,
    ],
)
def test_decode_rocketmq_header_bad_lengths(h: bytes) -> None:
    same("decode_rocketmq_header", memoryview(h))


def test_decode_rocketmq_header_wrong_type() -> None:
    assert same("decode_rocketmq_header", _frame(0, 0, b""))[0] == "raised"  # bytes, not a memoryview


@PROFILE
@given(commands())
def test_header_codec_round_trip(cmd: RemotingCommand) -> None:
    assert NATIVE is not None
    h = NATIVE.encode_rocketmq_header(cmd)
    back = NATIVE.decode_rocketmq_header(memoryview(h))
    assert NATIVE.encode_rocketmq_header(back) == h


# --- message_properties_to_string ------------------------------------------------------------------


@PROFILE
@given(st.one_of(st.none(), st.dictionaries(_TEXT, st.one_of(st.none(), _TEXT, st.integers()), max_size=10)))
def test_message_properties_to_string(props: dict[str, Any] | None) -> None:
    same("message_properties_to_string", props)


@pytest.mark.parametrize("props", [{}, {"KEYS": "k1 k2", "TAGS": "a"}, {1: "x"}, {"a": None}, [("a", "b")]])
def test_message_properties_to_string_cases(props: Any) -> None:
    same("message_properties_to_string", props)


_SEP_TEXT = st.text(alphabet=st.sampled_from(["\x01", "\x02", "a", "é", "😀", "="]), max_size=30)


@PROFILE
@given(st.one_of(_SEP_TEXT, st.text(max_size=20), st.dictionaries(_TEXT, _TEXT, max_size=6)))
def test_string_to_message_properties(props: Any) -> None:
    if isinstance(props, dict):
        props = message.message_properties_to_string(props)
    same("string_to_message_properties", props)


@pytest.mark.parametrize(
    "s",
    [
        "",
        "\x02",
        "\x01",
        "a\x01b",
        "a\x01b\x02",
        "\x01b\x02",
        "a\x01\x02",
        "a\x01b\x01c\x02",
        "a\x01b\x02a\x01c\x02",
        None,
        b"a",
    ],
)
def test_string_to_message_properties_cases(s: Any) -> None:
    same("string_to_message_properties", s)


# --- decode_frame ----------------------------------------------------------------------------------


@PROFILE
@given(commands(), st.sampled_from([SerializeType.ROCKETMQ, SerializeType.JSON]), st.binary(max_size=40), st.data())
def test_decode_frame(cmd: RemotingCommand, st_type: int, body: bytes, data: st.DataObject) -> None:
    cmd.serialize_type = st_type
    cmd.body = body or None
    frame = command.encode(cmd)[4:]  # decode_frame takes a frame without its length prefix
    same("decode_frame", frame)
    same("decode_frame", bytearray(frame))
    same("decode_frame", memoryview(b"xx" + frame + b"yy")[2:-2])  # a slice, as FrameDecoder passes
    cut = data.draw(st.integers(0, len(frame)))
    same("decode_frame", memoryview(frame[:cut]))
    at = data.draw(st.integers(0, len(frame) - 1))
    flipped = bytearray(frame)
    flipped[at] = data.draw(st.integers(0, 255))
    same("decode_frame", memoryview(flipped))


@PROFILE
@given(st.binary(max_size=60))
def test_decode_frame_noise(frame: bytes) -> None:
    same("decode_frame", frame)
    same("decode_frame", b"\x01\x00\x00" + bytes([len(frame) & 0xFF]) + frame)


def test_decode_frame_odd_buffers() -> None:
    frame = command.encode(
        RemotingCommand(code=11, ext_fields={"k": "v"}, serialize_type=SerializeType.ROCKETMQ, body=b"abcd")
    )[4:]
    same("decode_frame", memoryview(frame).cast("B", (len(frame),)))
    if len(frame) % 4 == 0:
        same("decode_frame", memoryview(frame).cast("i"))
    same("decode_frame", memoryview(frame * 2)[::2])  # not contiguous
    same("decode_frame", memoryview(frame).toreadonly())
    for bad in (None, "text", 12, b"", b"\x00\x00\x00"):
        assert same("decode_frame", bad)[0] == "raised"


# --- the JSON header decoder -----------------------------------------------------------------------

_JSON_SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False), _TEXT, st.just([])
)
_JSON_KEYS = st.sampled_from(["code", "language", "version", "opaque", "flag", "remark", "extFields", "other"])


@PROFILE
@given(st.dictionaries(_JSON_KEYS, st.one_of(_JSON_SCALAR, st.dictionaries(_TEXT, _JSON_SCALAR, max_size=4))))
def test_decode_json_header(obj: dict[str, Any]) -> None:
    import orjson

    try:
        header = orjson.dumps(obj)
    except TypeError:
        return
    same("decode_json_header", memoryview(header))
    same("decode_json_header", header)


@pytest.mark.parametrize(
    "header",
    [
        b"{}", b"[]", b"null", b"", b"{", b'{"code":"12"}', b'{"code":" 7 "}', b'{"code":2147483648}',
        b'{"code":1.5}', b'{"language":"GO"}', b'{"language":"NOPE"}', b'{"language":3}', b'{"language":99}',
        b'{"remark":5}', b'{"remark":null}', b'{"extFields":{"a":1,"b":true,"c":null,"d":"x"}}',
        b'{"extFields":[]}', b'{"extFields":{"a":{"b":1}}}', b'{"code":true}', b'\xff\xfe',
        b'{"code":10,"flag":1,"language":"JAVA","opaque":-1,"serializeTypeCurrentRPC":"JSON","version":477}',
    ],
)  # fmt: skip
def test_decode_json_header_cases(header: bytes) -> None:
    same("decode_json_header", memoryview(header))


@PROFILE
@given(commands(wide=True))
def test_encode_json_header(cmd: RemotingCommand) -> None:
    cmd.serialize_type = SerializeType.JSON
    same("encode_json_header", cmd)


def test_encode_json_header_odd_values() -> None:
    base_cmd = RemotingCommand(code=10, serialize_type=SerializeType.JSON)
    odd: list[dict[str, Any]] = [
        {"ext_fields": {"a": 1, "b": True, "c": None, "d": 2.5}},
        {"ext_fields": {None: "x", "k": "v"}},
        {"ext_fields": {"k\ud800": "v\udfff"}},
        {"ext_fields": {}},
        {"remark": "r\ud800"},
        {"remark": ""},
        {"code": 2**70},
        {"language": None},
        {"language": [1]},
        {"language": 1.0},
        {"language": 99},
        {"version": True},
    ]
    for change in odd:
        same("encode_json_header", dataclasses.replace(base_cmd, **change))


_FIELD_VALUES = st.one_of(
    st.none(), _TEXT, st.integers(-(2**70), 2**70), st.booleans(), st.floats(), st.sampled_from(list(_Color))
)


@PROFILE
@given(
    st.fixed_dictionaries(
        {k: _FIELD_VALUES for k in ("topic", "queue_id", "mode", "flag", "ratio", "unit_mode", "color", "name")}
    )
)
def test_header_ext_fields(values: dict[str, Any]) -> None:
    header = _AllKinds(**values)
    same("header_ext_fields", _AllKinds._fields_table(), header)


def test_header_ext_fields_common_shapes() -> None:
    header = _AllKinds(topic="T", queue_id=3, mode=_Color.RED, flag=7, unit_mode=True, name="x")
    r = same("header_ext_fields", _AllKinds._fields_table(), header)
    assert r[2] == {"topic": "T", "queueId": "3", "mode": "RED", "flag": "7", "unitMode": "true", "n": "x"}
    same("header_ext_fields", _AllKinds._fields_table(), _AllKinds(topic="T", queue_id=_Color.RED, mode=_Color.BLUE))
    same("header_ext_fields", _AllKinds._fields_table(), _AllKinds(topic="T", queue_id="4", mode=_Color.BLUE))
    assert header.to_ext_fields() == r[2]


_PROP_KEYS = st.sampled_from(["UNIQ_KEY", "WAIT", "TAGS", "KEYS", "DELAY", "TRAN_MSG", "a", "Aa", "BB", "é", "😀"])


@PROFILE
@given(st.dictionaries(st.one_of(_PROP_KEYS, _TEXT), _TEXT, max_size=12), st.sampled_from([1, 16, 128, 129]))
def test_hashmap_order(d: dict[str, str], capacity: int) -> None:
    java_lang._ORDERS.clear()  # first call: computed (by the reference); second: from the cache
    first = same("hashmap_order", d, capacity)
    again = same("hashmap_order", d, capacity)
    assert first == again
    if first[0] == "returned":
        assert list(first[2]) == list(again[2]) and first[2] == d


def test_hashmap_order_odd_input() -> None:
    same("hashmap_order", {"Aa": 1, "BB": 2}, 128)  # equal String#hashCode: insertion order kept
    same("hashmap_order", {"k": 1}, [128])  # an unhashable capacity
    same("hashmap_order", [("a", 1)], 128)
    same("hashmap_order", {1: "x", "a": "y"}, 128)


# --- write_record ----------------------------------------------------------------------------------

_I64 = st.integers(-(2**63), 2**63 - 1)


@st.composite
def records(draw: st.DrawFn) -> dict[str, Any]:
    wide = draw(st.booleans())
    i32 = st.one_of(_I32, st.integers(-(2**40), 2**40)) if wide else _I32
    i64 = st.one_of(_I64, st.integers(-(2**70), 2**70)) if wide else _I64
    born = draw(st.sampled_from([8, 20]))
    store = draw(st.sampled_from([8, 20]))
    return {
        "header": message.record_header_struct(born, store),
        "total": draw(i32),
        "version": draw(st.sampled_from([message.MESSAGE_MAGIC_CODE, message.MESSAGE_MAGIC_CODE_V2])),
        "body_crc": draw(i32),
        "queue_id": draw(i32),
        "flag": draw(i32),
        "queue_offset": draw(i64),
        "physical_offset": draw(i64),
        "sys_flag": draw(i32),
        "born_timestamp": draw(i64),
        "born_host": draw(st.binary(min_size=born, max_size=born)),
        "store_timestamp": draw(i64),
        "store_host": draw(st.binary(min_size=store, max_size=store)),
        "reconsume_times": draw(i32),
        "prepared_transaction_offset": draw(i64),
        "body": draw(st.binary(max_size=64)),
        "topic_part": draw(st.binary(min_size=1, max_size=20)),
        "properties": draw(st.one_of(st.binary(max_size=40), st.just(b"p" * 32768))),
        "head": draw(st.booleans()),
    }


_ARG_ORDER = [
    "header", "total", "version", "body_crc", "queue_id", "flag", "queue_offset", "physical_offset", "sys_flag",
    "born_timestamp", "born_host", "store_timestamp", "store_host", "reconsume_times", "prepared_transaction_offset",
    "body", "topic_part", "properties", "head",
]  # fmt: skip


def same_write(size: int, pos: int, rec: dict[str, Any], kind: Callable[[bytes], Any] = bytearray) -> bytes:
    """Both implementations write ``rec`` at ``pos`` into equal buffers: same outcome, same bytes."""
    assert NATIVE is not None
    background = bytes((i * 7) & 0xFF for i in range(size))
    bufs, outcomes = [], []
    for fn in (_speedups.reference("write_record"), NATIVE.write_record):
        buf = kind(background)
        outcomes.append(_outcome(fn, buf, pos, *[rec[k] for k in _ARG_ORDER]))
        bufs.append(bytes(buf))
    assert outcomes[1] == outcomes[0]
    assert bufs[1] == bufs[0]
    return bufs[0]


@PROFILE
@given(records(), st.integers(0, 8), st.integers(-2, 8))
def test_write_record(rec: dict[str, Any], pos: int, slack: int) -> None:
    size = pos + rec["header"].size + len(rec["body"]) + len(rec["topic_part"]) + 2 + len(rec["properties"]) + slack
    same_write(max(size, 0), pos, rec)


def _a_record(**change: Any) -> dict[str, Any]:
    rec = {
        "header": message.record_header_struct(8, 8), "total": 103, "version": message.MESSAGE_MAGIC_CODE,
        "body_crc": 5, "queue_id": 1, "flag": 0, "queue_offset": 9, "physical_offset": 4096, "sys_flag": 0,
        "born_timestamp": 1764272000000, "born_host": b"\x7f\x00\x00\x01\x00\x00\x27\x10",
        "store_timestamp": 1764272000001, "store_host": b"\x7f\x00\x00\x01\x00\x00\x2a\x9f",
        "reconsume_times": 0, "prepared_transaction_offset": 0, "body": b"hello", "topic_part": b"\x03abc",
        "properties": b"K\x01V\x02", "head": True,
    }  # fmt: skip
    rec.update(change)
    return rec


def test_write_record_odd_input() -> None:
    import mmap

    written = same_write(200, 10, _a_record())
    assert message.decode_message(written, 10).body == b"hello"
    same_write(200, 0, _a_record(header=message.record_header_struct(20, 8)))  # header does not fit the hosts
    same_write(200, 0, _a_record(born_host=bytearray(8)))
    same_write(200, 0, _a_record(body=memoryview(b"xhellox")[1:-1]))
    same_write(200, 0, _a_record(body=memoryview(b"h-e-l-l-o")[::2]))  # not contiguous
    same_write(200, 0, _a_record(body="text"))
    same_write(200, 0, _a_record(topic_part=memoryview(b"\x03abc")))
    same_write(200, 0, _a_record(queue_id=True, flag=message.MessageSysFlag.BORNHOST_V6_FLAG))
    same_write(200, 0, _a_record(queue_id=2**31))
    same_write(200, 0, _a_record(queue_id="1"))
    same_write(200, 0, _a_record(head=False))
    same_write(100, 0, _a_record())  # the body runs past the end: a bytearray grows in the reference
    same_write(50, 0, _a_record())  # not even the header fits
    same_write(200, -5, _a_record())  # struct counts a negative offset from the end
    same_write(200, 0, _a_record(), bytes)  # read-only
    with mmap.mmap(-1, 4096) as mm_a, mmap.mmap(-1, 4096) as mm_b:
        _speedups.reference("write_record")(mm_a, 100, *[_a_record()[k] for k in _ARG_ORDER])
        assert NATIVE is not None
        NATIVE.write_record(mm_b, 100, *[_a_record()[k] for k in _ARG_ORDER])
        assert mm_a[:] == mm_b[:]
        assert same("write_record", mm_b, 4090, *[_a_record()[k] for k in _ARG_ORDER])[0] == "raised"
