"""Bodies in the fastjson dialect, checked byte for byte against captures from the
official rocketmq-remoting 5.5.0 jar (tests/golden/bodies/, see MANIFEST.json)."""

from __future__ import annotations

import json
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.fakes import golden

from pyrmq.protocol.bodies.common import (
    DataVersion,
    TopicConfig,
    TopicConfigAndMappingSerializeWrapper,
    TopicConfigSerializeWrapper,
)
from pyrmq.protocol.bodies.namesrv import (
    BrokerData,
    BrokerMemberGroup,
    ClusterInfo,
    GetBrokerMemberGroupResponseBody,
    KVTable,
    QueueData,
    RegisterBrokerBody,
    TopicList,
    TopicRouteData,
)
from pyrmq.protocol.fastjson import BodyDecodeError, fastjson_dumps, lenient_loads
from pyrmq.protocol.version import MQVersion


def same(got: bytes, want: bytes, name: str) -> None:
    assert got == want, f"{name}\n got: {got.decode(errors='replace')}\nwant: {want.decode(errors='replace')}"


def route_data(order: bool = False) -> TopicRouteData:
    bd = BrokerData("DefaultCluster", "broker-a", {0: "192.168.1.10:10911", 1: "192.168.1.11:10911"})
    if order:
        bd.zone_name = "zone-1"
        bd.enable_acting_master = True
    return TopicRouteData(
        order_topic_conf="broker-a:4;broker-b:4" if order else None,
        queue_datas=[QueueData("broker-a", 4, 4, 6, 0)],
        broker_datas=[bd],
        filter_server_table={},
    )


def data_version(counter: int, ts: int = 1700000000000) -> DataVersion:
    return DataVersion(counter=counter, state_version=0, timestamp=ts)


def register_body() -> RegisterBrokerBody:
    body = RegisterBrokerBody()
    w = body.topic_config_serialize_wrapper
    w.data_version = data_version(1)
    w.mapping_data_version = data_version(1)
    w.topic_config_table["TopicAttr"] = TopicConfig(
        "TopicAttr", 2, 2, 6, order=True, attributes={"+message.type": "FIFO"}
    )
    w.topic_config_table["TopicTest"] = TopicConfig("TopicTest", 4, 4, 6)
    w.topic_config_table["TBW102"] = TopicConfig("TBW102", 8, 8, 7)
    return body


# ----------------------------------------------------------------- byte-exact writing


@pytest.mark.parametrize(
    "name, order, standard",
    [
        ("topic_route_data_plain.json", False, False),
        ("topic_route_data_standard.json", False, True),
        ("topic_route_data_order_zone_plain.json", True, False),
        ("topic_route_data_order_zone_standard.json", True, True),
    ],
)
def test_topic_route_data_both_key_forms(name: str, order: bool, standard: bool) -> None:
    same(route_data(order).encode(standard=standard), golden(f"bodies/{name}"), name)


def test_plain_route_data_has_unquoted_long_keys_and_no_whitespace() -> None:
    text = route_data().encode().decode()
    assert '"brokerAddrs":{0:"192.168.1.10:10911",1:"192.168.1.11:10911"}' in text
    assert " " not in text and "\n" not in text  # the Go client splits this text (spec §1.8 item 7)


def test_standard_form_sorts_long_keys_numerically() -> None:
    bd = BrokerData("c", "b", {10: "h:10", 2: "h:2", 0: "h:0"})
    assert bd.encode(standard=True) == (
        b'{"brokerAddrs":{"0":"h:0","2":"h:2","10":"h:10"},"brokerName":"b","cluster":"c","enableActingMaster":false}'
    )


def test_cluster_info() -> None:
    # Java HashMap order for these keys: broker-b before broker-a
    info = ClusterInfo(
        broker_addr_table={
            "broker-b": BrokerData("DefaultCluster", "broker-b", {0: "192.168.1.20:10911"}),
            "broker-a": BrokerData("DefaultCluster", "broker-a", {0: "192.168.1.10:10911", 1: "192.168.1.11:10911"}),
        },
        cluster_addr_table={"DefaultCluster": ["broker-b", "broker-a"]},
    )
    same(info.encode(), golden("bodies/cluster_info.json"), "cluster_info")


