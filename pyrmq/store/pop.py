"""The records of the revive topic ``rmq_sys_REVIVE_LOG_<cluster>``: a checkpoint per pop (tag
``ck``), an ack per acknowledged message (``ack``) or per batch (``bAck``), as JSON bodies.

Java: ``store/pop/{PopCheckPoint,AckMsg,BatchAckMsg}`` written by fastjson2 with their
``@JSONField`` short names (captured from the 5.5.0 jars): properties sorted by name, the
derived ``reviveTime`` getter written too, null ``rp`` left out::

    {"bm":0,"bn":"b","c":"cg","d":[0,1],"it":60000,"n":2,"pt":1700000000000,"q":1,
     "reviveTime":1700000060000,"ro":0,"so":5,"sp":false,"t":"T"}
    {"ao":6,"bn":"b","c":"cg","pt":1700000000000,"q":1,"so":5,"t":"T"}
    {"ao":0,"aol":[5,6],"bn":"b","c":"cg","pt":1700000000000,"q":1,"so":5,"t":"T"}

The long names an older writer used are read too.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Self

import orjson

from pyrmq.protocol.fastjson import FastJsonBody, fastjson_dumps

#: PopAckConstants tags of the revive topic's records
CK_TAG, ACK_TAG, BATCH_ACK_TAG = "ck", "ack", "bAck"


def _json_str(value: str) -> str:
    return orjson.dumps(value).decode()


def _name(short: str, long: str) -> Any:
    return {"json": short, "aliases": (long,)}


@dataclass(slots=True)
class PopCheckPoint(FastJsonBody):
    """One pop of up to 32 messages of one queue: which are acked (``bit_map``) and when the rest
    revive (``pop_time + invisible_time``)."""

    start_offset: int = field(default=0, metadata=_name("so", "startOffset"))
    pop_time: int = field(default=0, metadata=_name("pt", "popTime"))
    invisible_time: int = field(default=0, metadata=_name("it", "invisibleTime"))
    bit_map: int = field(default=0, metadata=_name("bm", "bitMap"))
    num: int = field(default=0, metadata=_name("n", "num"))
    queue_id: int = field(default=0, metadata=_name("q", "queueId"))
    topic: str | None = field(default=None, metadata=_name("t", "topic"))
    cid: str | None = field(default=None, metadata=_name("c", "cId"))
    revive_offset: int = field(default=0, metadata=_name("ro", "reviveOffset"))
    queue_offset_diff: list[int] | None = field(default=None, metadata=_name("d", "queueOffsetDiff"))
    broker_name: str | None = field(default=None, metadata=_name("bn", "brokerName"))
    re_put_times: str | None = field(default=None, metadata=_name("rp", "rePutTimes"))
    #: 5.5.0: a suspended retry keeps its reconsume count
    suspend: bool = field(default=False, metadata=_name("sp", "suspend"))
    #: the derived getter fastjson2 writes; never read
    revive_time_written: int | None = field(default=None, metadata={"json": "reviveTime"})

    @property
    def revive_time(self) -> int:
        return self.pop_time + self.invisible_time

    def encode(self, *, standard: bool = False) -> bytes:
        return fastjson_dumps(dataclasses.replace(self, revive_time_written=self.revive_time), standard=standard)

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview | str) -> Self:
        ck = super(PopCheckPoint, cls).decode(data)
        ck.revive_time_written = None
        return ck

    def add_diff(self, diff: int) -> None:
        if self.queue_offset_diff is None:
            self.queue_offset_diff = []
        self.queue_offset_diff.append(diff)

    def index_of_ack(self, ack_offset: int) -> int:
        """Which of the checkpoint's messages ``ack_offset`` is, or -1."""
        if ack_offset < self.start_offset:
            return -1
        if not self.queue_offset_diff:  # a checkpoint of an old writer: consecutive offsets
            return ack_offset - self.start_offset if ack_offset - self.start_offset < self.num else -1
        try:
            return self.queue_offset_diff.index(ack_offset - self.start_offset)
        except ValueError:
            return -1

    def ack_offset_by_index(self, index: int) -> int:
        if not self.queue_offset_diff:
            return self.start_offset + index
        return self.start_offset + self.queue_offset_diff[index]

    def parse_re_put_times(self) -> int:
        if self.re_put_times is None:
            return 0
        try:
            return int(self.re_put_times)
        except ValueError:
            return 127  # Java: Byte.MAX_VALUE

    def merge_key(self) -> str:
        """Java PopReviveService's map key: topic + cid + queueId + startOffset + popTime + brokerName."""
        return f"{self.topic}{self.cid}{self.queue_id}{self.start_offset}{self.pop_time}{self.broker_name}"

    def unique_id(self) -> str:
        """Java PopMessageProcessor#genCkUniqueId: the record's UNIQ_KEY."""
        return (
            f"{self.topic}@{self.queue_id}@{self.start_offset}@{self.cid}@{self.pop_time}@{self.broker_name}@{CK_TAG}"
        )


