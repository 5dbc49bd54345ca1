"""CommitLog record encode/decode against golden bytes and Java semantics (spec store-format §2)."""

from __future__ import annotations

import struct
import zlib

import pytest

from pyrmq.store import message as m


def _show(got: bytes) -> str:
    return got.hex(" ")


def test_golden_v1_record_encodes_byte_for_byte(golden):
    want = golden("commitlog_message_v1.hex")
    got = m.encode_record(
        topic=b"TopicTest",
        queue_id=3,
        flag=0x0A0B0C0D,
        queue_offset=0x0102030405060708,
        physical_offset=0x1112131415161718,
        sys_flag=0,
        born_timestamp=1700000000000,
        born_host=m.host_to_bytes(("192.168.0.1", 0x1234)),
        store_timestamp=1700000000123,
        store_host=m.host_to_bytes(("10.0.0.2", 10911)),
        reconsume_times=5,
        prepared_transaction_offset=0,
        body=b"Hello RocketMQ",
        properties=b"TAGS\x01TagA\x02KEYS\x01key1 key2\x02",
    )
    assert bytes(got) == want, _show(bytes(got))


def test_golden_v1_record_decodes_every_field(golden):
    raw = golden("commitlog_message_v1.hex")
    msg = m.decode_message(raw, check_crc=True)
    assert msg.store_size == 139 == len(raw)
    assert msg.magic_code == m.MESSAGE_MAGIC_CODE
    assert msg.body_crc == zlib.crc32(b"Hello RocketMQ") & 0x7FFFFFFF
    assert (msg.queue_id, msg.flag) == (3, 0x0A0B0C0D)
    assert msg.queue_offset == 0x0102030405060708
    assert msg.commit_log_offset == 0x1112131415161718
    assert msg.born_timestamp == 1700000000000 and msg.store_timestamp == 1700000000123
    assert msg.born_host == ("192.168.0.1", 0x1234)
    assert msg.store_host == ("10.0.0.2", 10911)
    assert msg.reconsume_times == 5 and msg.prepared_transaction_offset == 0
    assert msg.body == b"Hello RocketMQ" and msg.topic == "TopicTest"
    assert msg.properties == {"TAGS": "TagA", "KEYS": "key1 key2"}
    assert msg.msg_id == "0A0000020000" + "2A9F" + "1112131415161718"
    # header-only decode keeps every other field
    head = m.decode_message(raw, read_body=False)
    assert head.body is None and head.body_length == 14 and head.topic == "TopicTest"


def test_golden_v2_ipv6_record(golden):
    raw = golden("commitlog_message_v2_ipv6.hex")
    msg = m.decode_message(raw, check_crc=True)
    assert msg.magic_code == m.MESSAGE_MAGIC_CODE_V2
    assert msg.sys_flag == 0x30
    assert msg.born_host == ("::1", 1) and msg.store_host == ("fe80::2", 10911)
    assert msg.topic == "T6" and msg.body == b"v6" and msg.properties == {}
    assert msg.store_timestamp == 2
    assert len(msg.msg_id) == 56
    assert m.decode_message_id(msg.msg_id) == m.MessageId(("fe80::2", 10911), 1 << 32)
    again = m.encode_record(
        topic=b"T6",
        queue_id=1,
        flag=0,
        queue_offset=7,
        physical_offset=1 << 32,
        sys_flag=0,
        born_timestamp=1,
        born_host=m.host_to_bytes(("::1", 1)),
        store_timestamp=2,
        store_host=m.host_to_bytes(("fe80::2", 10911)),
        reconsume_times=0,
        prepared_transaction_offset=0,
        body=b"v6",
        properties=b"",
        version=m.MESSAGE_MAGIC_CODE_V2,
    )
    assert bytes(again) == raw, _show(bytes(again))
    assert m.store_timestamp_position(0x30) == 48 + 20


def test_golden_blank(golden):
    raw = golden("commitlog_blank_v1.hex")
    assert m.encode_blank(100) == raw
    with pytest.raises(m.MessageDecodeError, match="blank"):
        m.decode_message(raw + bytes(92))


def test_cal_msg_length_minimum_is_91():
    assert m.cal_msg_length(m.MESSAGE_MAGIC_CODE, 0, 0, 0, 0) == 91
    assert m.cal_msg_length(m.MESSAGE_MAGIC_CODE_V2, 0x30, 0, 0, 0) == 91 + 1 + 24


