"""The shared test doubles of tests/support/fakes.py behave like what they stand for."""

from __future__ import annotations

import asyncio
import hashlib
import json

import pytest
from support import fakes
from support.fakes import FakeChannel, ManualClock

from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import FLAG_ONEWAY, FLAG_RESPONSE, RemotingCommand
from pyrmq.protocol.errors import RemotingTimeout


def test_fake_channel_records_marks_oneway_and_drops_after_close() -> None:
    ch = FakeChannel("10.0.0.9:4242")
    push = RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "g"})
    push.flag |= FLAG_RESPONSE
    assert ch.send_oneway(push) and ch.sent == [push]
    assert push.flag & FLAG_ONEWAY and not push.flag & FLAG_RESPONSE
    ch.close()
    assert not ch.send(RemotingCommand.response()) and ch.sent == [push]


def test_fake_channel_invoke_answers_or_times_out() -> None:
    req = RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, {})
    answered = FakeChannel(answer=lambda cmd: cmd.make_response(ResponseCode.SUCCESS, "ok"))
    assert asyncio.run(answered.invoke(req, 3)).remark == "ok" and answered.invoked == [req]
    with pytest.raises(RemotingTimeout, match="timeout 3000"):
        asyncio.run(FakeChannel().invoke(req, 3))


def test_manual_clock_moves_only_when_advanced() -> None:
    clock = ManualClock()
    assert clock() == clock.now() == ManualClock.START_MS
    clock.advance(1500)
    assert clock() == ManualClock.START_MS + 1500


def test_golden_reads_annotated_hex_and_checks_the_manifest(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(fakes, "GOLDEN_DIR", tmp_path)
    fakes._manifest.cache_clear()
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "a.hex").write_text("# header\n00 00 00 2a  # queueId = 42\nff\n")
    (tmp_path / "x" / "b.bin").write_bytes(b"\x01\x02")
    entry = {"sha256": hashlib.sha256(b"\x00\x00\x00\x2a\xff").hexdigest(), "length": 5}
    (tmp_path / "MANIFEST.json").write_text(json.dumps({"files": {"x/a.hex": entry}}))
    (tmp_path / "x" / "MANIFEST.json").write_text(json.dumps({"b.bin": {"sha256": "0" * 64}}))
    try:
        assert fakes.golden("x/a.hex") == b"\x00\x00\x00\x2a\xff"
        assert fakes.golden_entry(tmp_path / "x" / "a.hex") == entry
        with pytest.raises(AssertionError, match="changed without its MANIFEST entry"):
            fakes.golden("x/b.bin")
    finally:
        fakes._manifest.cache_clear()
