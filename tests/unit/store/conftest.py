"""Fixtures for store unit tests: golden hex loading and a pinned clock."""

from __future__ import annotations

import pathlib

import pytest

GOLDEN_DIR = pathlib.Path(__file__).resolve().parents[2] / "golden" / "store"


def load_golden_hex(name: str) -> bytes:
    """Annotated hex: whitespace and '# ...' comments ignored."""
    text = (GOLDEN_DIR / name).read_text()
    digits = "".join(line.split("#", 1)[0] for line in text.splitlines())
    return bytes.fromhex("".join(digits.split()))


@pytest.fixture
def golden():
    return load_golden_hex


class FrozenClock:
    """ms clock that only moves when told to."""

    def __init__(self, now: int = 1_700_000_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


@pytest.fixture
def frozen_clock():
    return FrozenClock()
