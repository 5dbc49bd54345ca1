"""One controller event as one DLedger entry body, in Java's EventSerializer format.

Java: ``controller/impl/event/EventSerializer`` with ``FastJsonSerializer``: a 2-byte big-endian
event type id (EventType#getId) followed by the fastjson JSON of the event object. fastjson writes
every getter (so ``eventType`` too, as the enum's name), sorted by property name, nulls left out,
a ``Set<Long>`` as an array (a HashSet of small Longs iterates in ascending order). An empty body
is the leader's initial proposal (and a read event with isProcessReadEvent): no event.

A body this module cannot read decodes to ``None``, as Java's ``deserialize`` returns null for an
unknown type, and the state machine skips it.
"""

from __future__ import annotations

import json
import logging
import struct
from typing import Any

from pyrmq.controller.events import (
    AlterSyncStateSetEvent,
    ApplyBrokerIdEvent,
    CleanBrokerDataEvent,
    ElectMasterEvent,
    Event,
    EventType,
    UpdateBrokerAddressEvent,
)

log = logging.getLogger("pyrmq.controller")

_TYPE_ID = struct.Struct(">h")

#: Java property name -> pyrmq field name, per event class (the getters' names)
_PROPS: dict[type, dict[str, str]] = {
    AlterSyncStateSetEvent: {"brokerName": "broker_name", "newSyncStateSet": "new_sync_state_set"},
    ApplyBrokerIdEvent: {
        "brokerAddress": "broker_address",
        "brokerName": "broker_name",
        "clusterName": "cluster_name",
        "newBrokerId": "new_broker_id",
        "registerCheckCode": "register_check_code",
    },
    ElectMasterEvent: {
        "brokerName": "broker_name",
        "newMasterBrokerId": "new_master_broker_id",
        "newMasterElected": "new_master_elected",
    },
    CleanBrokerDataEvent: {"brokerIdSetToClean": "broker_id_set_to_clean", "brokerName": "broker_name"},
    UpdateBrokerAddressEvent: {
        "brokerAddress": "broker_address",
        "brokerId": "broker_id",
        "brokerName": "broker_name",
        "clusterName": "cluster_name",
    },
}

_BY_ID: dict[int, type] = {cls.type.value: cls for cls in _PROPS}  # type: ignore[attr-defined]


def serialize_event(event: Event) -> bytes:
    """EventSerializer#serialize."""
    props: dict[str, Any] = {"eventType": event.type.name}
    for java_name, field in _PROPS[type(event)].items():
        value = getattr(event, field)
        if value is None:
            continue
        props[java_name] = sorted(value) if isinstance(value, frozenset) else value
    text = json.dumps(dict(sorted(props.items())), separators=(",", ":"), ensure_ascii=False)
    return _TYPE_ID.pack(event.type.value) + text.encode("utf-8")


def deserialize_event(body: bytes) -> Event | None:
    """EventSerializer#deserialize: None for an empty body, a READ_EVENT or anything unreadable."""
    if len(body) < _TYPE_ID.size:
        return None
    (type_id,) = _TYPE_ID.unpack_from(body)
    cls = _BY_ID.get(type_id)
    if cls is None:
        if type_id != EventType.READ_EVENT.value:
            log.warning("controller event of unknown type %d skipped", type_id)
        return None
    try:
        obj = json.loads(bytes(body[_TYPE_ID.size :]).decode("utf-8"))
        if not isinstance(obj, dict):
            raise ValueError("not an object")
        kwargs: dict[str, Any] = {}
        for java_name, field in _PROPS[cls].items():
            if java_name in obj and obj[java_name] is not None:
                value = obj[java_name]
                kwargs[field] = frozenset(int(x) for x in value) if isinstance(value, list) else value
        event: Event = cls(**kwargs)
        return event
    except (ValueError, TypeError, UnicodeDecodeError) as e:
        log.warning("controller event of type %d unreadable, skipped: %s", type_id, e)
        return None


__all__ = ["deserialize_event", "serialize_event"]
