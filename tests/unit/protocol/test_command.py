"""RemotingCommand: both header encodings byte for byte, JSON leniency, helpers, round trips."""

from __future__ import annotations

import struct

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyrmq.protocol.codes import LanguageCode, RequestCode, ResponseCode, SerializeType
from pyrmq.protocol.command import (
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    RemotingCommand,
    decode_frame,
    encode,
    encode_header,
    encode_parts,
    json_quote,
    next_opaque,
)
from pyrmq.protocol.errors import RemotingProtocolError
from pyrmq.protocol.version import PYRMQ_VERSION


def frame_of(header: bytes, st: int, body: bytes = b"") -> bytes:
    return struct.pack(">iI", 4 + len(header) + len(body), (st << 24) | len(header)) + header + body


def show(b: bytes) -> str:
    return b.hex(" ")


# --- spec worked examples ----------------------------------------------------

SPEC_1_5_FRAME = bytes.fromhex(
    "00 00 00 2d 01 00 00 29 00 69 00 01 df 00 00 00 01 00 00 00 00 00 00 00 00"
    " 00 00 00 14 00 05 74 6f 70 69 63 00 00 00 09 54 6f 70 69 63 54 65 73 74"
)


def test_spec_1_5_rocketmq_example():
    cmd = RemotingCommand(
        code=RequestCode.GET_ROUTEINFO_BY_TOPIC,
        opaque=1,
        ext_fields={"topic": "TopicTest"},
        serialize_type=SerializeType.ROCKETMQ,
        version=479,  # the spec's example is a 5.3.3 client's request
    )
    got = encode(cmd)
    assert got == SPEC_1_5_FRAME, show(got)
    assert decode_frame(SPEC_1_5_FRAME[4:]) == cmd


def test_spec_1_4_json_examples():
    req = RemotingCommand(code=105, opaque=7, ext_fields={"topic": "TopicTest"}, version=479)
    assert encode_header(req) == (
        b'{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA","opaque":7,'
        b'"serializeTypeCurrentRPC":"JSON","version":479}'
    )
    resp = RemotingCommand(
        code=17, flag=1, opaque=7, remark="No topic route info in name server for the topic: X", version=479
    )
    assert encode_header(resp) == (
        b'{"code":17,"flag":1,"language":"JAVA","opaque":7,'
        b'"remark":"No topic route info in name server for the topic: X",'
        b'"serializeTypeCurrentRPC":"JSON","version":479}'
    )
    # Appendix B: H = 131, frame length 135, type byte 0
    assert encode(req)[:12] == bytes.fromhex("00 00 00 87 00 00 00 83 7b 22 63 6f")


# Captured from rocketmq-remoting 5.5.0 (RemotingCommand#encodeHeader, fastjson2) for a
# response with code 1, opaque 5, version 0, extFields {"":"e","z":"","k":"v\"\\/"} (that
# HashMap order) and remark = chars U+0000..U+007F, U+2028, U+2029, "中文😀", lone U+D800.
ESCAPE_REMARK = "".join(map(chr, range(0x80))) + "\u2028\u2029中文😀\ud800"
ESCAPE_JSON_HEADER = (
    '{"code":1,"extFields":{"":"e","z":"","k":"v\\"\\\\/"},"flag":1,"language":"JAVA","opaque":5,'
    '"remark":"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e'
    "\\u000f\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a\\u001b"
    "\\u001c\\u001d\\u001e\\u001f !\\\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    '[\\\\]^_`abcdefghijklmnopqrstuvwxyz{|}~\x7f\u2028\u2029中文😀?",'
    '"serializeTypeCurrentRPC":"JSON","version":0}'
).encode()
ESCAPE_ROCKETMQ_FRAME = bytes.fromhex(
    "000000c3010000bf0001000000000000050000000100000091000102030405060708090a0b0c0d0e0f1011121314"
    "15161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f404142"
    "434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f70"
    "7172737475767778797a7b7c7d7e7fe280a8e280a9e4b8ade69687f09f98803f000000190000000000016500017a"
    "0000000000016b0000000476225c2f"
)