@pytest.mark.parametrize(
    "name, body",
    [
        ("topic_list.json", TopicList(["TopicTest"])),
        ("topic_list_broker_addr.json", TopicList(["DefaultCluster"], "192.168.1.10:10911")),
        ("kv_table.json", KVTable({"TopicOrder": "broker-a:4;broker-b:4"})),
        ("data_version.json", data_version(3)),
        (
            "get_broker_member_group.json",
            GetBrokerMemberGroupResponseBody(
                BrokerMemberGroup("DefaultCluster", "broker-a", {0: "192.168.1.10:10911", 1: "192.168.1.11:10911"})
            ),
        ),
    ],
)
def test_small_bodies(name: str, body) -> None:
    same(body.encode(), golden(f"bodies/{name}"), name)


def test_register_broker_body_json() -> None:
    # Java wrote the topics in ConcurrentHashMap order; the bodies are equal as JSON
    # and byte-equal once our dict has the same order.
    want = golden("bodies/register_broker_body.json")
    body = register_body()
    t = body.topic_config_serialize_wrapper.topic_config_table
    body.topic_config_serialize_wrapper.topic_config_table = {k: t[k] for k in ("TopicAttr", "TopicTest", "TBW102")}
    same(body.encode(), want, "register_broker_body")


def test_topic_config_serialize_wrapper_bare_form() -> None:
    w = TopicConfigSerializeWrapper({"TopicTest": TopicConfig("TopicTest", 4, 4, 6)}, data_version(2, 1700000000001))
    same(w.encode(), golden("bodies/topic_config_serialize_wrapper.json"), "topic_config_serialize_wrapper")


def test_topic_config_text_form() -> None:
    tc = TopicConfig("TopicAttr", 2, 2, 6, attributes={"+message.type": "FIFO"})
    assert tc.encode_text().encode() == golden("bodies/topic_config_encode.txt")
    back = TopicConfig.decode_text(tc.encode_text())
    assert back == TopicConfig("TopicAttr", 2, 2, 6, attributes={"+message.type": "FIFO"})


def test_topic_config_text_form_4x_has_five_tokens_and_bad_attributes_are_ignored() -> None:
    assert TopicConfig.decode_text("T 1 2 4 MULTI_TAG") == TopicConfig("T", 1, 2, 4, "MULTI_TAG")
    tc = TopicConfig.decode_text('T 1 2 6 SINGLE_TAG {"a":"x y"}')  # split breaks the JSON, Java ignores it
    assert tc.attributes == {} and tc.perm == 6
    with pytest.raises(BodyDecodeError):
        TopicConfig.decode_text("T 1 2")
    with pytest.raises(BodyDecodeError):
        TopicConfig.decode_text("T one 2 6 SINGLE_TAG")


def test_big_longs_become_strings_only_in_standard_form() -> None:
    big = TopicList(["x"], None)
    assert fastjson_dumps({"big": 9007199254740993, "ok": 9007199254740991}, standard=True) == (
        b'{"big":"9007199254740993","ok":9007199254740991}'
    )
    assert fastjson_dumps({"big": 9007199254740993}) == b'{"big":9007199254740993}'
    assert big.encode() == b'{"topicList":["x"]}'


def test_strings_are_escaped_like_fastjson() -> None:
    assert fastjson_dumps('a/b"c\\d\x01\b\t\n\f\ré中') == '"a/b\\"c\\\\d\\u0001\\b\\t\\n\\f\\ré中"'.encode()


# ----------------------------------------------------------------- reading


def test_decode_route_data_both_forms() -> None:
    for name in ("topic_route_data_plain.json", "topic_route_data_standard.json"):
        assert TopicRouteData.decode(golden(f"bodies/{name}")) == route_data(), name
    assert TopicRouteData.decode(golden("bodies/topic_route_data_order_zone_plain.json")) == route_data(order=True)


def test_decode_queue_data_old_spelling() -> None:
    qd = QueueData.decode(b'{"brokerName":"b","perm":6,"readQueueNums":4,"topicSynFlag":3,"writeQueueNums":4}')
    assert qd == QueueData("b", 4, 4, 6, 3)


def test_decode_register_broker_body_json() -> None:
    body = RegisterBrokerBody.decode(golden("bodies/register_broker_body.json"))
    assert body == register_body()
    assert isinstance(body.topic_config_serialize_wrapper, TopicConfigAndMappingSerializeWrapper)


