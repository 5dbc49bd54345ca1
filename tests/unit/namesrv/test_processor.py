"""NameServer processors awaited directly, without sockets: codes, remarks, headers, bodies."""

from __future__ import annotations

import asyncio
import zlib

import pytest
from support.fakes import FakeChannel, ManualClock

from pyrmq.namesrv.config import NamesrvConfig
from pyrmq.namesrv.controller import NamesrvController
from pyrmq.protocol.bodies.common import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from pyrmq.protocol.bodies.namesrv import KVTable, RegisterBrokerBody, TopicList, TopicRouteData
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand, decode_frame, encode
from pyrmq.protocol.errors import RemotingError
from pyrmq.remoting.channel import ProcessorTable, RequestContext, call_handler

V5_5_0 = 513
V4_9_3 = 400


class Harness:
    """Dispatches like the server does (one table, RemotingError -> its code), no sockets."""

    def __init__(self, tmp_path, **props: str) -> None:
        props.setdefault("kvConfigPath", str(tmp_path / "kvConfig.json"))
        props.setdefault("configStorePath", str(tmp_path / "namesrv.properties"))
        self.clock = ManualClock()
        self.controller = NamesrvController(NamesrvConfig.from_properties(props), clock=self.clock)
        self.table = ProcessorTable()
        for processor in self.controller.processors():
            self.table.register(processor)

    def call(
        self,
        code: int,
        ext: dict | None = None,
        body: bytes | None = None,
        *,
        version: int = V5_5_0,
        channel: FakeChannel | None = None,
    ) -> RemotingCommand:
        cmd = RemotingCommand.request(code, ext, body)
        cmd.version = version
        handler = self.table.lookup(code)
        assert handler is not None, f"code {code} not served"
        ctx = RequestContext(channel or FakeChannel(), None)
        resp = asyncio.run(call_handler(handler, ctx, cmd))
        assert resp is not None
        # every response must survive the wire
        return decode_frame(encode(resp)[4:])


def topics(*names: str, counter: int = 1) -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper(
        {n: TopicConfig(n, 4, 4, 6) for n in names}, DataVersion(counter=counter, state_version=0, timestamp=5)
    )


def reg_ext(name: str = "broker-a", addr: str = "127.0.0.1:10911", bid: int = 0, **more: str) -> dict:
    ext = {
        "brokerName": name,
        "brokerAddr": addr,
        "clusterName": "DefaultCluster",
        "haServerAddr": addr.replace("10911", "10912"),
        "brokerId": str(bid),
        "compressed": "false",
        "bodyCrc32": "0",
        "enableActingMaster": "false",
    }
    ext.update(more)
    return ext


def reg_body(*names: str, counter: int = 1) -> bytes:
    body = RegisterBrokerBody()
    w = body.topic_config_serialize_wrapper
    w.topic_config_table = topics(*names).topic_config_table
    w.data_version = DataVersion(counter=counter, state_version=0, timestamp=5)
    return body.encode()


@pytest.fixture
def ns(tmp_path) -> Harness:
    return Harness(tmp_path)


def test_every_nameserver_code_of_spec_table_2_1_is_served(ns: Harness) -> None:
    served = {
        RequestCode.PUT_KV_CONFIG,
        RequestCode.GET_KV_CONFIG,
        RequestCode.DELETE_KV_CONFIG,
        RequestCode.REGISTER_BROKER,
        RequestCode.UNREGISTER_BROKER,
        RequestCode.GET_ROUTEINFO_BY_TOPIC,
        RequestCode.GET_BROKER_CLUSTER_INFO,
        RequestCode.WIPE_WRITE_PERM_OF_BROKER,
        RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        RequestCode.DELETE_TOPIC_IN_NAMESRV,
        RequestCode.REGISTER_TOPIC_IN_NAMESRV,
        RequestCode.GET_KVLIST_BY_NAMESPACE,
        RequestCode.GET_TOPICS_BY_CLUSTER,
        RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS,
        RequestCode.GET_UNIT_TOPIC_LIST,
        RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST,
        RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
        RequestCode.UPDATE_NAMESRV_CONFIG,
        RequestCode.GET_NAMESRV_CONFIG,
        RequestCode.QUERY_DATA_VERSION,
        RequestCode.ADD_WRITE_PERM_OF_BROKER,
        RequestCode.GET_BROKER_MEMBER_GROUP,
        RequestCode.BROKER_HEARTBEAT,
    }
    assert set(ns.table.handlers) == {int(c) for c in served}


