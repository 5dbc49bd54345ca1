"""The declarative COMMITLOG_RECORD (construct) and the struct fast path agree (STYLE.md §8)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pyrmq.store import message as m


def _build(parsed) -> bytes:
    return m.COMMITLOG_RECORD.build(parsed)


def test_golden_records_parse_and_rebuild_identically(golden):
    for name in ("commitlog_message_v1.hex", "commitlog_message_v2_ipv6.hex"):
        raw = golden(name)
        parsed = m.COMMITLOG_RECORD.parse(raw)
        fast = m.decode_message(raw)
        assert parsed.total_size == fast.store_size
        assert parsed.queue_offset == fast.queue_offset and parsed.topic == fast.topic
        assert parsed.body == fast.body
        assert m.string_to_message_properties(parsed.properties) == fast.properties
        assert _build(parsed) == raw, name


def test_offsets_from_calcsize():
    assert (m.QUEUEOFFSET_OFFSET, m.PHYSICALOFFSET_OFFSET, m.SYSFLAG_OFFSET, m.BORNHOST_OFFSET) == (20, 28, 36, 48)


ipv4 = st.tuples(st.ip_addresses(v=4).map(str), st.integers(0, 65535))
ipv6 = st.tuples(st.ip_addresses(v=6).map(str), st.integers(0, 65535))
text = st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), min_size=1, max_size=8)


@settings(max_examples=150, deadline=None)
@given(
    topic=st.text(st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=40).filter(
        lambda t: len(t.encode()) <= 127
    ),
    v2=st.booleans(),
    queue_id=st.integers(-(2**31), 2**31 - 1),
    flag=st.integers(-(2**31), 2**31 - 1),
    queue_offset=st.integers(0, 2**63 - 1),
    phy=st.integers(0, 2**63 - 1),
    sys_flag=st.sampled_from([0, 1, 2, 4, 8, 0xC, 0x301]),
    born=st.one_of(ipv4, ipv6),
    store=st.one_of(ipv4, ipv6),
    ts=st.integers(0, 2**62),
    body=st.binary(max_size=300),
    props=st.dictionaries(text, text, max_size=4),
)
def test_random_records_struct_equals_construct(
    topic, v2, queue_id, flag, queue_offset, phy, sys_flag, born, store, ts, body, props
):
    version = m.MESSAGE_MAGIC_CODE_V2 if v2 else m.MESSAGE_MAGIC_CODE
    props_s = m.message_properties_to_string(props)
    fast = bytes(
        m.encode_record(
            topic=topic.encode(),
            queue_id=queue_id,
            flag=flag,
            queue_offset=queue_offset,
            physical_offset=phy,
            sys_flag=sys_flag,
            born_timestamp=ts,
            born_host=m.host_to_bytes(born),
            store_timestamp=ts + 1,
            store_host=m.host_to_bytes(store),
            reconsume_times=3,
            prepared_transaction_offset=phy // 2,
            body=body,
            properties=props_s.encode(),
            version=version,
        )
    )
    parsed = m.COMMITLOG_RECORD.parse(fast)
    assert _build(parsed) == fast
    assert parsed.total_size == len(fast)
    decoded = m.decode_message(fast, check_crc=True)
    assert decoded.topic == topic == parsed.topic and decoded.body == body
    assert decoded.properties == m.string_to_message_properties(props_s)
    assert decoded.born_host[1] == born[1] and decoded.store_host[1] == store[1]
    # built from the declarative side, then decoded by the fast path
    rebuilt = m.COMMITLOG_RECORD.build(dict(parsed, body=body, topic=topic, properties=props_s))
    assert rebuilt == fast
