"""Statuses and results of puts, gets and queries. Java: store.PutMessageStatus,
AppendMessageStatus, AppendMessageResult, PutMessageResult, GetMessageStatus, GetMessageResult,
QueryMessageResult. Outcomes are returned, never raised."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from enum import Enum


class PutMessageStatus(Enum):
    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPPED_FILE_FAILED = "CREATE_MAPPED_FILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGE_CACHE_BUSY = "OS_PAGE_CACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"
    IN_SYNC_REPLICAS_NOT_ENOUGH = "IN_SYNC_REPLICAS_NOT_ENOUGH"
    PUT_TO_REMOTE_BROKER_FAIL = "PUT_TO_REMOTE_BROKER_FAIL"
    LMQ_CONSUME_QUEUE_NUM_EXCEEDED = "LMQ_CONSUME_QUEUE_NUM_EXCEEDED"
    WHEEL_TIMER_FLOW_CONTROL = "WHEEL_TIMER_FLOW_CONTROL"
    WHEEL_TIMER_MSG_ILLEGAL = "WHEEL_TIMER_MSG_ILLEGAL"
    WHEEL_TIMER_NOT_ENABLE = "WHEEL_TIMER_NOT_ENABLE"


class AppendMessageStatus(Enum):
    PUT_OK = "PUT_OK"
    END_OF_FILE = "END_OF_FILE"
    MESSAGE_SIZE_EXCEEDED = "MESSAGE_SIZE_EXCEEDED"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


@dataclass(slots=True)
class AppendMessageResult:
    """Where a put landed. msg_id is the offsetMsgId (comma-joined for a batch)."""

    status: AppendMessageStatus
    wrote_offset: int = 0
    wrote_bytes: int = 0
    msg_id: str = ""
    store_timestamp: int = 0
    logics_offset: int = 0
    msg_num: int = 1
    page_cache_rt: int = 0

    def is_ok(self) -> bool:
        return self.status is AppendMessageStatus.PUT_OK


@dataclass(slots=True)
class PutMessageResult:
    put_message_status: PutMessageStatus
    append_message_result: AppendMessageResult | None = None
    remote_put: bool = False
    error: str | None = None  # why, when not OK (e.g. the fsync error text)

    def is_ok(self) -> bool:
        return (
            self.append_message_result is not None
            and self.append_message_result.is_ok()
            and self.put_message_status is PutMessageStatus.PUT_OK
        )


def completed_put(result: PutMessageResult) -> Future[PutMessageResult]:
    """A Future already holding `result`. Java CompletableFuture.completedFuture."""
    f: Future[PutMessageResult] = Future()
    f.set_result(result)
    return f


class GetMessageStatus(Enum):
    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"
    OFFSET_RESET = "OFFSET_RESET"


@dataclass(slots=True)
class GetMessageResult:
    """Raw records for a pull, in queue order. Each buffer is one whole record (memoryview over the
    mapped file, or bytes); the broker concatenates them into the pull response body as they are."""

    status: GetMessageStatus = GetMessageStatus.NO_MESSAGE_IN_QUEUE
    next_begin_offset: int = 0
    min_offset: int = 0
    max_offset: int = 0
    message_buffer_list: list[memoryview | bytes] = field(default_factory=list)
    message_queue_offset: list[int] = field(default_factory=list)
    buffer_total_size: int = 0
    suggest_pulling_from_slave: bool = False
    msg_count_4_commercial: int = 0
    tags_codes: list[int] = field(default_factory=list)

    @property
    def message_count(self) -> int:
        return len(self.message_buffer_list)

    def add_message(self, buf: memoryview | bytes, queue_offset: int, tags_code: int = 0) -> None:
        self.message_buffer_list.append(buf)
        self.message_queue_offset.append(queue_offset)
        self.tags_codes.append(tags_code)
        self.buffer_total_size += len(buf)

    def release(self) -> None:
        """Drop the views on mapped files (lets files be unmapped sooner)."""
        for b in self.message_buffer_list:
            if isinstance(b, memoryview):
                b.release()
        self.message_buffer_list.clear()


@dataclass(slots=True)
class SelectMappedBufferResult:
    """A slice of the commit log starting at start_offset. Java: store.SelectMappedBufferResult."""

    start_offset: int
    buffer: memoryview | bytes
    size: int

    def release(self) -> None:
        if isinstance(self.buffer, memoryview):
            self.buffer.release()


@dataclass(slots=True)
class QueryMessageResult:
    """Records found by key (index lookup, false positives already removed)."""

    message_buffer_list: list[memoryview | bytes] = field(default_factory=list)
    phy_offsets: list[int] = field(default_factory=list)
    index_last_update_timestamp: int = 0
    index_last_update_phyoffset: int = 0
    buffer_total_size: int = 0

    def add_message(self, buf: memoryview | bytes, phy_offset: int) -> None:
        self.message_buffer_list.append(buf)
        self.phy_offsets.append(phy_offset)
        self.buffer_total_size += len(buf)


@dataclass(slots=True)
class DispatchRequest:
    """What dispatch needs from one record. Java: store.DispatchRequest (from
    CommitLog#checkMessageAndReturnSize). msg_size 0 + success = blank (end of file)."""

    msg_size: int
    success: bool
    topic: str = ""
    queue_id: int = 0
    commit_log_offset: int = 0
    tags_code: int = 0
    store_timestamp: int = 0
    consume_queue_offset: int = 0
    keys: str | None = None
    uniq_key: str | None = None
    sys_flag: int = 0
    prepared_transaction_offset: int = 0
    properties: dict[str, str] | None = None


DispatchListener = Callable[[DispatchRequest], None]
