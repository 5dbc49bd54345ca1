"""RouteInfoManager with a frozen clock: registration, versions, master/slave, expiry, removal."""

from __future__ import annotations

import pytest
from support.fakes import ManualClock

from pyrmq.namesrv.route_info_manager import (
    DEFAULT_BROKER_CHANNEL_EXPIRED_TIME,
    BrokerAddrInfo,
    RouteInfoManager,
)
from pyrmq.protocol.bodies.common import (
    DataVersion,
    TopicConfig,
    TopicConfigAndMappingSerializeWrapper,
    TopicConfigSerializeWrapper,
)
from pyrmq.protocol.bodies.namesrv import QueueData

CLUSTER = "DefaultCluster"
A0 = "10.0.0.1:10911"
A1 = "10.0.0.2:10911"
B0 = "10.0.0.3:10911"


@pytest.fixture
def rim(clock: ManualClock) -> RouteInfoManager:
    return RouteInfoManager(clock=clock)


def wrapper(counter: int, *topics: TopicConfig, state: int = 0, ts: int = 1) -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper(
        {t.topic_name: t for t in topics}, DataVersion(counter=counter, state_version=state, timestamp=ts)
    )


def register(rim, name="broker-a", addr=A0, bid=0, w=None, channel=None, timeout=None, acting=None, ha=None):
    return rim.register_broker(
        CLUSTER,
        addr,
        name,
        bid,
        ha or addr.replace("10911", "10912"),
        None,
        timeout,
        acting,
        w if w is not None else wrapper(1, TopicConfig("TopicTest", 4, 4, 6), TopicConfig("TBW102", 8, 8, 7)),
        [],
        channel,
    )


def test_register_master_creates_cluster_broker_and_routes(rim: RouteInfoManager) -> None:
    result = register(rim, channel="ch-a")
    assert result is not None and result.master_addr is None and result.ha_server_addr is None
    assert rim.cluster_addr_table == {CLUSTER: {"broker-a"}}
    assert rim.broker_addr_table["broker-a"].broker_addrs == {0: A0}
    route = rim.pickup_topic_route_data("TopicTest")
    assert route.queue_datas == [QueueData("broker-a", 4, 4, 6, 0)]
    assert [b.broker_addrs for b in route.broker_datas] == [{0: A0}]
    assert route.filter_server_table == {}
    assert rim.pickup_topic_route_data("Nope") is None
    live = rim.broker_live_table[BrokerAddrInfo(CLUSTER, A0)]
    assert live.channel == "ch-a" and live.heartbeat_timeout_millis == DEFAULT_BROKER_CHANNEL_EXPIRED_TIME


def test_route_data_is_a_copy(rim: RouteInfoManager) -> None:
    register(rim)
    route = rim.pickup_topic_route_data("TopicTest")
    route.broker_datas[0].broker_addrs[5] = "x"
    route.queue_datas[0].perm = 0
    again = rim.pickup_topic_route_data("TopicTest")
    assert again.broker_datas[0].broker_addrs == {0: A0} and again.queue_datas[0].perm == 6


def test_reregister_same_version_does_not_touch_queue_data(rim: RouteInfoManager) -> None:
    tbw = TopicConfig("TBW102", 8, 8, 7)
    register(rim, w=wrapper(1, TopicConfig("TopicTest", 4, 4, 6), tbw))
    # same DataVersion, different queue numbers: Java only re-reads topics when the version changed
    register(rim, w=wrapper(1, TopicConfig("TopicTest", 8, 8, 6), tbw))
    assert rim.topic_queue_table["TopicTest"]["broker-a"].write_queue_nums == 4
    # a changed version applies the new numbers
    register(rim, w=wrapper(2, TopicConfig("TopicTest", 8, 8, 6), tbw))
    assert rim.topic_queue_table["TopicTest"]["broker-a"].write_queue_nums == 8


