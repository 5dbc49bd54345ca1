"""The revive records' JSON: the direct AckMsg writer agrees with the generic bean writer, and
both give the bytes the 5.5.0 broker's fastjson2 writes (captured from the official jars)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pyrmq.protocol.fastjson import fastjson_dumps
from pyrmq.store.pop import AckMsg

LONGS = st.integers(-(2**63), 2**63 - 1)
NAMES = st.one_of(st.none(), st.text(max_size=30))


@settings(max_examples=300, deadline=None)
@given(ao=LONGS, so=LONGS, c=NAMES, t=NAMES, q=st.integers(-(2**31), 2**31 - 1), pt=LONGS, bn=NAMES)
def test_ack_writer_matches_the_bean_writer(ao, so, c, t, q, pt, bn):
    ack = AckMsg(ao, so, c, t, q, pt, bn)
    assert ack.encode() == fastjson_dumps(ack)
    assert AckMsg.decode(ack.encode()) == ack


def test_ack_bytes_as_java_writes_them():
    ack = AckMsg(6, 5, "cg", "T", 1, 1700000000000, "b")
    assert ack.encode() == b'{"ao":6,"bn":"b","c":"cg","pt":1700000000000,"q":1,"so":5,"t":"T"}'
