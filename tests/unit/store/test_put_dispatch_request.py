"""The put path dispatches from a DispatchRequest it builds itself instead of decoding the record
it just wrote: it must equal what decoding that record gives (CommitLog#checkMessageAndReturnSize)."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyrmq.store import message as m
from pyrmq.store.commitlog import CommitLog, MessageExtBatch

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
_prop_values = st.one_of(_text, st.sampled_from(["", "a\x01b", "x\x02y", "TagA", "k1 k2  k3"]))
_props = st.dictionaries(
    st.one_of(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "DELAY", "WAIT", "", "A\x01"]), _text),
    _prop_values,
    max_size=5,
)


_seq = itertools.count()


def _decoded(commit_log, offset: int, size: int):
    buf = commit_log.get_message(offset, size)
    try:
        return commit_log.check_message_and_return_size(buf, 0, False, False)
    finally:
        buf.release()


def _commit_log(config_factory, root, clock):
    """A started commit log alone, handing every appended record's request to `appended`."""
    appended = []
    cl = CommitLog(config_factory(root), clock, on_appended=appended.append)
    cl.load()
    cl.start()
    return cl, appended


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    props=_props,
    use_string=st.booleans(),
    topic=st.sampled_from(["T", "SCHEDULE_TOPIC_XXXX", "Topic-é", "t" * 130]),
    tran=st.sampled_from([0, 4, 8, 12]),
    v6=st.booleans(),
)
def test_built_request_equals_decoded(config_factory, clock, tmp_path, props, use_string, topic, tran, v6):
    cl, appended = _commit_log(config_factory, tmp_path / f"s{next(_seq)}", clock)
    try:
        msg = m.MessageExtBrokerInner(
            topic=topic,
            body=b"body",
            queue_id=1,
            properties=dict(props),
            sys_flag=tran,
            store_host=("::1", 10911) if v6 else ("10.0.0.2", 10911),
        )
        if use_string:
            msg.properties_string = m.message_properties_to_string(props)
        for i in range(2):  # the second one gets a non-zero commit-log (and maybe queue) offset
            result = cl.put_message_async(msg).result()
            assert result.is_ok() and len(appended) == i + 1
            req = appended[i]
            assert req == _decoded(cl, req.commit_log_offset, req.msg_size)
    finally:
        cl.shutdown()


def test_batch_requests_equal_decoded(config_factory, clock, tmp_path):
    cl, reqs = _commit_log(config_factory, tmp_path / "store", clock)
    body = m.encode_batch_body(
        [
            m.BatchElement(b"a", "TAGS\x01x\x02KEYS\x01k1 k2\x02"),
            m.BatchElement(b"bb", "UNIQ_KEY\x01U1\x02"),
            m.BatchElement(b"ccc", ""),
        ]
    )
    batch = MessageExtBatch(topic="B", body=body, queue_id=2, properties_string="CLUSTER\x01c\x02")
    result = cl.put_messages_async(batch).result()
    assert result.is_ok() and len(reqs) == 3
    assert [r.consume_queue_offset for r in reqs] == [0, 1, 2]
    for r in reqs:
        assert r == _decoded(cl, r.commit_log_offset, r.msg_size)
    cl.shutdown()


def _java_hash_reference(s: str) -> int:
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(
        st.text(max_size=40), st.text(min_size=250, max_size=800), st.text(alphabet="0123456789ABCDEF#", max_size=600)
    )
)
def test_java_string_hash_matches_the_recurrence(s):
    # tags codes and index key hashes on the put path: any length (the chunked path past 256 units)
    assert m.java_string_hash(s) == _java_hash_reference(s)