def test_same_version_still_adds_a_topic_missing_from_the_table(rim: RouteInfoManager) -> None:
    register(rim, w=wrapper(1, TopicConfig("TopicTest", 4, 4, 6), TopicConfig("TBW102", 8, 8, 7)))
    rim.delete_topic("TopicTest")
    register(rim, w=wrapper(1, TopicConfig("TopicTest", 4, 4, 6), TopicConfig("TBW102", 8, 8, 7)))
    assert "TopicTest" in rim.topic_queue_table


def test_registration_is_additive_unless_delete_topic_with_broker_registration(rim: RouteInfoManager) -> None:
    register(rim, w=wrapper(1, TopicConfig("T1", 4, 4, 6), TopicConfig("T2", 4, 4, 6)))
    register(rim, w=wrapper(2, TopicConfig("T1", 4, 4, 6), TopicConfig("T3", 4, 4, 6)))
    assert set(rim.topic_queue_table) == {"T1", "T2", "T3"}
    rim.delete_topic_with_broker_registration = True
    register(rim, w=wrapper(3, TopicConfig("T1", 4, 4, 6), TopicConfig("T3", 4, 4, 6)))
    assert set(rim.topic_queue_table) == {"T1", "T3"}


def test_one_topic_registration_before_the_first_full_one_is_refused(rim: RouteInfoManager) -> None:
    assert register(rim, w=wrapper(1, TopicConfig("Only", 4, 4, 6))) is None
    assert "Only" not in rim.topic_queue_table
    # the cluster entry is created before the check, as in Java
    assert rim.cluster_addr_table == {CLUSTER: {"broker-a"}}
    register(rim)
    assert register(rim, w=wrapper(2, TopicConfig("Only", 4, 4, 6))) is not None
    assert "Only" in rim.topic_queue_table


def test_slave_gets_master_addresses_and_does_not_change_queue_data(rim: RouteInfoManager) -> None:
    register(rim, addr=A0, bid=0, ha="10.0.0.1:10912")
    result = register(rim, addr=A1, bid=1, w=wrapper(5, TopicConfig("TopicTest", 16, 16, 6), TopicConfig("X", 1, 1, 6)))
    assert result.master_addr == A0 and result.ha_server_addr == "10.0.0.1:10912"
    assert rim.broker_addr_table["broker-a"].broker_addrs == {0: A0, 1: A1}
    assert rim.topic_queue_table["TopicTest"]["broker-a"].write_queue_nums == 4
    assert rim.pickup_topic_route_data("TopicTest").broker_datas[0].broker_addrs == {0: A0, 1: A1}


def test_slave_without_live_master_gets_no_master_addr(rim: RouteInfoManager) -> None:
    result = register(rim, addr=A1, bid=1)
    assert result.master_addr is None and result.ha_server_addr is None


def test_slave_promoted_to_master_moves_its_address(rim: RouteInfoManager) -> None:
    register(rim, addr=A1, bid=1)
    register(rim, addr=A1, bid=0, w=wrapper(2, TopicConfig("TopicTest", 4, 4, 6), TopicConfig("X", 1, 1, 6)))
    assert rim.broker_addr_table["broker-a"].broker_addrs == {0: A1}


def test_older_state_version_on_a_taken_id_is_ignored(rim: RouteInfoManager) -> None:
    two = (TopicConfig("TopicTest", 4, 4, 6), TopicConfig("X", 1, 1, 6))
    register(rim, addr=A0, bid=0, w=wrapper(1, *two, state=5))
    result = register(rim, addr=A1, bid=0, w=wrapper(1, *two, state=3))
    assert result is not None and result.master_addr is None
    assert rim.broker_addr_table["broker-a"].broker_addrs == {0: A0}
    assert BrokerAddrInfo(CLUSTER, A1) not in rim.broker_live_table


