"""The official Java producer (rocketmq-client 5.5.0) against a broker whose disk is full.

The store sits on a small tmpfs (support/small_fs.py) that a filler file fills to ENOSPC. The
JUnit case DiskFullTest sends without retries until the broker answers SERVICE_NOT_AVAILABLE
(14), the test then deletes the filler, and the case sends until one is accepted. The client must
see Java's refusal: code 14 and the remark of Java's SendMessageProcessor ("service not available
now. ... the broker's disk is full [CL: .. CQ: .. INDEX: ..], ..."), no other failure, and sends
accepted again within a few seconds.

- "pyrmq": pyrmq's broker and name server (the acceptance test, in the default run);
- "java": the official 5.5.0 broker, marked `reference` (PYRMQ_COMPAT_REFERENCE=1): it finds the
  full disk only through its cleaner (first run 60 s after start, then every 10 s) and before
  that fails writes its own way, so failures other than 14 are allowed there.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
import uuid

import pytest
from support.java import run_junit
from support.requests import send_v2
from support.small_fs import Filler, small_filesystem

from pyrmq.protocol.codes import ResponseCode
from pyrmq.remoting.client import RemotingClient

pytestmark = [pytest.mark.compat, pytest.mark.java]

JAVA_REMARK = re.compile(
    r"service not available now\. It may be caused by one of the following reasons: the broker's disk is full "
    r"\[CL: +-?\d+\.\d\d CQ: +-?\d+\.\d\d INDEX: +-?\d+\.\d\d\], messages are put to the slave, message store "
    r"has been shut down, etc\."
)


def _create_topic(broker, topic: str) -> None:
    """One message through pyrmq's client: the broker creates the topic from TBW102 and registers it."""

    async def send() -> None:
        async with RemotingClient() as c:
            r = await c.invoke(broker.addr, send_v2(topic, broker.name, b"before"), 10)
            assert r.code == ResponseCode.SUCCESS, r.remark

    asyncio.run(send())
    time.sleep(1)  # the route reaches the name server with the registration that follows


def _refused_then_resumed(
    ns, broker, disk, java_home, timeout_s: int, strict: bool, free: int | None = None
) -> tuple[str, int, str]:
    """The case's refusal remark, how long after the space came back a send was accepted (ms), and
    any other failure. ``free``: bytes of the filler given back (None: all of it)."""
    topic = f"DiskFull_{uuid.uuid4().hex[:10]}"
    _create_topic(broker, topic)
    filler = Filler(disk / "filler", pause=0)
    filler.start()
    assert filler.full.wait(30) and filler.error is None, filler.error
    refused, freed = disk.parent / "refused", disk.parent / "freed"
    result: dict[str, object] = {}

    def case() -> None:
        try:
            props = {
                "namesrv": ns.addr,
                "topic": topic,
                "refusedFile": refused,
                "freedFile": freed,
                "timeoutSec": timeout_s,
                "strict": str(strict).lower(),
            }
            result["r"] = run_junit("5.5.0", "DiskFullTest", props=props, home=java_home, timeout=timeout_s + 60)
        except BaseException as e:
            result["error"] = e

    t = threading.Thread(target=case, daemon=True)
    t.start()
    deadline = time.monotonic() + timeout_s + 30
    while not refused.exists() and t.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    if free is None:
        filler.remove()
    else:
        assert filler.shrink(free) == free, "the filler took less than the space to free"
    freed.write_text("freed")
    t.join(timeout_s + 60)
    if "error" in result:
        raise result["error"]  # type: ignore[misc]
    out = result["r"].stdout  # type: ignore[attr-defined]
    print(out[-3000:])
    remark = re.search(r"^REFUSED code=14 remark=(.*)$", out, re.M)
    resumed = re.search(r"^RESUMED ms=(\d+)$", out, re.M)
    assert remark and resumed, out[-3000:]
    others = "\n".join(re.findall(r"^OTHER .*$", out, re.M))
    return remark.group(1), int(resumed.group(1)), others


def _pyrmq_broker_refuses_then_resumes(ns, broker, disk, java_home, free: int | None = None) -> None:
    """The case against a pyrmq broker: Java's refusal only, and sends accepted within 5 s."""
    try:
        remark, resumed_ms, others = _refused_then_resumed(ns, broker, disk, java_home, 40, True, free)
        assert broker.alive(), broker.tail()
    finally:
        broker.stop()
    assert JAVA_REMARK.fullmatch(remark), remark
    assert others == ""
    assert resumed_ms < 5000, resumed_ms


def test_java_producer_refused_by_pyrmq_then_resumed(pyrmq_namesrv, pyrmq_broker, java_harness, java_home, tmp_path):
    with small_filesystem(tmp_path / "disk", 32) as disk:
        broker = pyrmq_broker(pyrmq_namesrv.addr, store_dir=disk / "store", fresh=True)
        _pyrmq_broker_refuses_then_resumes(pyrmq_namesrv, broker, disk, java_home)


def test_java_producer_resumes_when_exactly_one_commit_log_file_is_freed(
    pyrmq_namesrv, pyrmq_broker, java_harness, java_home, tmp_path
):
    """The commit log alone on a 24 MiB filesystem with 8 MiB files, and exactly one file's worth
    given back: resuming reserves the next file's first stretch out of that space, which must not
    read as a full disk (docs/reliability.md)."""
    file_size = 8 << 20
    with small_filesystem(tmp_path / "commitlog", 24) as mount:
        broker = pyrmq_broker(
            pyrmq_namesrv.addr,
            store_dir=tmp_path / "store",
            fresh=True,
            storePathCommitLog=mount / "data",
            mappedFileSizeCommitLog=file_size,
        )
        _pyrmq_broker_refuses_then_resumes(pyrmq_namesrv, broker, mount, java_home, free=file_size)


@pytest.mark.reference
def test_java_producer_refused_by_java_broker_then_resumed(java_namesrv, java_broker, java_home, tmp_path):
    with small_filesystem(tmp_path / "disk", 64) as disk:
        broker = java_broker(java_namesrv.addr, store_dir=disk / "store", fresh=True, brokerFastFailureEnable="false")
        try:
            remark, resumed_ms, others = _refused_then_resumed(java_namesrv, broker, disk, java_home, 150, False)
            assert broker.alive(), broker.tail()
        finally:
            broker.stop()
    print(f"Java 5.5.0 broker: resumed {resumed_ms} ms after freeing; before refusing: {others or 'nothing else'}")
    assert JAVA_REMARK.fullmatch(remark), remark
