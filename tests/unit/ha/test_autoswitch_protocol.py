"""pyrmq.ha.autoswitch_protocol: the controller-mode HA units, byte for byte as Java lays them out
(AutoSwitchHAClient: state int + flags + broker id / state int + offset; AutoSwitchHAConnection:
state, body size, offset, epoch [, epoch start, confirm offset]); decoders fed whole, one byte at
a time (nothing before the last byte), and with trailing bytes that stay buffered."""

from __future__ import annotations

import pytest

from pyrmq.ha.autoswitch_protocol import (
    MASTER_HANDSHAKE,
    MASTER_TRANSFER,
    SLAVE_HANDSHAKE,
    SLAVE_REPORT,
    MasterHandshake,
    MasterStreamDecoder,
    MasterTransfer,
    SlaveHandshake,
    SlaveReport,
    SlaveStreamDecoder,
    encode_master_handshake,
    encode_master_transfer_header,
    encode_slave_handshake,
    encode_slave_report,
)
from pyrmq.ha.protocol import MAX_TRANSFER_BODY_SIZE, HAConnectionState, HAProtocolError


def test_state_ordinals_are_javas():
    assert [s.ordinal for s in HAConnectionState] == [0, 1, 2, 3, 4]
    assert [s.name for s in HAConnectionState] == ["READY", "HANDSHAKE", "TRANSFER", "SUSPEND", "SHUTDOWN"]
    assert HAConnectionState.from_ordinal(2) is HAConnectionState.TRANSFER
    assert HAConnectionState.from_ordinal(5) is None


def test_sizes_are_javas():
    assert SLAVE_HANDSHAKE.size == 4 + 4 + 8  # AutoSwitchHAClient.HANDSHAKE_HEADER_SIZE
    assert SLAVE_REPORT.size == 4 + 8  # AutoSwitchHAClient.TRANSFER_HEADER_SIZE
    assert MASTER_HANDSHAKE.size == 4 + 4 + 8 + 4  # AutoSwitchHAConnection.HANDSHAKE_HEADER_SIZE
    assert MASTER_TRANSFER.size == 20 + 8 + 8  # AutoSwitchHAConnection.TRANSFER_HEADER_SIZE


def test_golden_slave_units():
    assert encode_slave_handshake(SlaveHandshake(2, sync_from_last_file=False, async_learner=True)) == bytes.fromhex(
        "00000001000000010000000000000002"
    )
    assert encode_slave_handshake(SlaveHandshake(7, sync_from_last_file=True)) == bytes.fromhex(
        "00000001000100000000000000000007"
    )
    assert encode_slave_report(0x0102030405060708) == bytes.fromhex("000000020102030405060708")
    with pytest.raises(ValueError):
        encode_slave_report(-1)


def test_golden_master_units():
    hs = MasterHandshake(max_offset=124000, epoch=2, entries=((1, 0), (2, 124000)))
    assert encode_master_handshake(hs) == bytes.fromhex(
        "00000001"
        "00000018"
        "000000000001e460"
        "00000002"  # state, body 24, max offset, last epoch
        "00000001"
        "0000000000000000"  # epoch 1 from 0
        "00000002"
        "000000000001e460"  # epoch 2 from 124000
    )
    t = MasterTransfer(offset=0x100, epoch=3, epoch_start_offset=0x80, confirm_offset=0x90, body=b"abc")
    assert encode_master_transfer_header(t) == bytes.fromhex(
        "000000020000000300000000000001000000000300000000000000800000000000000090"
    )
    # a heartbeat before any transfer carries offset -1 (Java's nextTransferFromWhere)
    hb = encode_master_transfer_header(MasterTransfer(-1, 1, 0, 0))
    assert hb[8:16] == b"\xff" * 8


def _feed_all_ways(decoder_cls, data: bytes, expected: list) -> None:
    assert decoder_cls().feed(data) == expected
    d = decoder_cls()
    got = []
    for i in range(len(data)):
        out = d.feed(data[i : i + 1])
        if i < len(data) - 1 and len(expected) == 1:
            assert out == [], f"event before the last byte (at {i})"
        got += out
    assert got == expected
    d = decoder_cls()
    assert d.feed(data + data[:5]) == expected  # trailing bytes stay buffered
    assert d.feed(data[5:]) == expected


def test_slave_stream_decodes_handshake_and_reports():
    hs = SlaveHandshake(2, True, False)
    _feed_all_ways(SlaveStreamDecoder, encode_slave_handshake(hs), [hs])
    _feed_all_ways(SlaveStreamDecoder, encode_slave_report(42), [SlaveReport(42)])
    both = encode_slave_handshake(hs) + encode_slave_report(0) + encode_slave_report(7)
    assert SlaveStreamDecoder().feed(both) == [hs, SlaveReport(0), SlaveReport(7)]


def test_master_stream_decodes_handshake_and_frames():
    hs = MasterHandshake(5, 1, ((1, 0),))
    _feed_all_ways(MasterStreamDecoder, encode_master_handshake(hs), [hs])
    empty = MasterHandshake(0, -1, ())
    _feed_all_ways(MasterStreamDecoder, encode_master_handshake(empty), [empty])
    t = MasterTransfer(10, 1, 0, 9, b"xyz" * 10)
    _feed_all_ways(MasterStreamDecoder, encode_master_transfer_header(t) + t.body, [t])
    hb = MasterTransfer(40, 1, 0, 40)
    assert hb.is_heartbeat
    _feed_all_ways(MasterStreamDecoder, encode_master_transfer_header(hb), [hb])


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (bytes.fromhex("00000003") + bytes(12), "SUSPEND"),
        (bytes.fromhex("7fffffff") + bytes(12), "garbage state"),
        (bytes.fromhex("00000002ffffffffffffffff"), "negative offset"),
    ],
)
def test_slave_stream_refuses(data, why):
    d = SlaveStreamDecoder()
    with pytest.raises(HAProtocolError):
        d.feed(data)
    with pytest.raises(HAProtocolError):  # and stays failed
        d.feed(encode_slave_report(1))


@pytest.mark.parametrize(
    "data",
    [
        bytes.fromhex("00000004") + bytes(32),  # SHUTDOWN
        MASTER_TRANSFER.pack(2, -1, 0, 1, 0, 0),  # negative body size
        MASTER_TRANSFER.pack(2, MAX_TRANSFER_BODY_SIZE + 1, 0, 1, 0, 0),  # beyond the Java slave's buffer
        MASTER_TRANSFER.pack(2, 0, -2, 1, 0, 0),  # offset below -1
        MASTER_HANDSHAKE.pack(1, 13, 0, 1),  # a body that is not whole 12-byte entries
    ],
)
def test_master_stream_refuses(data):
    d = MasterStreamDecoder()
    with pytest.raises(HAProtocolError):
        d.feed(data)
    with pytest.raises(HAProtocolError):
        d.feed(b"")
