"""The decoder's contract as an invariant: any input gives commands or RemotingProtocolError."""

from __future__ import annotations

import contextlib
import struct

from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.fakes import GOLDEN_DIR, golden

from pyrmq.protocol.command import decode_frame
from pyrmq.protocol.errors import RemotingProtocolError
from pyrmq.protocol.framing import FrameDecoder

GOLDEN = GOLDEN_DIR / "remoting"


SEEDS = [golden(p) for p in sorted(GOLDEN.glob("*.hex")) + sorted((GOLDEN / "bad").glob("*.hex"))]


def feed_all(chunks: list[bytes]) -> None:
    dec = FrameDecoder(max_frame_length=1 << 16)
    try:
        for c in chunks:
            for cmd in dec.feed(c):
                assert isinstance(cmd.code, int) and isinstance(cmd.opaque, int)
    except RemotingProtocolError:
        pass


@st.composite
def mutated_seed(draw):
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(0, 6))):
        i = draw(st.integers(0, len(data) - 1))
        data[i] = draw(st.integers(0, 255))
    cut = draw(st.integers(0, len(data)))
    return bytes(data[:cut]) if draw(st.booleans()) else bytes(data)


def frames_with_payload(payload: bytes, st_byte: int) -> bytes:
    return struct.pack(">iI", 4 + len(payload), (st_byte << 24) | len(payload)) + payload


@settings(max_examples=400, deadline=None)
@given(st.lists(st.binary(max_size=64), max_size=8))
def test_random_bytes(chunks):
    feed_all(chunks)


@settings(max_examples=400, deadline=None)
@given(mutated_seed(), st.integers(1, 50))
def test_mutated_golden_frames(data, step):
    feed_all([data[i : i + step] for i in range(0, len(data), step)])


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=80), st.integers(0, 2))
@example(b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", 1)
@example(b"{}", 0)
def test_random_headers_in_valid_frames(payload, st_byte):
    """Well-formed frames around random header bytes: only header decoding is exercised."""
    with contextlib.suppress(RemotingProtocolError):
        decode_frame(frames_with_payload(payload, st_byte)[4:])


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
        max_leaves=10,
    ),
    st.sampled_from(["code", "language", "remark", "extFields", "opaque", "flag", "version"]),
)
def test_json_header_with_random_values(value, key):
    import orjson

    try:
        header = orjson.dumps({key: value, "extFields": {"k": value}} if key != "extFields" else {key: value})
    except TypeError:
        return
    with contextlib.suppress(RemotingProtocolError):
        decode_frame(frames_with_payload(header, 0)[4:])