def test_decode_java_compressed_register_broker_body() -> None:
    """The compressed form as RegisterBrokerBody#encode(true) of the 5.5.0 jar wrote it."""
    data = golden("bodies/register_broker_body_compressed.bin")
    assert data[:2] == b"\x78\xda"  # zlib, Deflater.BEST_COMPRESSION
    body = RegisterBrokerBody.decode_request(data, compressed=True, version=MQVersion.V5_0_0)
    w = body.topic_config_serialize_wrapper
    assert w.data_version == data_version(1)
    # topicSysFlag and order do not travel in the text form
    assert w.topic_config_table == {
        "TopicAttr": TopicConfig("TopicAttr", 2, 2, 6, attributes={"+message.type": "FIFO"}),
        "TopicTest": TopicConfig("TopicTest", 4, 4, 6),
        "TBW102": TopicConfig("TBW102", 8, 8, 7),
    }
    assert body.filter_server_list == []
    assert w.topic_queue_mapping_info_map == {}


def build_compressed_by_hand(version: int, mapping: list[dict]) -> bytes:
    """Our own writer of the Java layout, independent of RegisterBrokerBody.encode_compressed."""
    out = bytearray()

    def chunk(b: bytes) -> None:
        out.extend(struct.pack(">i", len(b)) + b)

    chunk(b'{"counter":7,"stateVersion":2,"timestamp":1700000000555}')
    out.extend(struct.pack(">i", 2))
    chunk(b"TopicA 8 4 6 SINGLE_TAG {}")
    chunk(b"TopicB 2 2 2 MULTI_TAG")  # 4.9.x: five tokens
    chunk(b'["10.0.0.9:1"]')
    if version >= MQVersion.V5_0_0:
        out.extend(struct.pack(">i", len(mapping)))
        for m in mapping:
            chunk(json.dumps(m, separators=(",", ":")).encode())
    return zlib.compress(bytes(out), 9)


@pytest.mark.parametrize("version", [MQVersion.V4_9_4, MQVersion.V5_0_0])
def test_decode_compressed_built_by_hand(version: int) -> None:
    mapping = [{"bname": "broker-a", "epoch": 1, "topic": "TopicA", "totalQueues": 8}]
    body = RegisterBrokerBody.decode_compressed(build_compressed_by_hand(version, mapping), version)
    w = body.topic_config_serialize_wrapper
    assert w.data_version == DataVersion(counter=7, state_version=2, timestamp=1700000000555)
    assert w.topic_config_table["TopicA"] == TopicConfig("TopicA", 8, 4, 6)
    assert w.topic_config_table["TopicB"] == TopicConfig("TopicB", 2, 2, 2, "MULTI_TAG")
    assert body.filter_server_list == ["10.0.0.9:1"]
    assert w.topic_queue_mapping_info_map == ({"TopicA": mapping[0]} if version >= MQVersion.V5_0_0 else {})


def test_compressed_round_trip_and_truncation() -> None:
    body = register_body()
    data = body.encode_compressed(MQVersion.V5_0_0)
    back = RegisterBrokerBody.decode_compressed(data, MQVersion.V5_0_0)
    for tc in body.topic_config_serialize_wrapper.topic_config_table.values():
        tc.order = False  # not carried by the text form
    assert (
        back.topic_config_serialize_wrapper.topic_config_table == body.topic_config_serialize_wrapper.topic_config_table
    )
    raw = zlib.decompress(data)
    with pytest.raises(BodyDecodeError, match="End of compressed data"):
        RegisterBrokerBody.decode_compressed(zlib.compress(raw[:-3]), MQVersion.V5_0_0)
    with pytest.raises(BodyDecodeError):
        RegisterBrokerBody.decode_compressed(b"not zlib at all", MQVersion.V5_0_0)


def test_missing_register_body_means_empty_table_version_zero() -> None:
    body = RegisterBrokerBody.decode_request(None, compressed=False, version=MQVersion.V5_0_0)
    assert body.topic_config_serialize_wrapper.topic_config_table == {}
    assert body.topic_config_serialize_wrapper.data_version == DataVersion(0, 0, 0)


