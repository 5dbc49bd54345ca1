"""The recall handle of a timer message (5.5.0 RecallMessageHandle, version 1).

A send that put a timer message answers with this handle (SendMessageResponseHeader.recallHandle);
RECALL_MESSAGE (the remoting producer's recallMessage, the gRPC RecallMessage) gives it back to take
the message back before its delivery time. ``v1 topic brokerName timestamp messageId``, URL-safe
Base64; the timestamp is the message's TIMER_OUT_MS + 1 and the message id its UNIQ_KEY.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

INVALID = "recall handle is invalid"


@dataclass(frozen=True, slots=True)
class RecallHandle:
    topic: str
    broker_name: str
    timestamp: str
    message_id: str

    def encode(self) -> str:
        raw = " ".join(("v1", self.topic, self.broker_name, self.timestamp, self.message_id))
        return base64.urlsafe_b64encode(raw.encode()).decode()

    @classmethod
    def decode(cls, handle: str | None) -> RecallHandle:
        """RecallMessageHandle#decodeHandle; a bad handle is ValueError("recall handle is invalid")."""
        if not handle:
            raise ValueError(INVALID)
        try:  # Java's URL decoder: padding optional, any other character refused
            padded = handle + "=" * (-len(handle) % 4)
            raw = base64.b64decode(padded, altchars=b"-_", validate=True).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            raise ValueError(INVALID) from None
        items = raw.split(" ")
        if items[0] != "v1" or len(items) < 5:
            raise ValueError(INVALID)
        return cls(items[1], items[2], items[3], items[4])
