"""JSON bodies of POP consumption: request modes, server-side assignments, and the checkpoint and
ack records the broker writes to its revive topic.

Java: ``remoting/protocol/body/{SetMessageRequestModeRequestBody,QueryAssignmentRequestBody,
QueryAssignmentResponseBody}``, ``common/message/{MessageQueueAssignment,MessageRequestMode}``,
``broker/loadbalance/MessageRequestModeManager`` (the ``messageRequestMode.json`` tree),
``store/pop/{PopCheckPoint,AckMsg,BatchAckMsg}``.
"""

from __future__ import annotations

import base64
import enum
from dataclasses import dataclass, field
from typing import ClassVar

from pyrmq.protocol.bodies.broker import MessageQueue
from pyrmq.protocol.fastjson import FastJsonBody


class MessageRequestMode(enum.Enum):
    """How a group consumes a topic. Java: common/message/MessageRequestMode (written by name)."""

    PULL = "PULL"
    POP = "POP"


class MessageModel(enum.Enum):
    """Java: remoting/protocol/heartbeat/MessageModel."""

    BROADCASTING = "BROADCASTING"
    CLUSTERING = "CLUSTERING"


@dataclass(slots=True)
class SetMessageRequestModeRequestBody(FastJsonBody):
    topic: str | None = None
    consumer_group: str | None = None
    mode: MessageRequestMode = MessageRequestMode.PULL
    #: a POP consumer also pops the queues of the N consumers after it in the sorted id list
    pop_share_queue_num: int = 0


@dataclass(slots=True)
class MessageRequestModeSerializeWrapper(FastJsonBody):
    """``config/messageRequestMode.json``: topic -> group -> mode (Java MessageRequestModeManager)."""

    FILE_NAME: ClassVar[str] = "messageRequestMode.json"

    message_request_mode_map: dict[str, dict[str, SetMessageRequestModeRequestBody]] = field(default_factory=dict)


@dataclass(slots=True)
class QueryAssignmentRequestBody(FastJsonBody):
    topic: str | None = None
    consumer_group: str | None = None
    client_id: str | None = None
    strategy_name: str | None = None
    message_model: MessageModel = MessageModel.CLUSTERING


@dataclass(slots=True)
class MessageQueueAssignment(FastJsonBody):
    message_queue: MessageQueue | None = None
    mode: MessageRequestMode = MessageRequestMode.PULL
    attachments: dict[str, str] | None = None


@dataclass(slots=True)
class QueryAssignmentResponseBody(FastJsonBody):
    #: None tells the client to keep its assignment (Java: an invalid result)
    message_queue_assignments: list[MessageQueueAssignment] | None = None


@dataclass(slots=True)
class BatchAck(FastJsonBody):
    """One popped batch's acks: the acked messages are bits of ``bit_set`` counted from
    ``start_offset`` (Java BitSet#toByteArray, base64). Java: remoting/protocol/body/BatchAck."""

    consumer_group: str | None = field(default=None, metadata={"json": "c", "aliases": ("consumerGroup",)})
    topic: str | None = field(default=None, metadata={"json": "t", "aliases": ("topic",)})
    retry: str | None = field(default=None, metadata={"json": "r", "aliases": ("retry",)})
    start_offset: int = field(default=0, metadata={"json": "so", "aliases": ("startOffset",)})
    queue_id: int = field(default=0, metadata={"json": "q", "aliases": ("queueId",)})
    revive_queue_id: int = field(default=0, metadata={"json": "rq", "aliases": ("reviveQueueId",)})
    pop_time: int = field(default=0, metadata={"json": "pt", "aliases": ("popTime",)})
    invisible_time: int = field(default=0, metadata={"json": "it", "aliases": ("invisibleTime",)})
    bit_set: str | None = field(default=None, metadata={"json": "b", "aliases": ("bitSet",)})

    def bits(self) -> list[int]:
        """The set bit indexes, ascending (Java BitSet.valueOf(base64-decoded bytes))."""
        if not self.bit_set:
            return []
        data = base64.b64decode(self.bit_set)
        return [i * 8 + b for i, byte in enumerate(data) for b in range(8) if byte >> b & 1]

    @staticmethod
    def encode_bits(indexes: list[int]) -> str:
        """Java BitSet#toByteArray of these bits, base64."""
        if not indexes:
            return ""
        data = bytearray(max(indexes) // 8 + 1)
        for i in indexes:
            data[i // 8] |= 1 << (i % 8)
        return base64.b64encode(bytes(data)).decode("ascii")


@dataclass(slots=True)
class BatchAckMessageRequestBody(FastJsonBody):
    broker_name: str | None = None
    acks: list[BatchAck] | None = None
