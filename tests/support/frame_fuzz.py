"""Generated and mutated RocketMQ frames for the fuzz test: bytes a confused or hostile peer sends.

`FramePool` holds frames of many kinds: well-formed requests with unknown codes, wrong
field types and random bodies (a server must answer them), and malformed ones (wrong or huge
lengths, invalid JSON or ROCKETMQ headers, truncations, bit flips) after which a server may
close the connection. Only read-only request codes are used, so a fuzzed server's data and
settings stay as they were.
"""

from __future__ import annotations

import json
import random
import struct

from pyrmq.protocol.codes import RequestCode, SerializeType
from pyrmq.protocol.command import RemotingCommand, encode

#: request codes that read only (a fuzzed field must not change a topic, a config or an offset)
READ_ONLY_CODES = (
    RequestCode.GET_ROUTEINFO_BY_TOPIC,
    RequestCode.GET_KV_CONFIG,
    RequestCode.QUERY_CONSUMER_OFFSET,
    RequestCode.GET_MAX_OFFSET,
    RequestCode.GET_MIN_OFFSET,
    RequestCode.VIEW_MESSAGE_BY_ID,
    RequestCode.QUERY_MESSAGE,
    RequestCode.GET_CONSUMER_LIST_BY_GROUP,
)  # the big answers (all topics, the whole config) are left out: they would time the server

_FIELD_NAMES = ("topic", "queueId", "consumerGroup", "offset", "a", "b", "d", "e", "maxMsgNums", "key", "namespace")


def _value(rng: random.Random) -> str:
    return rng.choice(
        (
            "",
            "-1",
            "9" * 30,
            "abc",
            "TopicTest",
            "1.5",
            "true",
            "%DLQ%",
            "\u00e9\u4e2d\U0001f600",
            "x" * rng.randint(0, 300),
            str(rng.randint(-(2**63), 2**63)),
        )
    )


_KNOWN = {int(c) for c in RequestCode}


def _code(rng: random.Random) -> int:
    if rng.random() < 0.3:
        return rng.choice(READ_ONLY_CODES)
    code = rng.choice((rng.randint(-32768, 32767), rng.randint(1000, 9999), 0, -1, 32767))
    return code if code not in _KNOWN else 9999  # a known code that writes is never sent


def well_formed(rng: random.Random) -> bytes:
    """A frame that decodes: the server must answer it (an error answer is fine)."""
    fields = {rng.choice(_FIELD_NAMES): _value(rng) for _ in range(rng.randint(0, 6))}
    body = rng.randbytes(rng.choice((0, 0, 1, 17, 300, 5000))) or None
    cmd = RemotingCommand.request(_code(rng), fields, body=body)
    cmd.serialize_type = rng.choice((SerializeType.JSON, SerializeType.ROCKETMQ))
    return encode(cmd)


def _json_header(header: object) -> bytes:
    raw = json.dumps(header).encode() if not isinstance(header, bytes) else header
    return struct.pack(">ii", 4 + len(raw), len(raw)) + raw


def malformed(rng: random.Random) -> bytes:
    """A frame that does not decode (or lies about its size): answered or the connection closed."""
    kind = rng.randrange(10)
    if kind == 0:  # length below the header-length word, negative, or over the 16 MiB limit
        return struct.pack(">i", rng.choice((0, 1, 3, -1, -(2**31), 16 * 1024 * 1024 + 1, 2**31 - 1)))
    if kind == 1:  # header length larger than the frame
        return struct.pack(">ii", 8, rng.choice((5, 1000, 2**24 - 1))) + b"\x00" * 4
    if kind == 2:  # invalid JSON
        return _json_header(rng.choice((b"{", b"not json", b"\xff\xfe", b"[1,2]", b"null", b'{"code":')))
    if kind == 3:  # JSON of the wrong shape or types
        return _json_header(
            rng.choice(
                (
                    {"code": "abc"},
                    {"code": 10, "extFields": [1, 2]},
                    {"code": 10, "extFields": {"a": {"b": 1}}},
                    {"code": 2**40, "flag": "x"},
                    {"code": None, "opaque": 1.5},
                    {"code": 10, "serializeTypeCurrentRPC": "ROCKETMQ", "version": "v"},
                    {},
                )
            )
        )
    if kind == 4:  # ROCKETMQ header with lengths pointing past its end
        header = struct.pack(">hbhiii", 10, 0, 0, 1, 0, 9999) + b"rmk"
        return struct.pack(">ii", 4 + len(header), (1 << 24) | len(header)) + header
    if kind == 5:  # unknown serialize type
        raw = b'{"code":10}'
        return struct.pack(">ii", 4 + len(raw), (7 << 24) | len(raw)) + raw
    frame = bytearray(well_formed(rng))
    if kind == 6:  # bit flips anywhere after the length prefix
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(4, len(frame))
            frame[i] ^= 1 << rng.randrange(8)
        return bytes(frame)
    if kind == 7:  # bytes cut out of the middle (the length prefix now lies)
        i = rng.randrange(4, len(frame))
        del frame[i : i + rng.randint(1, 20)]
        return bytes(frame)
    if kind == 8:  # a header length one off
        (hlen,) = struct.unpack_from(">i", frame, 4)
        struct.pack_into(">i", frame, 4, hlen + rng.choice((-1, 1)))
        return bytes(frame)
    return rng.randbytes(rng.randint(1, 64))  # noise


class FramePool:
    """Generated frames to draw from (generating each of 100,000 frames afresh costs more than
    sending it): `good` well-formed ones, `bad` malformed ones."""

    def __init__(self, rng: random.Random, good: int = 4000, bad: int = 2000) -> None:
        self.rng = rng
        self.good = [well_formed(rng) for _ in range(good)]
        self.bad = [malformed(rng) for _ in range(bad)]

    def connection_script(self, n: int) -> tuple[list[bytes], bool]:
        """n frames for one connection: well-formed ones, and with some chance a malformed one
        last (after it the server may close); True when the last one is malformed."""
        rng = self.rng
        frames = rng.choices(self.good, k=n)
        bad = rng.random() < 0.6
        if bad:
            frames[-1] = rng.choice(self.bad)
        return frames, bad


__all__ = ["READ_ONLY_CODES", "FramePool", "malformed", "well_formed"]