def test_register_then_route_in_both_key_forms(ns: Harness) -> None:
    r = ns.call(RequestCode.REGISTER_BROKER, reg_ext(), reg_body("TopicTest", "TBW102"))
    assert r.code == ResponseCode.SUCCESS and r.body is None
    assert r.ext_fields in (None, {})  # no master for a master: both header fields absent

    new = ns.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicTest"}, version=V5_5_0)
    assert new.code == ResponseCode.SUCCESS
    assert b'"brokerAddrs":{"0":"127.0.0.1:10911"}' in new.body
    old = ns.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicTest"}, version=V4_9_3)
    assert b'"brokerAddrs":{0:"127.0.0.1:10911"}' in old.body
    asked = ns.call(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicTest", "acceptStandardJsonOnly": "true"}, version=317
    )
    assert asked.body == new.body
    assert TopicRouteData.decode(old.body) == TopicRouteData.decode(new.body)


def test_route_of_unknown_topic_is_topic_not_exist_with_java_remark(ns: Harness) -> None:
    r = ns.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Nope"})
    assert r.code == ResponseCode.TOPIC_NOT_EXIST
    assert r.remark == (
        "No topic route info in name server for the topic: Nope"
        "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
    )


def test_missing_required_header_is_a_readable_error(ns: Harness) -> None:
    r = ns.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {})
    assert r.code == ResponseCode.INVALID_PARAMETER and "topic" in r.remark
    r = ns.call(RequestCode.REGISTER_BROKER, reg_ext(bid="abc"), reg_body("A", "B"))  # type: ignore[arg-type]
    assert r.code == ResponseCode.INVALID_PARAMETER and "brokerId" in r.remark


def test_bad_register_bodies(ns: Harness) -> None:
    r = ns.call(RequestCode.REGISTER_BROKER, reg_ext(), b"{not json")
    assert r.code == ResponseCode.SYSTEM_ERROR and "RegisterBrokerBody" in r.remark
    r = ns.call(RequestCode.REGISTER_BROKER, reg_ext(compressed="true"), b"\x00\x01garbage")
    assert r.code == ResponseCode.SYSTEM_ERROR and "RegisterBrokerBody" in r.remark
    assert ns.controller.route_info_manager.broker_addr_table == {}


def test_crc32_checked_when_given(ns: Harness) -> None:
    body = reg_body("A", "B")
    bad = ns.call(RequestCode.REGISTER_BROKER, reg_ext(bodyCrc32="12345"), body)
    assert (bad.code, bad.remark) == (ResponseCode.SYSTEM_ERROR, "crc32 not match")
    good = ns.call(RequestCode.REGISTER_BROKER, reg_ext(bodyCrc32=str(zlib.crc32(body) & 0x7FFFFFFF)), body)
    assert good.code == ResponseCode.SUCCESS


def test_compressed_registration(ns: Harness) -> None:
    body = RegisterBrokerBody.decode(reg_body("A", "B"))
    r = ns.call(RequestCode.REGISTER_BROKER, reg_ext(compressed="true"), body.encode_compressed(V5_5_0))
    assert r.code == ResponseCode.SUCCESS
    assert set(ns.controller.route_info_manager.topic_queue_table) == {"A", "B"}


def test_old_broker_sends_a_bare_topic_config_wrapper(ns: Harness) -> None:
    r = ns.call(RequestCode.REGISTER_BROKER, reg_ext(), topics("Old1", "Old2").encode(), version=30)
    assert r.code == ResponseCode.SUCCESS
    assert set(ns.controller.route_info_manager.topic_queue_table) == {"Old1", "Old2"}


def test_single_topic_before_first_registration_fails(ns: Harness) -> None:
    r = ns.call(RequestCode.REGISTER_BROKER, reg_ext(), reg_body("Only"))
    assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, "register broker failed")