def test_string_escapes_match_java_5_5_0():
    cmd = RemotingCommand(
        code=1, flag=1, opaque=5, version=0, remark=ESCAPE_REMARK, ext_fields={"": "e", "z": "", "k": 'v"\\/'}
    )
    got = encode_header(cmd)
    assert got == ESCAPE_JSON_HEADER, got.decode()
    cmd.serialize_type = SerializeType.ROCKETMQ
    got = encode(cmd)
    assert got == ESCAPE_ROCKETMQ_FRAME, show(got)


def test_json_header_parses_as_json_and_quote_is_valid_json():
    s = ESCAPE_REMARK.replace("\ud800", "?")
    assert orjson.loads(json_quote(s)) == s
    assert orjson.loads(ESCAPE_JSON_HEADER)["remark"] == s


# --- JSON reading leniency (spec §1.4) ----------------------------------------


def test_go_client_header():
    h = b'{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"X"}}'
    cmd = decode_frame(frame_of(h, 0)[4:])
    assert cmd == RemotingCommand(
        code=105, language=LanguageCode.GO, version=317, opaque=1, flag=0, remark="", ext_fields={"topic": "X"}
    )


def test_json_lenient_reading():
    h = (
        b'{"zzz":[1,2],"extFields":{"offset":12,"b":true,"f":1.5,"n":null,"s":"x"},'
        b'"language":"KLINGON","opaque":-3,"code":"105","remark":12}'
    )
    cmd = decode_frame(frame_of(h, 0, b"BODY")[4:])
    assert cmd.code == 105
    assert cmd.language == LanguageCode.OTHER  # unknown names become OTHER (Java: null)
    assert cmd.version == 0 and cmd.flag == 0  # Java field defaults
    assert cmd.opaque == -3
    assert cmd.remark == "12"
    assert cmd.ext_fields == {"offset": "12", "b": "true", "f": "1.5", "n": None, "s": "x"}
    assert cmd.ext("n") is None and cmd.ext("n", "d") == "d" and cmd.ext("offset") == "12"
    assert cmd.body == b"BODY"
    assert cmd.serialize_type == SerializeType.JSON


def test_json_missing_everything_and_language_ordinal():
    cmd = decode_frame(frame_of(b"{}", 0)[4:])
    assert cmd == RemotingCommand(code=0, language=LanguageCode.JAVA, version=0)
    cmd = decode_frame(frame_of(b'{"code":1,"language":3}', 0)[4:])
    assert cmd.language == LanguageCode.PYTHON


@pytest.mark.parametrize(
    "header",
    [
        b'{"code":1.5}',
        b'{"code":true}',
        b'{"code":"abc"}',
        b'{"code":2147483648}',
        b'{"opaque":[1]}',
        b'{"extFields":[]}',
        b'{"extFields":{"a":{"b":1}}}',
        b'{"remark":{}}',
        b'{"language":1.0}',
        b"[]",
        b"nul",
        b"\xff\xfe",
        b"",
    ],
)
def test_json_header_rejections(header):
    with pytest.raises(RemotingProtocolError):
        decode_frame(frame_of(header, 0)[4:])


def test_unknown_language_int_is_written_as_other():
    cmd = RemotingCommand(code=1, language=99)
    assert b'"language":"OTHER"' in encode_header(cmd)
    cmd.serialize_type = SerializeType.ROCKETMQ
    assert decode_frame(encode(cmd)[4:]).language == 99  # ROCKETMQ keeps the byte


# --- ROCKETMQ specifics (spec §1.5) ------------------------------------------


def rmq_header(code=105, remark=b"", entries=()):
    h = struct.pack(">hBhii", code, 0, 479, 1, 0) + struct.pack(">i", len(remark)) + remark
    m = b"".join(struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v for k, v in entries)
    return h + struct.pack(">i", len(m)) + m


