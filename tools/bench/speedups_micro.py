"""Each compiled codec function (pyrmq/_speedups) against its Python reference, on the inputs of
one SEND_MESSAGE_V2: ns per call and the ratio. Not a unit test: numbers for docs/benchmarks.md.

Usage: tools/bench/speedups_micro.py [--seconds S]   (with the extension built: pip install -e .)
"""

from __future__ import annotations

import argparse
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import pyrmq.common.constants
import pyrmq.common.java_lang
import pyrmq.store.message
from pyrmq import _speedups
from pyrmq.protocol import command
from pyrmq.protocol.codes import SerializeType
from pyrmq.protocol.command import RemotingCommand, encode
from pyrmq.protocol.headers.base import _header_kwargs  # noqa: F401  (registers the reference)
from pyrmq.protocol.headers.broker import SendMessageRequestHeaderV2, SendMessageResponseHeader

_PROPS = {"UNIQ_KEY": "7F0000010C6418B4AAC2" + "0" * 12, "WAIT": "true", "TAGS": "TagA", "KEYS": "k1", "DELAY": "0"}

_RESPONSE_HEADER = SendMessageResponseHeader(msg_id="7F00000100002A9F0000000000001C40", queue_id=3, queue_offset=1204)


def _send_request() -> RemotingCommand:
    ext = {
        "a": "ProducerGroupName",
        "b": "TopicTest",
        "c": "TBW102",
        "d": "4",
        "e": "3",
        "f": "0",
        "g": "1764272000000",
        "h": "0",
        "i": pyrmq.store.message.message_properties_to_string(_PROPS),
        "j": "0",
        "k": "false",
        "m": "false",
    }
    cmd = RemotingCommand.request(310, ext, b"x" * 1024)
    cmd.serialize_type = SerializeType.ROCKETMQ
    return cmd


def _send_response() -> RemotingCommand:
    ext = {"msgId": "7F00000100002A9F0000000000001C40", "queueId": "3", "queueOffset": "1204", "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}  # fmt: skip
    cmd = RemotingCommand(code=0, opaque=77, flag=1, ext_fields=ext, serialize_type=SerializeType.ROCKETMQ)
    return cmd


def _record_args() -> tuple[Any, ...]:
    m = pyrmq.store.message
    host = b"\x7f\x00\x00\x01\x00\x00\x27\x10"
    props = m.message_properties_to_string(_PROPS).encode()
    topic_part = m.topic_field(b"TopicTest", m.MESSAGE_MAGIC_CODE)
    header = m.record_header_struct(8, 8)
    total = header.size + 1024 + len(topic_part) + 2 + len(props)
    return (bytearray(total + 64), 32, header, total, m.MESSAGE_MAGIC_CODE, 5, 3, 0, 1204, 1 << 30, 0,
            1764272000000, host, 1764272000001, host, 0, 0, b"x" * 1024, topic_part, props)  # fmt: skip


def cases() -> list[tuple[str, str, tuple[Any, ...]]]:
    req = _send_request()
    header = _speedups.reference("encode_rocketmq_header")(req)
    return [
        ("decode_rocketmq_header", "a SEND_MESSAGE_V2 header (12 fields)", (memoryview(header),)),
        ("decode_frame", "a SEND_MESSAGE_V2 frame, 1 KiB body", (memoryview(encode(req))[4:],)),
        ("decode_json_header", "the same header as JSON", (command._encode_json_header(req),)),
        ("encode_rocketmq_header", "a SEND answer header (5 fields)", (_send_response(),)),
        ("encode_json_header", "the same answer as JSON", (_send_response(),)),
        ("header_kwargs", "SendMessageRequestHeaderV2 fields", (SendMessageRequestHeaderV2._fields_table(), req.ext_fields)),
        ("header_ext_fields", "a SendMessageResponseHeader", (SendMessageResponseHeader._fields_table(), _RESPONSE_HEADER)),
        ("parse_java_int", "'1764272000000'", ("1764272000000",)),
        ("java_string_hash", "the index key 'TopicTest#<UNIQ_KEY>'", ("TopicTest#" + _PROPS["UNIQ_KEY"],)),
        ("message_properties_to_string", "five properties", (_PROPS,)),
        ("hashmap_order", "five properties (a key order seen before)", (_PROPS,)),
        ("string_to_message_properties", "five properties", (req.ext_fields["i"],)),
        ("parse_java_bool", "'false'", ("false",)),
        ("validate_topic", "'TopicTest'", ("TopicTest",)),
        ("write_record", "a record with a 1 KiB body into a bytearray", _record_args()),
    ]  # fmt: skip


def _loops(fn: Callable[..., Any], args: tuple[Any, ...], seconds: float) -> int:
    """How many calls take about ``seconds``."""
    n = 1000
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn(*args)
        dt = time.perf_counter() - t0
        if dt > seconds / 10:
            return max(1000, int(n * seconds / dt))
        n *= 4


def _ns(fn: Callable[..., Any], args: tuple[Any, ...], n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn(*args)
    return (time.perf_counter() - t0) / n * 1e9


def per_call(
    ref: Callable[..., Any], fast: Callable[..., Any], args: tuple[Any, ...], seconds: float
) -> tuple[float, float]:
    """ns per call of each: the best of 7 rounds, the two alternating (a busy machine slows both alike)."""
    n_ref, n_fast = _loops(ref, args, seconds / 7), _loops(fast, args, seconds / 7)
    best_ref = best_fast = float("inf")
    for _ in range(7):
        best_ref = min(best_ref, _ns(ref, args, n_ref))
        best_fast = min(best_fast, _ns(fast, args, n_fast))
    return best_ref, best_fast


def _pure(name: str) -> Callable[..., Any]:
    """The reference, calling only references: decode_frame's header decoders (module globals) are
    the compiled ones when built, so its pure form runs with the references in their place."""
    ref = _speedups.reference(name)
    if name != "decode_frame":
        return ref
    pure_globals = {
        **command.__dict__,
        "_decode_rocketmq_header": _speedups.reference("decode_rocketmq_header"),
        "_decode_json_header": _speedups.reference("decode_json_header"),
    }
    return types.FunctionType(ref.__code__, pure_globals, ref.__name__)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=1.0, help="time per function and implementation")
    args = ap.parse_args()
    native = _speedups.native
    if native is None:
        raise SystemExit(f"speedups_micro: {_speedups.describe()}")
    print("| function | input | Python ns | compiled ns | Python / compiled |")
    print("|---|---|---|---|---|")
    for name, what, call_args in cases():
        ref, fast = _pure(name), getattr(native, name)
        assert repr(ref(*call_args)) == repr(fast(*call_args)), name
        py_ns, c_ns = per_call(ref, fast, call_args, args.seconds)
        print(f"| `{name}` | {what} | {py_ns:,.0f} | {c_ns:,.0f} | {py_ns / c_ns:.1f}x |", flush=True)


if __name__ == "__main__":
    main()