def test_slave_response_header_and_order_topic_kv_body(ns: Harness) -> None:
    ns.call(RequestCode.REGISTER_BROKER, reg_ext(), reg_body("T", "U"))
    ns.call(RequestCode.PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "broker-a:4"})
    r = ns.call(RequestCode.REGISTER_BROKER, reg_ext(addr="127.0.0.2:10911", bid=1), reg_body("T", "U"))
    assert r.ext_fields == {"haServerAddr": "127.0.0.1:10912", "masterAddr": "127.0.0.1:10911"}
    assert KVTable.decode(r.body) == KVTable({"T": "broker-a:4"})


def test_order_topic_conf_only_when_enabled(tmp_path) -> None:
    for enabled in (False, True):
        h = Harness(tmp_path / str(enabled), orderMessageEnable=str(enabled).lower())
        h.call(RequestCode.REGISTER_BROKER, reg_ext(), reg_body("T", "U"))
        h.call(RequestCode.PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "broker-a:4"})
        route = TopicRouteData.decode(h.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}).body)
        assert route.order_topic_conf == ("broker-a:4" if enabled else None)


def test_zone_mode_filters_brokers_of_other_zones(ns: Harness) -> None:
    ns.call(RequestCode.REGISTER_BROKER, reg_ext(__ZONE_NAME="z1"), reg_body("T", "U"))
    ns.call(RequestCode.REGISTER_BROKER, reg_ext("broker-b", "127.0.0.3:10911", __ZONE_NAME="z2"), reg_body("T", "U"))
    r = ns.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T", "__ZONE_MODE": "true", "__ZONE_NAME": "Z1"})
    route = TopicRouteData.decode(r.body)
    assert [b.broker_name for b in route.broker_datas] == ["broker-a"]
    assert [q.broker_name for q in route.queue_datas] == ["broker-a"]
    full = TopicRouteData.decode(ns.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}).body)
    assert len(full.broker_datas) == 2 and full.broker_datas[0].zone_name in ("z1", "z2")


def test_kv_codes(ns: Harness) -> None:
    r = ns.call(RequestCode.PUT_KV_CONFIG, {"key": "k", "value": "v"})
    assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, "namespace or key is null")
    assert ns.call(RequestCode.PUT_KV_CONFIG, {"namespace": "n", "key": "k", "value": "v"}).code == 0
    r = ns.call(RequestCode.GET_KV_CONFIG, {"namespace": "n", "key": "k"})
    assert r.code == 0 and r.ext_fields == {"value": "v"}
    r = ns.call(RequestCode.GET_KV_CONFIG, {"namespace": "n", "key": "x"})
    assert (r.code, r.remark) == (ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: n Key: x")
    r = ns.call(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "n"})
    assert r.code == 0 and KVTable.decode(r.body).table == {"k": "v"}
    r = ns.call(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "zz"})
    assert (r.code, r.remark) == (ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: zz")
    assert ns.call(RequestCode.DELETE_KV_CONFIG, {"namespace": "n", "key": "k"}).code == 0
    assert ns.call(RequestCode.GET_KV_CONFIG, {"namespace": "n", "key": "k"}).code == ResponseCode.QUERY_NOT_FOUND


def test_perm_codes_answer_counts(ns: Harness) -> None:
    ns.call(RequestCode.REGISTER_BROKER, reg_ext(), reg_body("T", "U", "V"))
    r = ns.call(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert r.code == 0 and r.ext_fields == {"wipeTopicCount": "3"}
    r = ns.call(RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert r.code == 0 and r.ext_fields == {"addTopicCount": "3"}
    r = ns.call(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "nobody"})
    assert r.ext_fields == {"wipeTopicCount": "0"}


def test_topic_list_codes_and_switches(tmp_path) -> None:
    ns = Harness(tmp_path)
    ns.call(RequestCode.REGISTER_BROKER, reg_ext(), reg_body("T", "U"))
    r = ns.call(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
    assert sorted(TopicList.decode(r.body).topic_list) == ["T", "U"]
    r = ns.call(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "DefaultCluster"})
    assert sorted(TopicList.decode(r.body).topic_list) == ["T", "U"]
    r = ns.call(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS)
    assert TopicList.decode(r.body) == TopicList(["DefaultCluster", "broker-a"], "127.0.0.1:10911")
    for code in (
        RequestCode.GET_UNIT_TOPIC_LIST,
        RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST,
        RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
    ):
        assert ns.call(code).body == b'{"topicList":[]}'

    off = Harness(tmp_path / "off", enableAllTopicList="false", enableTopicList="false")
    for code, ext in (
        (RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, None),
        (RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "c"}),
        (RequestCode.GET_UNIT_TOPIC_LIST, None),
    ):
        r = off.call(code, ext)
        assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, "disable")