def test_rocketmq_duplicates_later_wins_and_empty_is_null():
    h = rmq_header(entries=[(b"a", b"1"), (b"b", b"x"), (b"a", b"2"), (b"b", b""), (b"c", b"")])
    cmd = decode_frame(frame_of(h, 1)[4:])
    assert cmd.ext_fields == {"a": "2", "b": None, "c": None}
    assert cmd.ext("b") is None


def test_rocketmq_strings_are_utf8_with_replacement():
    h = rmq_header(remark="ré".encode(), entries=[(b"k", b"v" * 128), ("clé".encode(), b"\xff")])
    cmd = decode_frame(frame_of(h, 1)[4:])
    assert (cmd.remark, cmd.ext_fields) == ("ré", {"k": "v" * 128, "clé": "\ufffd"})


def test_rocketmq_empty_remark_is_null_and_empty_map_is_none():
    cmd = RemotingCommand(code=1, remark="", ext_fields={}, serialize_type=SerializeType.ROCKETMQ)
    back = decode_frame(encode(cmd)[4:])
    assert back.remark is None and back.ext_fields is None
    # JSON keeps both
    cmd.serialize_type = SerializeType.JSON
    back = decode_frame(encode(cmd)[4:])
    assert back.remark == "" and back.ext_fields == {}


def test_rocketmq_negative_code_and_negative_map_length():
    h = struct.pack(">hBhii", -1, 0, 479, 1, 0) + struct.pack(">i", 0) + struct.pack(">i", -5)
    cmd = decode_frame(frame_of(h, 1)[4:])
    assert cmd.code == -1 and cmd.ext_fields is None  # Java: map length <= 0 means no map


@pytest.mark.parametrize(
    "header",
    [
        rmq_header()[:20],  # shorter than the fixed part + both lengths
        struct.pack(">hBhii", 1, 0, 1, 1, 0) + struct.pack(">i", -1) + struct.pack(">i", 0),  # negative remark
        struct.pack(">hBhii", 1, 0, 1, 1, 0) + struct.pack(">i", 10) + b"abc",  # remark past the header
        rmq_header(entries=[(b"a", b"1")])[:-1],  # value truncated
        struct.pack(">hBhii", 1, 0, 1, 1, 0) + struct.pack(">i", 0) + struct.pack(">i", 99) + b"\x00\x01a",
        struct.pack(">hBhii", 1, 0, 1, 1, 0) + struct.pack(">ii", 0, 3) + b"\xff\xff\x00",  # negative key len
        struct.pack(">hBhii", 1, 0, 1, 1, 0) + struct.pack(">ii", 0, 7) + b"\x00\x01a\xff\xff\xff\xff",
    ],
)
def test_rocketmq_header_rejections(header):
    with pytest.raises(RemotingProtocolError):
        decode_frame(frame_of(header, 1)[4:])


def test_rocketmq_encode_limits():
    with pytest.raises(ValueError):
        encode(RemotingCommand(code=200050, serialize_type=SerializeType.ROCKETMQ))  # POP codes: JSON only
    # JSON carries it fine
    assert decode_frame(encode(RemotingCommand(code=200050))[4:]).code == 200050


# --- helpers -----------------------------------------------------------------


def test_request_response_helpers():
    req = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": "g"}, b"body")
    req2 = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2)
    assert req2.opaque != req.opaque
    assert not req.is_response and not req.is_oneway
    assert req.version == PYRMQ_VERSION == 513 and req.language == LanguageCode.JAVA
    ow = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, oneway=True)
    assert ow.is_oneway and ow.flag == FLAG_ONEWAY

    req.serialize_type = SerializeType.ROCKETMQ
    req.language = LanguageCode.GO
    req.version = 317
    resp = req.make_response(ResponseCode.TOPIC_NOT_EXIST, "nope", {"x": "1"}, b"b")
    assert resp.opaque == req.opaque and resp.is_response and resp.flag == FLAG_RESPONSE
    assert resp.serialize_type == SerializeType.ROCKETMQ
    assert resp.language == LanguageCode.JAVA and resp.version == PYRMQ_VERSION
    assert (resp.code, resp.remark, resp.ext_fields, resp.body) == (17, "nope", {"x": "1"}, b"b")

    r = RemotingCommand.response()
    assert r.code == ResponseCode.SUCCESS and r.is_response
    c = RemotingCommand(code=1)
    c.mark_oneway()
    c.mark_response()
    assert c.flag == 3


