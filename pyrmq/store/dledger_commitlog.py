"""The commit log of a DLedger commit-log group member: each record is the body of one DLedger entry.

Java: store.dledger.DLedgerCommitLog (asyncPutMessage and its status mapping, getData/getMessage
only below the committed position, checkMessageAndReturnSize over the entry headers, the append
hook writing pos + BODY_OFFSET into PHYSICALOFFSET) and the part of
broker.dledger.DLedgerRoleChangeHandler that makes a new leader wait until its whole ledger is
dispatched before it takes puts. docs/dledger.md has the design.

Runs on the event loop of its DLedgerServer and is not thread-safe: a put reads and advances the
queue offset and appends the entry with no await in between, so the loop orders puts as Java's
put lock does.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import struct
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Protocol

from pyrmq.common.clock import now_ms
from pyrmq.dledger.config import DLedgerConfig
from pyrmq.dledger.entry import BODY_OFFSET, DLedgerEntry
from pyrmq.dledger.protocol import DLedgerResponseCode
from pyrmq.dledger.raft import AppendError, Role
from pyrmq.dledger.store_files import DLedgerStoreWriter, commitlog_append_hook
from pyrmq.store import message as m
from pyrmq.store.commitlog import CommitLog, MessageExtBatch, dispatch_request_of
from pyrmq.store.results import (
    AppendMessageResult,
    AppendMessageStatus,
    DispatchListener,
    DispatchRequest,
    PutMessageResult,
    PutMessageStatus,
)
from pyrmq.store.store_config import MessageStoreConfig

log = logging.getLogger(__name__)

__all__ = ["DLedgerCommitLog", "Member", "put_status"]

Code = DLedgerResponseCode

#: DLedgerCommitLog#asyncPutMessage's thenApply; any other code is UNKNOWN_ERROR
_PUT_STATUS = {
    Code.SUCCESS: PutMessageStatus.PUT_OK,
    Code.INCONSISTENT_LEADER: PutMessageStatus.SERVICE_NOT_AVAILABLE,
    Code.NOT_LEADER: PutMessageStatus.SERVICE_NOT_AVAILABLE,
    Code.LEADER_NOT_READY: PutMessageStatus.SERVICE_NOT_AVAILABLE,
    Code.DISK_FULL: PutMessageStatus.SERVICE_NOT_AVAILABLE,
    # not FLUSH_SLAVE_TIMEOUT: clients ignore that one
    Code.WAIT_QUORUM_ACK_TIMEOUT: PutMessageStatus.IN_SYNC_REPLICAS_NOT_ENOUGH,
    Code.LEADER_PENDING_FULL: PutMessageStatus.OS_PAGE_CACHE_BUSY,
}


class Member(Protocol):
    """The DLedger member the commit log runs on (pyrmq.dledger.server.DLedgerServer, whose port
    and peers are none of the store's business)."""

    config: DLedgerConfig
    store: DLedgerStoreWriter
    commit_listeners: list[Callable[[int], None]]
    role_listeners: list[Callable[[int, Role, str | None], None]]

    @property
    def role(self) -> Role: ...

    @property
    def term(self) -> int: ...

    @property
    def committed_index(self) -> int: ...

    async def append_batch(self, bodies: list[bytes], *, timeout_ms: int | None = None) -> list[DLedgerEntry]: ...


def put_status(code: DLedgerResponseCode) -> PutMessageStatus:
    """The put status of an append answered ``code``."""
    return _PUT_STATUS.get(code, PutMessageStatus.UNKNOWN_ERROR)


class DLedgerCommitLog(CommitLog):
    """Puts through the member's quorum append, reads and dispatch of committed records only.
    A CommitLog to the message store (offsets, reads, recovery); the files of the CommitLog it
    extends are never written.

    ``dispatch`` gets one DispatchRequest per committed record, in ledger order, on every member
    (the consume queues and the index are built from it); it runs before the puts it acknowledges
    resolve, so a PUT_OK message is already readable.
    """

    def __init__(
        self,
        server: Member,
        config: MessageStoreConfig,
        dispatch: DispatchListener,
        *,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        super().__init__(config, clock)
        self.server = server
        self.ledger = server.store
        self.ledger.append_hook = commitlog_append_hook
        self._dispatch = dispatch
        #: the last entry dispatched (-1: none)
        self.dispatched_index = -1
        #: topic-queueId -> next queue offset, from the committed records dispatched
        self.dispatched_queue_table: dict[str, int] = {}
        # self.topic_queue_table (CommitLog's): topic-queueId -> next queue offset this leader
        # assigns, valid while ``ready``
        #: the term in which this member, as leader, took its queue table from dispatch
        self._ready_term = -1
        self._puts: set[asyncio.Task[PutMessageResult]] = set()
        self._committed_pos: tuple[int, int] = (-1, 0)  # (committed index, its end offset)
        server.commit_listeners.append(self._on_committed)
        server.role_listeners.append(self._on_role_changed)

    # ------------------------------------------------------------------ life cycle: the member's

    def load(self) -> bool:
        return True

    def start(self) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def flush(self) -> int:
        """The member fsyncs its own files (every flushFileInterval)."""
        return self.get_max_offset()

    # ------------------------------------------------------------------ offsets

    def get_min_offset(self) -> int:
        """The start of the first data file (Java: its fileFromOffset + startPosition), 0 for an
        empty ledger; not the first record, which lies BODY_OFFSET further."""
        if self.ledger.begin_index < 0:
            return 0
        pos = self.ledger.get(self.ledger.begin_index).pos
        return pos - pos % self.ledger.data_file_size

    def get_earliest_record_offset(self) -> int:
        return self.get_min_offset() + BODY_OFFSET

    def get_flushed_where(self) -> int:
        """The member's data files are fsynced by its flush loop (Java: dLedgerFileList's
        flushedWhere), not through the CommitLog's own files."""
        return self.ledger.flushed_pos

    def get_max_offset(self) -> int:
        """The committed position: the end of the last committed entry (Java: getCommittedPos).
        Nothing past it is read or dispatched."""
        index = min(self.server.committed_index, self.ledger.end_index)
        if index < 0:
            return 0
        cached_index, pos = self._committed_pos
        if cached_index != index:
            entry = self.ledger.get(index)
            pos = entry.pos + entry.size
            self._committed_pos = (index, pos)
        return pos

    def get_confirm_offset(self) -> int:
        return self.get_max_offset()

    @property
    def ready(self) -> bool:
        """A leader that has dispatched its whole ledger and so knows every queue's next offset."""
        return self.server.role is Role.LEADER and self._ready_term == self.server.term

    # ------------------------------------------------------------------ reads

    def get_message(self, offset: int, size: int) -> memoryview | None:
        """The committed record bytes at [offset, offset + size), or None. Java DLedgerCommitLog#getMessage."""
        if offset < 0 or size <= 0 or offset + size > self.get_max_offset():
            return None
        data = self.ledger.read(offset, size)
        return memoryview(data) if len(data) == size else None

    def get_data(self, offset: int, return_first_on_not_found: bool = False) -> tuple[int, memoryview] | None:
        return None  # dispatch walks the entries (dispatch_committed), not the bytes

    def get_replication_data(self, offset: int, max_size: int) -> memoryview | None:
        return None  # DLedger replicates itself

    def append_data(self, start_offset: int, data: bytes | bytearray | memoryview) -> bool:
        return False

    def has_space_ahead(self) -> bool:
        return True

    # ------------------------------------------------------------------ puts

    async def put_message(self, msg: m.MessageExtBrokerInner) -> PutMessageResult:
        """Append one record as the leader and answer once a majority holds it (or it failed)."""
        refused = self._refused()
        if refused is not None:
            return refused
        msg.store_timestamp = self.clock()
        if msg.version is None:
            msg.version = m.choose_version(msg.topic, self.config.auto_message_version_on_topic_len)
        key = f"{msg.topic}-{msg.queue_id}"
        queued = m.is_queued(msg.sys_flag)
        queue_offset = self.topic_queue_table.get(key, 0) if queued else 0
        try:
            record = bytes(m.encode_message(msg, queue_offset))
        except (struct.error, ValueError, OSError, m.MessageDecodeError) as e:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, error=f"cannot encode: {e}")
        if len(record) > self.config.max_message_size:
            return PutMessageResult(
                PutMessageStatus.MESSAGE_ILLEGAL,
                AppendMessageResult(AppendMessageStatus.MESSAGE_SIZE_EXCEEDED),
                error=f"message size {len(record)} > maxMessageSize {self.config.max_message_size}",
            )
        # the queue offset is taken before the quorum answer, as Java's increaseOffset: an entry
        # not acknowledged may still commit with it
        appending = self.server.append_batch([record])
        if queued:
            self.topic_queue_table[key] = queue_offset + 1
        msg.queue_offset = queue_offset
        try:
            (entry,) = await appending
        except AppendError as e:
            if queued:
                self._undo_offset(e, key, queue_offset, 1)
            return PutMessageResult(
                put_status(e.code), AppendMessageResult(AppendMessageStatus.UNKNOWN_ERROR), error=str(e)
            )
        wrote_offset = entry.pos + BODY_OFFSET
        amr = AppendMessageResult(
            AppendMessageStatus.PUT_OK,
            wrote_offset,
            len(record),
            m.create_message_id(msg.store_host, wrote_offset),
            msg.store_timestamp,
            queue_offset,
        )
        return PutMessageResult(PutMessageStatus.PUT_OK, amr)

    def put_message_async(self, msg: m.MessageExtBrokerInner) -> Future[PutMessageResult]:
        """put_message as the message store's Future; call it on the member's event loop."""
        return self._future(self.put_message(msg))

    def _future(self, put: Coroutine[object, object, PutMessageResult]) -> Future[PutMessageResult]:
        fut: Future[PutMessageResult] = Future()
        task = asyncio.get_running_loop().create_task(put)
        self._puts.add(task)

        def done(t: asyncio.Task[PutMessageResult]) -> None:
            self._puts.discard(t)
            if t.cancelled():
                fut.set_result(PutMessageResult(PutMessageStatus.UNKNOWN_ERROR, error="put cancelled"))
            elif (e := t.exception()) is not None:
                fut.set_exception(e)
            else:
                fut.set_result(t.result())

        task.add_done_callback(done)
        return fut

    def put_messages_async(self, batch: MessageExtBatch) -> Future[PutMessageResult]:
        """put_messages as the message store's Future; call it on the member's event loop."""
        return self._future(self.put_messages(batch))

    async def put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        """A client batch: one record per element, appended as consecutive entries and answered
        once a majority holds the last. Java DLedgerCommitLog#asyncPutMessages."""
        refused = self._refused()
        if refused is not None:
            return refused
        if m.MessageSysFlag.get_transaction_value(batch.sys_flag) != m.MessageSysFlag.TRANSACTION_NOT_TYPE:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, error="transactional batch")
        if len(batch.body) > self.config.max_message_size:
            return PutMessageResult(
                PutMessageStatus.MESSAGE_ILLEGAL,
                AppendMessageResult(AppendMessageStatus.MESSAGE_SIZE_EXCEEDED),
                error="batch body exceeds maxMessageSize",
            )
        try:
            elements = m.decode_batch_body(batch.body)
        except m.MessageDecodeError as e:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, error=str(e))
        if not elements:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, error="empty batch")
        store_ts = self.clock()
        version = m.choose_version(batch.topic, self.config.auto_message_version_on_topic_len)
        key = f"{batch.topic}-{batch.queue_id}"
        base = self.topic_queue_table.get(key, 0)
        records = []
        try:
            for i, elem in enumerate(elements):
                props = elem.properties
                if batch.properties_string:
                    props += ("" if not props or props.endswith("\x02") else "\x02") + batch.properties_string
                inner = m.MessageExtBrokerInner(
                    topic=batch.topic,
                    body=elem.body,
                    queue_id=batch.queue_id,
                    flag=elem.flag,
                    properties_string=props,
                    sys_flag=batch.sys_flag,
                    born_timestamp=batch.born_timestamp,
                    born_host=batch.born_host,
                    store_host=batch.store_host,
                    reconsume_times=batch.reconsume_times,
                    version=version,
                    store_timestamp=store_ts,
                )
                records.append(bytes(m.encode_message(inner, base + i)))
        except (struct.error, ValueError, OSError, m.MessageDecodeError) as e:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, error=f"cannot encode: {e}")
        appending = self.server.append_batch(records)
        self.topic_queue_table[key] = base + len(records)
        try:
            entries = await appending
        except AppendError as e:
            self._undo_offset(e, key, base, len(records))
            return PutMessageResult(
                put_status(e.code), AppendMessageResult(AppendMessageStatus.UNKNOWN_ERROR), error=str(e)
            )
        offsets = [e.pos + BODY_OFFSET for e in entries]
        amr = AppendMessageResult(
            AppendMessageStatus.PUT_OK,
            offsets[0],
            sum(map(len, records)),
            ",".join(m.create_message_id(batch.store_host, o) for o in offsets),
            store_ts,
            base,
            len(records),
        )
        return PutMessageResult(PutMessageStatus.PUT_OK, amr)

    def _refused(self) -> PutMessageResult | None:
        if self.server.role is not Role.LEADER:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, error="not the DLedger leader")
        if not self.ready:
            return PutMessageResult(
                PutMessageStatus.SERVICE_NOT_AVAILABLE, error="DLedger leader still dispatching its ledger"
            )
        return None

    def _undo_offset(self, e: AppendError, key: str, base: int, count: int) -> None:
        """Give back the queue offsets of an append refused before anything was appended."""
        if e.code in (Code.NOT_LEADER, Code.LEADER_TRANSFERRING) and self.topic_queue_table.get(key) == base + count:
            self.topic_queue_table[key] = base

    # ------------------------------------------------------------------ dispatch

    def _request(self, entry: DLedgerEntry) -> DispatchRequest | None:
        """DLedgerCommitLog#checkMessageAndReturnSize past the entry header; None for a body that
        is no commit-log record (logged, skipped)."""
        try:
            msg = m.decode_message(entry.body, 0, read_body=False)
        except m.MessageDecodeError as e:
            log.error("DLedger entry %d at %d holds no commit-log record (%s); skipped", entry.index, entry.pos, e)
            return None
        if msg.commit_log_offset != entry.pos + BODY_OFFSET:
            log.error(
                "DLedger entry %d: record says PHYSICALOFFSET %d, it lies at %d; skipped",
                entry.index,
                msg.commit_log_offset,
                entry.pos + BODY_OFFSET,
            )
            return None
        return dispatch_request_of(msg, self.tags_code(msg.topic, msg.properties, msg.store_timestamp))

    def dispatch_committed(self) -> int:
        """Dispatch the committed entries not dispatched yet; how many records."""
        end = min(self.server.committed_index, self.ledger.end_index)
        count = 0
        while self.dispatched_index < end:
            index = self.dispatched_index + 1
            req = self._request(self.ledger.get(index))
            if req is not None:
                self._dispatch(req)
                count += 1
                if m.is_queued(req.sys_flag):
                    key = f"{req.topic}-{req.queue_id}"
                    nxt = req.consume_queue_offset + 1
                    if nxt > self.dispatched_queue_table.get(key, 0):
                        self.dispatched_queue_table[key] = nxt
            self.dispatched_index = index
        self._check_ready()
        return count

    def _check_ready(self) -> None:
        """DLedgerRoleChangeHandler: a new leader takes puts once its ledger end is committed and
        dispatched, with the queue offsets that dispatch saw."""
        server = self.server
        if server.role is Role.LEADER and self._ready_term != server.term:
            if self.dispatched_index == self.ledger.end_index:
                self.topic_queue_table = dict(self.dispatched_queue_table)
                self._ready_term = server.term
                log.info("DLedger commit log %s: leader of term %d ready", server.config.self_id, server.term)

    def _on_committed(self, index: int) -> None:
        self.dispatch_committed()

    def _on_role_changed(self, term: int, role: Role, leader_id: str | None) -> None:
        if role is not Role.LEADER:
            self._ready_term = -1
        self.dispatch_committed()

    # ------------------------------------------------------------------ recovery

    def recover(self, dispatched_end: int, queue_table: dict[str, int]) -> None:
        """Resume after a restart: the consume queues hold every record ending at or before
        ``dispatched_end`` (their max physical offset + size) and ``queue_table`` is their next
        offsets. Dispatch goes on with the first entry past it. The caller truncates consume-queue
        data past ``get_max_offset()`` (Java's truncateDirtyLogicFiles)."""
        begin, end = self.ledger.begin_index, self.ledger.end_index
        self.dispatched_index = begin - 1 if begin >= 0 else -1
        if begin >= 0 and dispatched_end > 0:
            indexes = range(begin, end + 1)
            # entries are in position order: the first whose end is past dispatched_end
            first = bisect.bisect_right(indexes, dispatched_end, key=lambda i: self._entry_end(i))
            self.dispatched_index = begin + first - 1
        self.dispatched_queue_table = dict(queue_table)

    def _recover_from_queues(self, max_phy_offset_of_cq: int, truncate_logic: Callable[[int], None]) -> int:
        """Consume-queue data past the recovered ledger is dirty (Java dledgerRecoverNormally);
        dispatch resumes after what the queues hold (their table comes with
        recover_topic_queue_table)."""
        end = self.ledger.write_pos
        if max_phy_offset_of_cq > end:
            log.warning(
                "consume queues reach %d beyond the DLedger ledger end %d; truncating them", max_phy_offset_of_cq, end
            )
            truncate_logic(end)
        self.recover(max(max_phy_offset_of_cq, 0), {})
        return end

    def recover_normally(
        self,
        max_phy_offset_of_cq: int,
        dispatch: Callable[[DispatchRequest], None],
        truncate_logic: Callable[[int], None],
        destroy_logic: Callable[[], None],
        last_queued: tuple[int, int] | None = None,
    ) -> int:
        return self._recover_from_queues(max_phy_offset_of_cq, truncate_logic)

    def recover_abnormally(
        self,
        max_phy_offset_of_cq: int,
        min_timestamp: int,
        dispatch: Callable[[DispatchRequest], None],
        truncate_logic: Callable[[int], None],
        destroy_logic: Callable[[], None],
        indexed_until: int | None = None,
    ) -> int:
        """After a crash the index may have lost its newest file: dispatch again from the newest
        data file whose first record was stored no later than ``min_timestamp`` (the checkpoint's),
        else from the first entry, as dledgerRecoverAbnormally does. Consume-queue and index
        writes of records they hold already are skipped."""
        end = self._recover_from_queues(max_phy_offset_of_cq, truncate_logic)
        begin = self.ledger.begin_index
        if begin < 0:
            return end
        size = self.ledger.data_file_size
        first = begin
        for start in range(self.ledger.write_pos - self.ledger.write_pos % size, -1, -size):
            index = self._first_index_at(start)
            if index is not None and 0 < self._store_timestamp(index) <= min_timestamp:
                first = index
                break
        self.dispatched_index = min(self.dispatched_index, first - 1)
        return end

    def _first_index_at(self, pos: int) -> int | None:
        """The first entry at or after ``pos`` (None past the last)."""
        begin, end = self.ledger.begin_index, self.ledger.end_index
        indexes = range(begin, end + 1)
        i = bisect.bisect_left(indexes, pos, key=lambda k: self.ledger.get(k).pos)
        return indexes[i] if i < len(indexes) else None

    def _store_timestamp(self, index: int) -> int:
        try:
            return m.peek_store_timestamp(self.ledger.get(index).body)
        except (m.MessageDecodeError, struct.error, ValueError):
            return 0

    def dispatched_end(self) -> int:
        """Where the last dispatched record ends (0 before any)."""
        return self._entry_end(self.dispatched_index) if self.dispatched_index >= 0 else 0

    def _entry_end(self, index: int) -> int:
        entry = self.ledger.get(index)
        return entry.pos + entry.size
