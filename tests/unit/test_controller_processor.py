"""ControllerRequestProcessor fed built commands, no server: bad input gets Java's code and a
readable remark (never a crash), and a write is journalled before it is answered."""

from __future__ import annotations

import asyncio

import pytest

from pyrmq.controller.config import ControllerConfig
from pyrmq.controller.journal import EventJournal
from pyrmq.controller.manager import ControllerManager
from pyrmq.controller.processor import ControllerRequestProcessor
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.remoting.channel import ProcessorTable, RequestContext, call_handler

pytestmark = pytest.mark.unit


class _Channel:
    remote_addr = "127.0.0.1:1"


def _manager(tmp_path) -> ControllerManager:
    cfg = ControllerConfig.from_properties(
        {
            "controllerDLegerGroup": "g",
            "controllerDLegerPeers": "n0-127.0.0.1:9878",
            "controllerDLegerSelfId": "n0",
            "controllerStorePath": str(tmp_path / "store"),
            "configStorePath": str(tmp_path / "controller.properties"),
        }
    )
    return ControllerManager(cfg)


def _ask(manager: ControllerManager, code: int, ext: dict[str, str] | None = None, body: bytes | None = None):
    table = ProcessorTable()
    table.register(ControllerRequestProcessor(manager))
    cmd = RemotingCommand.request(code, ext or {}, body)
    handler = table.lookup(cmd.code)
    assert handler is not None
    ctx = RequestContext(channel=_Channel(), server=None)  # type: ignore[arg-type]
    return asyncio.run(call_handler(handler, ctx, cmd))


@pytest.mark.parametrize(
    ("code", "ext", "body", "want_code", "want_remark"),
    [
        (
            RequestCode.BROKER_HEARTBEAT,
            {"clusterName": "c", "brokerName": "b", "brokerAddr": "a:1"},
            None,
            ResponseCode.CONTROLLER_INVALID_REQUEST,
            "Heart beat with empty brokerId",
        ),
        (RequestCode.CONTROLLER_GET_SYNC_STATE_DATA, {}, None, ResponseCode.SYSTEM_ERROR, "not set any response code"),
        (RequestCode.CONTROLLER_GET_SYNC_STATE_DATA, {}, b"[]", ResponseCode.SYSTEM_ERROR, "not set any response code"),
        (
            RequestCode.CONTROLLER_GET_REPLICA_INFO,
            {"brokerName": "none"},
            None,
            ResponseCode.CONTROLLER_BROKER_METADATA_NOT_EXIST,
            "Broker metadata is not existed",
        ),
        (
            RequestCode.UPDATE_CONTROLLER_CONFIG,
            {},
            b"rocketmqHome=/x\n",
            ResponseCode.NO_PERMISSION,
            "Can not update config in black list.",
        ),
        (
            RequestCode.CONTROLLER_ELECT_MASTER,
            {"brokerName": "none"},
            None,
            ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
            "Broker hasn't been registered",
        ),
    ],
)
def test_bad_requests_get_java_codes(tmp_path, code, ext, body, want_code, want_remark):
    r = _ask(_manager(tmp_path), code, ext, body)
    assert (r.code, r.remark) == (want_code, want_remark)


@pytest.mark.parametrize(
    ("code", "ext", "body"),
    [
        (RequestCode.CONTROLLER_APPLY_BROKER_ID, {"clusterName": "c", "brokerName": "b", "appliedBrokerId": "1"}, None),
        (RequestCode.CONTROLLER_GET_SYNC_STATE_DATA, {}, b"{not json"),
        (
            RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET,
            {"brokerName": "b", "masterBrokerId": "1", "masterEpoch": "1"},
            b"\xff\xfe",
        ),
        (RequestCode.BROKER_HEARTBEAT, {}, None),  # required header fields missing
    ],
)
def test_malformed_requests_are_answered_not_raised(tmp_path, code, ext, body):
    r = _ask(_manager(tmp_path), code, ext, body)
    assert r.code != ResponseCode.SUCCESS and r.remark


def test_a_write_is_in_the_journal_when_answered(tmp_path):
    m = _manager(tmp_path)
    ext = {"clusterName": "c", "brokerName": "b", "appliedBrokerId": "1", "registerCheckCode": "10.0.0.1:1;5"}
    r = _ask(m, RequestCode.CONTROLLER_APPLY_BROKER_ID, ext)
    assert r.code == ResponseCode.SUCCESS
    records = EventJournal(str(tmp_path / "store")).replay()
    assert len(records) == 1 and records[0][0].broker_address == "10.0.0.1:1"
    # a read writes nothing
    assert _ask(m, RequestCode.CONTROLLER_GET_REPLICA_INFO, {"brokerName": "b"}).code == ResponseCode.SUCCESS
    assert len(EventJournal(str(tmp_path / "store")).replay()) == 1


def test_a_failed_append_changes_nothing(tmp_path, monkeypatch):
    m = _manager(tmp_path)

    def broken(events):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(m.journal, "append", broken)
    ext = {"clusterName": "c", "brokerName": "b", "appliedBrokerId": "1", "registerCheckCode": "10.0.0.1:1;5"}
    r = _ask(m, RequestCode.CONTROLLER_APPLY_BROKER_ID, ext)
    assert r.code == ResponseCode.SYSTEM_ERROR and "No space left on device" in r.remark
    assert m.replicas.replica_info_table == {}


def test_a_cancelled_request_still_applies_what_it_journalled(tmp_path, monkeypatch):
    """The connection drops while the journal fsyncs: the event is on disk, so it must be applied."""
    import threading

    from pyrmq.protocol.headers.controller import ApplyBrokerIdRequestHeader

    m = _manager(tmp_path)
    real_append = m.journal.append
    started, release = threading.Event(), threading.Event()

    def slow(events):
        started.set()
        release.wait(5)
        real_append(events)

    monkeypatch.setattr(m.journal, "append", slow)

    async def main():
        h = ApplyBrokerIdRequestHeader("c", "b", 1, "10.0.0.1:1;5")
        request = asyncio.ensure_future(m.run(lambda: m.replicas.apply_broker_id(h)))
        await asyncio.to_thread(started.wait, 5)
        request.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await request
        while m._background:  # the shielded part goes on
            await asyncio.sleep(0.01)

    asyncio.run(main())
    assert m.replicas.replica_info_table["b"].all_brokers() == {1}
    assert len(EventJournal(str(tmp_path / "store")).replay()) == 1