def test_crc_mismatch_and_bad_lengths_are_rejected(golden):
    raw = bytearray(golden("commitlog_message_v1.hex"))
    raw[100] ^= 0x01  # inside the body
    with pytest.raises(m.MessageDecodeError, match="CRC"):
        m.decode_message(raw, check_crc=True)
    m.decode_message(raw)  # without the check the record still parses
    bad = bytearray(golden("commitlog_message_v1.hex"))
    struct.pack_into(">i", bad, 0, 140)
    with pytest.raises(m.MessageDecodeError):
        m.decode_message(bad + b"\0")
    with pytest.raises(m.MessageDecodeError, match="magic"):
        m.decode_message(bytes(8) + bytes(100))
    with pytest.raises(m.MessageDecodeError):
        m.decode_message(golden("commitlog_message_v1.hex")[:60])


@pytest.mark.parametrize(
    "s, want",
    [
        ("", 0),
        ("TagA", 2598919),
        ("hello world", 1794106052),
        ("TopicTest#key1", None),
        ("\u00e9t\u00e9", None),
        ("\U0001f600", 1772899),
    ],
)
def test_java_string_hash(s, want):
    # reference: direct UTF-16 recurrence
    units = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "big")) & 0xFFFFFFFF
    ref = h - (1 << 32) if h >= 1 << 31 else h
    assert m.java_string_hash(s) == ref
    if want is not None:
        assert ref == want


def test_java_string_hash_overflows_like_java():
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE (a well-known Java fact)
    assert m.java_string_hash("polygenelubricants") == -(2**31)


def test_properties_round_trip_and_java_leniency():
    props = {"TAGS": "a", "KEYS": "k1 k2", "UNIQ_KEY": "X"}
    s = m.message_properties_to_string(props)
    assert s == "TAGS\x01a\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01X\x02"
    assert m.string_to_message_properties(s) == props
    # empty name/value dropped, missing trailing separator fine, value keeps later \x01
    assert m.string_to_message_properties("\x01v\x02k\x01\x02a\x01b\x01c") == {"a": "b\x01c"}
    assert m.message_properties_to_string({"a": None, "b": "1"}) == "b\x011\x02"


def test_message_id_round_trip():
    mid = m.create_message_id(("10.0.0.2", 10911), 0x1234)
    assert mid == "0A00000200002A9F0000000000001234"
    assert m.decode_message_id(mid) == m.MessageId(("10.0.0.2", 10911), 0x1234)
    with pytest.raises(ValueError):
        m.decode_message_id("ABCD")


def test_uniq_key_helpers():
    gen = m.UniqIdGenerator(ip=bytes([10, 1, 2, 3]), pid=4242)
    now = 1_700_000_000_000
    a, b = gen.create(now), gen.create(now)
    assert len(a) == 32 and a != b and a.isupper()
    assert m.UniqKey.ip_from_id(a) == "10.1.2.3"
    assert m.UniqKey.pid_from_id(a) == 4242
    assert m.UniqKey.near_time_from_id(a, now + 5) == now


def test_batch_body_round_trip():
    elems = [m.BatchElement(b"one", "TAGS\x01x\x02", 1), m.BatchElement(b"", "", 0), m.BatchElement(b"3" * 300)]
    body = m.encode_batch_body(elems)
    assert m.decode_batch_body(body) == elems
    assert struct.unpack_from(">i", body, 0)[0] == 20 + 3 + 2 + 7
    with pytest.raises(m.MessageDecodeError):
        m.decode_batch_body(body[:-1])


def test_decompress_body_zlib():
    raw = b"x" * 5000
    comp = zlib.compress(raw, 5)
    assert m.decompress_body(m.MessageSysFlag.COMPRESSED_FLAG, comp) == raw
    assert m.decompress_body(m.MessageSysFlag.COMPRESSED_FLAG | m.MessageSysFlag.COMPRESSION_ZLIB, comp) == raw
    assert m.decompress_body(0, comp) == comp


def test_choose_version_by_utf16_length():
    assert m.choose_version("a" * 127) is m.MessageVersion.MESSAGE_VERSION_V1
    assert m.choose_version("%RETRY%" + "g" * 121) is m.MessageVersion.MESSAGE_VERSION_V2


def test_decode_messages_stops_at_blank(golden):
    one = golden("commitlog_message_v1.hex")
    buf = one + one + m.encode_blank(50) + bytes(42)
    got = list(m.decode_messages(buf))
    assert len(got) == 2 and all(x.topic == "TopicTest" for x in got)
