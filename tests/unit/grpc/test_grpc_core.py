"""The gRPC endpoint's pure parts: its config key, receipt handles, message properties, route permissions."""

from __future__ import annotations

import pytest

from pyrmq.broker.config import BrokerConfig
from pyrmq.grpc.config import grpc_port_of
from pyrmq.grpc.message import build_properties, consistent_hash
from pyrmq.grpc.proto import pb
from pyrmq.grpc.receipt import ReceiptHandle
from pyrmq.grpc.route import permission
from pyrmq.grpc.status import Code, GrpcProxyError, from_response
from pyrmq.protocol.codes import ResponseCode


def test_grpc_server_port_from_the_broker_config() -> None:
    assert grpc_port_of(BrokerConfig.from_properties({})) is None
    assert grpc_port_of(BrokerConfig.from_properties({"grpcServerPort": "-1"})) is None
    cfg = BrokerConfig.from_properties({"grpcServerPort": "8081"})
    assert grpc_port_of(cfg) == 8081
    assert "grpcServerPort" not in cfg.unknown_keys()  # a known (proxy) key, not reported
    with pytest.raises(ValueError, match="not a port number"):
        grpc_port_of(BrokerConfig.from_properties({"grpcServerPort": "eighty"}))


def test_receipt_handle_is_javas_format() -> None:
    text = "5 1700000000000 60000 3 0 broker-a 1 7 123456"
    h = ReceiptHandle.decode(text)
    assert (h.start_offset, h.retrieve_time, h.invisible_time, h.revive_queue_id) == (5, 1700000000000, 60000, 3)
    assert (h.topic_type, h.broker_name, h.queue_id, h.offset, h.commit_log_offset) == ("0", "broker-a", 1, 7, 123456)
    assert h.encode() == text
    assert h.next_visible_time == 1700000060000 and h.is_expired(1700000060000) and not h.is_expired(1700000059999)
    assert h.real_topic("T", "G") == "T"
    assert ReceiptHandle.decode("5 1 2 3 1 b 1 7").real_topic("T", "G") == "%RETRY%G_T"
    assert ReceiptHandle.decode("5 1 2 3 2 b 1 7").commit_log_offset == -1
    for bad in ("1 2 3", "x 1 2 3 0 b 1 7"):
        with pytest.raises(GrpcProxyError) as e:
            ReceiptHandle.decode(bad)
        assert e.value.code == Code.INVALID_RECEIPT_HANDLE


def _message(**sp) -> pb.Message:
    return pb.Message(
        topic=pb.Resource(name="T"),
        user_properties={"color": "blue"},
        system_properties=pb.SystemProperties(message_id="ID1", **sp),
        body=b"x",
    )


def test_message_properties_as_the_java_proxy_builds_them() -> None:
    props = build_properties(_message(tag="TagA", keys=["k1", "k2"], message_group="g1"), "T", "10.0.0.1:5", 1000)
    assert props["color"] == "blue" and props["TAGS"] == "TagA" and props["KEYS"] == "k1 k2"
    assert props["UNIQ_KEY"] == "ID1" and props["PGROUP"] == "T" and props["__SHARDINGKEY"] == "g1"
    assert props["__BORNHOST"] == "10.0.0.1:5" and props["RECONSUME_TIME"] == "0"


@pytest.mark.parametrize(
    ("message", "code"),
    [
        (
            pb.Message(user_properties={"TAGS": "x"}, system_properties=pb.SystemProperties(message_id="i")),
            "ILLEGAL_MESSAGE_PROPERTY_KEY",
        ),
        (pb.Message(system_properties=pb.SystemProperties(message_id="i", tag="a|b")), "ILLEGAL_MESSAGE_TAG"),
        (pb.Message(system_properties=pb.SystemProperties(message_id=" ")), "ILLEGAL_MESSAGE_ID"),
        (pb.Message(system_properties=pb.SystemProperties(message_id="i", keys=["a\x01"])), "ILLEGAL_MESSAGE_KEY"),
        (
            pb.Message(system_properties=pb.SystemProperties(message_id="i", message_group="g" * 64)),
            "ILLEGAL_MESSAGE_GROUP",
        ),
    ],
)
def test_bad_message_properties_get_the_java_proxys_code(message: pb.Message, code: str) -> None:
    with pytest.raises(GrpcProxyError) as e:
        build_properties(message, "T", "", 0)
    assert Code.Name(e.value.code) == code


def test_permissions_and_response_codes() -> None:
    assert [permission(p) for p in (6, 4, 2, 0)] == [pb.READ_WRITE, pb.READ, pb.WRITE, pb.NONE]
    assert from_response(ResponseCode.TOPIC_NOT_EXIST, "no route").code == Code.TOPIC_NOT_FOUND
    assert from_response(ResponseCode.SYSTEM_BUSY, None).code == Code.TOO_MANY_REQUESTS
    assert from_response(ResponseCode.NO_PERMISSION, "x").code == Code.INTERNAL_SERVER_ERROR


def test_consistent_hash_is_a_jump_hash() -> None:
    """Guava Hashing#consistentHash: one bucket more moves a key to the new bucket or not at all."""
    for key in (0, 1, -1, 2**31 - 1, -(2**31), 123456789, -987654321):
        assert consistent_hash(key, 1) == 0
        previous = 0
        for buckets in range(2, 40):
            bucket = consistent_hash(key, buckets)
            assert 0 <= bucket < buckets
            assert bucket in (previous, buckets - 1)
            previous = bucket
    assert len({consistent_hash(k, 8) for k in range(200)}) == 8  # every bucket gets keys


def test_names_are_checked_with_the_clients_rules() -> None:
    """GrpcValidator uses client/Validators (its messages differ from the broker's TopicValidator)."""
    from pyrmq.grpc.validate import check_group, check_topic

    assert check_topic("ok_Topic-1%x|y") is None and check_group("ok_Group-1") is None
    assert check_topic("  ") == "The specified topic is blank"
    assert check_topic("t" * 128) == "The specified topic is longer than topic max length 127."
    assert (
        check_topic("a b") == "The specified topic[a b] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    )
    assert check_group("") == "the specified group is blank"
    assert check_group("g" * 121) == f"the specified group[{'g' * 121}] is longer than group max length: 120."