def test_delete_and_register_topic(ns: Harness) -> None:
    ns.call(RequestCode.REGISTER_BROKER, reg_ext(), reg_body("T", "U"))
    assert ns.call(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "T"}).code == 0
    assert ns.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}).code == ResponseCode.TOPIC_NOT_EXIST
    body = b'{"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":2}]}'
    assert ns.call(RequestCode.REGISTER_TOPIC_IN_NAMESRV, {"topic": "T"}, body).code == 0
    route = TopicRouteData.decode(ns.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}).body)
    assert route.queue_datas[0].write_queue_nums == 2


def test_unregister_and_cluster_info(ns: Harness) -> None:
    ns.call(RequestCode.REGISTER_BROKER, reg_ext(), reg_body("T", "U"))
    info = ns.call(RequestCode.GET_BROKER_CLUSTER_INFO)
    assert info.body == (
        b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a",'
        b'"cluster":"DefaultCluster","enableActingMaster":false}},'
        b'"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
    )
    ext = {"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "clusterName": "DefaultCluster", "brokerId": "0"}
    assert ns.call(RequestCode.UNREGISTER_BROKER, ext).code == 0
    assert ns.call(RequestCode.GET_BROKER_CLUSTER_INFO).body == b'{"brokerAddrTable":{},"clusterAddrTable":{}}'


def test_query_data_version_and_heartbeat(ns: Harness) -> None:
    ns.call(RequestCode.REGISTER_BROKER, reg_ext(), reg_body("T", "U", counter=3))
    ext = {"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "clusterName": "DefaultCluster", "brokerId": "0"}
    same = DataVersion(counter=3, state_version=0, timestamp=5).encode()
    r = ns.call(RequestCode.QUERY_DATA_VERSION, ext, same)
    assert r.ext_fields == {"changed": "false"} and r.body == same
    r = ns.call(RequestCode.QUERY_DATA_VERSION, ext, DataVersion(counter=4, state_version=0, timestamp=5).encode())
    assert r.ext_fields == {"changed": "true"}
    live = ns.controller.route_info_manager.broker_live_table
    (info,) = live.values()
    ns.clock.advance(60_000)
    hb = {"clusterName": "DefaultCluster", "brokerAddr": "127.0.0.1:10911", "brokerName": "broker-a"}
    assert ns.call(RequestCode.BROKER_HEARTBEAT, hb).code == 0
    assert info.last_update_timestamp == ns.clock()


def test_broker_member_group(ns: Harness) -> None:
    ns.call(RequestCode.REGISTER_BROKER, reg_ext(), reg_body("T", "U"))
    r = ns.call(RequestCode.GET_BROKER_MEMBER_GROUP, {"clusterName": "DefaultCluster", "brokerName": "broker-a"})
    assert r.body == (
        b'{"brokerMemberGroup":{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a",'
        b'"cluster":"DefaultCluster"}}'
    )


def test_namesrv_config_get_update_and_black_list(ns: Harness, tmp_path) -> None:
    text = ns.call(RequestCode.GET_NAMESRV_CONFIG).body.decode()
    lines = text.splitlines()
    assert lines == sorted(lines)
    assert "enableTopicList=true" in lines and "listenPort=9876" in lines
    r = ns.call(RequestCode.UPDATE_NAMESRV_CONFIG, None, b"enableTopicList=false\n")
    assert r.code == 0 and ns.controller.config["enableTopicList"] is False
    assert "enableTopicList=false" in (tmp_path / "namesrv.properties").read_text()
    for key in ("kvConfigPath", "configStorePath", "configBlackList", "rocketmqHome"):
        r = ns.call(RequestCode.UPDATE_NAMESRV_CONFIG, None, f"{key}=/x\n".encode())
        assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "Can not update config in black list.")
    assert ns.controller.config["kvConfigPath"] == str(tmp_path / "kvConfig.json")


def test_configured_black_list_extends_the_fixed_one(tmp_path) -> None:
    ns = Harness(tmp_path, configBlackList="enableTopicList")
    r = ns.call(RequestCode.UPDATE_NAMESRV_CONFIG, None, b"enableTopicList=false\n")
    assert r.code == ResponseCode.NO_PERMISSION
    assert ns.call(RequestCode.UPDATE_NAMESRV_CONFIG, None, b"kvConfigPath=/x\n").code == ResponseCode.NO_PERMISSION


def test_need_wait_for_service(tmp_path) -> None:
    ns = Harness(tmp_path, needWaitForService="true")
    r = ns.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
    assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, "name server not ready")


