"""The reput service: commit-log records -> consume queues and index.

Java: DefaultMessageStore.ReputMessageService, CommitLogDispatcherBuildConsumeQueue,
CommitLogDispatcherBuildIndex (spec store-format §5.7). Runs synchronously: the put path hands
over the DispatchRequest the append built (`dispatch_appended`, no decode); `do_reput()` decodes
from the commit log what was not handed over (file-end blanks, gaps); recovery calls the
dispatchers directly. Records are read without CRC checks; a BLANK jumps to the next file; a
record whose lengths disagree is skipped by TOTALSIZE; unreadable data stops the round.

A dispatcher that fails with an OSError (no disk space for a consume-queue or index page) stalls
dispatch at that record: nothing after it is dispatched, the records wait in the commit log, and
``retry()`` (the store calls it every second) reads them back from there once writing works
again. Dispatchers are idempotent, so the record that failed half-way is simply dispatched again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from pyrmq.store.message import is_queued, peek_total_size_and_magic
from pyrmq.store.results import DispatchRequest

if TYPE_CHECKING:
    from pyrmq.store.commitlog import CommitLog

log = logging.getLogger(__name__)


def _is_partial_record(buf: memoryview, pos: int) -> bool:
    """The written data ends inside the record at ``pos``: a replicated frame may stop anywhere."""
    remaining = len(buf) - pos
    return remaining < 8 or peek_total_size_and_magic(buf, pos)[0] > remaining


class CommitLogDispatcher(Protocol):
    def dispatch(self, request: DispatchRequest) -> None: ...


class CommitLogDispatcherBuildConsumeQueue:
    def __init__(self, put_position: Callable[[DispatchRequest], None]) -> None:
        self._put = put_position

    def dispatch(self, request: DispatchRequest) -> None:
        if is_queued(request.sys_flag):
            self._put(request)


class CommitLogDispatcherBuildIndex:
    def __init__(self, build_index: Callable[[DispatchRequest], None], enabled: Callable[[], bool]) -> None:
        self._build = build_index
        self._enabled = enabled

    def dispatch(self, request: DispatchRequest) -> None:
        if self._enabled():
            self._build(request)


DispatchedListener = Callable[[str, int, int, int, DispatchRequest], None]
"""on_dispatched(topic, queue_id, max_offset_in_queue (next offset), tags_code, request):
the broker's long-polling wake-up (Java MessageArrivingListener#arriving)."""


class ReputMessageService:
    def __init__(
        self,
        commit_log: CommitLog,
        dispatchers: list[CommitLogDispatcher],
        on_dispatched: DispatchedListener | None = None,
    ) -> None:
        self.commit_log = commit_log
        self.dispatchers = dispatchers
        self.on_dispatched = on_dispatched
        self.reput_from_offset = 0
        # how far records may be dispatched (the store sets Java's getReputEndOffset here)
        self.reput_end_offset: Callable[[], int] = commit_log.get_max_offset
        # the failure that stopped dispatch (None: running) and the dispatcher that failed
        self.stalled: OSError | None = None
        self.stalled_by: CommitLogDispatcher | None = None
        self.on_stall: Callable[[CommitLogDispatcher, OSError], None] | None = None
        self.on_resume: Callable[[], None] | None = None

    def dispatch(self, request: DispatchRequest) -> None:
        for d in self.dispatchers:
            d.dispatch(request)

    def _try_dispatch(self, request: DispatchRequest) -> bool:
        """Dispatch, or stall on an OSError (False)."""
        for d in self.dispatchers:
            try:
                d.dispatch(request)
            except OSError as e:
                if self.stalled is None and self.stalled_by is None:
                    log.error(
                        "dispatch to %s stopped at commit-log offset %d: %s; retried until it succeeds",
                        type(d).__name__,
                        request.commit_log_offset,
                        e,
                    )
                self.stalled, self.stalled_by = e, d
                if self.on_stall is not None:
                    self.on_stall(d, e)
                return False
        return True

    def retry(self) -> bool:
        """After a stall: dispatch what waited in the commit log; True once dispatch runs again."""
        if self.stalled is None:
            return True
        self.stalled = None
        self.do_reput()
        if self.stalled is not None:
            return False
        log.info("dispatch running again at commit-log offset %d", self.reput_from_offset)
        self.stalled_by = None
        if self.on_resume is not None:
            self.on_resume()
        return True

    def dispatch_appended(self, request: DispatchRequest) -> None:
        """Dispatch a record the put path just appended, from the request the append built (no
        decode). Anything between reput_from_offset and the record (a file-end blank, data written
        by someone else) goes through do_reput first; a record already dispatched is skipped.
        While dispatch is stalled the record waits in the commit log (see retry)."""
        if self.stalled is not None:
            return
        offset = request.commit_log_offset
        if offset != self.reput_from_offset:
            if self.reput_from_offset < offset:
                self.do_reput(until=offset)
                if self.stalled is not None:
                    return
            if self.reput_from_offset != offset:
                if self.reput_from_offset < offset:
                    log.warning("dispatch stopped at %d before appended record %d", self.reput_from_offset, offset)
                    self.do_reput()
                return
        if not self._try_dispatch(request):
            return
        self.reput_from_offset = offset + request.msg_size
        if self.on_dispatched is not None and is_queued(request.sys_flag):
            self.on_dispatched(
                request.topic, request.queue_id, request.consume_queue_offset + 1, request.tags_code, request
            )

    def behind(self) -> int:
        return self.reput_end_offset() - self.reput_from_offset

    def do_reput(self, until: int | None = None) -> int:
        """Decode and dispatch the records between reput_from_offset and reput_end_offset() (and
        before `until`); a record crossing the end waits. Returns how many. Nothing while stalled
        (retry() ends a stall)."""
        if self.stalled is not None:
            return 0
        cl = self.commit_log
        if self.reput_from_offset < cl.get_min_offset():
            log.warning(
                "reput offset %d below commit log min %d; moving up", self.reput_from_offset, cl.get_min_offset()
            )
            self.reput_from_offset = cl.get_min_offset()
        count = 0
        end = self.reput_end_offset()
        if until is not None:
            end = min(end, until)
        while self.reput_from_offset < end:
            data = cl.get_data(self.reput_from_offset)
            if data is None:
                break
            _, buf = data
            try:
                pos = 0
                n = len(buf)
                rolled = False
                while pos < n and self.reput_from_offset < end:
                    req = cl.check_message_and_return_size(buf, pos, False, False)
                    size = req.msg_size
                    if req.success and size > 0 and self.reput_from_offset + size > end:
                        return count  # not readable yet (past the confirm offset)
                    if req.success and size > 0:
                        if not self._try_dispatch(req):
                            return count
                        self.reput_from_offset += size
                        pos += size
                        count += 1
                        if self.on_dispatched is not None and is_queued(req.sys_flag):
                            self.on_dispatched(
                                req.topic, req.queue_id, req.consume_queue_offset + 1, req.tags_code, req
                            )
                    elif req.success and size == 0:
                        self.reput_from_offset = cl.roll_next_file(self.reput_from_offset)
                        rolled = True
                        break
                    elif size > 0:
                        log.error("[BUG] length mismatch at %d, skipped", self.reput_from_offset)
                        self.reput_from_offset += size
                        pos += size
                    else:
                        if not _is_partial_record(buf, pos):
                            log.error("unreadable commit log data at %d; dispatch stops", self.reput_from_offset)
                        return count  # a partial record (a slave's data ends inside one) waits for the rest
                if not rolled and (n == 0 or self.reput_from_offset >= end):
                    break  # reached the read position; more data comes with the next put
            finally:
                buf.release()
        return count
