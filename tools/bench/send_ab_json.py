"""tools/bench/send_ab.py with JSON request headers, the serialize type the official Java clients
use by default (rocketmq.serialize.type=JSON); the broker answers in the request's type.

Usage: tools/bench/send_ab_json.py TREE_A TREE_B [--count N] [--repeats R] (send_ab.py's options)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import send_ab

from pyrmq.protocol.codes import SerializeType
from pyrmq.protocol.command import decode_frame, encode

_rocketmq_frame = send_ab.frame


def json_frame(i: int) -> bytes:
    """send_ab's SEND_MESSAGE_V2 frame with the same fields, re-encoded with a JSON header."""
    cmd = decode_frame(_rocketmq_frame(i)[4:])
    cmd.serialize_type = SerializeType.JSON
    return encode(cmd)


send_ab.frame = json_frame

if __name__ == "__main__":
    send_ab.main()
