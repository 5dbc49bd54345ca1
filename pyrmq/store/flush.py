"""Flushing the commit log: the service the flush type picks, and the wait a put makes for it.

Java: CommitLog.DefaultFlushManager (handleDiskFlush, wakeUpFlush), CommitLog.GroupCommitService
(SYNC_FLUSH), CommitLog.FlushRealTimeService (ASYNC_FLUSH), FlushDiskWatcher.

Threads: one flush thread (group commit or periodic), plus for SYNC_FLUSH a watcher thread that
fails waits older than `syncFlushTimeout`. A put waiting under SYNC_FLUSH is acknowledged PUT_OK
only after msync covered its last byte; a failed msync fails the waiting puts (UNKNOWN_ERROR).
After any flush that moved the flushed offset the flush manager calls `on_flush_advanced` (the
store dispatches what became readable) before it completes the waiting puts.
"""

from __future__ import annotations

import contextlib
import heapq
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass

from pyrmq.store.mapped_file import MappedFileQueue
from pyrmq.store.results import PutMessageResult, PutMessageStatus, completed_put
from pyrmq.store.store_config import MessageStoreConfig

log = logging.getLogger(__name__)


def _complete(fut: Future[PutMessageResult], value: PutMessageResult) -> None:
    with contextlib.suppress(InvalidStateError):
        fut.set_result(value)


class FlushManager:
    """Owns the flush service of the configured flush type and the flush callbacks.
    Java CommitLog.DefaultFlushManager.

    `on_flushed(store_timestamp)`: the data up to a full flush was stored at that time (the
    checkpoint's physicMsgTimestamp). `on_flush_advanced()`: a flush moved the flushed offset."""

    def __init__(
        self,
        config: MessageStoreConfig,
        mapped_file_queue: MappedFileQueue,
        *,
        on_flushed: Callable[[int], None] | None = None,
        on_flush_advanced: Callable[[], None] | None = None,
    ) -> None:
        self.config = config
        self.mapped_file_queue = mapped_file_queue
        self._on_flushed = on_flushed
        self._on_flush_advanced = on_flush_advanced
        self.sync_flush = config.sync_flush
        self._service: GroupCommitService | FlushRealTimeService | None = None

    def start(self) -> None:
        self.sync_flush = self.config.sync_flush
        self._service = GroupCommitService(self) if self.sync_flush else FlushRealTimeService(self)
        self._service.start()

    def shutdown(self) -> None:
        """Stop the service, then flush everything (Java retries up to 10 times)."""
        if self._service is not None:
            self._service.stop()
            self._service = None
        for _ in range(10):
            try:
                if self.mapped_file_queue.flush(0):
                    break
            except OSError:
                log.exception("flush at shutdown failed")
                break
        self.flush_advanced()

    def handle_disk_flush(self, result: PutMessageResult, wait: bool) -> Future[PutMessageResult]:
        """SYNC_FLUSH wait for an appended record (`wait`: the message's WAIT property): a Future
        completed once the flush covered the record or the wait failed. Java
        CommitLog.DefaultFlushManager#handleDiskFlush."""
        svc = self._service
        amr = result.append_message_result
        assert amr is not None
        end = amr.wrote_offset + amr.wrote_bytes
        if not isinstance(svc, GroupCommitService):
            # not started (tests, tools): flush inline
            try:
                self.flush_until(end)
            except OSError as e:
                return completed_put(PutMessageResult(PutMessageStatus.UNKNOWN_ERROR, amr, error=f"flush failed: {e}"))
            finally:
                self.flush_advanced()
            return completed_put(result)
        if not wait:
            svc.wakeup()
            return completed_put(result)
        return svc.put_request(end, result, self.config.sync_flush_timeout)

    def flush_until(self, offset: int) -> None:
        """Flush (least pages 0) until flushed_where >= offset. Raises OSError from msync."""
        q = self.mapped_file_queue
        for _ in range(1000):
            if q.flushed_where >= offset:
                break
            q.flush(0)
        self.flushed()

    def flushed(self) -> None:
        """Report the store time of the data a full flush covered (to the checkpoint)."""
        ts = self.mapped_file_queue.store_timestamp
        if self._on_flushed is not None and ts:
            self._on_flushed(ts)

    def flush_advanced(self) -> None:
        hook = self._on_flush_advanced
        if hook is not None:
            try:
                hook()
            except Exception:
                log.exception("dispatch after flush failed")


