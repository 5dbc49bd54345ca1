"""A flood of sends over raw sockets, shared by the flood test and tools/bench: each connection
keeps `window` SEND_MESSAGE_V2 requests outstanding for `seconds`, and every answer is counted
by kind (SEND_OK, each busy remark, other codes); a request not answered within `answer_timeout`
counts as a timeout, as a client's RemotingTimeoutException would."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable

from pyrmq.protocol.codes import ResponseCode
from pyrmq.protocol.command import encode, next_opaque
from pyrmq.protocol.framing import FrameDecoder
from support.requests import send_v2


def kind(code: int, remark: str | None) -> str:
    if code == ResponseCode.SUCCESS:
        return "SEND_OK"
    if code == ResponseCode.SYSTEM_BUSY:
        return (remark or "").split("]")[0] + "]"
    return f"code {code}"


async def _connection(
    addr: str, topic: str, broker: str, body: bytes, window: int, until: float, answer_timeout: float, out: Counter
) -> None:
    host, port = addr.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    sent: dict[int, float] = {}
    decoder = FrameDecoder()

    def send_one() -> None:
        cmd = send_v2(topic, broker, body)
        cmd.opaque = next_opaque()
        sent[cmd.opaque] = time.monotonic()
        writer.write(encode(cmd))

    try:
        for _ in range(window):
            send_one()
        while sent:
            try:
                data = await asyncio.wait_for(reader.read(1 << 18), answer_timeout)
            except TimeoutError:
                out["timeout"] += len(sent)
                return
            if not data:
                out["closed"] += len(sent)
                return
            for resp in decoder.feed(data):
                if sent.pop(resp.opaque, None) is None:
                    continue
                out[kind(resp.code, resp.remark)] += 1
                if time.monotonic() < until:
                    send_one()
            now = time.monotonic()
            late = [o for o, t in sent.items() if now - t > answer_timeout]
            for o in late:
                del sent[o]
                out["timeout"] += 1
    finally:
        writer.close()


async def flood(
    addr: str,
    topic: str,
    broker: str,
    *,
    size: int,
    connections: int,
    window: int,
    seconds: float,
    answer_timeout: float = 10.0,
    sample: Callable[[], None] | None = None,
) -> Counter:
    """Run the flood; `sample()` is called every 100 ms meanwhile (an RSS probe)."""
    out: Counter = Counter()
    body = b"f" * size
    until = time.monotonic() + seconds
    tasks = [
        asyncio.create_task(_connection(addr, topic, broker, body, window, until, answer_timeout, out))
        for _ in range(connections)
    ]
    while not all(t.done() for t in tasks):
        if sample is not None:
            sample()
        await asyncio.sleep(0.1)
    for t in tasks:
        t.result()
    return out