def test_unregister_master_then_slave_removes_everything(rim: RouteInfoManager) -> None:
    register(rim, addr=A0, bid=0)
    register(rim, addr=A1, bid=1)
    register(rim, name="broker-b", addr=B0, w=wrapper(1, TopicConfig("TopicTest", 4, 4, 6), TopicConfig("X", 1, 1, 6)))
    rim.unregister_broker(CLUSTER, A0, "broker-a", 0)
    assert rim.broker_addr_table["broker-a"].broker_addrs == {1: A1}
    assert "broker-a" in rim.topic_queue_table["TopicTest"]  # names with an address keep their queues
    rim.unregister_broker(CLUSTER, A1, "broker-a", 1)
    assert "broker-a" not in rim.broker_addr_table
    assert rim.cluster_addr_table == {CLUSTER: {"broker-b"}}
    assert set(rim.topic_queue_table["TopicTest"]) == {"broker-b"}
    assert "TBW102" not in rim.topic_queue_table  # only broker-a had it
    assert set(rim.topic_queue_table) == {"TopicTest", "X"}
    rim.unregister_broker(CLUSTER, B0, "broker-b", 0)
    assert rim.cluster_addr_table == {} and rim.topic_queue_table == {} and rim.broker_live_table == {}


def test_expiry_uses_default_then_header_timeout(rim: RouteInfoManager, clock: ManualClock) -> None:
    register(rim, channel="ch-a")
    register(rim, name="broker-b", addr=B0, channel="ch-b", timeout=10_000)
    clock.advance(10_000)
    assert rim.scan_not_active_broker() == []  # not yet: last + timeout < now is strict
    clock.advance(1)
    assert rim.scan_not_active_broker() == ["ch-b"]
    assert "broker-b" not in rim.broker_addr_table and "broker-a" in rim.broker_addr_table
    clock.advance(DEFAULT_BROKER_CHANNEL_EXPIRED_TIME - 10_000)
    assert rim.scan_not_active_broker() == ["ch-a"]
    assert rim.topic_queue_table == {} and rim.cluster_addr_table == {}


def test_heartbeat_and_reregistration_refresh_liveness(rim: RouteInfoManager, clock: ManualClock) -> None:
    rim.default_timeout_millis = 3000
    register(rim, channel="ch-a")
    clock.advance(2500)
    rim.update_broker_info_update_timestamp(CLUSTER, A0)
    clock.advance(2500)
    assert rim.scan_not_active_broker() == []
    clock.advance(2000)
    register(rim, channel="ch-a")
    clock.advance(2999)
    assert rim.scan_not_active_broker() == []
    clock.advance(2)
    assert rim.scan_not_active_broker() == ["ch-a"]


def test_channel_close_removes_only_that_brokers_routes(rim: RouteInfoManager) -> None:
    chan_a, chan_b = object(), object()
    register(rim, channel=chan_a)
    register(rim, name="broker-b", addr=B0, channel=chan_b)
    rim.on_channel_destroy(object())  # an unrelated connection (a client) changes nothing
    assert set(rim.broker_addr_table) == {"broker-a", "broker-b"}
    rim.on_channel_destroy(chan_a)
    assert set(rim.broker_addr_table) == {"broker-b"}
    assert [q.broker_name for q in rim.pickup_topic_route_data("TopicTest").queue_datas] == ["broker-b"]


def test_wipe_and_add_write_perm(rim: RouteInfoManager) -> None:
    register(rim, w=wrapper(1, TopicConfig("T1", 4, 4, 6), TopicConfig("T2", 4, 4, 7)))
    register(rim, name="broker-b", addr=B0, w=wrapper(1, TopicConfig("T1", 4, 4, 6), TopicConfig("T9", 1, 1, 6)))
    assert rim.wipe_write_perm_of_broker("broker-a") == 2
    assert rim.topic_queue_table["T1"]["broker-a"].perm == 4
    assert rim.topic_queue_table["T2"]["broker-a"].perm == 5
    assert rim.topic_queue_table["T1"]["broker-b"].perm == 6
    assert rim.wipe_write_perm_of_broker("nobody") == 0
    assert rim.add_write_perm_of_broker("broker-a") == 2
    assert rim.topic_queue_table["T2"]["broker-a"].perm == 6  # READ|WRITE, the inherit bit is gone as in Java


