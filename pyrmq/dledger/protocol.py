"""The DLedger RPCs: codes and bodies as io.openmessaging.storage:dledger 0.3.2 sends them.

Java: ``protocol.DLedgerRequestCode``, ``protocol.DLedgerResponseCode``, the ``protocol.*Request``
and ``*Response`` beans (all extend ``RequestOrResponse``) and ``DLedgerRpcNettyService``.

On the wire each RPC is an ordinary RocketMQ RemotingCommand (pyrmq.protocol.command): the request
has the DLedgerRequestCode, no ext fields and the bean as its body, ``JSON.toJSONBytes(bean)`` with
fastjson 1.2.83; the response is built with ``createResponseCommand(200, null)`` (DLedger's SUCCESS,
whatever happened: the outcome is the ``code`` inside the body), the request's opaque and the
response bean as its body. So a DLedger port is a remoting server with eight codes.

The fastjson dialect here: properties sorted by name, nulls left out, ``byte[]`` as base64, enums by
name, and *every getter is a property*, so ``PushEntryRequest`` also carries ``batch``,
``count``, ``firstEntryIndex``, ``lastEntryIndex`` and ``totalSize``, computed from its entries
(readers ignore them, as fastjson does without setters). Golden: tests/golden/dledger/rpc/.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

import orjson

from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.fastjson import BodyDecodeError, lenient_loads

from .entry import CURRENT_MAGIC, DLedgerEntry

__all__ = [
    "REQUEST_TYPES",
    "RESPONSE_TYPES",
    "AppendEntryRequest",
    "AppendEntryResponse",
    "DLedgerProtocolError",
    "DLedgerRequestCode",
    "DLedgerResponseCode",
    "GetEntriesRequest",
    "GetEntriesResponse",
    "HeartBeatRequest",
    "HeartBeatResponse",
    "LeadershipTransferRequest",
    "LeadershipTransferResponse",
    "MetadataRequest",
    "MetadataResponse",
    "PullEntriesRequest",
    "PullEntriesResponse",
    "PushEntryRequest",
    "PushEntryResponse",
    "PushType",
    "RequestOrResponse",
    "VoteRequest",
    "VoteResponse",
    "VoteResult",
    "decode_request",
    "decode_response",
    "failure",
    "request_command",
    "response_command",
]


class DLedgerRequestCode(enum.IntEnum):
    """DLedgerRequestCode: the RemotingCommand codes of a DLedger port."""

    UNKNOWN = -1
    METADATA = 50000
    APPEND = 50001
    GET = 50002
    VOTE = 51001
    HEART_BEAT = 51002
    PULL = 51003
    PUSH = 51004
    LEADERSHIP_TRANSFER = 51005


class DLedgerResponseCode(enum.IntEnum):
    """DLedgerResponseCode: the ``code`` inside a response body (and the reason of a failure)."""

    UNKNOWN = -1
    SUCCESS = 200
    TIMEOUT = 300
    METADATA_ERROR = 301
    NETWORK_ERROR = 302
    UNSUPPORTED = 303
    UNKNOWN_GROUP = 400
    UNKNOWN_MEMBER = 401
    UNEXPECTED_MEMBER = 402
    EXPIRED_TERM = 403
    NOT_LEADER = 404
    NOT_FOLLOWER = 405
    INCONSISTENT_STATE = 406
    INCONSISTENT_TERM = 407
    INCONSISTENT_INDEX = 408
    INCONSISTENT_LEADER = 409
    INDEX_OUT_OF_RANGE = 410
    UNEXPECTED_ARGUMENT = 411
    REPEATED_REQUEST = 412
    REPEATED_PUSH = 413
    DISK_ERROR = 414
    DISK_FULL = 415
    TERM_NOT_READY = 416
    FALL_BEHIND_TOO_MUCH = 417
    TAKE_LEADERSHIP_FAILED = 418
    INDEX_LESS_THAN_LOCAL_BEGIN = 419
    REQUEST_WITH_EMPTY_BODYS = 420
    INTERNAL_ERROR = 500
    TERM_CHANGED = 501
    WAIT_QUORUM_ACK_TIMEOUT = 502
    LEADER_PENDING_FULL = 503
    ILLEGAL_MEMBER_STATE = 504
    LEADER_NOT_READY = 505
    LEADER_TRANSFERRING = 506
    LOAD_SNAPSHOT_ERROR = 507


class VoteResult(enum.Enum):
    """VoteResponse.RESULT, written by name."""

    UNKNOWN = "UNKNOWN"
    ACCEPT = "ACCEPT"
    REJECT_UNKNOWN_LEADER = "REJECT_UNKNOWN_LEADER"
    REJECT_UNEXPECTED_LEADER = "REJECT_UNEXPECTED_LEADER"
    REJECT_EXPIRED_VOTE_TERM = "REJECT_EXPIRED_VOTE_TERM"
    REJECT_ALREADY_VOTED = "REJECT_ALREADY_VOTED"
    REJECT_ALREADY_HAS_LEADER = "REJECT_ALREADY_HAS_LEADER"
    REJECT_TERM_NOT_READY = "REJECT_TERM_NOT_READY"
    REJECT_TERM_SMALL_THAN_LEDGER = "REJECT_TERM_SMALL_THAN_LEDGER"
    REJECT_EXPIRED_LEDGER_TERM = "REJECT_EXPIRED_LEDGER_TERM"
    REJECT_SMALL_LEDGER_END_INDEX = "REJECT_SMALL_LEDGER_END_INDEX"
    REJECT_TAKING_LEADERSHIP = "REJECT_TAKING_LEADERSHIP"


class PushType(enum.Enum):
    """PushEntryRequest.Type: what a leader's push asks of a follower."""

    APPEND = "APPEND"
    COMMIT = "COMMIT"
    COMPARE = "COMPARE"
    TRUNCATE = "TRUNCATE"


