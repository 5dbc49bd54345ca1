"""POP throughput: pop + ack of 1 KiB messages on pyrmq's broker and the Java 5.5.0 broker.

Usage: tools/bench/pop_bench.py [--count 20000] [--poppers 8] [--repeats 2] [--json OUT]

Both stacks (name server + broker, started through tests/support like broker_bench.py, same
store settings) run side by side. For each repeat and broker (order alternating): a new topic of
4 queues is filled with --count messages (SEND_MESSAGE_V2, 16 in flight), a new group is switched
to POP, then --poppers asyncio tasks on one pyrmq RemotingClient pop 32 at a time from every
queue (queueId -1, what the 5.x push consumer sends) and ack each message (ACK_MESSAGE) until
all are acked. Reported: pop+ack msgs/s over the whole drain, the mean POP_MESSAGE round trip,
and broker CPU (utime+stime) per message. The client is Python: it is the same for both brokers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from broker_bench import Stack, create_topic, proc_cpu, start_java, start_pyrmq  # noqa: E402
from support.requests import send_v2  # noqa: E402

from pyrmq.protocol.bodies.pop import MessageRequestMode, SetMessageRequestModeRequestBody  # noqa: E402
from pyrmq.protocol.codes import RequestCode, ResponseCode  # noqa: E402
from pyrmq.protocol.command import RemotingCommand  # noqa: E402
from pyrmq.protocol.headers.pop import (  # noqa: E402
    AckMessageRequestHeader,
    PopMessageRequestHeader,
    build_extra_info,
    parse_info,
)
from pyrmq.remoting.client import RemotingClient  # noqa: E402
from pyrmq.store import message as m  # noqa: E402


async def fill(client: RemotingClient, addr: str, topic: str, name: str, count: int) -> None:
    sem = asyncio.Semaphore(16)

    async def one(i: int) -> None:
        async with sem:
            for _ in range(100):  # a busy broker (Java's flow control, SYSTEM_BUSY) is asked again
                cmd = send_v2(topic, name, b"x" * 1024, queues=4)
                cmd.ext_fields["e"] = str(i % 4)
                r = await client.invoke(addr, cmd, 10)
                if r.code == ResponseCode.SUCCESS:
                    return
                if r.code != ResponseCode.SYSTEM_BUSY:
                    raise RuntimeError(f"send: {r.code} {r.remark}")
                await asyncio.sleep(0.05)
            raise RuntimeError("send: broker busy 100 times")

    await asyncio.gather(*(one(i) for i in range(count)))


async def drain(client: RemotingClient, addr: str, topic: str, group: str, name: str, count: int, poppers: int):
    done = 0
    rtts: list[float] = []

    async def popper() -> None:
        nonlocal done
        idle = 0
        while done < count and idle < 50:
            h = PopMessageRequestHeader(
                consumer_group=group,
                topic=topic,
                queue_id=-1,
                max_msg_nums=32,
                invisible_time=60_000,
                poll_time=0,
                born_time=int(time.time() * 1000),
                init_mode=1,
            )
            t0 = time.perf_counter()
            r = await client.invoke(addr, RemotingCommand.request(RequestCode.POP_MESSAGE, h.to_ext_fields()), 10)
            rtts.append(time.perf_counter() - t0)
            if r.code != ResponseCode.SUCCESS:
                idle += 1
                await asyncio.sleep(0.02)
                continue
            idle = 0
            ef = r.ext_fields
            starts = parse_info(ef["startOffsetInfo"])
            acks = []
            for msg in m.decode_messages(r.body, read_body=False):
                extra = build_extra_info(
                    int(starts[f"0@{msg.queue_id}"]),
                    int(ef["popTime"]),
                    int(ef["invisibleTime"]),
                    int(ef["reviveQid"]),
                    topic,
                    name,
                    msg.queue_id,
                    msg.queue_offset,
                )
                a = AckMessageRequestHeader(group, topic, msg.queue_id, extra, msg.queue_offset)
                acks.append(
                    client.invoke(addr, RemotingCommand.request(RequestCode.ACK_MESSAGE, a.to_ext_fields()), 10)
                )
            for a in await asyncio.gather(*acks):
                if a.code != ResponseCode.SUCCESS:
                    raise RuntimeError(f"ack: {a.code} {a.remark}")
            done += len(acks)

    await asyncio.gather(*(popper() for _ in range(poppers)))
    return done, (sum(rtts) / len(rtts) if rtts else 0.0)


async def run_one(stack: Stack, count: int, poppers: int) -> dict:
    topic, group = f"PopBench_{uuid.uuid4().hex[:8]}", f"pop_bench_{uuid.uuid4().hex[:8]}"
    create_topic(stack, topic)
    addr, name = stack.broker.addr, stack.broker.name
    client = RemotingClient()
    try:
        await fill(client, addr, topic, name, count)
        body = SetMessageRequestModeRequestBody(topic, group, MessageRequestMode.POP, 0).encode()
        r = await client.invoke(addr, RemotingCommand.request(RequestCode.SET_MESSAGE_REQUEST_MODE, {}, body), 10)
        if r.code != ResponseCode.SUCCESS:
            raise RuntimeError(f"set mode: {r.code} {r.remark}")
        pid = stack.broker.pid
        cpu0, t0 = proc_cpu(pid), time.perf_counter()
        done, rtt = await drain(client, addr, topic, group, name, count, poppers)
        elapsed, cpu = time.perf_counter() - t0, proc_cpu(pid) - cpu0
    finally:
        await client.close()
    return {
        "broker": stack.kind,
        "acked": done,
        "msgs_per_s": round(done / elapsed),
        "pop_rtt_ms": round(rtt * 1000, 2),
        "cpu_us_per_msg": round(cpu / max(done, 1) * 1e6),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=20000)
    ap.add_argument("--poppers", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--json")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pop-bench-"))
    stacks = [start_pyrmq(work, sys.executable), start_java(work, "1g")]
    results = []
    try:
        for rep in range(args.repeats):
            order = stacks if rep % 2 == 0 else stacks[::-1]
            for stack in order:
                res = asyncio.run(run_one(stack, args.count, args.poppers))
                res["repeat"] = rep
                print(json.dumps(res), flush=True)
                results.append(res)
    finally:
        for s in stacks:
            s.stop()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
