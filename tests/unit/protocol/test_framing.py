"""FrameDecoder: whole, byte by byte, with half a frame behind; bad frames; buffer protocol."""

from __future__ import annotations

import struct

import pytest
from support.fakes import GOLDEN_DIR, golden

from pyrmq.protocol.codes import RequestCode, SerializeType
from pyrmq.protocol.command import RemotingCommand, decode_frame, encode
from pyrmq.protocol.errors import RemotingProtocolError
from pyrmq.protocol.framing import MAX_FRAME_LENGTH, FrameDecoder

GOLDEN = GOLDEN_DIR / "remoting"


def sample_frames() -> list[tuple[str, bytes]]:
    """Golden captures plus a few of our own (values you can spot)."""
    out = [(p.name, golden(p)) for p in sorted(GOLDEN.glob("*.hex"))]
    for st in SerializeType:
        cmd = RemotingCommand(
            code=RequestCode.SEND_MESSAGE_V2,
            opaque=0x01020304,
            remark="r",
            ext_fields={"b": "TopicTest", "a": "PG"},
            body=bytes(range(256)),
            serialize_type=st,
        )
        out.append((f"own.{st.name.lower()}", encode(cmd)))
    return out


FRAMES = sample_frames()


@pytest.mark.parametrize("name,frame", FRAMES, ids=[n for n, _ in FRAMES])
def test_whole_bytewise_and_followed_by_half(name, frame):
    expected = decode_frame(frame[4:])
    # whole
    assert FrameDecoder().feed(frame) == [expected]
    # one byte at a time: nothing before the last byte
    dec = FrameDecoder()
    for i, b in enumerate(frame):
        got = dec.feed(bytes([b]))
        assert got == ([expected] if i == len(frame) - 1 else []), f"{name} at byte {i}"
    assert dec.buffered == 0
    # followed by half of the next frame: that half stays buffered
    dec = FrameDecoder()
    half = len(frame) // 2
    assert dec.feed(frame + frame[:half]) == [expected]
    assert dec.buffered == half
    assert dec.feed(frame[half:]) == [expected]
    assert dec.buffered == 0


def test_many_frames_in_one_chunk_and_odd_splits():
    frames = [f for _, f in FRAMES]
    stream = b"".join(frames) * 3
    expected = [decode_frame(f[4:]) for f in frames] * 3
    for step in (1, 3, 7, 64, 1000, len(stream)):
        dec = FrameDecoder()
        got = []
        for i in range(0, len(stream), step):
            got += dec.feed(stream[i : i + step])
        assert got == expected, f"step {step}"


def test_buffered_protocol_interface():
    frame = encode(RemotingCommand(code=34, opaque=9, body=b"x" * 200_000))
    dec = FrameDecoder()
    got = []
    pos = 0
    while pos < len(frame):
        buf = dec.get_buffer(-1)
        assert len(buf) >= 16 * 1024  # framing._MIN_FREE: a read always has that much room
        n = min(len(buf), len(frame) - pos, 50_000)
        buf[:n] = frame[pos : pos + n]
        del buf
        got += dec.buffer_updated(n)
        pos += n
    assert [c.opaque for c in got] == [9] and len(got[0].body) == 200_000


def test_view_held_across_growth_does_not_break():
    """asyncio keeps the get_buffer view alive during buffer_updated; growth must not resize it."""
    dec = FrameDecoder()
    big = encode(RemotingCommand(code=1, body=b"y" * 300_000))
    views = []
    pos = 0
    got = []
    while pos < len(big):
        v = dec.get_buffer(-1)
        views.append(v)  # never released during this test
        n = min(len(v), len(big) - pos)
        v[:n] = big[pos : pos + n]
        got += dec.buffer_updated(n)
        pos += n
    assert len(got) == 1 and len(got[0].body) == 300_000
    # and the decoder keeps working after compaction with views alive
    assert dec.feed(encode(RemotingCommand(code=2))) == [RemotingCommand(code=2)]