class DLedgerProtocolError(ValueError):
    """A body that is not the JSON object of its bean (not JSON, a wrong type, bad base64)."""


# --------------------------------------------------------------------------- the entry as JSON


def entry_to_obj(entry: DLedgerEntry) -> dict[str, Any]:
    """DLedgerEntry's getters: body, bodyCrc, chainCrc, channel, index, magic, pos, size, term."""
    return {
        "body": base64.b64encode(entry.body).decode("ascii"),
        "bodyCrc": entry.body_crc,
        "chainCrc": entry.chain_crc,
        "channel": entry.channel,
        "index": entry.index,
        "magic": entry.magic,
        "pos": entry.pos,
        "size": entry.size,
        "term": entry.term,
    }


def _b64(raw: Any, where: str) -> bytes:
    if not isinstance(raw, str):
        raise DLedgerProtocolError(f"{where}: expected a base64 string")
    try:
        return base64.b64decode(raw, validate=True)
    except binascii.Error:
        raise DLedgerProtocolError(f"{where}: bad base64") from None


def _long(raw: Any, where: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise DLedgerProtocolError(f"{where}: expected a number, got {raw!r}")
    try:
        return int(raw)
    except ValueError:
        raise DLedgerProtocolError(f"{where}: expected a number, got {raw!r}") from None


def entry_from_obj(obj: Any) -> DLedgerEntry:
    if not isinstance(obj, Mapping):
        raise DLedgerProtocolError("entry: expected an object")

    def num(key: str, default: int) -> int:
        raw = obj.get(key)
        return default if raw is None else _long(raw, f"entry.{key}")

    body = obj.get("body")
    return DLedgerEntry(
        magic=num("magic", CURRENT_MAGIC),
        index=num("index", 0),
        term=num("term", 0),
        pos=num("pos", 0),
        channel=num("channel", 0),
        chain_crc=num("chainCrc", 0),
        body_crc=num("bodyCrc", 0),
        body=b"" if body is None else _b64(body, "entry.body"),
    )


# --------------------------------------------------------------------------- the beans


@functools.cache
def _java_name(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _to_json_value(value: Any) -> Any:
    if isinstance(value, DLedgerEntry):
        return entry_to_obj(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, enum.Enum) and not isinstance(value, enum.IntEnum):
        return value.name
    if isinstance(value, list):
        return [_to_json_value(v) for v in value]
    return value


def _from_json_value(tp: Any, raw: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        (inner,) = [a for a in typing.get_args(tp) if a is not type(None)]
        return _from_json_value(inner, raw, where)
    if tp is int:
        return _long(raw, where)
    if tp is str:
        if isinstance(raw, (dict, list)):
            raise DLedgerProtocolError(f"{where}: expected a string")
        return raw if isinstance(raw, str) else orjson.dumps(raw).decode()
    if tp is bytes:
        return _b64(raw, where)
    if tp is DLedgerEntry:
        return entry_from_obj(raw)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp[raw]
        except (KeyError, TypeError):
            raise DLedgerProtocolError(f"{where}: unknown {tp.__name__} {raw!r}") from None
    if origin is list:
        if not isinstance(raw, list):
            raise DLedgerProtocolError(f"{where}: expected an array")
        (item,) = typing.get_args(tp)
        return [_from_json_value(item, x, where) for x in raw]
    if origin is dict:
        if not isinstance(raw, dict):
            raise DLedgerProtocolError(f"{where}: expected an object")
        return {str(k): str(v) for k, v in raw.items()}
    raise TypeError(f"{where}: no JSON reader for {tp!r}")  # a bug in a bean declaration


_HINTS: dict[type, dict[str, Any]] = {}


@dataclass(kw_only=True, slots=True)
class RequestOrResponse:
    """RequestOrResponse: the fields every DLedger RPC carries. ``leader_id`` is the sender's idea of
    the leader (the candidate itself in a vote); ``term`` is -1 until set."""

    CODE: ClassVar[DLedgerRequestCode] = DLedgerRequestCode.UNKNOWN

    group: str | None = None
    remote_id: str | None = None
    local_id: str | None = None
    code: int = DLedgerResponseCode.SUCCESS
    leader_id: str | None = None
    term: int = -1

    def computed_props(self) -> dict[str, Any]:
        """Getters with no field behind them (fastjson writes them too)."""
        return {}

    def to_obj(self) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is not None:
                obj[_java_name(f.name)] = _to_json_value(value)
        obj.update(self.computed_props())
        return obj

    def encode(self) -> bytes:
        """``JSON.toJSONBytes(bean)``: sorted properties, no nulls, no whitespace."""
        return orjson.dumps(self.to_obj(), option=orjson.OPT_SORT_KEYS)

    @classmethod
    def from_obj(cls, obj: Any) -> Self:
        if not isinstance(obj, Mapping):
            raise DLedgerProtocolError(f"{cls.__name__}: body is not a JSON object")
        hints = _HINTS.get(cls)
        if hints is None:
            hints = _HINTS[cls] = typing.get_type_hints(cls)
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            raw = obj.get(_java_name(f.name))
            if raw is not None:
                kwargs[f.name] = _from_json_value(hints[f.name], raw, f"{cls.__name__}.{_java_name(f.name)}")
        return cls(**kwargs)

    @classmethod
    def decode(cls, body: bytes | bytearray | memoryview | None) -> Self:
        """Read a body. Raises DLedgerProtocolError; anything else is a bug."""
        if not body:
            raise DLedgerProtocolError(f"{cls.__name__}: empty body")
        try:
            obj = lenient_loads(body)
        except BodyDecodeError as e:
            raise DLedgerProtocolError(f"{cls.__name__}: {e}") from None
        return cls.from_obj(obj)


@dataclass(kw_only=True, slots=True)
class VoteRequest(RequestOrResponse):
    CODE: ClassVar[DLedgerRequestCode] = DLedgerRequestCode.VOTE

    ledger_end_index: int = -1
    ledger_end_term: int = -1


@dataclass(kw_only=True, slots=True)
class VoteResponse(RequestOrResponse):
    CODE: ClassVar[DLedgerRequestCode] = DLedgerRequestCode.VOTE

    vote_result: VoteResult = VoteResult.UNKNOWN


@dataclass(kw_only=True, slots=True)
class HeartBeatRequest(RequestOrResponse):
    CODE: ClassVar[DLedgerRequestCode] = DLedgerRequestCode.HEART_BEAT


@dataclass(kw_only=True, slots=True)
class HeartBeatResponse(RequestOrResponse):
    CODE: ClassVar[DLedgerRequestCode] = DLedgerRequestCode.HEART_BEAT


@dataclass(kw_only=True, slots=True)
class AppendEntryRequest(RequestOrResponse):
    """A client's append to the leader (DLedgerClient); RocketMQ's broker appends in-process."""

    CODE: ClassVar[DLedgerRequestCode] = DLedgerRequestCode.APPEND

    body: bytes | None = None


@dataclass(kw_only=True, slots=True)
class AppendEntryResponse(RequestOrResponse):
    CODE: ClassVar[DLedgerRequestCode] = DLedgerRequestCode.APPEND

    index: int = -1
    pos: int = -1


@dataclass(kw_only=True, slots=True)
class PushEntryRequest(RequestOrResponse):
    """The leader's replication RPC (DLedgerEntryPusher): APPEND one entry (or ``batch_entry``),
    COMMIT (only ``commit_index``), COMPARE (is ``entry`` what you hold at its index?) or TRUNCATE
    (drop everything after ``entry``, which you must then hold)."""

    CODE: ClassVar[DLedgerRequestCode] = DLedgerRequestCode.PUSH

    commit_index: int = -1
    type: PushType = PushType.APPEND
    entry: DLedgerEntry | None = None
    batch_entry: list[DLedgerEntry] = field(default_factory=list)

    @property
    def first_entry_index(self) -> int:
        if self.batch_entry:
            return self.batch_entry[0].index
        return self.entry.index if self.entry is not None else -1

    @property
    def last_entry_index(self) -> int:
        if self.batch_entry:
            return self.batch_entry[-1].index
        return self.entry.index if self.entry is not None else -1

    @property
    def count(self) -> int:
        return len(self.batch_entry) or (1 if self.entry is not None else 0)

    def computed_props(self) -> dict[str, Any]:
        return {
            "batch": bool(self.batch_entry),
            "count": self.count,
            "firstEntryIndex": self.first_entry_index,
            "lastEntryIndex": self.last_entry_index,
            # Java's totalSize grows only in addEntry, so it counts the batch alone
            "totalSize": sum(e.size for e in self.batch_entry),
        }


@dataclass(kw_only=True, slots=True)
class PushEntryResponse(RequestOrResponse):
    """``index``: the entry index the answer is about (null in Java when not set); ``begin_index``
    and ``end_index``: the follower's ledger on INCONSISTENT_STATE, so the leader can compare."""

    CODE: ClassVar[DLedgerRequestCode] = DLedgerRequestCode.PUSH

    index: int | None = None
    begin_index: int = 0
    end_index: int = 0
    count: int = 0


@dataclass(kw_only=True, slots=True)
class PullEntriesRequest(RequestOrResponse):
    """Declared by DLedgerRpcNettyService, served by nobody in 0.3.2 (DLedgerServer#handlePull
    returns null, so the remoting server answers SYSTEM_ERROR; pyrmq's server does the same)."""

    CODE: ClassVar[DLedgerRequestCode] = DLedgerRequestCode.PULL

    node_id: str | None = None
    begin_index: int | None = None


@dataclass(kw_only=True, slots=True)
class PullEntriesResponse(RequestOrResponse):
    CODE: ClassVar[DLedgerRequestCode] = DLedgerRequestCode.PULL

    entries: list[DLedgerEntry] = field(default_factory=list)


@dataclass(kw_only=True, slots=True)
class GetEntriesRequest(RequestOrResponse):
    CODE: ClassVar[DLedgerRequestCode] = DLedgerRequestCode.GET

    begin_index: int | None = None
    max_size: int = 0
    index_list: list[int] | None = None


@dataclass(kw_only=True, slots=True)
class GetEntriesResponse(RequestOrResponse):
    CODE: ClassVar[DLedgerRequestCode] = DLedgerRequestCode.GET

    entries: list[DLedgerEntry] = field(default_factory=list)


@dataclass(kw_only=True, slots=True)
class MetadataRequest(RequestOrResponse):
    CODE: ClassVar[DLedgerRequestCode] = DLedgerRequestCode.METADATA


@dataclass(kw_only=True, slots=True)
class MetadataResponse(RequestOrResponse):
    CODE: ClassVar[DLedgerRequestCode] = DLedgerRequestCode.METADATA

    peers: dict[str, str] | None = None


@dataclass(kw_only=True, slots=True)
class LeadershipTransferRequest(RequestOrResponse):
    """From a client (or the admin tool) to the leader, then from the leader to the transferee:
    take the leadership once your ledger reaches ``take_leadership_ledger_index``."""

    CODE: ClassVar[DLedgerRequestCode] = DLedgerRequestCode.LEADERSHIP_TRANSFER

    transfer_id: str | None = None
    transferee_id: str | None = None
    take_leadership_ledger_index: int = 0


@dataclass(kw_only=True, slots=True)
class LeadershipTransferResponse(RequestOrResponse):
    CODE: ClassVar[DLedgerRequestCode] = DLedgerRequestCode.LEADERSHIP_TRANSFER


#: the request bean of each code, as DLedgerRpcNettyService#processRequest dispatches
REQUEST_TYPES: dict[int, type[RequestOrResponse]] = {
    DLedgerRequestCode.METADATA: MetadataRequest,
    DLedgerRequestCode.APPEND: AppendEntryRequest,
    DLedgerRequestCode.GET: GetEntriesRequest,
    DLedgerRequestCode.PULL: PullEntriesRequest,
    DLedgerRequestCode.PUSH: PushEntryRequest,
    DLedgerRequestCode.VOTE: VoteRequest,
    DLedgerRequestCode.HEART_BEAT: HeartBeatRequest,
    DLedgerRequestCode.LEADERSHIP_TRANSFER: LeadershipTransferRequest,
}
#: the response bean of each code
RESPONSE_TYPES: dict[int, type[RequestOrResponse]] = {
    DLedgerRequestCode.METADATA: MetadataResponse,
    DLedgerRequestCode.APPEND: AppendEntryResponse,
    DLedgerRequestCode.GET: GetEntriesResponse,
    DLedgerRequestCode.PULL: PullEntriesResponse,
    DLedgerRequestCode.PUSH: PushEntryResponse,
    DLedgerRequestCode.VOTE: VoteResponse,
    DLedgerRequestCode.HEART_BEAT: HeartBeatResponse,
    DLedgerRequestCode.LEADERSHIP_TRANSFER: LeadershipTransferResponse,
}


def failure(request: RequestOrResponse, code: int, leader_id: str | None) -> RequestOrResponse:
    """The response bean to ``request`` after a failed precondition: ``copyBaseInfo(request)``,
    the failure's ``code`` and the leader the answering member knows (DLedgerServer's catch)."""
    cls = RESPONSE_TYPES.get(request.CODE, PushEntryResponse)
    return cls(
        group=request.group,
        local_id=request.local_id,
        remote_id=request.remote_id,
        term=request.term,
        code=code,
        leader_id=leader_id,
    )


def request_command(request: RequestOrResponse) -> RemotingCommand:
    """``createRequestCommand(code, null)`` with the bean as body (the next opaque)."""
    return RemotingCommand.request(request.CODE, body=request.encode())


def response_command(request: RemotingCommand, response: RequestOrResponse) -> RemotingCommand:
    """DLedgerRpcNettyService#handleResponse: remoting code 200 always, the request's opaque."""
    return request.make_response(code=DLedgerResponseCode.SUCCESS, body=response.encode())


def decode_request(cmd: RemotingCommand) -> RequestOrResponse:
    """The bean of a request command. Raises DLedgerProtocolError for an unknown code or a bad body."""
    cls = REQUEST_TYPES.get(cmd.code)
    if cls is None:
        raise DLedgerProtocolError(f"unknown DLedger request code {cmd.code}")
    return cls.decode(cmd.body)


def decode_response(code: int, cmd: RemotingCommand) -> RequestOrResponse:
    """The bean of the response to a request of ``code``. Raises DLedgerProtocolError."""
    cls = RESPONSE_TYPES.get(code)
    if cls is None:
        raise DLedgerProtocolError(f"unknown DLedger request code {code}")
    return cls.decode(cmd.body)