class _FlushService(threading.Thread):
    def __init__(self, manager: FlushManager, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.manager = manager
        self._stop_event = threading.Event()
        self._wake = threading.Condition()
        self._woken = False

    def wakeup(self) -> None:
        if self._woken:
            # already woken and not yet running: it will see whatever was queued before this call
            # (the flag is cleared before the queue is taken; all under the GIL)
            return
        with self._wake:
            self._woken = True
            self._wake.notify()

    def wait_for_running(self, timeout_s: float) -> None:
        with self._wake:
            if not self._woken:
                self._wake.wait(timeout_s)
            self._woken = False

    def stop(self) -> None:
        self._stop_event.set()
        self.wakeup()
        self.join(timeout=10)


class FlushRealTimeService(_FlushService):
    """ASYNC_FLUSH: every flushIntervalCommitLog ms flush >= flushCommitLogLeastPages dirty pages;
    everything every flushCommitLogThoroughInterval ms. Java CommitLog.FlushRealTimeService."""

    def __init__(self, manager: FlushManager) -> None:
        super().__init__(manager, "FlushRealTimeService")
        self._last_thorough = time.monotonic()

    def run(self) -> None:
        cfg = self.manager.config
        q = self.manager.mapped_file_queue
        while not self._stop_event.is_set():
            if cfg.flush_commit_log_timed:
                self._stop_event.wait(cfg.flush_interval_commit_log / 1000)
            else:
                self.wait_for_running(cfg.flush_interval_commit_log / 1000)
            least = cfg.flush_commit_log_least_pages
            now = time.monotonic()
            if now - self._last_thorough >= cfg.flush_commit_log_thorough_interval / 1000:
                self._last_thorough = now
                least = 0
            try:
                q.flush(least)
                if least == 0:
                    self.manager.flushed()
            except OSError:
                log.exception("async flush failed; will retry")
            except ValueError:
                if self._stop_event.is_set():
                    break
                raise


@dataclass(slots=True)
class _GroupCommitRequest:
    next_offset: int
    result: PutMessageResult
    future: Future[PutMessageResult]
    deadline: float


class GroupCommitService(_FlushService):
    """SYNC_FLUSH: batches waiting puts, one msync serves them all; FlushDiskWatcher's job
    (time out waits) is done by a second small thread. Java GroupCommitService + FlushDiskWatcher."""

    def __init__(self, manager: FlushManager) -> None:
        super().__init__(manager, "GroupCommitService")
        self._lock = threading.Lock()
        self._requests_write: list[_GroupCommitRequest] = []
        self._watch: list[tuple[float, int, _GroupCommitRequest]] = []
        self._seq = 0
        self._watch_cv = threading.Condition()
        self._watcher = threading.Thread(target=self._run_watcher, name="FlushDiskWatcher", daemon=True)

    def start(self) -> None:
        super().start()
        self._watcher.start()

    def put_request(self, next_offset: int, result: PutMessageResult, timeout_ms: int) -> Future[PutMessageResult]:
        fut: Future[PutMessageResult] = Future()
        req = _GroupCommitRequest(next_offset, result, fut, time.monotonic() + timeout_ms / 1000)
        with self._lock:
            self._requests_write.append(req)
        with self._watch_cv:
            self._seq += 1
            watch = self._watch
            # the watcher sleeps until the earliest deadline: wake it only when that one changes
            # (with one timeout for all, only when the heap was empty), not once per put
            earliest = not watch or req.deadline < watch[0][0]
            heapq.heappush(watch, (req.deadline, self._seq, req))
            if earliest:
                self._watch_cv.notify()
        self.wakeup()
        return fut

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.wait_for_running(0.010)
            self._do_commit()
        self._do_commit()
        with self._lock:
            leftover, self._requests_write = self._requests_write, []
        for r in leftover:
            _complete(
                r.future,
                PutMessageResult(
                    PutMessageStatus.FLUSH_DISK_TIMEOUT, r.result.append_message_result, error="store shut down"
                ),
            )

    def _do_commit(self) -> None:
        with self._lock:
            reqs, self._requests_write = self._requests_write, []
        manager = self.manager
        q = manager.mapped_file_queue
        if not reqs:
            before = q.flushed_where
            with contextlib.suppress(OSError, ValueError):
                q.flush(0)
            if q.flushed_where != before:
                manager.flush_advanced()
            return
        target = max(r.next_offset for r in reqs)
        try:
            try:
                manager.flush_until(target)
            finally:
                manager.flush_advanced()  # readable before acknowledged: an acked put is visible
            flushed = q.flushed_where
            for r in reqs:
                if flushed >= r.next_offset:
                    _complete(r.future, r.result)
                else:
                    _complete(
                        r.future,
                        PutMessageResult(
                            PutMessageStatus.FLUSH_DISK_TIMEOUT,
                            r.result.append_message_result,
                            error="flush did not reach the record",
                        ),
                    )
        except OSError as e:
            log.error("sync flush failed: %s", e)
            for r in reqs:
                _complete(
                    r.future,
                    PutMessageResult(
                        PutMessageStatus.UNKNOWN_ERROR, r.result.append_message_result, error=f"flush failed: {e}"
                    ),
                )

    def _run_watcher(self) -> None:
        while not self._stop_event.is_set():
            with self._watch_cv:
                while self._watch and self._watch[0][2].future.done():
                    heapq.heappop(self._watch)
                if not self._watch:
                    self._watch_cv.wait(0.1)
                    continue
                deadline, _, req = self._watch[0]
                delay = deadline - time.monotonic()
                if delay > 0:
                    self._watch_cv.wait(min(delay, 0.1))
                    continue
                heapq.heappop(self._watch)
            _complete(
                req.future,
                PutMessageResult(
                    PutMessageStatus.FLUSH_DISK_TIMEOUT,
                    req.result.append_message_result,
                    error="syncFlushTimeout exceeded",
                ),
            )

    def stop(self) -> None:
        super().stop()
        with self._watch_cv:
            self._watch_cv.notify()
        self._watcher.join(timeout=2)
