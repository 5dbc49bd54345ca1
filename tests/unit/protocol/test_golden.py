"""Frames captured from the official rocketmq-remoting 5.5.0 (tests/golden/remoting/*.hex):
each must decode to the fields recorded in tests/golden/MANIFEST.json and re-encode byte for byte."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from support.fakes import GOLDEN_DIR, golden, golden_entry

from pyrmq.protocol.codes import LanguageCode, SerializeType
from pyrmq.protocol.command import decode_frame, encode
from pyrmq.protocol.framing import FrameDecoder

REMOTING = GOLDEN_DIR / "remoting"


def golden_files() -> list[Path]:
    return sorted(REMOTING.glob("*.hex"))


def test_golden_frames_present():
    # The captures come from compat/java-tests; an empty directory must not pass silently.
    files = golden_files()
    assert files, f"no golden frames in {REMOTING}"
    names = {p.name for p in files}
    for st in ("json", "rocketmq"):
        assert any(f".{st}." in n for n in names), f"no {st} captures"


@pytest.mark.parametrize("path", golden_files(), ids=lambda p: p.name)
def test_golden_frame_decodes_and_reencodes(path: Path):
    entry = golden_entry(path)
    assert entry is not None, f"{path.name} missing from MANIFEST.json"
    frame = golden(path)  # checks the sha256 and length recorded there

    # whole, through the stream decoder, and one byte at a time
    (cmd,) = FrameDecoder().feed(frame)
    dec = FrameDecoder()
    got = []
    for i in range(len(frame)):
        got += dec.feed(frame[i : i + 1])
        assert not got or i == len(frame) - 1, f"command emitted before the last byte ({i})"
    assert got == [cmd]
    assert decode_frame(frame[4:]) == cmd

    f = entry["fields"]
    assert cmd.serialize_type == SerializeType[f["serializeType"]]
    assert cmd.code == f["code"]
    assert cmd.language == LanguageCode[f["language"]]
    assert cmd.version == f["version"]
    assert cmd.opaque == f["opaque"]
    assert cmd.flag == f["flag"]
    assert cmd.is_response == path.name.endswith(".response.hex")
    if cmd.serialize_type == SerializeType.ROCKETMQ:
        # an empty remark and a null one are the same bytes on this wire
        assert cmd.remark == (f["remark"] or None)
    else:
        assert cmd.remark == f["remark"]
    assert cmd.ext_fields == f["extFields"]
    if f["bodyLength"]:
        assert cmd.body is not None and len(cmd.body) == f["bodyLength"]
        assert hashlib.sha256(cmd.body).hexdigest() == f["bodySha256"]
    else:
        assert cmd.body is None

    again = encode(cmd)
    assert again == frame, f"{path.name}\n got {again.hex(' ')}\nwant {frame.hex(' ')}"
