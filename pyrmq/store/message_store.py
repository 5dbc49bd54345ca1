"""MessageStore: the facade the broker uses. Java: store.DefaultMessageStore (method names in
snake_case). Synchronous; safe to call from one writer thread (the broker's event loop) while
background threads flush. Recovery follows Java 5.3.x (see docs/store.md).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Protocol

from pyrmq.common.clock import now_ms
from pyrmq.store import message as m
from pyrmq.store.checkpoint import StoreCheckpoint, StoreLock, abort_file_exists, create_abort_file, delete_abort_file
from pyrmq.store.cleanup import StoreCleaner
from pyrmq.store.commitlog import CommitLog, MessageExtBatch
from pyrmq.store.consume_queue import CQ_STORE_UNIT_SIZE, PRE_BLANK_SIZE, ConsumeQueue
from pyrmq.store.dispatch import (
    CommitLogDispatcherBuildConsumeQueue,
    CommitLogDispatcherBuildIndex,
    DispatchedListener,
    ReputMessageService,
)
from pyrmq.store.index import IndexService
from pyrmq.store.lmq import multi_dispatch_targets
from pyrmq.store.mapped_file import SyncFn
from pyrmq.store.replica import ReplicaAcks
from pyrmq.store.results import (
    DispatchRequest,
    GetMessageResult,
    GetMessageStatus,
    PutMessageResult,
    PutMessageStatus,
    QueryMessageResult,
    SelectMappedBufferResult,
    completed_put,
)
from pyrmq.store.running_flags import RunningFlag, RunningFlags
from pyrmq.store.store_config import MessageStoreConfig

log = logging.getLogger(__name__)

__all__ = ["MessageExtBatch", "MessageFilter", "MessageStore", "PutMessageHook", "TagsCodeMessageFilter"]

PutMessage = m.MessageExtBrokerInner | MessageExtBatch
PutMessageHook = Callable[[PutMessage], PutMessageResult | None]
"""Java PutMessageHook#executeBeforePutMessage: a PutMessageResult refuses the put, None lets it
go on. A hook may change the message (the broker's diverts delay and timer messages)."""


class MessageFilter(Protocol):
    """Java store.MessageFilter. Tags-code matching now, SQL92 later."""

    def is_matched_by_consume_queue(self, tags_code: int, cq_ext_unit: object | None = None) -> bool: ...

    def is_matched_by_commit_log(
        self, msg_buffer: memoryview | bytes, properties: dict[str, str] | None = None
    ) -> bool: ...


class TagsCodeMessageFilter:
    """Match by the consume queue's tags code: None (or '*') matches everything. The broker still
    compares tag strings afterwards (hash collisions), like Java's ExpressionMessageFilter."""

    def __init__(self, tags_codes: set[int] | None) -> None:
        self.tags_codes = tags_codes

    def is_matched_by_consume_queue(self, tags_code: int, cq_ext_unit: object | None = None) -> bool:
        return self.tags_codes is None or tags_code in self.tags_codes

    def is_matched_by_commit_log(
        self, msg_buffer: memoryview | bytes, properties: dict[str, str] | None = None
    ) -> bool:
        return True


def _total_physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 8 * 1024**3


class MessageStore:
    def __init__(
        self,
        config: MessageStoreConfig,
        clock: Callable[[], int] | None = None,
        sync: SyncFn | None = None,
        on_dispatched: DispatchedListener | None = None,
    ) -> None:
        self.config = config
        self.clock = clock or now_ms
        self._sync = sync
        os.makedirs(config.store_path_root_dir, exist_ok=True)
        self._lock = StoreLock(config.lock_path)
        self.checkpoint: StoreCheckpoint | None = None
        self.commit_log = CommitLog(
            config,
            self.clock,
            sync,
            on_appended=self._dispatch_appended,
            on_flushed=self._on_commit_log_flushed,
            on_flush_advanced=self._dispatch_flushed,
            on_disk_full=self._on_commit_log_disk_full,
        )
        self.consume_queue_table: dict[str, dict[int, ConsumeQueue]] = {}
        self.index_service = IndexService(
            config.index_dir,
            config.max_hash_slot_num,
            config.max_index_num,
            self.clock,
            on_file_full=self._on_index_file_full,
            max_msgs_num_batch=config.max_msgs_num_batch,
        )
        self.reput_message_service = ReputMessageService(
            self.commit_log,
            [
                CommitLogDispatcherBuildConsumeQueue(self.put_message_position_info),
                CommitLogDispatcherBuildIndex(self.index_service.build_index, lambda: self.config.message_index_enable),
            ],
            None if on_dispatched is None else self._arriving(on_dispatched),
        )
        self.reput_message_service.reput_end_offset = self._reput_end_offset
        self.reput_message_service.on_stall = self._on_dispatch_stalled
        self.reput_message_service.on_resume = self._on_dispatch_resumed
        # a put found no disk space for its record: puts are refused (DISK_FULL) until
        # _retry_after_disk_full sees space again
        self._commit_log_space_refused = False
        # Records appended but not yet readable (SYNC_FLUSH: past the flushed offset), in offset
        # order; the flush thread dispatches them (see _dispatch_flushed). Dispatch (CQ, index,
        # listener, reput offset) runs under _dispatch_lock, taken after put_lock when both are;
        # when records are dispatched as they are appended, the put lock alone serializes it.
        self._pending_dispatch: deque[DispatchRequest] = deque()
        self._dispatch_lock = threading.RLock()
        self._dispatch_after_flush = False
        # set by the first replicated append: after a flush, dispatch by reading the commit log
        self._replica = False
        # controller mode: the confirm offset past which nothing is dispatched (Java
        # CommitLog#getConfirmOffset; set by the AutoSwitch HA service on a slave, and on a master
        # with allAckInSyncStateSet; None otherwise)
        self.confirm_offset_source: Callable[[], int] | None = None
        # Java DefaultMessageStore#putMessageHookList: the broker registers its hooks here
        self.put_message_hook_list: list[PutMessageHook] = []
        self.last_exit_ok = True
        self._loaded = False
        self._shutdown = True
        self._flush_cq_thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._memory = _total_physical_memory()
        # Java DefaultMessageStore#runningFlags and its clean services (CleanCommitLogService, ...)
        self.running_flags = RunningFlags()
        self.cleaner = StoreCleaner(self)

    # --- lifecycle -----------------------------------------------------------------------------
    def load(self) -> bool:
        """Lock the directory, open every file and recover (normal or abnormal, by the abort file).
        Raises StoreLockedError when another broker runs on it, StoreLoadError for a bad store."""
        self._lock.acquire()
        try:
            self.last_exit_ok = not abort_file_exists(self.config.abort_path)
            self.commit_log.load()
            self._load_consume_queues()
            self.checkpoint = StoreCheckpoint(self.config.checkpoint_path)
            self.index_service.load(self.last_exit_ok, self.checkpoint.index_msg_timestamp)
            self._recover(self.last_exit_ok)
        except BaseException:
            self._lock.release()
            raise
        self._loaded = True
        return True

    def start(self) -> None:
        if not self._loaded:
            self.load()
        create_abort_file(self.config.abort_path)
        self.reput_message_service.reput_from_offset = self.commit_log.get_max_offset()
        self._dispatch_after_flush = self.config.sync_flush and not self.config.read_un_committed
        self.commit_log.start()
        self._stop.clear()
        self._flush_cq_thread = threading.Thread(
            target=self._flush_consume_queue_loop, name="FlushConsumeQueueService", daemon=True
        )
        self._flush_cq_thread.start()
        self._shutdown = False
        self.cleaner.start()  # Java: scheduleAtFixedRate(cleanFilesPeriodically, 60 s, cleanResourceInterval)

    def shutdown(self) -> None:
        """Flush everything; delete the abort file only when dispatch caught up (Java)."""
        if self._shutdown and not self._loaded:
            return
        self._shutdown = True
        self._stop.set()
        self.cleaner.shutdown()
        if self._flush_cq_thread is not None:
            self._flush_cq_thread.join(timeout=10)
            self._flush_cq_thread = None
        with self.commit_log.put_lock:
            self.commit_log.shutdown()  # final flush, then dispatches what it made readable
            caught_up = self.reput_message_service.behind() <= 0
            for cq in self._all_queues():
                try:
                    cq.flush(0)
                except OSError:
                    log.exception("consume queue flush failed")
                cq.shutdown()
            self.index_service.shutdown()
            if self.checkpoint is not None:
                self.checkpoint.logics_msg_timestamp = max(self.checkpoint.logics_msg_timestamp, 0)
                self.checkpoint.index_msg_timestamp = self.index_service.get_last_file_end_timestamp()
                self.checkpoint.shutdown()
        if caught_up:
            delete_abort_file(self.config.abort_path)
        self._lock.release()
        self._loaded = False

    def destroy(self) -> None:
        """Delete all data files (tests, admin). The store must be shut down."""
        import shutil

        for d in (self.config.commit_log_dir, self.config.consume_queue_dir, self.config.index_dir):
            shutil.rmtree(d, ignore_errors=True)
        for p in (self.config.checkpoint_path, self.config.abort_path):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(p)

    # --- load / recover -----------------------------------------------------------------------------
    def _load_consume_queues(self) -> None:
        root = self.config.consume_queue_dir
        if not os.path.isdir(root):
            return
        for topic in os.listdir(root):
            tdir = os.path.join(root, topic)
            if not os.path.isdir(tdir):
                continue
            for q in os.listdir(tdir):
                if not q.lstrip("-").isdigit() or not os.path.isdir(os.path.join(tdir, q)):
                    continue
                cq = ConsumeQueue(topic, int(q), root, self.config.consume_queue_file_size, self._sync)
                cq.load()
                self.consume_queue_table.setdefault(topic, {})[int(q)] = cq

    def _recover(self, last_exit_ok: bool) -> None:
        max_phy_cq = -1
        last_cq: ConsumeQueue | None = None
        for cq in self._all_queues():
            cq.recover()
            if cq.max_physic_offset > max_phy_cq:
                max_phy_cq, last_cq = cq.max_physic_offset, cq
        cl = self.commit_log
        if last_exit_ok:
            last = last_cq.get_last_entry() if last_cq is not None else None
            last_queued = (last[0], last[1]) if last is not None and last[0] + last[1] == max_phy_cq else None
            cl.recover_normally(
                max_phy_cq, self.do_dispatch, self.truncate_dirty_logic_files, self._destroy_logics, last_queued
            )
        else:
            assert self.checkpoint is not None
            min_ts = (
                self.checkpoint.get_min_timestamp_index()
                if self.config.message_index_enable and self.config.message_index_safe
                else self.checkpoint.get_min_timestamp()
            )
            cl.recover_abnormally(
                max_phy_cq,
                min_ts,
                self.do_dispatch,
                self.truncate_dirty_logic_files,
                self._destroy_logics,
                self.index_service.get_last_file_end_phy_offset() if self.config.message_index_enable else None,
            )
        if self.checkpoint is not None and cl.confirm_offset >= 0:
            self.checkpoint.confirm_phy_offset = cl.confirm_offset
        self.recover_topic_queue_table()

    def recover_topic_queue_table(self) -> None:
        """Next queue offsets from each queue's max; queue min offsets against the commit log."""
        table = {}
        min_phy = self.commit_log.get_min_offset()
        for cq in self._all_queues():
            table[f"{cq.topic}-{cq.queue_id}"] = cq.get_max_offset_in_queue()
            cq.correct_min_offset(min_phy)
        self.commit_log.topic_queue_table = table

    def _destroy_logics(self) -> None:
        for cq in self._all_queues():
            cq.destroy()
        self.consume_queue_table.clear()
        self.index_service.destroy()

    def truncate_dirty_logic_files(self, phy_offset: int) -> None:
        for cq in self._all_queues():
            if cq.max_physic_offset > phy_offset or cq.get_last_offset() >= phy_offset:
                cq.truncate_dirty_logic_files(phy_offset)
        self.index_service.truncate_beyond(phy_offset)

    # --- dispatch ---------------------------------------------------------------------------------
    def do_dispatch(self, req: DispatchRequest) -> None:
        self.reput_message_service.dispatch(req)

    def _reput_end_offset(self) -> int:
        """Java ReputMessageService#getReputEndOffset: the commit log's max offset with
        readUnCommitted, else its confirm offset (the flushed offset under SYNC_FLUSH)."""
        if self.config.read_un_committed:
            return self.commit_log.get_max_offset()
        end = self.commit_log.get_confirm_offset()
        source = self.confirm_offset_source
        return end if source is None else min(end, source())

    def _dispatch_appended(self, req: DispatchRequest) -> None:
        """The commit log appended a record (under its put lock): dispatch it now, or once flushed
        when only flushed records may be read (SYNC_FLUSH, see _dispatch_flushed)."""
        if self._dispatch_after_flush:
            self._pending_dispatch.append(req)
        elif self.confirm_offset_source is not None:
            # a controller-mode master with allAckInSyncStateSet: readable once the sync state set
            # holds it (reput_now when the confirm offset moves, from the HA thread: hence the lock)
            with self._dispatch_lock:
                if req.commit_log_offset + req.msg_size <= self._reput_end_offset():
                    self.reput_message_service.dispatch_appended(req)
        else:  # the flush thread dispatches nothing in this mode: the put lock is enough
            self.reput_message_service.dispatch_appended(req)

    def _dispatch_flushed(self) -> None:
        """After a flush (flush thread, or shutdown): dispatch the pending records now covered by
        the flushed offset. Runs before the group commit completes the waiting puts, so a put
        acknowledged PUT_OK is already readable and its long-polling consumers woken."""
        pending = self._pending_dispatch
        if not pending:
            if self._replica:
                with self._dispatch_lock:
                    self.reput_message_service.do_reput()
            return
        with self._dispatch_lock:
            end = self._reput_end_offset()
            dispatch = self.reput_message_service.dispatch_appended
            while pending:
                req = pending[0]
                if req.commit_log_offset + req.msg_size > end:
                    break
                pending.popleft()
                dispatch(req)

    def _arriving(self, listener: DispatchedListener) -> DispatchedListener:
        """The listener, told also of each LMQ entry a record added (Java ReputMessageService
        #notifyMessageArrive4MultiQueue), so long polls on an LMQ wake up."""

        def arriving(topic: str, queue_id: int, max_offset: int, tags_code: int, req: DispatchRequest) -> None:
            listener(topic, queue_id, max_offset, tags_code, req)
            for name, lmq_queue_id, offset in multi_dispatch_targets(self.config, topic, queue_id, req.properties):
                listener(name, lmq_queue_id, offset + 1, tags_code, req)

        return arriving

    def put_message_position_info(self, req: DispatchRequest) -> None:
        cq = self.find_consume_queue(req.topic, req.queue_id)
        cq.put_message_position_info(req.commit_log_offset, req.msg_size, req.tags_code, req.consume_queue_offset)
        for name, queue_id, offset in multi_dispatch_targets(self.config, req.topic, req.queue_id, req.properties):
            lmq = self.find_consume_queue(name, queue_id)  # Java ConsumeQueue#multiDispatchLmqQueue
            lmq.put_message_position_info(req.commit_log_offset, req.msg_size, req.tags_code, offset)
        if self.checkpoint is not None:
            self.checkpoint.logics_msg_timestamp = req.store_timestamp

    def _on_commit_log_flushed(self, store_timestamp: int) -> None:
        if self.checkpoint is not None and store_timestamp > 0:
            self.checkpoint.physic_msg_timestamp = store_timestamp

    def _on_index_file_full(self, end_timestamp: int) -> None:
        if self.checkpoint is not None:
            self.checkpoint.index_msg_timestamp = end_timestamp
            self.checkpoint.flush()

    # --- full disk ------------------------------------------------------------------------------------
    def _on_commit_log_disk_full(self, e: OSError) -> None:
        """A put found no disk space for its record (under the put lock)."""
        self._commit_log_space_refused = True
        if self.running_flags.get_and_make_disk_full():
            log.error("commit log: no disk space for a record (%s); puts refused until space is back", e.strerror)

    def _on_dispatch_stalled(self, dispatcher: object, e: OSError) -> None:
        flag = (
            RunningFlag.WRITE_INDEX_FILE_ERROR
            if isinstance(dispatcher, CommitLogDispatcherBuildIndex)
            else RunningFlag.WRITE_LOGICS_QUEUE_ERROR
        )
        self.running_flags.get_and_make(flag, True)

    def _on_dispatch_resumed(self) -> None:
        self.running_flags.get_and_make(RunningFlag.WRITE_INDEX_FILE_ERROR, False)
        self.running_flags.get_and_make(RunningFlag.WRITE_LOGICS_QUEUE_ERROR, False)

    def _retry_after_disk_full(self) -> None:
        """Every flush round (1 s): a stalled dispatch tries again; puts refused for want of space
        are accepted again once the commit log can reserve its next stretch and the partition is
        below diskSpaceWarningLevelRatio (the cleaner's own bound, so the two do not flap)."""
        if self.reput_message_service.stalled is not None:
            with self.commit_log.put_lock, self._dispatch_lock:
                self.reput_message_service.retry()
        if self._commit_log_space_refused and self.commit_log.has_space_ahead():
            if self.cleaner.commit_log_ratio() > self.cleaner.disk_space_warning_level_ratio():
                return
            self._commit_log_space_refused = False
            if self.running_flags.get_and_make_disk_ok():
                log.info("commit log: disk space is back; accepting puts again")

    def _flush_consume_queue_loop(self) -> None:
        """Java FlushConsumeQueueService + the 5.x 1 s checkpoint flush; and the retries after a
        full disk (_retry_after_disk_full).

        Unlike Java's, the checkpoint never holds a logicsMsgTimestamp newer than the consume
        queues on disk: between thorough passes it keeps the one of the last thorough pass (so
        recovery after a crash re-dispatches from there), and a pass flushes each queue only by
        flushConsumeQueueLeastPages, as Java's does, instead of every dirty queue each second."""
        interval = self.config.flush_interval_consume_queue / 1000
        thorough = self.config.flush_consume_queue_thorough_interval / 1000
        last_thorough = time.monotonic()
        cp0 = self.checkpoint
        durable_logics_ts = cp0.logics_msg_timestamp if cp0 else 0
        while not self._stop.wait(interval):
            try:
                self._retry_after_disk_full()
            except Exception:
                log.exception("retry after a full disk failed")
            least = self.config.flush_consume_queue_least_pages
            if time.monotonic() - last_thorough >= thorough:
                least, last_thorough = 0, time.monotonic()
            cp = self.checkpoint
            logics_ts = cp.logics_msg_timestamp if cp else 0
            try:
                for cq in self._all_queues():
                    cq.flush(least)
                if cp is not None:
                    # only a fully flushed state moves the logicsMsgTimestamp on disk forward
                    if least == 0:
                        durable_logics_ts = logics_ts
                    saved = cp.logics_msg_timestamp
                    cp.logics_msg_timestamp = durable_logics_ts
                    cp.flush()
                    cp.logics_msg_timestamp = max(saved, cp.logics_msg_timestamp)
            except (OSError, ValueError):
                if self._stop.is_set():
                    return
                log.exception("consume queue flush failed")

    # --- put ------------------------------------------------------------------------------------------
    def _check_before_put(self, msg: PutMessage) -> PutMessageResult | None:
        """A refusal, or None to go on: the store's own state (Java HookUtils#checkBeforePutMessage,
        store part: shut down, or a RunningFlags bit set), then the put hooks in order."""
        if self._shutdown:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, error="store not running")
        if not self.running_flags.is_writeable():
            why = self.cleaner.disk_full_reason or f"running flags {self.running_flags.flag_bits:#x}"
            return PutMessageResult(
                PutMessageStatus.SERVICE_NOT_AVAILABLE, error=f"message store is not writeable: {why}"
            )
        for hook in self.put_message_hook_list:
            refused = hook(msg)
            if refused is not None:
                return refused
        return None

    def disk_util(self) -> str:
        """What a SERVICE_NOT_AVAILABLE send answer shows: ``CL: 0.95 CQ: 0.95 INDEX: 0.95``."""
        return self.cleaner.disk_util()

    @property
    def ha_service(self) -> ReplicaAcks | None:
        """What a SYNC_MASTER's waiting puts ask for replica acks; the broker sets its HAService
        (Java DefaultMessageStore#getHaService)."""
        return self.commit_log.ha_service

    @ha_service.setter
    def ha_service(self, acks: ReplicaAcks | None) -> None:
        self.commit_log.ha_service = acks

    def put_message_async(self, msg: m.MessageExtBrokerInner) -> Future[PutMessageResult]:
        """Checks and hooks, then the commit log (which dispatches the record and waits for the
        flush). The Future yields the PutMessageResult once durable (SYNC_FLUSH) or at once.
        asyncio callers: `await asyncio.wrap_future(fut)`. Java DefaultMessageStore#asyncPutMessage."""
        refused = self._check_before_put(msg)
        if refused is not None:
            return completed_put(refused)
        return self.commit_log.put_message_async(msg)

    def append_to_commit_log(self, start_offset: int, data: bytes | bytearray | memoryview) -> bool:
        """A slave's write: commit-log bytes replicated from its master, appended byte for byte
        (CommitLog.append_data says what is refused), then dispatched like any record: the reput
        service decodes them into consume queues and index, up to the confirm offset (after the
        next flush under SYNC_FLUSH). ``data`` may end inside a record; the rest follows. Java
        DefaultMessageStore#appendToCommitLog."""
        if self._shutdown:
            log.warning("message store has shut down: appendToCommitLog refused")
            return False
        was_empty = self.commit_log.mapped_file_queue.get_last_mapped_file() is None
        if not self.commit_log.append_data(start_offset, data):
            return False
        with self._dispatch_lock:
            if was_empty and data:
                self.reput_message_service.reput_from_offset = start_offset
            self._replica = True
            self.reput_message_service.do_reput()
        return True

    # --- truncation (controller mode) ---------------------------------------------------------------
    def is_offset_aligned(self, offset: int) -> bool:
        """A record (or a file-end blank) starts at ``offset``, or nothing is written there.
        Java DefaultMessageStore#isOffsetAligned."""
        data = self.commit_log.get_data(offset)
        if data is None:
            return True
        _, buf = data
        try:
            if len(buf) == 0:
                return True
            return self.commit_log.check_message_and_return_size(buf, 0, True, False).success
        finally:
            buf.release()

    def truncate_files(self, offset: int) -> bool:
        """Cut the commit log, consume queues and index back to ``offset`` (a record boundary).
        True when done or nothing was beyond it; False, nothing changed, when ``offset`` is not
        a record start. Java DefaultMessageStore#truncateFiles."""
        if offset >= self.get_max_phy_offset():
            log.info(
                "no need to truncate files, truncate offset is %d, max physical offset is %d",
                offset,
                self.get_max_phy_offset(),
            )
            return True
        if not self.is_offset_aligned(offset):
            log.error("offset %d is not align, truncate failed, need manual fix", offset)
            return False
        self.truncate_dirty_files(offset)
        return True

    def truncate_dirty_files(self, offset: int) -> None:
        """Drop everything from ``offset`` on: consume-queue entries and index files pointing
        there, commit-log bytes (files beyond deleted, the tail zeroed), then the queue offsets
        are recomputed and dispatch restarts at ``offset``. Java DefaultMessageStore#truncateDirtyFiles."""
        if offset >= self.get_max_phy_offset():
            return
        log.info("truncate dirty files to %d", offset)
        cl = self.commit_log
        with cl.put_lock, self._dispatch_lock:
            self.truncate_dirty_logic_files(offset)
            q = cl.mapped_file_queue
            q.truncate_dirty_files(offset)
            q.flushed_where = min(q.flushed_where, offset)
            q.committed_where = min(q.committed_where, offset)
            while self._pending_dispatch and self._pending_dispatch[-1].commit_log_offset >= offset:
                self._pending_dispatch.pop()
            self.recover_topic_queue_table()
            rs = self.reput_message_service
            rs.reput_from_offset = min(rs.reput_from_offset, offset)

    def reput_now(self) -> None:
        """Dispatch what became readable (the confirm offset moved)."""
        with self._dispatch_lock:
            self.reput_message_service.do_reput()

    def truncate_invalid_msg(self) -> int:
        """Cut a torn tail (a record only partly replicated) so the log ends on a record boundary;
        the offset cut to, or -1 when dispatch has caught up (nothing torn). Java
        AutoSwitchHAService#truncateInvalidMsg."""
        self.reput_now()
        offset = self.reput_message_service.reput_from_offset
        if offset >= self.get_max_phy_offset() or self.get_max_phy_offset() <= 0:
            return -1
        cl = self.commit_log
        while offset < self.get_max_phy_offset():
            data = cl.get_data(offset)
            if data is None:
                break
            _, buf = data
            try:
                req = cl.check_message_and_return_size(buf, 0, False, False)
            finally:
                buf.release()
            if not req.success:
                break
            offset = cl.roll_next_file(offset) if req.msg_size == 0 else offset + req.msg_size
        log.info("Truncate commitLog to %d", offset)
        self.truncate_dirty_files(offset)
        return offset

    def get_commit_log_data(self, offset: int, max_size: int) -> memoryview | None:
        """What a master sends a slave: written commit-log bytes from ``offset``, at most
        ``max_size``, never past the end of one file; None when there are none (yet). The caller
        releases the view. Java DefaultMessageStore#getCommitLogData."""
        if self._shutdown:
            return None
        return self.commit_log.get_replication_data(offset, max_size)

    def put_message(self, msg: m.MessageExtBrokerInner) -> PutMessageResult:
        return self.put_message_async(msg).result()

    def put_messages_async(self, batch: MessageExtBatch) -> Future[PutMessageResult]:
        """Java DefaultMessageStore#asyncPutMessages."""
        refused = self._check_before_put(batch)
        if refused is not None:
            return completed_put(refused)
        return self.commit_log.put_messages_async(batch)

    def put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        return self.put_messages_async(batch).result()

    # --- queues ----------------------------------------------------------------------------------------
    def _all_queues(self) -> Iterator[ConsumeQueue]:
        for qs in list(self.consume_queue_table.values()):
            yield from list(qs.values())

    def find_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        qs = self.consume_queue_table.get(topic)
        if qs is None:
            qs = self.consume_queue_table.setdefault(topic, {})
        cq = qs.get(queue_id)
        if cq is None:
            cq = ConsumeQueue(
                topic, queue_id, self.config.consume_queue_dir, self.config.consume_queue_file_size, self._sync
            )
            qs[queue_id] = cq
        return cq

    def get_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self.consume_queue_table.get(topic, {}).get(queue_id)

    def get_topics(self) -> list[str]:
        return sorted(self.consume_queue_table)

    def get_queue_ids(self, topic: str) -> list[int]:
        return sorted(self.consume_queue_table.get(topic, {}))

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.get_consume_queue(topic, queue_id)
        return cq.get_max_offset_in_queue() if cq else 0

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.get_consume_queue(topic, queue_id)
        return cq.get_min_offset_in_queue() if cq else 0

    def get_message_total_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.get_consume_queue(topic, queue_id)
        return cq.get_message_total_in_queue() if cq else 0

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        cq = self.get_consume_queue(topic, queue_id)
        e = cq.get(consume_queue_offset) if cq else None
        return e[0] if e else 0

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        cq = self.get_consume_queue(topic, queue_id)
        if cq is None:
            return 0
        return cq.get_offset_in_queue_by_time(
            timestamp, self.commit_log.pickup_store_timestamp, self.commit_log.get_min_offset()
        )

    def get_message_store_timestamp(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        cq = self.get_consume_queue(topic, queue_id)
        e = cq.get(consume_queue_offset) if cq else None
        return self.commit_log.pickup_store_timestamp(e[0], e[1]) if e else -1

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        cq = self.get_consume_queue(topic, queue_id)
        if cq is None:
            return -1
        return self.get_message_store_timestamp(topic, queue_id, cq.get_min_offset_in_queue())

    def get_earliest_message_time_all(self) -> int:
        """Store time of the first record in the commit log, -1 if none."""
        mn = self.commit_log.get_earliest_record_offset()
        return self.commit_log.pickup_store_timestamp(mn, m.MIN_RECORD_SIZE) if mn >= 0 else -1

    def flush(self) -> int:
        """Flush the commit log to its end; the flushed offset. Java DefaultMessageStore#flush."""
        flushed = self.commit_log.flush()
        self._dispatch_flushed()  # what the flush made readable (SYNC_FLUSH)
        return flushed

    def get_max_phy_offset(self) -> int:
        return self.commit_log.get_max_offset()

    def get_store_path_physic(self) -> str:
        """The directory of the commit log's files (Java DefaultMessageStore#getStorePathPhysic)."""
        return self.config.commit_log_dir

    def get_min_phy_offset(self) -> int:
        return self.commit_log.get_min_offset()

    def get_flushed_where(self) -> int:
        """The commit log's flushed offset (Java DefaultMessageStore#getFlushedWhere)."""
        return self.commit_log.get_flushed_where()

    def check_in_mem_by_consume_offset(self, topic: str, queue_id: int, offset: int) -> bool:
        """Java DefaultMessageStore#checkInMemByConsumeOffset, simplified: the entry and its record exist."""
        cq = self.get_consume_queue(topic, queue_id)
        if cq is None:
            return False
        e = cq.get(offset)
        return e is not None and e[0] >= self.get_min_phy_offset()

    def dispatch_behind_bytes(self) -> int:
        return self.reput_message_service.behind()

    def delete_topics(self, topics: set[str]) -> int:
        """Drop consume queues of these topics (the commit log keeps the records). Java deleteTopics."""
        n = 0
        with self.commit_log.put_lock, self._dispatch_lock:
            for t in topics:
                qs = self.consume_queue_table.pop(t, None)
                if not qs:
                    continue
                for cq in qs.values():
                    cq.destroy()
                    self.commit_log.topic_queue_table.pop(f"{t}-{cq.queue_id}", None)
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(self.config.consume_queue_dir, t))
                n += 1
        return n

    # --- get ---------------------------------------------------------------------------------------------
    def _is_the_batch_full(
        self, size_py: int, max_msg_nums: int, buffer_total: int, message_total: int, in_disk: bool
    ) -> bool:
        """Java DefaultMessageStore#isTheBatchFull."""
        c = self.config
        if buffer_total == 0 or message_total == 0:
            return False
        if max_msg_nums <= message_total:
            return True
        if in_disk:
            return (
                buffer_total + size_py > c.max_transfer_bytes_on_message_in_disk
                or message_total > c.max_transfer_count_on_message_in_disk - 1
            )
        return (
            buffer_total + size_py > c.max_transfer_bytes_on_message_in_memory
            or message_total > c.max_transfer_count_on_message_in_memory - 1
        )

    def get_message(
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_msg_nums: int,
        message_filter: MessageFilter | None = None,
    ) -> GetMessageResult:
        """Records of a queue from `offset`, up to the batch limits. Java DefaultMessageStore#getMessage."""
        result = GetMessageResult()
        if not self._loaded:
            result.status = GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
            return result
        max_offset_py = self.commit_log.get_max_offset()
        cq = self.get_consume_queue(topic, queue_id)
        if cq is None:
            result.status = GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
            result.next_begin_offset = 0
            return result
        min_offset = cq.get_min_offset_in_queue()
        max_offset = cq.get_max_offset_in_queue()
        result.min_offset, result.max_offset = min_offset, max_offset
        if max_offset == 0:
            result.status = GetMessageStatus.NO_MESSAGE_IN_QUEUE
            result.next_begin_offset = 0
        elif offset < min_offset:
            result.status = GetMessageStatus.OFFSET_TOO_SMALL
            result.next_begin_offset = min_offset
        elif offset == max_offset:
            result.status = GetMessageStatus.OFFSET_OVERFLOW_ONE
            result.next_begin_offset = offset
        elif offset > max_offset:
            result.status = GetMessageStatus.OFFSET_OVERFLOW_BADLY
            result.next_begin_offset = min_offset if min_offset == 0 else max_offset
        else:
            status = GetMessageStatus.NO_MATCHED_MESSAGE
            max_filter_count = max(16000, max_msg_nums * CQ_STORE_UNIT_SIZE) // CQ_STORE_UNIT_SIZE
            memory = self._memory * self.config.access_message_in_memory_max_ratio // 100
            next_phy_file_start = -(2**63)
            max_phy_pulling = 0
            scanned = 0
            for queue_offset, offset_py, size_py, tags_code in cq.iterate_from(offset, max_filter_count):
                max_phy_pulling = offset_py
                if next_phy_file_start != -(2**63) and offset_py < next_phy_file_start:
                    scanned += 1
                    continue
                in_disk = max_offset_py - offset_py > memory
                if self._is_the_batch_full(
                    size_py, max_msg_nums, result.buffer_total_size, result.message_count, in_disk
                ):
                    break
                scanned += 1
                if size_py == PRE_BLANK_SIZE:
                    continue  # pre-blank filler
                if message_filter is not None and not message_filter.is_matched_by_consume_queue(tags_code, None):
                    if result.buffer_total_size == 0:
                        status = GetMessageStatus.NO_MATCHED_MESSAGE
                    continue
                buf = self.commit_log.get_message(offset_py, size_py)
                if buf is None:
                    if result.buffer_total_size == 0:
                        status = GetMessageStatus.MESSAGE_WAS_REMOVING
                    next_phy_file_start = self.commit_log.roll_next_file(offset_py)
                    continue
                if message_filter is not None and not message_filter.is_matched_by_commit_log(buf, None):
                    buf.release()
                    if result.buffer_total_size == 0:
                        status = GetMessageStatus.NO_MATCHED_MESSAGE
                    continue
                result.add_message(buf, queue_offset, tags_code)
                status = GetMessageStatus.FOUND
                next_phy_file_start = -(2**63)
            result.status = status
            result.next_begin_offset = offset + scanned
            result.suggest_pulling_from_slave = max_offset_py - max_phy_pulling > memory
        return result

    # --- lookups by commit-log offset / key -------------------------------------------------------------
    def _record_size_at(self, phy_offset: int) -> int:
        head = self.commit_log.get_message(phy_offset, 8)
        if head is None:
            return 0
        try:
            total, magic = m.peek_total_size_and_magic(head)
        finally:
            head.release()
        if magic not in (m.MESSAGE_MAGIC_CODE, m.MESSAGE_MAGIC_CODE_V2) or total <= 0:
            return 0
        return total

    def select_one_message_by_offset(
        self, commit_log_offset: int, size: int | None = None
    ) -> SelectMappedBufferResult | None:
        size = size or self._record_size_at(commit_log_offset)
        if size <= 0:
            return None
        buf = self.commit_log.get_message(commit_log_offset, size)
        return SelectMappedBufferResult(commit_log_offset, buf, size) if buf is not None else None

    def look_message_by_offset(self, commit_log_offset: int, size: int | None = None) -> m.StoredMessage | None:
        """Decode the record at a commit-log offset (None if none there). Java lookMessageByOffset."""
        sel = self.select_one_message_by_offset(commit_log_offset, size)
        if sel is None:
            return None
        try:
            return m.decode_message(sel.buffer)
        except m.MessageDecodeError:
            return None
        finally:
            sel.release()

    def query_message(self, topic: str, key: str, max_num: int, begin: int, end: int) -> QueryMessageResult:
        """Records whose UNIQ_KEY or one of whose KEYS equals `key`, newest first, stored in
        [begin, end] ms. Hash collisions are removed here. Java DefaultMessageStore#queryMessage."""
        result = QueryMessageResult()
        offsets, last_ts, last_phy = self.index_service.query_offset(topic, key, max_num, begin, end)
        result.index_last_update_timestamp, result.index_last_update_phyoffset = last_ts, last_phy
        for phy in offsets:
            sel = self.select_one_message_by_offset(phy)
            if sel is None:
                continue
            try:
                msg = m.decode_message(sel.buffer, read_body=False)
            except m.MessageDecodeError:
                sel.release()
                continue
            keys = (msg.keys or "").split(" ")
            if msg.topic != topic or (key != msg.uniq_key and key not in keys):
                sel.release()
                continue
            result.add_message(sel.buffer, phy)
        return result
