"""The receipt handle a SimpleConsumer acks with. Java: ``common/consumer/ReceiptHandle``.

It is the POP checkpoint's extraInfo (``ckQueueOffset popTime invisibleTime reviveQid topicType
brokerName queueId queueOffset``) plus the message's commit-log offset, space separated: the
ack and change-invisible-time requests carry it unchanged as their extraInfo.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pyrmq.grpc.status import Code, GrpcProxyError
from pyrmq.protocol.headers.pop import ExtraInfo, ExtraInfoError, real_topic

SEPARATOR = " "


@dataclass(slots=True, frozen=True)
class ReceiptHandle:
    start_offset: int
    retrieve_time: int
    invisible_time: int
    revive_queue_id: int
    topic_type: str
    broker_name: str
    queue_id: int
    offset: int
    commit_log_offset: int
    text: str

    @classmethod
    def decode(cls, text: str) -> ReceiptHandle:
        """ReceiptHandle#decode; a malformed handle is INVALID_RECEIPT_HANDLE (Java: IllegalArgumentException)."""
        parts = text.split(SEPARATOR)
        if len(parts) < 8:
            raise GrpcProxyError(Code.INVALID_RECEIPT_HANDLE, f"Parse failed, dataList size {len(parts)}")
        try:
            info = ExtraInfo.parse(text)  # the same leading fields as the checkpoint's extraInfo
            commit_log_offset = int(parts[8]) if len(parts) >= 9 else -1
        except (ExtraInfoError, ValueError):
            raise GrpcProxyError(Code.INVALID_RECEIPT_HANDLE, f"receipt handle has a bad number: {text}") from None
        return cls(
            info.ck_queue_offset,
            info.pop_time,
            info.invisible_time,
            info.revive_qid,
            info.retry,
            info.broker_name,
            int(parts[6]),
            int(parts[7]),
            commit_log_offset,
            text,
        )

    def encode(self) -> str:
        return SEPARATOR.join(
            str(p)
            for p in (
                self.start_offset,
                self.retrieve_time,
                self.invisible_time,
                self.revive_queue_id,
                self.topic_type,
                self.broker_name,
                self.queue_id,
                self.offset,
                self.commit_log_offset,
            )
        )

    @property
    def next_visible_time(self) -> int:
        return self.retrieve_time + self.invisible_time

    def is_expired(self, now_ms: int | None = None) -> bool:
        return self.next_visible_time <= (int(time.time() * 1000) if now_ms is None else now_ms)

    def real_topic(self, topic: str, group: str) -> str:
        return real_topic(topic, group, self.topic_type)

    def check(self) -> None:
        """ConsumerProcessor#validateReceiptHandle."""
        if self.is_expired():
            raise GrpcProxyError(Code.INVALID_RECEIPT_HANDLE, "receipt handle is expired")


__all__ = ["ReceiptHandle"]
