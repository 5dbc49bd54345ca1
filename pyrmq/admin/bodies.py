"""Reading the broker's MessageQueue-keyed bodies (fastjson writes the key bean itself as the key).

Java: ``TopicStatsTable``, ``ConsumeStats``, ``ResetOffsetBody`` (spec §1.8 item 3, §5). The
shared lenient parser returns such keys as ``tuple(sorted(items))`` (or a JSON string when the
writer quoted them); the body classes in ``pyrmq.broker.admin.bodies`` cannot coerce those, so
this module turns them into ``MessageQueue`` beans. Nothing else in pyrmq reads these bodies.
"""
from __future__ import annotations

from typing import Any

from pyrmq.broker.admin.bodies import ConsumeStats, OffsetWrapper, ResetOffsetBody, TopicOffset, TopicStatsTable
from pyrmq.broker.bodies import MessageQueue
from pyrmq.remoting.bodies import BodyDecodeError, lenient_loads


def message_queue(key: Any) -> MessageQueue:
    if isinstance(key, str):
        key = lenient_loads(key)
    d = dict(key) if isinstance(key, tuple) else key
    if not isinstance(d, dict):
        raise BodyDecodeError(f"not a MessageQueue key: {key!r}")
    return MessageQueue(d.get("topic"), d.get("brokerName"), int(d.get("queueId", 0)))


def _table(obj: dict, value: Any) -> dict:
    raw = obj.get("offsetTable") or {}
    return {message_queue(k): value(v) for k, v in raw.items()}


def _obj(body: bytes | None) -> dict:
    obj = lenient_loads(body or b"{}")
    if not isinstance(obj, dict):
        raise BodyDecodeError("body is not a JSON object")
    return obj


def topic_stats_table(body: bytes | None) -> TopicStatsTable:
    obj = _obj(body)
    return TopicStatsTable(_table(obj, TopicOffset.from_obj), float(obj.get("topicPutTps") or 0.0))


def consume_stats(body: bytes | None) -> ConsumeStats:
    obj = _obj(body)
    return ConsumeStats(_table(obj, OffsetWrapper.from_obj), float(obj.get("consumeTps") or 0.0))


def reset_offset_body(body: bytes | None) -> ResetOffsetBody:
    return ResetOffsetBody(_table(_obj(body), int))