def test_delete_topic_everywhere_or_in_one_cluster(rim: RouteInfoManager) -> None:
    register(rim)
    rim.register_broker(
        "Other",
        B0,
        "broker-b",
        0,
        "h:1",
        None,
        None,
        None,
        wrapper(1, TopicConfig("TopicTest", 4, 4, 6), TopicConfig("X", 1, 1, 6)),
        [],
        None,
    )
    rim.delete_topic("TopicTest", "Other")
    assert set(rim.topic_queue_table["TopicTest"]) == {"broker-a"}
    rim.delete_topic("TopicTest", "NoSuchCluster")
    assert "TopicTest" in rim.topic_queue_table
    rim.delete_topic("TopicTest", CLUSTER)
    assert "TopicTest" not in rim.topic_queue_table
    rim.delete_topic("X")
    assert "X" not in rim.topic_queue_table


def test_register_topic_needs_known_brokers(rim: RouteInfoManager) -> None:
    register(rim)
    rim.register_topic("New", [QueueData("broker-a", 2, 2, 6, 0), QueueData("ghost", 2, 2, 6, 0)])
    assert "New" not in rim.topic_queue_table
    rim.register_topic("New", [QueueData("broker-a", 2, 2, 6, 0)])
    assert rim.topic_queue_table["New"] == {"broker-a": QueueData("broker-a", 2, 2, 6, 0)}


def test_topic_lists(rim: RouteInfoManager) -> None:
    register(
        rim,
        w=wrapper(
            1,
            TopicConfig("T1", 4, 4, 6),
            TopicConfig("U", 4, 4, 6, topic_sys_flag=1),
            TopicConfig("S", 4, 4, 6, topic_sys_flag=2),
            TopicConfig("US", 4, 4, 6, topic_sys_flag=3),
        ),
    )
    rim.register_broker(
        "Other",
        B0,
        "broker-b",
        0,
        "h:1",
        None,
        None,
        None,
        wrapper(1, TopicConfig("OnlyB", 4, 4, 6), TopicConfig("T1", 1, 1, 6)),
        [],
        None,
    )
    assert set(rim.get_all_topic_list().topic_list) == {"T1", "U", "S", "US", "OnlyB"}
    assert sorted(rim.get_topics_by_cluster("Other").topic_list) == ["OnlyB", "T1"]
    assert rim.get_topics_by_cluster("nope").topic_list == []
    system = rim.get_system_topic_list()
    assert set(system.topic_list) == {CLUSTER, "broker-a", "Other", "broker-b"}
    assert system.broker_addr in (A0, B0)
    assert sorted(rim.get_unit_topics().topic_list) == ["U", "US"]
    assert sorted(rim.get_has_unit_sub_topic_list().topic_list) == ["S", "US"]
    assert rim.get_has_unit_sub_un_unit_topic_list().topic_list == ["S"]


def test_cluster_info_and_member_group(rim: RouteInfoManager) -> None:
    register(rim, addr=A0, bid=0)
    register(rim, addr=A1, bid=1)
    info = rim.get_all_cluster_info()
    assert info.cluster_addr_table == {CLUSTER: ["broker-a"]}
    assert info.broker_addr_table["broker-a"].broker_addrs == {0: A0, 1: A1}
    g = rim.get_broker_member_group(CLUSTER, "broker-a")
    assert (g.cluster, g.broker_name, g.broker_addrs) == (CLUSTER, "broker-a", {0: A0, 1: A1})
    assert rim.get_broker_member_group(CLUSTER, "nope").broker_addrs == {}