def test_opaque_counter_wraps_like_java_atomic_integer(monkeypatch):
    import itertools

    import pyrmq.protocol.command as command

    monkeypatch.setattr(command, "_request_ids", itertools.count(2**31 - 2))
    assert [next_opaque() for _ in range(4)] == [2**31 - 2, 2**31 - 1, -(2**31), -(2**31) + 1]
    monkeypatch.setattr(command, "_request_ids", itertools.count(2**32 - 1))
    assert [next_opaque() for _ in range(2)] == [-1, 0]


def test_encode_parts_and_body():
    cmd = RemotingCommand(code=10, opaque=0x01020304, body=b"\x00\x01\x02")
    head, body = encode_parts(cmd)
    assert body == b"\x00\x01\x02"
    assert head + body == encode(cmd)
    assert struct.unpack(">i", head[:4])[0] == len(head) - 4 + 3
    assert encode_parts(RemotingCommand(code=10, body=b""))[1] is None
    assert decode_frame(encode(RemotingCommand(code=10, body=b""))[4:]).body is None
    # memoryview input, and a body that is a memoryview
    mv_cmd = RemotingCommand(code=10, body=memoryview(b"xyz"))  # type: ignore[arg-type]
    assert decode_frame(memoryview(encode(mv_cmd))[4:]).body == b"xyz"


def test_non_str_ext_values_are_stringified_like_java():
    cmd = RemotingCommand(code=1, ext_fields={"n": 5, "t": True, "f": False})  # type: ignore[dict-item]
    for st_ in SerializeType:
        cmd.serialize_type = st_
        assert decode_frame(encode(cmd)[4:]).ext_fields == {"n": "5", "t": "true", "f": "false"}


# --- property: encode -> decode is the identity (both header types) ---------

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@st.composite
def commands(draw):
    stype = draw(st.sampled_from(list(SerializeType)))
    rmq = stype == SerializeType.ROCKETMQ
    i16 = st.integers(-(2**15), 2**15 - 1)
    i32 = st.integers(-(2**31), 2**31 - 1)
    if rmq:
        remark = draw(st.none() | _text.filter(bool))  # "" and None are the same bytes
        ext = draw(st.none() | st.dictionaries(_text, _text.filter(bool) | st.none(), min_size=1, max_size=6))
        lang = draw(st.integers(0, 255))
    else:
        remark = draw(st.none() | _text)
        ext = draw(st.none() | st.dictionaries(_text, _text, max_size=6))
        lang = draw(st.sampled_from(list(LanguageCode)))
    return RemotingCommand(
        code=draw(i16 if rmq else i32),
        language=lang,
        version=draw(i16 if rmq else i32),
        opaque=draw(i32),
        flag=draw(i32),
        remark=remark,
        ext_fields=ext,
        body=draw(st.none() | st.binary(min_size=1, max_size=64)),
        serialize_type=stype,
    )


@settings(max_examples=300, deadline=None)
@given(commands())
def test_roundtrip(cmd):
    frame = encode(cmd)
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
    back = decode_frame(frame[4:])
    assert back == cmd
    assert encode(back) == frame


@settings(max_examples=300, deadline=None)
@given(commands())
def test_json_fast_path_equals_reference_writer(cmd):
    """The orjson fast path and the hand-written fastjson2 writer agree byte for byte."""
    from pyrmq.protocol.command import _encode_json_header, _encode_json_header_slow

    cmd.serialize_type = SerializeType.JSON
    if cmd.ext_fields:
        cmd.ext_fields = {k: v for k, v in cmd.ext_fields.items() if v is not None}
    assert _encode_json_header(cmd) == _encode_json_header_slow(cmd)
