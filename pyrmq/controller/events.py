"""The controller's state-machine events and the result of one request.

Java: ``controller/impl/event/*``. A write request is computed against the
current state into a ``ControllerResult`` (the response and the events that
would make it true); only the events change the state, so only they are
persisted (Java appends them to DLedger, pyrmq to its journal) and replayed.
The JSON form here is pyrmq's own journal format, not Java's.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from pyrmq.protocol.codes import ResponseCode
from pyrmq.protocol.headers.base import RemotingHeader


class EventType(enum.Enum):
    """Java EventType (names kept; the short ids are Java's)."""

    ALTER_SYNC_STATE_SET_EVENT = 1
    APPLY_BROKER_ID_EVENT = 2
    ELECT_MASTER_EVENT = 3
    READ_EVENT = 4
    CLEAN_BROKER_DATA_EVENT = 5
    UPDATE_BROKER_ADDRESS = 6


@dataclass(frozen=True, slots=True)
class AlterSyncStateSetEvent:
    broker_name: str
    new_sync_state_set: frozenset[int]

    type = EventType.ALTER_SYNC_STATE_SET_EVENT


@dataclass(frozen=True, slots=True)
class ApplyBrokerIdEvent:
    cluster_name: str | None
    broker_name: str
    broker_address: str
    new_broker_id: int
    register_check_code: str

    type = EventType.APPLY_BROKER_ID_EVENT


@dataclass(frozen=True, slots=True)
class ElectMasterEvent:
    """``new_master_elected`` False: the master is gone and nobody could replace it."""

    broker_name: str
    new_master_broker_id: int | None = None
    new_master_elected: bool = True

    type = EventType.ELECT_MASTER_EVENT


@dataclass(frozen=True, slots=True)
class CleanBrokerDataEvent:
    """No ids: the whole broker set is forgotten."""

    broker_name: str
    broker_id_set_to_clean: frozenset[int] | None = None

    type = EventType.CLEAN_BROKER_DATA_EVENT


@dataclass(frozen=True, slots=True)
class UpdateBrokerAddressEvent:
    cluster_name: str | None
    broker_name: str
    broker_address: str
    broker_id: int

    type = EventType.UPDATE_BROKER_ADDRESS


Event = AlterSyncStateSetEvent | ApplyBrokerIdEvent | ElectMasterEvent | CleanBrokerDataEvent | UpdateBrokerAddressEvent

_BY_TYPE: dict[str, Any] = {
    c.type.name: c
    for c in (
        AlterSyncStateSetEvent,
        ApplyBrokerIdEvent,
        ElectMasterEvent,
        CleanBrokerDataEvent,
        UpdateBrokerAddressEvent,
    )
}


def event_to_json(event: Event) -> dict[str, Any]:
    out: dict[str, Any] = {"type": event.type.name}
    for name in event.__dataclass_fields__:
        v = getattr(event, name)
        out[name] = sorted(v) if isinstance(v, frozenset) else v
    return out


def event_from_json(obj: dict[str, Any]) -> Event:
    """Raises ValueError on anything that is not an event this module wrote."""
    if not isinstance(obj, dict):
        raise ValueError("event is not an object")
    cls = _BY_TYPE.get(obj.get("type", ""))
    if cls is None:
        raise ValueError(f"unknown event type {obj.get('type')!r}")
    kwargs = {}
    for name in cls.__dataclass_fields__:
        if name not in obj:
            continue
        v = obj[name]
        kwargs[name] = frozenset(int(x) for x in v) if isinstance(v, list) else v
    try:
        return cls(**kwargs)
    except TypeError as e:
        raise ValueError(str(e)) from None


@dataclass(slots=True)
class ControllerResult:
    """Java ControllerResult: code SUCCESS and no remark unless a check failed."""

    response: RemotingHeader | None = None
    code: int = ResponseCode.SUCCESS
    remark: str | None = None
    body: bytes | None = None
    events: list[Event] = field(default_factory=list)

    def fail(self, code: int, remark: str) -> ControllerResult:
        self.code, self.remark = code, remark
        return self
