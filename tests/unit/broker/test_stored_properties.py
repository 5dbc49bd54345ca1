"""The properties a sent message is stored with: Java 5.5.0 adds MSG_REGION and TRACE_ON and writes
them all in HashMap(128) order (order taken from a store the 5.5.0 broker wrote for the same keys)."""

from __future__ import annotations

import asyncio

from pyrmq.common.java_lang import hashmap_order
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.store import message as m


def _send(broker, props: str):
    ext = {
        "a": "pg",
        "b": "PropT",
        "c": "TBW102",
        "d": "4",
        "e": "0",
        "f": "0",
        "g": "1700000000123",
        "h": "0",
        "i": props,
        "j": "0",
        "k": "false",
        "m": "false",
        "n": "broker-t",
    }
    r = asyncio.run(broker.call(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, b"x")))
    assert r.code == ResponseCode.SUCCESS, r
    return broker.c.message_store.look_message_by_offset(m.decode_message_id(r.ext_fields["msgId"]).offset)


def test_stored_properties_are_javas_keys_values_and_order(broker):
    # the client's order (its own HashMap(16)) differs from what the broker stores
    client = "n\x011\x02color\x01red\x02KEYS\x01k1 k2\x02WAIT\x01true\x02TAGS\x01TagA\x02UNIQ_KEY\x01U1\x02"
    stored = _send(broker, client)
    # 5.5.0 broker, same keys: MSG_REGION UNIQ_KEY CLUSTER TAGS color KEYS WAIT TRACE_ON n
    assert list(stored.properties.items()) == [
        ("MSG_REGION", "DefaultRegion"),
        ("UNIQ_KEY", "U1"),
        ("CLUSTER", "TestCluster"),
        ("TAGS", "TagA"),
        ("color", "red"),
        ("KEYS", "k1 k2"),
        ("WAIT", "true"),
        ("TRACE_ON", "true"),
        ("n", "1"),
    ]


def test_broker_made_uniq_key_and_client_region_overwritten(broker):
    stored = _send(broker, "MSG_REGION\x01Elsewhere\x02TAGS\x01t\x02")
    assert stored.properties["MSG_REGION"] == "DefaultRegion" and stored.properties["TRACE_ON"] == "true"
    assert list(stored.properties) == list(hashmap_order(stored.properties))
    assert len(stored.properties["UNIQ_KEY"]) == 32


def test_hashmap_order_resizes_past_96_entries():
    many = {f"k{i}": str(i) for i in range(97)}
    order = list(hashmap_order(many))
    assert sorted(order) == sorted(many)
    assert order == list(hashmap_order(many, 256))  # 97 > 0.75 * 128: the table doubled
    fewer = dict(list(many.items())[:96])
    assert list(hashmap_order(fewer)) != list(hashmap_order(fewer, 256))  # 96 still fit 128 buckets


def test_hashmap_order_keeps_insertion_order_within_a_bucket_on_every_call():
    # K3 and K20 share a bucket of HashMap(128): the first inserted comes first, whatever was asked
    # before (the order is remembered per key sequence, not per key set)
    for _ in range(2):
        assert list(hashmap_order({"K3": "a", "K20": "b", "A": "c"})).index("K3") < list(
            hashmap_order({"K3": "a", "K20": "b", "A": "c"})
        ).index("K20")
        flipped = hashmap_order({"K20": "b", "K3": "a", "A": "c"})
        assert list(flipped).index("K20") < list(flipped).index("K3")
        assert flipped == {"K20": "b", "K3": "a", "A": "c"}
