"""pyrmq.ha.protocol: reports and transfer frames round trip, split anywhere; bad frames raise."""

from __future__ import annotations

import random

import pytest

from pyrmq.ha.flow import FlowMonitor
from pyrmq.ha.protocol import (
    MAX_TRANSFER_BODY_SIZE,
    CommitLogStreamCheck,
    HAProtocolError,
    ReportDecoder,
    TransferDecoder,
    TransferFrame,
    encode_report,
    encode_transfer_header,
    first_transfer_offset,
)
from pyrmq.store import message as m

OFFSET = 0x0102030405060708


def frame_bytes(offset: int, body: bytes) -> bytes:
    return encode_transfer_header(offset, len(body)) + body


def test_golden_bytes():
    assert encode_report(OFFSET) == bytes.fromhex("0102030405060708")
    assert encode_transfer_header(OFFSET, 0x000B0C0D) == bytes.fromhex("0102030405060708 000b0c0d")
    assert encode_transfer_header(42, 0) == bytes.fromhex("000000000000002a 00000000")  # a heartbeat


def test_encoders_refuse_what_cannot_be_sent():
    with pytest.raises(ValueError):
        encode_report(-1)
    with pytest.raises(ValueError):
        encode_transfer_header(-1, 0)
    with pytest.raises(ValueError):
        encode_transfer_header(0, MAX_TRANSFER_BODY_SIZE + 1)


def test_transfer_round_trip_whole_bytewise_and_half_behind():
    frames = [TransferFrame(OFFSET, b""), TransferFrame(OFFSET, b"abc" * 100), TransferFrame(OFFSET + 300, b"z")]
    stream = b"".join(frame_bytes(f.physical_offset, f.body) for f in frames)
    assert TransferDecoder().feed(stream) == frames
    assert frames[0].is_heartbeat and not frames[1].is_heartbeat and frames[1].end_offset == OFFSET + 300
    dec = TransferDecoder()
    got = []
    ends = set()
    pos = 0
    for f in frames:
        pos += 12 + len(f.body)
        ends.add(pos)
    for i, b in enumerate(stream):
        out = dec.feed(bytes([b]))
        assert bool(out) == (i + 1 in ends), f"frame completed at byte {i}"
        got += out
    assert got == frames and dec.buffered == 0
    dec = TransferDecoder()
    half = 12 + 150  # the heartbeat and half of the next frame
    assert dec.feed(stream + stream[:half]) == [*frames, frames[0]]
    assert dec.buffered == 150
    assert dec.feed(stream[half:]) == frames[1:]


def test_transfer_random_splits():
    rnd = random.Random(12)
    frames = [TransferFrame(rnd.randrange(1 << 40), rnd.randbytes(rnd.randrange(0, 3000))) for _ in range(50)]
    stream = b"".join(frame_bytes(f.physical_offset, f.body) for f in frames)
    dec = TransferDecoder()
    got = []
    pos = 0
    while pos < len(stream):
        n = rnd.randrange(1, 5000)
        got += dec.feed(stream[pos : pos + n])
        pos += n
    assert got == frames


@pytest.mark.parametrize(
    "header",
    [
        encode_transfer_header(0, 0)[:8] + (-1).to_bytes(4, "big", signed=True),  # negative body size
        (-5).to_bytes(8, "big", signed=True) + bytes(4),  # negative offset
        encode_transfer_header(0, 0)[:8] + (MAX_TRANSFER_BODY_SIZE + 1).to_bytes(4, "big"),  # never fits
    ],
    ids=["negative_size", "negative_offset", "too_big"],
)
def test_bad_transfer_header_raises_and_stays_failed(header):
    dec = TransferDecoder()
    good = frame_bytes(8, b"x")
    with pytest.raises(HAProtocolError):
        dec.feed(good + header)
    with pytest.raises(HAProtocolError):
        dec.feed(good)


def test_a_bad_header_raises_before_its_body_arrives():
    with pytest.raises(HAProtocolError):
        TransferDecoder(max_body_size=100).feed(encode_transfer_header(0, 101))


def test_report_decoder_gives_the_last_whole_report():
    dec = ReportDecoder()
    assert dec.feed(encode_report(5)[:3]) is None
    assert dec.feed(encode_report(5)[3:]) == 5
    assert dec.feed(encode_report(7) + encode_report(9) + encode_report(11)[:4]) == 9
    assert dec.feed(encode_report(11)[4:]) == 11
    assert dec.feed(b"") is None
    with pytest.raises(HAProtocolError):
        dec.feed((-1).to_bytes(8, "big", signed=True))
    with pytest.raises(HAProtocolError):
        dec.feed(encode_report(1))