@dataclass(slots=True)
class AckMsg(FastJsonBody):
    ack_offset: int = field(default=0, metadata=_name("ao", "ackOffset"))
    start_offset: int = field(default=0, metadata=_name("so", "startOffset"))
    consumer_group: str | None = field(default=None, metadata=_name("c", "consumerGroup"))
    topic: str | None = field(default=None, metadata=_name("t", "topic"))
    queue_id: int = field(default=0, metadata=_name("q", "queueId"))
    pop_time: int = field(default=0, metadata=_name("pt", "popTime"))
    broker_name: str | None = field(default=None, metadata=_name("bn", "brokerName"))

    def merge_key(self, default_broker_name: str) -> str:
        bn = self.broker_name if self.broker_name and self.broker_name.strip() else default_broker_name
        return f"{self.topic}{self.consumer_group}{self.queue_id}{self.start_offset}{self.pop_time}{bn}"

    def encode(self, *, standard: bool = False) -> bytes:
        """The generic bean writer's output (tests/unit/store/test_pop_records.py holds them equal),
        written directly: one ack record per acked message is the POP hot path."""
        if standard:
            return fastjson_dumps(self, standard=True)
        out = [f'{{"ao":{self.ack_offset}']
        if self.broker_name is not None:
            out.append(f',"bn":{_json_str(self.broker_name)}')
        if self.consumer_group is not None:
            out.append(f',"c":{_json_str(self.consumer_group)}')
        out.append(f',"pt":{self.pop_time},"q":{self.queue_id},"so":{self.start_offset}')
        if self.topic is not None:
            out.append(f',"t":{_json_str(self.topic)}')
        out.append("}")
        return "".join(out).encode()

    def unique_id(self) -> str:
        """Java PopMessageProcessor#genAckUniqueId."""
        return (
            f"{self.topic}@{self.queue_id}@{self.ack_offset}@{self.consumer_group}@{self.pop_time}"
            f"@{self.broker_name}@{ACK_TAG}"
        )


@dataclass(slots=True)
class BatchAckMsg(FastJsonBody):
    """Java BatchAckMsg extends AckMsg (its ``ao`` stays 0)."""

    ack_offset: int = field(default=0, metadata=_name("ao", "ackOffset"))
    ack_offset_list: list[int] = field(default_factory=list, metadata=_name("aol", "ackOffsetList"))
    start_offset: int = field(default=0, metadata=_name("so", "startOffset"))
    consumer_group: str | None = field(default=None, metadata=_name("c", "consumerGroup"))
    topic: str | None = field(default=None, metadata=_name("t", "topic"))
    queue_id: int = field(default=0, metadata=_name("q", "queueId"))
    pop_time: int = field(default=0, metadata=_name("pt", "popTime"))
    broker_name: str | None = field(default=None, metadata=_name("bn", "brokerName"))

    def merge_key(self, default_broker_name: str) -> str:
        bn = self.broker_name if self.broker_name and self.broker_name.strip() else default_broker_name
        return f"{self.topic}{self.consumer_group}{self.queue_id}{self.start_offset}{self.pop_time}{bn}"

    def unique_id(self) -> str:
        """Java PopMessageProcessor#genBatchAckUniqueId (a Java List's toString: ``[5, 6]``)."""
        offsets = "[" + ", ".join(str(o) for o in self.ack_offset_list) + "]"
        return f"{self.topic}@{self.queue_id}@{offsets}@{self.consumer_group}@{self.pop_time}@{BATCH_ACK_TAG}"
