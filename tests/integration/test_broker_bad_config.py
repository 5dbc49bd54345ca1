"""A broker.conf value that does not parse is logged and skipped, as Java's
MixAll#properties2Object does: `pyrmq broker -c` starts with the default and serves."""

from __future__ import annotations

from pathlib import Path

from support import probe
from support.pyrmq_proc import PyrmqBroker
from support.servers import PyrmqNamesrv

from pyrmq.protocol.codes import RequestCode, ResponseCode


def test_bad_store_value_is_logged_and_skipped_by_the_cli(tmp_path: Path) -> None:
    ns = PyrmqNamesrv(tmp_path / "ns")
    try:
        broker = PyrmqBroker(ns.addr, tmp_path / "broker", maxMessageSize="4MB", flushIntervalCommitLog="500")
        try:
            reply = probe.request(broker.addr, RequestCode.GET_BROKER_CONFIG)
            assert reply.code == ResponseCode.SUCCESS
            props = dict(line.split("=", 1) for line in reply.body.decode().splitlines() if "=" in line)
            assert props["maxMessageSize"] == str(4 * 1024 * 1024)  # Java's default, the bad value skipped
            assert props["flushIntervalCommitLog"] == "500"  # the good key beside it still applied
            log = broker.tail(400)
            assert "maxMessageSize" in log and "4MB" in log
            assert "Traceback" not in log
        finally:
            broker.stop()
    finally:
        ns.stop()