def test_lenient_parser_reads_fastjson_non_json() -> None:
    assert lenient_loads(b'{0:"a",1:"b"}') == {0: "a", 1: "b"}
    got = lenient_loads(b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:5}}')
    assert got == {"offsetTable": {(("brokerName", "b"), ("queueId", 0), ("topic", "T")): 5}}
    assert lenient_loads("{'a':'x\\n'}") == {"a": "x\n"}
    for bad in (b"{", b'{"a":}', b"[1,2", b'{"a":1}x', b"\xff\xfe"):
        with pytest.raises(BodyDecodeError):
            lenient_loads(bad)


def test_wrong_types_raise_body_decode_error() -> None:
    with pytest.raises(BodyDecodeError):
        QueueData.decode(b'{"brokerName":"b","perm":"abc"}')
    with pytest.raises(BodyDecodeError):
        TopicRouteData.decode(b'{"queueDatas":{"x":1}}')
    with pytest.raises(BodyDecodeError):
        TopicRouteData.decode(b"[1,2]")
    # fastjson coerces numeric strings and ignores unknown keys
    assert QueueData.decode(b'{"perm":"6","x":1}') == QueueData(perm=6)


def test_data_version_compare_like_java() -> None:
    a = DataVersion(counter=5, state_version=0, timestamp=10)
    assert a.compare(DataVersion(counter=4, state_version=0, timestamp=99)) == 1
    assert a.compare(DataVersion(counter=1, state_version=1, timestamp=0)) == -1
    assert a.compare(DataVersion(counter=5, state_version=0, timestamp=10)) == 0
    assert a == DataVersion(counter=5, state_version=0, timestamp=10)


names = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=0x2FF), max_size=12)


@settings(max_examples=150, deadline=None)
@given(
    addrs=st.dictionaries(st.integers(0, 2**40), names, max_size=4),
    cluster=names,
    standard=st.booleans(),
)
def test_broker_data_round_trip(addrs: dict[int, str], cluster: str, standard: bool) -> None:
    bd = BrokerData(cluster, "b", addrs)
    assert BrokerData.decode(bd.encode(standard=standard)) == bd


def test_compressed_body_under_a_compressed_false_header_is_still_read() -> None:
    """5.x brokers with compressedRegister=true send compressed=false with a zlib body."""
    data = golden("bodies/register_broker_body_compressed.bin")
    body = RegisterBrokerBody.decode_request(data, compressed=False, version=MQVersion.V5_0_0)
    assert set(body.topic_config_serialize_wrapper.topic_config_table) == {"TopicAttr", "TopicTest", "TBW102"}
    # and a JSON body is never mistaken for zlib
    assert RegisterBrokerBody.decode_request(golden("bodies/register_broker_body.json"), False, MQVersion.V5_0_0) == (
        RegisterBrokerBody.decode(golden("bodies/register_broker_body.json"))
    )


def test_plain_long_keys_follow_java_hashmap_order() -> None:
    bd = BrokerData("c", "b", {1: "slave:1", 0: "master:1"})  # the slave registered first
    assert bd.encode().startswith(b'{"brokerAddrs":{0:"master:1",1:"slave:1"}')


def test_decode_4_9_register_broker_body() -> None:
    """4.9.x brokers: no mapping fields, no stateVersion, no attributes (spec §3.2)."""
    data = (
        b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":2,'
        b'"timestamp":1700000000000},"topicConfigTable":{"T":{"order":false,"perm":6,"readQueueNums":4,'
        b'"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":4}}}}'
    )
    body = RegisterBrokerBody.decode_request(data, compressed=False, version=409)
    w = body.topic_config_serialize_wrapper
    assert w.data_version == DataVersion(counter=2, state_version=0, timestamp=1700000000000)
    assert w.topic_config_table == {"T": TopicConfig("T", 4, 4, 6)}
    assert w.topic_queue_mapping_info_map == {}


def test_config_update_body_reads_like_java_string2properties():
    from pyrmq.protocol.bodies.common import decode_config_update
    from pyrmq.protocol.errors import NoPermission, SystemError_

    assert decode_config_update(b"a=1\nb = x\\\n  y\n", ()) == {"a": "1", "b": "xy"}
    assert decode_config_update(b"k=\xff\xfe", ()) == {"k": "\ufffd\ufffd"}  # new String(bytes, UTF-8)
    with pytest.raises(NoPermission, match=r"Can not update config in black list\."):
        decode_config_update(b"brokerConfigPath=/x\n", ("brokerConfigPath",))
    with pytest.raises(SystemError_, match="string2Properties error"):
        decode_config_update(b"k=\\uZZZZ", ())