def test_data_version_queries(rim: RouteInfoManager) -> None:
    assert rim.is_broker_topic_config_changed(CLUSTER, A0, DataVersion(1, 0, 1))
    register(rim, w=wrapper(4, TopicConfig("T", 1, 1, 6), TopicConfig("U", 1, 1, 6), ts=77))
    assert rim.query_broker_topic_config(CLUSTER, A0) == DataVersion(counter=4, state_version=0, timestamp=77)
    assert not rim.is_broker_topic_config_changed(CLUSTER, A0, DataVersion(counter=4, state_version=0, timestamp=77))
    assert rim.is_broker_topic_config_changed(CLUSTER, A0, DataVersion(counter=5, state_version=0, timestamp=77))


def test_filter_servers_appear_in_route_data(rim: RouteInfoManager) -> None:
    rim.register_broker(
        CLUSTER,
        A0,
        "broker-a",
        0,
        "h:1",
        None,
        None,
        None,
        wrapper(1, TopicConfig("T", 1, 1, 6), TopicConfig("U", 1, 1, 6)),
        ["10.9.9.9:1"],
        None,
    )
    assert rim.pickup_topic_route_data("T").filter_server_table == {A0: ["10.9.9.9:1"]}
    rim.register_broker(
        CLUSTER,
        A0,
        "broker-a",
        0,
        "h:1",
        None,
        None,
        None,
        wrapper(1, TopicConfig("T", 1, 1, 6), TopicConfig("U", 1, 1, 6)),
        [],
        None,
    )
    assert rim.pickup_topic_route_data("T").filter_server_table == {}


def test_static_topic_mapping_infos_are_carried_to_route_data(rim: RouteInfoManager) -> None:
    w = TopicConfigAndMappingSerializeWrapper(
        {"T": TopicConfig("T", 1, 1, 6), "U": TopicConfig("U", 1, 1, 6)},
        DataVersion(1, 0, 1),
        topic_queue_mapping_info_map={"T": {"bname": "broker-a", "topic": "T", "totalQueues": 2, "epoch": 1}},
    )
    rim.register_broker(CLUSTER, A0, "broker-a", 0, "h:1", None, None, None, w, [], None)
    assert rim.pickup_topic_route_data("T").topic_queue_mapping_by_broker == {
        "broker-a": {"bname": "broker-a", "topic": "T", "totalQueues": 2, "epoch": 1}
    }
    assert rim.pickup_topic_route_data("U").topic_queue_mapping_by_broker is None


def test_acting_master_prime_slave_is_read_only_and_shown_as_master(rim: RouteInfoManager) -> None:
    rim.support_acting_master = True
    register(rim, addr=A0, bid=0, acting=True)
    register(rim, addr=A1, bid=1, acting=True)
    rim.unregister_broker(CLUSTER, A0, "broker-a", 0)
    # the remaining slave lost its master: writes are wiped
    assert rim.topic_queue_table["TopicTest"]["broker-a"].perm == 4
    # and clients see the prime slave under id 0
    assert rim.pickup_topic_route_data("TopicTest").broker_datas[0].broker_addrs == {0: A1}
    assert rim.broker_addr_table["broker-a"].broker_addrs == {1: A1}


def test_old_broker_without_acting_master_flag_is_not_prime_slave(rim: RouteInfoManager) -> None:
    register(rim, addr=A1, bid=1, acting=None)
    assert rim.topic_queue_table == {}
    rim2 = RouteInfoManager(clock=ManualClock())
    register(rim2, addr=A1, bid=1, acting=False)  # 5.x broker: the smallest id registers its topics
    assert "TopicTest" in rim2.topic_queue_table


def test_topic_config_without_topic_name_uses_its_table_key(rim: RouteInfoManager) -> None:
    w = TopicConfigSerializeWrapper(
        {"Keyed": TopicConfig(None, 2, 2, 6), "TBW102": TopicConfig("TBW102", 8, 8, 7)}, DataVersion(1, 0, 1)
    )
    register(rim, w=w)
    assert rim.topic_queue_table["Keyed"]["broker-a"].write_queue_nums == 2
    assert None not in rim.topic_queue_table