def test_expired_broker_channel_is_closed(ns: Harness) -> None:
    ch = FakeChannel("127.0.0.1:40000")
    ns.call(RequestCode.REGISTER_BROKER, reg_ext(heartbeatTimeoutMillis="1000"), reg_body("T", "U"), channel=ch)
    ns.clock.advance(1001)
    ns.controller.scan_not_active_broker()
    assert ch.closed
    assert ns.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}).code == ResponseCode.TOPIC_NOT_EXIST


# ----------------------------------------------------------------- robustness

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_KEYS = [
    "topic",
    "brokerName",
    "brokerAddr",
    "clusterName",
    "haServerAddr",
    "brokerId",
    "compressed",
    "bodyCrc32",
    "heartbeatTimeoutMillis",
    "enableActingMaster",
    "namespace",
    "key",
    "value",
    "cluster",
    "acceptStandardJsonOnly",
    "__ZONE_MODE",
    "__ZONE_NAME",
]
_VALUES = st.one_of(
    st.sampled_from(["", "0", "-1", "true", "abc", "9" * 30, "broker-a", "127.0.0.1:10911"]), st.text(max_size=8)
)
_BODIES = st.one_of(
    st.none(),
    st.binary(max_size=64),
    st.sampled_from(
        [
            b"{}",
            b"[]",
            b"null",
            b'{"topicConfigSerializeWrapper":[]}',
            b'{"queueDatas":[{"perm":"x"}]}',
            b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"perm":6}},"dataVersion":{}}}',
            zlib.compress(b"\x00\x00\x00\x02{}"),
            b"a=b\nconfigStorePath=/x\n",
        ]
    ),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    code=st.sampled_from(
        sorted(
            [
                int(c)
                for c in (
                    RequestCode.REGISTER_BROKER,
                    RequestCode.UNREGISTER_BROKER,
                    RequestCode.GET_ROUTEINFO_BY_TOPIC,
                    RequestCode.PUT_KV_CONFIG,
                    RequestCode.GET_KV_CONFIG,
                    RequestCode.DELETE_KV_CONFIG,
                    RequestCode.GET_KVLIST_BY_NAMESPACE,
                    RequestCode.QUERY_DATA_VERSION,
                    RequestCode.BROKER_HEARTBEAT,
                    RequestCode.REGISTER_TOPIC_IN_NAMESRV,
                    RequestCode.DELETE_TOPIC_IN_NAMESRV,
                    RequestCode.GET_TOPICS_BY_CLUSTER,
                    RequestCode.WIPE_WRITE_PERM_OF_BROKER,
                    RequestCode.ADD_WRITE_PERM_OF_BROKER,
                    RequestCode.GET_BROKER_MEMBER_GROUP,
                    RequestCode.UPDATE_NAMESRV_CONFIG,
                    RequestCode.GET_NAMESRV_CONFIG,
                )
            ]
        )
    ),
    ext=st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=10),
    body=_BODIES,
    version=st.sampled_from([0, 30, 317, 400, 401, 513, 9999]),
)
def test_any_input_gets_a_response_never_a_crash(tmp_path_factory, code, ext, body, version) -> None:
    """Every handler returns a response or raises RemotingError (mapped to its code); nothing else escapes."""
    ns = Harness(tmp_path_factory.mktemp("fuzz"))
    ns.call(RequestCode.REGISTER_BROKER, reg_ext(), reg_body("T", "U"))
    cmd = RemotingCommand.request(code, dict(ext), body)
    cmd.version = version
    handler = ns.table.lookup(code)
    try:
        resp = asyncio.run(handler(RequestContext(FakeChannel(), None), cmd))
    except RemotingError as e:
        assert e.code != ResponseCode.SUCCESS and str(e)
        return
    assert isinstance(resp, RemotingCommand) and resp.is_response
    decode_frame(encode(resp)[4:])
