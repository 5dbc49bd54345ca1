"""pyrmq.dledger.entry: entry and index item bytes against the Java field order and a Java-written store."""

from __future__ import annotations

import pytest
from support.fakes import golden

from pyrmq.dledger import entry as e

ENTRY = e.DLedgerEntry(
    index=0x0102030405060708,
    term=42,
    pos=0x0A0B0C0D,
    channel=7,
    chain_crc=0x11223344,
    body_crc=0x55667708,
    body=b"hello",
)
ITEM = e.IndexItem(index=0x0102030405060708, term=42, pos=0x0A0B0C0D, size=53)


def test_offsets_are_javas() -> None:
    assert (e.POS_OFFSET, e.HEADER_SIZE, e.BODY_OFFSET, e.INDEX_UNIT_SIZE) == (24, 44, 48, 32)


def test_entry_golden() -> None:
    want = golden("dledger/entry_v1.hex")
    got = e.encode_entry(ENTRY)
    assert got == want, f"entry_v1.hex: got {got.hex(' ')}"
    assert e.decode_entry(want) == ENTRY
    assert ENTRY.size == len(want) == 53


def test_index_item_golden() -> None:
    want = golden("dledger/index_item_v1.hex")
    assert e.encode_index_item(ITEM) == want, e.encode_index_item(ITEM).hex(" ")
    assert e.decode_index_item(want) == ITEM


def test_decode_at_offset_and_followed_by_bytes() -> None:
    data = b"\x00" * 3 + e.encode_entry(ENTRY) + b"\xff" * 9
    assert e.decode_entry(data, 3) == ENTRY


@pytest.mark.parametrize("cut", [0, 1, 47, 48, 52])
def test_short_entry_raises(cut: int) -> None:
    with pytest.raises(e.EntryFormatError):
        e.decode_entry(e.encode_entry(ENTRY)[:cut])


def test_inconsistent_size_and_blank_raise() -> None:
    raw = bytearray(e.encode_entry(ENTRY))
    raw[7] += 1
    with pytest.raises(e.EntryFormatError, match="size"):
        e.decode_entry(bytes(raw))
    with pytest.raises(e.EntryFormatError, match="magic -1"):
        e.decode_entry(e.encode_blank(60))


def test_blank() -> None:
    assert e.encode_blank(12) == bytes.fromhex("ffffffff 0000000c 00000000")
    with pytest.raises(ValueError):
        e.encode_blank(7)


def test_java_store_first_entry_and_index_item() -> None:
    """The first entry and index item of the store written by the Java classes."""
    data = golden("dledger/java-0.3.2-tiny/dledger-n0/data/00000000000000000000")
    first = e.decode_entry(data)
    assert first == e.DLedgerEntry(index=0, term=3, pos=0, body=b"a" * 100)
    assert e.encode_entry(first) == data[: first.size]
    index = golden("dledger/java-0.3.2-tiny/dledger-n0/index/00000000000000000000")
    assert e.decode_index_item(index, 32) == e.IndexItem(index=1, term=3, pos=148, size=158)
