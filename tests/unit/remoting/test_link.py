"""The front-end link codec: messages survive any cut of the byte stream; long DATA is split;
a stream that is not link messages is refused."""

from __future__ import annotations

import random
import struct

import pytest

from pyrmq.remoting.link import (
    MAX_PAYLOAD,
    LinkDecoder,
    LinkKind,
    LinkProtocolError,
    decode_open,
    encode,
    encode_open,
)


def wire(*parts_lists: list) -> bytes:
    return b"".join(bytes(p) for parts in parts_lists for p in parts)


def test_round_trip_under_every_cut():
    msgs = [
        (encode_open(7, "127.0.0.1:5555", "127.0.0.1:10911"), LinkKind.OPEN, 7),
        (encode(LinkKind.DATA, 7, b"\x00\x00\x00\x10frame bytes"), LinkKind.DATA, 7),
        (encode(LinkKind.PAUSE_WRITING, 7), LinkKind.PAUSE_WRITING, 7),
        (encode(LinkKind.CLOSE, 2**32 - 1), LinkKind.CLOSE, 2**32 - 1),
    ]
    data = wire(*(m[0] for m in msgs))
    rng = random.Random(5)
    for _ in range(200):
        dec, got, pos = LinkDecoder(), [], 0
        while pos < len(data):
            step = rng.randint(1, 12)
            got += dec.feed(data[pos : pos + step])
            pos += step
        assert [(m.kind, m.conn) for m in got] == [(k, c) for _, k, c in msgs]
        assert dec.buffered == 0
    assert decode_open(got[0].payload) == ("127.0.0.1:5555", "127.0.0.1:10911")
    assert got[1].payload == b"\x00\x00\x00\x10frame bytes" and got[2].payload == b""


def test_long_data_is_cut_into_messages_that_join_back():
    body = bytes(range(256)) * (MAX_PAYLOAD // 256 * 2 + 3)
    parts = encode(LinkKind.DATA, 3, body)
    got = LinkDecoder().feed(wire(parts))
    assert len(got) == 3 and all(m.kind is LinkKind.DATA and m.conn == 3 for m in got)
    assert b"".join(m.payload for m in got) == body


@pytest.mark.parametrize(
    "raw",
    [
        struct.pack(">IBI", 4, 2, 1),  # shorter than its own head
        struct.pack(">IBI", MAX_PAYLOAD + 6, 2, 1),  # longer than any message
        struct.pack(">IBI", 5, 99, 1),  # no such kind
    ],
)
def test_a_stream_that_is_not_link_messages_is_refused(raw):
    with pytest.raises(LinkProtocolError):
        LinkDecoder().feed(raw)