def test_commands_hold_no_view_of_the_buffer():
    dec = FrameDecoder()
    cmd = dec.feed(encode(RemotingCommand(code=1, body=b"abc")))[0]
    assert type(cmd.body) is bytes
    dec.feed(encode(RemotingCommand(code=2, body=b"zzz")))
    assert cmd.body == b"abc"


BAD = {p.stem: golden(p) for p in sorted((GOLDEN / "bad").glob("*.hex"))}


def test_bad_files_exist():
    for name in (
        "truncated_declared_frame",
        "header_length_over_frame",
        "unknown_serialize_type",
        "oversized_frame",
        "bad_json_header",
    ):
        assert name in BAD, name


@pytest.mark.parametrize("name", sorted(n for n in BAD if n != "truncated_declared_frame"))
def test_bad_frames_raise(name):
    data = BAD[name]
    dec = FrameDecoder()
    with pytest.raises(RemotingProtocolError):
        dec.feed(data)
    # the decoder stays failed: a connection is never resynchronised
    with pytest.raises(RemotingProtocolError):
        dec.feed(encode(RemotingCommand(code=1)))
    # byte by byte fails too, at the latest on the last byte
    dec = FrameDecoder()
    with pytest.raises(RemotingProtocolError):
        for b in data:
            dec.feed(bytes([b]))


def test_truncated_declared_frame():
    data = BAD["truncated_declared_frame"]
    dec = FrameDecoder()
    assert dec.feed(data) == []  # a stream may still deliver the rest
    assert dec.buffered == len(data)
    with pytest.raises(RemotingProtocolError, match="bad header length"):
        decode_frame(data[4:])  # as a complete frame it is malformed


def test_oversized_rejected_from_prefix_alone():
    dec = FrameDecoder()
    with pytest.raises(RemotingProtocolError, match="exceeds"):
        dec.feed(struct.pack(">i", MAX_FRAME_LENGTH - 3))
    # exactly at the limit: accepted (waits for the rest)
    assert FrameDecoder().feed(struct.pack(">i", MAX_FRAME_LENGTH - 4)) == []
    # a custom limit
    with pytest.raises(RemotingProtocolError):
        FrameDecoder(max_frame_length=100).feed(struct.pack(">i", 97))


@pytest.mark.parametrize("length", [0, 1, 3, -1])
def test_frame_shorter_than_header_word(length):
    with pytest.raises(RemotingProtocolError):
        FrameDecoder().feed(struct.pack(">i", length) + b"\x00" * 8)


def test_a_decoder_with_nothing_pending_gives_its_read_buffer_back():
    """Idle connections hold no read buffer: one with a whole frame decoded returns its 64 KiB
    buffer to a shared pool and the next read (on any decoder) takes it from there; a decoder in
    the middle of a frame keeps its own; a buffer grown for a large frame is not pooled."""
    from pyrmq.protocol import framing

    frame = FRAMES[-1][1]
    framing._POOL.clear()
    decoders = [FrameDecoder() for _ in range(1000)]
    for d in decoders:
        assert [c.body for c in d.feed(frame)] == [decode_frame(frame[4:]).body]
        assert d.buffered == 0
    assert len(framing._POOL) == 1  # one buffer served all 1,000 in turn
    shared = framing._POOL[0]

    partial = FrameDecoder()
    assert partial.feed(frame[:10]) == []
    assert not framing._POOL  # taken, and kept while the frame is incomplete
    other = FrameDecoder()
    view = other.get_buffer(100)
    assert view.obj is not shared  # a second buffer, not the one holding the partial frame
    del view
    assert [c.body for c in partial.feed(frame[10:])] == [decode_frame(frame[4:]).body]
    assert len(framing._POOL) == 1 and framing._POOL[0] is shared

    big = RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, opaque=1, body=b"x" * (200 * 1024))
    dec = FrameDecoder()
    assert [c.body for c in dec.feed(encode(big))] == [big.body]
    assert len(framing._POOL) == 1 and framing._POOL[0] is shared  # the grown one was not pooled
