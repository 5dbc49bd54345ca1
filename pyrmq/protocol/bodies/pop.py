"""JSON bodies of POP consumption: request modes, server-side assignments, and the checkpoint and
ack records the broker writes to its revive topic.

Java: ``remoting/protocol/body/{SetMessageRequestModeRequestBody,QueryAssignmentRequestBody,
QueryAssignmentResponseBody}``, ``common/message/{MessageQueueAssignment,MessageRequestMode}``,
``broker/loadbalance/MessageRequestModeManager`` (the ``messageRequestMode.json`` tree),
``store/pop/{PopCheckPoint,AckMsg,BatchAckMsg}``.
"""

from __future__ import annotations

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