def test_first_transfer_offset_follows_java():
    size = 1024
    assert first_transfer_offset(0, 0, size) == 0
    assert first_transfer_offset(0, 3 * size + 17, size) == 3 * size  # empty slave: last file's start
    assert first_transfer_offset(500, 3 * size + 17, size) == 500


# --- the commit-log stream check ----------------------------------------------------------------

FILE = 1024


def record(offset: int, i: int) -> bytes:
    msg = m.MessageExtBrokerInner(
        topic="T", body=b"b" * (10 + i), queue_id=0, properties={"UNIQ_KEY": f"U{i}"}, store_host=("10.0.0.2", 10911)
    )
    return bytes(m.encode_message(msg, queue_offset=i, physical_offset=offset))


def commit_log(files: int) -> bytes:
    """A commit log of `files` files of FILE bytes, each ended by a blank record, as one stream."""
    out = bytearray()
    i = 0
    for _ in range(files):
        start = len(out)
        while True:
            rec = record(len(out), i)
            if len(out) - start + len(rec) + 8 > FILE:
                out += m.encode_blank(FILE - (len(out) - start))
                out += bytes(start + FILE - len(out))
                break
            out += rec
            i += 1
    return bytes(out)


def test_stream_check_accepts_a_real_stream_split_anywhere():
    stream = commit_log(3)
    rnd = random.Random(3)
    for _ in range(20):
        check = CommitLogStreamCheck(FILE, 0)
        pos = 0
        while pos < len(stream):
            n = rnd.randrange(1, 200)
            check.check(pos, stream[pos : pos + n])
            pos += min(n, len(stream) - pos)
        assert check.stream_end == len(stream)


def test_stream_check_starts_at_a_later_boundary():
    stream = commit_log(2)
    check = CommitLogStreamCheck(FILE, FILE)
    check.check(FILE, stream[FILE:])


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda b: b[:4] + b"\x00\x00\x00\x00" + b[8:],  # magic gone
        lambda b: (5).to_bytes(4, "big") + b[4:],  # total size below any record
        lambda b: b[:28] + (999).to_bytes(8, "big") + b[36:],  # PHYSICALOFFSET not its own
    ],
    ids=["magic", "size", "physical_offset"],
)
def test_stream_check_refuses_a_corrupted_record_and_changes_nothing(corrupt):
    stream = commit_log(1)
    first = m.peek_total_size_and_magic(stream)[0]
    check = CommitLogStreamCheck(FILE, 0)
    check.check(0, stream[:first])
    bad = corrupt(stream[first:])
    with pytest.raises(HAProtocolError):
        check.check(first, bad[:100])
    assert check.stream_end == first
    check.check(first, stream[first : first + 100])  # the good bytes still pass


def test_stream_check_refuses_a_head_split_over_frames():
    stream = commit_log(1)
    bad = stream[:28] + (999).to_bytes(8, "big") + stream[36:]
    check = CommitLogStreamCheck(FILE, 0)
    check.check(0, bad[:30])  # PHYSICALOFFSET not whole yet
    with pytest.raises(HAProtocolError):
        check.check(30, bad[30:40])


def test_stream_check_refuses_a_short_blank_and_a_gap():
    stream = bytearray(commit_log(1))
    blank_at = stream.index(m.encode_blank(8)[4:]) - 4
    stream[blank_at : blank_at + 4] = (8).to_bytes(4, "big")
    check = CommitLogStreamCheck(FILE, 0)
    with pytest.raises(HAProtocolError, match="blank"):
        check.check(0, bytes(stream))
    with pytest.raises(HAProtocolError, match="does not continue"):
        check.check(5, b"")


def test_stream_check_undo_forgets_the_last_frame():
    stream = commit_log(1)
    check = CommitLogStreamCheck(FILE, 0)
    check.check(0, stream[:50])
    check.check(50, stream[50:120])
    check.undo()
    assert check.stream_end == 50
    check.check(50, stream[50:300])
    assert check.stream_end == 300


def test_flow_monitor_reports_the_last_whole_second() -> None:
    now = [100.2]
    flow = FlowMonitor(lambda: now[0])
    flow.add(10)
    flow.add(5)
    assert flow.transferred_byte_in_second() == 0  # the current second is not over
    now[0] = 101.0
    assert flow.transferred_byte_in_second() == 15
    flow.add(7)
    now[0] = 103.5  # a silent second in between
    assert flow.transferred_byte_in_second() == 0
