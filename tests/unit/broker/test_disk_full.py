"""A send while the store's disk is full: Java's SERVICE_NOT_AVAILABLE code and remark, then success
once the cleaner sees space back (disk usage injected into the store's own cleaner)."""

from __future__ import annotations

import asyncio

from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.store import message as m


class Usage:
    def __init__(self, ratio: float) -> None:
        self.ratio = ratio

    def __call__(self, path: str) -> float:
        return self.ratio


def _send(broker, body: bytes, topic: str = "DiskT"):
    ext = {
        "a": "pg",
        "b": topic,
        "c": "TBW102",
        "d": "4",
        "e": "0",
        "f": "0",
        "g": "1700000000123",
        "h": "0",
        "i": m.message_properties_to_string({"TAGS": "t"}),
        "j": "0",
        "k": "false",
        "m": "false",
        "n": "broker-t",
    }
    return asyncio.run(broker.call(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, body)))


def test_send_refused_while_disk_full_then_accepted(broker):
    store = broker.c.message_store
    assert store.cleaner._thread is not None  # started with the store, like Java's clean services
    assert _send(broker, b"before").code == ResponseCode.SUCCESS
    store.cleaner.disk_usage = Usage(0.95)
    assert store.cleaner.run_once().disk_full
    r = _send(broker, b"during")
    assert r.code == ResponseCode.SERVICE_NOT_AVAILABLE == 14
    assert r.remark == (
        "service not available now. It may be caused by one of the following reasons: the broker's "
        "disk is full [CL:  0.95 CQ:  0.95 INDEX:  0.95], messages are put to the slave, message "
        "store has been shut down, etc."
    )
    assert r.ext_fields["MSG_REGION"] == "DefaultRegion"
    assert store.get_max_offset_in_queue("DiskT", 0) == 1  # nothing stored
    store.cleaner.disk_usage = Usage(0.40)
    assert not store.cleaner.run_once().disk_full
    r = _send(broker, b"after")
    assert r.code == ResponseCode.SUCCESS and r.ext_fields["queueOffset"] == "1"
