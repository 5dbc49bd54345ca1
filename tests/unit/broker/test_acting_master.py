"""Slave acting master, rule by rule (Java BrokerController#updateMinBroker / onMinBrokerChange /
changeSpecialServiceStatus, EscapeBridge, BrokerPreOnlineService, the acting-master branches of
the send, send-back and pull processors)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from support.fakes import FakeChannel

from pyrmq.broker.acting_master import ActingMasterService, MinBrokerView, SpecialServices, member_addrs
from pyrmq.broker.escape_bridge import EscapeBridge, PublishQueue, TopicPublishInfo
from pyrmq.broker.pre_online import merge_consumer_offsets, merge_delay_offsets
from pyrmq.common.constants import MessageConst
from pyrmq.protocol.bodies.namesrv import (
    BrokerData,
    BrokerMemberGroup,
    GetBrokerMemberGroupResponseBody,
    QueueData,
    TopicRouteData,
)
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import (
    ConsumerSendMsgBackRequestHeader,
    ExchangeHAInfoRequestHeader,
    NotifyMinBrokerIdChangeRequestHeader,
    PullMessageRequestHeader,
    SendMessageRequestHeaderV2,
)
from pyrmq.store import message as m
from pyrmq.store.results import PutMessageStatus

from .conftest import make_config

M, S1, S2 = "10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.3:10911"

# ---------------------------------------------------------------------- the min-broker view


def test_a_master_and_a_plain_slave_never_move():
    for view in (MinBrokerView(0, True), MinBrokerView(1, False)):
        assert view.on_member_group({1: S1}) is None
        assert view.update(1, S1, offline_addr=M, master_addr=M) is None
        assert view.min_broker_id == 0


def test_master_lost_makes_the_lowest_slave_act_and_its_return_ends_it():
    view = MinBrokerView(1, True)
    assert view.on_member_group({0: M, 1: S1}, master_addr=M) is None  # the start: master seen
    lost = view.on_member_group({1: S1, 2: S2}, master_addr=M)
    assert lost is not None
    assert (lost.min_broker_id, lost.min_broker_addr) == (1, S1)
    assert lost.special_services and lost.master_offline and not lost.master_online
    assert view.on_member_group({1: S1, 2: S2}, master_addr=None) is None  # nothing moves twice
    back = view.on_member_group({0: M, 1: S1, 2: S2})
    assert back is not None
    assert (back.min_broker_id, back.special_services, back.master_online, back.master_offline) == (
        0,
        False,
        True,
        False,
    )


def test_a_higher_slave_follows_but_runs_nothing():
    view = MinBrokerView(2, True)
    view.on_member_group({0: M, 1: S1, 2: S2}, master_addr=M)
    change = view.on_member_group({1: S1, 2: S2}, master_addr=M)
    assert change is not None and change.min_broker_id == 1 and not change.special_services
    assert change.master_offline  # it copies from the master too
    change = view.on_member_group({2: S2})  # the acting slave is gone as well
    assert change is not None and change.special_services and not change.master_offline


def test_notify_carries_the_offline_address_and_the_ha_address():
    view = MinBrokerView(1, True)
    change = view.update(1, S1, offline_addr=M, master_addr=M)
    assert change is not None and change.master_offline
    change = view.update(0, M, ha_addr="10.0.0.1:10912")
    assert change is not None and change.master_online and change.master_ha_addr == "10.0.0.1:10912"
    # an offline address that is not the master's is not "the master went away"
    view2 = MinBrokerView(1, True)
    change = view2.update(1, S1, offline_addr=S2, master_addr=M)
    assert change is not None and not change.master_offline


def test_member_addrs_from_both_name_server_answers():
    group = GetBrokerMemberGroupResponseBody(BrokerMemberGroup("c", "b", {0: M, 1: S1}))
    r = RemotingCommand(code=ResponseCode.SUCCESS, body=group.encode())
    assert member_addrs(r, "c", "b", compatible=False) == {0: M, 1: S1}
    route = TopicRouteData(
        queue_datas=[QueueData("b", 1, 1, 1, 0)],
        broker_datas=[BrokerData("other", "b", {0: "x:1"}), BrokerData("c", "b", {1: S1})],
    )
    r = RemotingCommand(code=ResponseCode.SUCCESS, body=route.encode())
    assert member_addrs(r, "c", "b", compatible=True) == {1: S1}
    assert member_addrs(RemotingCommand(code=ResponseCode.TOPIC_NOT_EXIST), "c", "b", compatible=True) == {}


# ---------------------------------------------------------------------- effects


class Recorder:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name):
        def record(*args, **kwargs):
            self.calls.append(name)

            async def done():
                return None

            return done() if name == "shutdown" else None

        return record


def _services(is_master: bool):
    class Cfg(dict):
        pass

    cfg = Cfg(timerWheelEnable=True)
    cfg.is_master = is_master  # type: ignore[attr-defined]
    schedule, timer, tx = Recorder(), Recorder(), Recorder()
    return SpecialServices(
        config=cfg, schedule_message_service=schedule, timer_message_store=timer, transactional_message_check_service=tx
    ), (schedule, timer, tx)


def test_special_services_start_once_and_stop():
    svc, (schedule, timer, tx) = _services(is_master=False)
    asyncio.run(svc.change(True))
    asyncio.run(svc.change(True))
    assert schedule.calls == ["correct_delay_offset", "start"] and tx.calls == ["start"]
    assert timer.calls == ["take_master_offset", "start"]
    asyncio.run(svc.change(False))
    assert schedule.calls[-1] == "shutdown" and timer.calls[-1] == "shutdown" and tx.calls == ["start", "shutdown"]
    svc, (schedule, _, tx) = _services(is_master=True)
    asyncio.run(svc.change(True))
    assert schedule.calls == ["start"] and tx.calls == ["start"]


def test_apply_master_offline_then_online(tmp_path):
    cfg = make_config(tmp_path, brokerRole="SLAVE", brokerId=1, enableSlaveActingMaster="true")
    closed, ha_addrs, woken, asked = [], [], [], []
    answer = ExchangeHAInfoRequestHeader(master_ha_address="10.0.0.1:20912", master_address=M, master_flush_offset=9)

    async def invoke(addr, cmd, timeout):
        asked.append((addr, cmd.code))
        return RemotingCommand(code=ResponseCode.SUCCESS, ext_fields=answer.to_ext_fields())

    client = SimpleNamespace(close_channel=closed.append, invoke=invoke)
    ha = SimpleNamespace(update_ha_master_address=ha_addrs.append, update_master_address=print, wakeup=lambda: None)
    pull = SimpleNamespace(
        min_broker_id_in_group=0,
        pull_request_hold_service=SimpleNamespace(notify_master_online=lambda: woken.append(1)),
    )
    sync = SimpleNamespace(master_addr=M)
    changes: list[bool] = []

    class FakeSpecial:
        async def change(self, on: bool) -> None:
            changes.append(on)

    registered = []

    async def register() -> None:
        registered.append(1)

    svc = ActingMasterService(
        config=cfg,
        client=client,
        broker_addr=lambda: S1,
        topic_data_version=lambda: None,
        special_services=FakeSpecial(),  # type: ignore[arg-type]
        pull_processor=pull,
        slave_synchronize=sync,
        ha_client=lambda: ha,
        register_broker_all=register,
    )

    async def scenario() -> None:
        svc.view.on_member_group({0: M, 1: S1})
        change = svc.view.on_member_group({1: S1}, master_addr=sync.master_addr)
        assert change is not None
        await svc.apply(change)
        assert pull.min_broker_id_in_group == 1 and changes == [True]
        assert closed == [M] and sync.master_addr is None and ha_addrs == [None] and woken == []
        await svc.notify_min_broker_id_change(0, M, None, "10.0.0.1:10912")
        assert pull.min_broker_id_in_group == 0 and changes == [True, False]
        assert ha_addrs == [None, "10.0.0.1:10912"] and sync.master_addr == M and woken == [1]
        assert asked == []  # the HA address came with the notification
        # lost again, then back by a poll: the slave asks the master for its HA address
        await svc.notify_min_broker_id_change(1, S1, M, None)
        change = svc.view.on_member_group({0: M, 1: S1})
        assert change is not None and change.master_ha_addr is None
        await svc.apply(change)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert asked == [(M, RequestCode.EXCHANGE_BROKER_HA_INFO)] and ha_addrs[-1] == "10.0.0.1:20912"
        assert registered == []

    asyncio.run(scenario())


# ---------------------------------------------------------------------- escape bridge


def _route() -> TopicRouteData:
    return TopicRouteData(
        queue_datas=[
            QueueData("broker-t", 4, 4, 4, 0),  # the acting group: read-only
            QueueData("broker-b", 4, 2, 6, 0),
            QueueData("broker-c", 4, 4, 6, 0),  # no master
        ],
        broker_datas=[
            BrokerData("c", "broker-t", {0: S1}),
            BrokerData("c", "broker-b", {0: "10.0.1.1:10911", 1: "10.0.1.2:10911"}),
            BrokerData("c", "broker-c", {1: "10.0.2.2:10911"}),
        ],
    )


def test_publish_info_keeps_writable_queues_of_groups_with_a_master():
    info = TopicPublishInfo.of(_route(), 0)
    assert info.queues == [PublishQueue("broker-b", 0), PublishQueue("broker-b", 1)]
    assert info.master_addrs["broker-b"] == "10.0.1.1:10911"


class FakeClient:
    def __init__(self, send_code: int = ResponseCode.SUCCESS, route: TopicRouteData | None = None) -> None:
        self.sent: list[tuple[str, RemotingCommand]] = []
        self.send_code = send_code
        self.route = route

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        self.sent.append((addr, cmd))
        if cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            if self.route is None:
                return RemotingCommand(code=ResponseCode.TOPIC_NOT_EXIST)
            return RemotingCommand(code=ResponseCode.SUCCESS, body=self.route.encode())
        return RemotingCommand(code=self.send_code, remark="remote said so")


def _inner(topic="T") -> m.MessageExtBrokerInner:
    return m.MessageExtBrokerInner(
        topic=topic,
        body=b"due",
        queue_id=3,
        flag=7,
        properties={MessageConst.TAGS: "a", MessageConst.PRODUCER_GROUP: "pg"},
        born_timestamp=1234,
        reconsume_times=2,
    )


def _bridge(tmp_path, client, **props):
    base = {"brokerRole": "SLAVE", "brokerId": 1, "namesrvAddr": "127.0.0.1:9876"}
    base.update(props)
    cfg = make_config(tmp_path, **base)
    return EscapeBridge(config=cfg, message_store=None, client=client, now=lambda: 1000)


def test_escape_sends_to_another_groups_master_without_waiting(tmp_path):
    client = FakeClient(route=_route())
    bridge = _bridge(tmp_path, client, enableSlaveActingMaster="true", enableRemoteEscape="true")
    r1 = asyncio.run(bridge.put_message(_inner()))
    r2 = asyncio.run(bridge.put_message(_inner()))
    assert r1.put_message_status is PutMessageStatus.PUT_OK and r1.remote_put
    assert r2.put_message_status is PutMessageStatus.PUT_OK
    (ns, route_cmd), (addr, send), (_, send2) = client.sent  # the route was fetched once
    assert ns == "127.0.0.1:9876" and route_cmd.ext_fields["topic"] == "T"
    assert addr == "10.0.1.1:10911" and send.code == RequestCode.SEND_MESSAGE_V2
    h = SendMessageRequestHeaderV2.from_ext_fields(send.ext_fields)
    assert (h.a, h.b, h.c, h.d, h.h, h.g, h.j, h.m) == ("pg", "T", "TBW102", 8, 7, 1234, 2, False)
    props = m.string_to_message_properties(h.i or "")
    assert props[MessageConst.WAIT_STORE_MSG_OK] == "false" and props[MessageConst.TAGS] == "a"
    assert send.body == b"due"
    # round robin over the writable queues of other groups
    assert {h.e, SendMessageRequestHeaderV2.from_ext_fields(send2.ext_fields).e} == {0, 1}


def test_escape_failures(tmp_path):
    client = FakeClient()
    no_route = _bridge(tmp_path, client, enableSlaveActingMaster="true", enableRemoteEscape="true")
    for _ in range(2):
        r = asyncio.run(no_route.put_message(_inner()))
        assert r.put_message_status is PutMessageStatus.PUT_TO_REMOTE_BROKER_FAIL
    assert len(client.sent) == 1  # the missing route is remembered for ROUTE_TTL_MS
    refused = _bridge(
        tmp_path,
        FakeClient(send_code=ResponseCode.SYSTEM_ERROR, route=_route()),
        enableSlaveActingMaster="true",
        enableRemoteEscape="true",
    )
    assert asyncio.run(refused.put_message(_inner())).put_message_status is PutMessageStatus.PUT_TO_REMOTE_BROKER_FAIL
    slow = _bridge(
        tmp_path,
        FakeClient(send_code=ResponseCode.FLUSH_DISK_TIMEOUT, route=_route()),
        enableSlaveActingMaster="true",
        enableRemoteEscape="true",
    )
    assert asyncio.run(slow.put_message(_inner())).put_message_status is PutMessageStatus.FLUSH_DISK_TIMEOUT
    # without enableRemoteEscape a slave's bridge refuses (Java: SERVICE_NOT_AVAILABLE, logged)
    client = FakeClient(route=_route())
    local_only = _bridge(tmp_path, client, enableSlaveActingMaster="true")
    assert asyncio.run(local_only.put_message(_inner())).put_message_status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert client.sent == []


def test_a_masters_bridge_puts_into_its_own_store(make_broker):
    b = make_broker(enableSlaveActingMaster="true", enableRemoteEscape="true")
    r = asyncio.run(b.c.escape_bridge.put_message(_inner("LOCAL")))
    assert r.put_message_status is PutMessageStatus.PUT_OK and not r.remote_put
    assert b.c.message_store.get_max_offset_in_queue("LOCAL", 3) == 1


# ---------------------------------------------------------------------- processors on an acting slave


def _send(topic: str) -> RemotingCommand:
    h = SendMessageRequestHeaderV2(a="pg", b=topic, c="TBW102", d=4, e=0, f=0, g=1, h=0, i="")
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, h.to_ext_fields(), b"x")


def test_an_acting_capable_slave_processes_sends_and_its_store_refuses(make_broker):
    b = make_broker(brokerRole="SLAVE", brokerId=1, enableSlaveActingMaster="true")
    r = asyncio.run(b.call(_send("T1")))
    assert r is not None and r.code == ResponseCode.SERVICE_NOT_AVAILABLE, r
    plain = make_broker(brokerRole="SLAVE", brokerId=2)
    r = asyncio.run(plain.call(_send("T1")))
    assert r is not None and r.code == ResponseCode.SYSTEM_BUSY


def test_send_back_to_an_acting_capable_slave_is_a_system_error_like_java(make_broker):
    b = make_broker(brokerRole="SLAVE", brokerId=1, enableSlaveActingMaster="true")
    h = ConsumerSendMsgBackRequestHeader(offset=0, group="g", delay_level=0, origin_topic="T")
    r = asyncio.run(b.call(RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, h.to_ext_fields())))
    assert r is not None
    assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, "no master available along with 127.0.0.1")


def test_an_acting_slave_commits_offsets_from_pulls(make_broker):
    b = make_broker(brokerRole="SLAVE", brokerId=1, enableSlaveActingMaster="true", slaveReadEnable="true")
    b.c.topic_config_manager.update_topic_config(
        b.c.topic_config_manager.topic_config_table["TBW102"].__class__("T", 1, 1, 6)
    )
    h = PullMessageRequestHeader(
        consumer_group="g",
        topic="T",
        queue_id=0,
        queue_offset=0,
        max_msg_nums=32,
        sys_flag=0x1 | 0x4,
        commit_offset=5,
        suspend_timeout_millis=0,
        subscription="*",
        sub_version=0,
    )
    asyncio.run(b.call(RemotingCommand.request(RequestCode.PULL_MESSAGE, h.to_ext_fields())))
    assert b.c.consumer_offset_manager.query_offset("g", "T", 0) == 5


def test_notify_and_exchange_ha_info_processors(make_broker):
    slave = make_broker(brokerRole="SLAVE", brokerId=1, enableSlaveActingMaster="true")
    ha = SimpleNamespace(addrs=[], update_ha_master_address=lambda a: ha.addrs.append(a), update_master_address=print)
    slave.c.ha_client = ha  # type: ignore[assignment]
    n = NotifyMinBrokerIdChangeRequestHeader(min_broker_id=1, broker_name="broker-t", min_broker_addr=S1)
    r = asyncio.run(slave.call(RemotingCommand.request(RequestCode.NOTIFY_MIN_BROKER_ID_CHANGE, n.to_ext_fields())))
    assert r is not None and r.code == ResponseCode.SUCCESS
    assert slave.c.pull_processor.min_broker_id_in_group == 1
    x = ExchangeHAInfoRequestHeader(master_ha_address="10.0.0.1:10912", master_address=M, master_flush_offset=0)
    r = asyncio.run(slave.call(RemotingCommand.request(RequestCode.EXCHANGE_BROKER_HA_INFO, x.to_ext_fields())))
    assert r is not None and r.code == ResponseCode.SUCCESS and ha.addrs == ["10.0.0.1:10912"]
    master = make_broker(enableSlaveActingMaster="true", haListenPort="10912")
    r = asyncio.run(master.call(RemotingCommand.request(RequestCode.EXCHANGE_BROKER_HA_INFO, {}), FakeChannel()))
    assert r is not None and r.code == ResponseCode.SUCCESS
    answer = ExchangeHAInfoRequestHeader.from_ext_fields(r.ext_fields)
    assert answer.master_ha_address == "127.0.0.1:10912" and answer.master_address == "127.0.0.1:10911"


def test_registration_says_acting_master_and_heartbeat_timeout(tmp_path):
    from pyrmq.broker.controller import BrokerController

    c = BrokerController(make_config(tmp_path, brokerRole="SLAVE", brokerId=1, enableSlaveActingMaster="true"))
    assert c.acting_master_service.enabled and not c.acting_master_service.isolated
    iso = BrokerController(make_config(tmp_path, enableSlaveActingMaster="true", totalReplicas=2))
    assert iso.acting_master_service.isolated and iso.pre_online_service is not None
    skip = BrokerController(make_config(tmp_path, enableSlaveActingMaster="true", totalReplicas=2, skipPreOnline=True))
    assert not skip.acting_master_service.isolated and skip.pre_online_service is None


# ---------------------------------------------------------------------- pre-online merge


def test_pre_online_keeps_the_larger_offsets():
    own = {"T@g": {0: 10, 1: 3}, "U@g": {0: 1}}
    moved = merge_consumer_offsets(own, {"T@g": {0: 7, 1: 9, 2: 4}, "V@g": {0: 2}})
    assert own == {"T@g": {0: 10, 1: 9, 2: 4}, "U@g": {0: 1}, "V@g": {0: 2}} and moved == 3
    levels = {1: 5, 3: 0}
    assert merge_delay_offsets(levels, {1: 4, 3: 2, 4: 1}) == 2 and levels == {1: 5, 3: 2, 4: 1}


@pytest.mark.parametrize("role", ["SLAVE", "ASYNC_MASTER"])
def test_special_services_follow_the_role_at_start(tmp_path, role):
    from pyrmq.broker.controller import BrokerController

    c = BrokerController(make_config(tmp_path, brokerRole=role, brokerId=1 if role == "SLAVE" else 0))

    async def scenario() -> None:
        await c.acting_master_service.start()
        try:
            assert c.schedule_message_service.started is (role != "SLAVE")
        finally:
            await c.acting_master_service.shutdown()
        assert not c.schedule_message_service.started

    c.load()
    asyncio.run(scenario())


# ---------------------------------------------------------------------- name-server side


class RecordingClient:
    def __init__(self, answer: RemotingCommand | None = None) -> None:
        self.oneway: list[tuple[str, RemotingCommand]] = []
        self.invoked: list[tuple[str, RemotingCommand]] = []
        self.answer = answer or RemotingCommand(code=ResponseCode.SUCCESS)

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand) -> None:
        self.oneway.append((addr, cmd))

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        self.invoked.append((addr, cmd))
        return self.answer


def _controller(tmp_path, **props):
    from pyrmq.broker.controller import BrokerController

    base = {"brokerRole": "SLAVE", "brokerId": 1, "enableSlaveActingMaster": "true", "namesrvAddr": "n1:1;n2:2"}
    base.update(props)
    return BrokerController(make_config(tmp_path, **base))


def test_registration_carries_acting_master_and_the_heartbeat_timeout(tmp_path):
    c = _controller(tmp_path, brokerNotActiveTimeoutMillis=7000)
    c.outer_client = client = RecordingClient()  # type: ignore[assignment]

    async def scenario() -> None:
        c._register_lock = asyncio.Lock()
        await c.register_broker_all()

    asyncio.run(scenario())
    assert [a for a, _ in client.invoked] == ["n1:1", "n2:2"]
    ext = client.invoked[0][1].ext_fields
    assert (ext["enableActingMaster"], ext["heartbeatTimeoutMillis"], ext["brokerId"]) == ("true", "7000", "1")
    plain = _controller(tmp_path, enableSlaveActingMaster="false")
    plain.outer_client = client = RecordingClient()  # type: ignore[assignment]

    async def scenario2() -> None:
        plain._register_lock = asyncio.Lock()
        await plain.register_broker_all()

    asyncio.run(scenario2())
    ext = client.invoked[0][1].ext_fields
    assert ext["enableActingMaster"] == "false" and "heartbeatTimeoutMillis" not in ext


def test_an_isolated_broker_does_not_register(tmp_path):
    c = _controller(tmp_path, brokerRole="ASYNC_MASTER", brokerId=0, totalReplicas=2)
    c.outer_client = client = RecordingClient()  # type: ignore[assignment]

    async def scenario() -> None:
        c._register_lock = asyncio.Lock()
        await c.register_broker_all()

    asyncio.run(scenario())
    assert client.invoked == []


@pytest.mark.parametrize("compatible", [True, False])
def test_heartbeat_and_member_group_requests(tmp_path, compatible):
    c = _controller(tmp_path, compatibleWithOldNameSrv=str(compatible).lower())
    group = GetBrokerMemberGroupResponseBody(BrokerMemberGroup("TestCluster", "broker-t", {1: S1}))
    route = TopicRouteData(
        queue_datas=[QueueData("broker-t", 1, 1, 1, 0)], broker_datas=[BrokerData("TestCluster", "broker-t", {1: S1})]
    )
    body = route.encode() if compatible else group.encode()
    svc = c.acting_master_service
    svc.client = client = RecordingClient(RemotingCommand(code=ResponseCode.SUCCESS, body=body))
    asyncio.run(svc.send_heartbeat())
    assert [a for a, _ in client.oneway] == ["n1:1", "n2:2"]
    hb = client.oneway[0][1]
    assert hb.is_oneway
    if compatible:  # Java sendHeartbeatViaDataVersion
        assert hb.code == RequestCode.QUERY_DATA_VERSION and hb.body == c.topic_config_manager.data_version.encode()
        assert (hb.ext_fields["brokerName"], hb.ext_fields["brokerId"]) == ("broker-t", "1")
    else:
        assert hb.code == RequestCode.BROKER_HEARTBEAT and hb.body is None
        assert hb.ext_fields["clusterName"] == "TestCluster" and hb.ext_fields["brokerAddr"] == "127.0.0.1:10911"
    assert asyncio.run(svc.fetch_broker_member_group()) == {1: S1}
    (addr, ask), *_ = client.invoked
    assert addr == "n1:1"  # the first name server that answers
    if compatible:
        assert ask.code == RequestCode.GET_ROUTEINFO_BY_TOPIC
        assert ask.ext_fields["topic"] == "rmq_sys_SYNC_BROKER_MEMBER_broker-t"
    else:
        assert ask.code == RequestCode.GET_BROKER_MEMBER_GROUP
        assert (ask.ext_fields["clusterName"], ask.ext_fields["brokerName"]) == ("TestCluster", "broker-t")


# ---------------------------------------------------------------------- transactions on an acting slave


def test_a_half_message_escapes_as_the_prepared_message_it_was():
    from pyrmq.broker.escape_bridge import build_transactional_message_from_half

    half = m.MessageExtBrokerInner(
        topic="RMQ_SYS_TRANS_HALF_TOPIC",
        body=b"tx",
        queue_id=0,
        flag=3,
        properties={
            "REAL_TOPIC": "TxT",
            "REAL_QID": "2",
            "TRAN_PREPARED_QUEUE_OFFSET": "7",
            "PGROUP": "txg",
            "UNIQ_KEY": "U",
        },
        sys_flag=0,
        born_timestamp=42,
    )
    out = build_transactional_message_from_half(half)
    assert (out.topic, out.queue_id, out.flag, out.born_timestamp, out.body) == ("TxT", 2, 3, 42, b"tx")
    assert out.sys_flag & m.MessageSysFlag.TRANSACTION_PREPARED_TYPE
    assert out.properties == {
        "REAL_TOPIC": "TxT",
        "PGROUP": "txg",
        "UNIQ_KEY": "U",
        "TRAN_MSG": "true",
        "WAIT": "false",
    }


def test_an_acting_slaves_check_escapes_open_half_messages(make_broker):
    from .test_transactions import check, half_send

    b = make_broker(transactionTimeOut=0)
    assert half_send(b, body=b"open").code == ResponseCode.SUCCESS
    svc = b.c.transactional_message_service
    escaped: list[m.MessageExtBrokerInner] = []
    answers = [False, True]

    async def escape(msg: m.MessageExtBrokerInner) -> bool:
        escaped.append(msg)
        return answers.pop(0)

    svc.escape_message = escape
    svc.acting_slave = lambda: True
    check(b)
    # a failed escape is retried, then the half queue moves on; no check-back was sent
    assert [x.body for x in escaped] == [b"open", b"open"] and escaped[0].topic == "RMQ_SYS_TRANS_HALF_TOPIC"
    assert svc.fetch_consume_offset("RMQ_SYS_TRANS_HALF_TOPIC", 0) == 1
    check(b)
    assert len(escaped) == 2  # nothing is escaped twice


def test_the_bridge_sends_a_half_message_to_its_real_topic(tmp_path):
    route = _route()
    client = FakeClient(route=route)
    bridge = _bridge(tmp_path, client, enableSlaveActingMaster="true", enableRemoteEscape="true")
    half = _inner("RMQ_SYS_TRANS_HALF_TOPIC")
    half.properties.update({"REAL_TOPIC": "T", "REAL_QID": "1"})
    assert asyncio.run(bridge.escape_message(half))
    (_, ask), (addr, send) = client.sent
    assert ask.ext_fields["topic"] == "T" and addr == "10.0.1.1:10911"
    h = SendMessageRequestHeaderV2.from_ext_fields(send.ext_fields)
    assert h.b == "T" and h.f & m.MessageSysFlag.TRANSACTION_PREPARED_TYPE
    assert m.string_to_message_properties(h.i or "")["TRAN_MSG"] == "true"
    failing = _bridge(tmp_path, FakeClient(), enableSlaveActingMaster="true", enableRemoteEscape="true")
    assert not asyncio.run(failing.escape_message(half))


def test_a_slave_timer_starts_at_its_masters_checkpoint(make_broker):
    from pyrmq.broker.put import await_put
    from pyrmq.common.constants import TIMER_TOPIC

    b = make_broker()
    store, timer = b.c.message_store, b.c.timer_message_store
    for _ in range(3):
        msg = _inner("TimerT")
        msg.properties[MessageConst.TIMER_DELIVER_MS] = str(b.c.now() + 3_600_000)
        assert asyncio.run(await_put(store.put_message_async(msg))).put_message_status is PutMessageStatus.PUT_OK
    assert store.get_max_offset_in_queue(TIMER_TOPIC, 0) == 3
    timer.checkpoint.master_timer_queue_offset = 2
    timer.take_master_offset()
    assert timer.low_water == timer.read_offset == 2
    timer.checkpoint.master_timer_queue_offset = 9
    timer.take_master_offset()
    assert timer.low_water == timer.read_offset == 3  # never past the queue
    timer.checkpoint.master_timer_queue_offset = 0
    timer.take_master_offset()
    assert timer.low_water == 3  # never back before what it delivered itself


def test_controller_mode_role_changes_switch_the_special_services(make_broker):
    """Java ReplicasManager#changeToMaster/changeToSlave call changeSpecialServiceStatus: the delay
    levels, timer and transaction check run on the elected master only (brokerActive follows)."""
    from pyrmq.store.store_config import BrokerRole

    b = make_broker(enableControllerMode="true", brokerId="-1")
    services = b.c.acting_master_service.special_services

    async def scenario() -> list[bool | None]:
        seen = []
        b.c.apply_role(BrokerRole.SYNC_MASTER, 0, None, 1)
        await asyncio.sleep(0.05)
        seen.append(services.running)
        b.c.apply_role(BrokerRole.SLAVE, 2, "127.0.0.1:1", 2)
        await asyncio.sleep(0.05)
        seen.append(services.running)
        if b.c._slave_sync_task is not None:
            b.c._slave_sync_task.cancel()
        await services.change(False)
        return seen

    assert asyncio.run(scenario()) == [True, False]
