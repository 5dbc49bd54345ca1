"""A record is written head-last: until TOTALSIZE/MAGICCODE land, recovery sees the end of the
data, so a writer killed mid-record never leaves a 'valid' record with missing properties."""

from __future__ import annotations

import pytest

from pyrmq.store import message as m


def _args(props):
    header = m.record_header_struct(8, 8)
    topic_part = m.topic_field(b"T", m.MESSAGE_MAGIC_CODE)
    total = header.size + 3 + len(topic_part) + 2 + 4
    return (
        header,
        total,
        m.MESSAGE_MAGIC_CODE,
        m.crc32(b"abc"),
        1,
        0,
        5,
        100,
        0,
        1,
        m.host_to_bytes(("1.2.3.4", 5)),
        2,
        m.host_to_bytes(("1.2.3.4", 6)),
        0,
        0,
        b"abc",
        topic_part,
        props,
    )


class _Uncopyable:
    """Has a length but no bytes: copying it fails, like a writer dying at that point."""

    def __len__(self) -> int:
        return 4


def test_head_written_last():
    buf = bytearray(300)
    with pytest.raises(TypeError):
        m.write_record(buf, 10, *_args(_Uncopyable()))  # dies while copying the properties
    assert buf[10:18] == bytes(8) and any(buf[18:])  # the rest was written, the head is still zero
    assert list(m.decode_messages(memoryview(buf)[10:])) == []
    m.write_record(buf, 10, *_args(b"K\x01v\x02"))
    (rec,) = list(m.decode_messages(memoryview(buf)[10:], check_crc=True))
    assert rec.properties == {"K": "v"} and rec.queue_offset == 5


def test_batch_head_left_to_the_caller():
    buf = bytearray(300)
    args = _args(b"K\x01v\x02")
    m.write_record(buf, 0, *args, False)
    assert buf[0:8] == bytes(8)
    m.write_record_head(buf, 0, args[1], m.MESSAGE_MAGIC_CODE)
    assert len(list(m.decode_messages(buf))) == 1
