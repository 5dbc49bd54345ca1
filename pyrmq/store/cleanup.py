"""Deleting expired store files and refusing writes when the disk is nearly full.

Java: ``store/DefaultMessageStore`` (``CleanCommitLogService``, ``cleanFilesPeriodically``,
``isTimeToDelete``), ``store/queue/ConsumeQueueStore.CleanConsumeQueueService``,
``store/RunningFlags`` (DISK_FULL bit), ``common/UtilAll#isItTimeToDo`` and
``#getDiskPartitionSpaceUsedPercent``. Spec §7.6.

One round (every ``cleanResourceInterval`` ms, first after 60 s):

1. commit log: delete when the local hour is in ``deleteWhen``, or the disk is
   fuller than ``diskMaxUsedSpaceRatio`` (or the clean-forcibly ratio), or a
   manual delete was asked for. Files older than ``fileReservedTime`` hours
   (by mtime) go, oldest first, never the last file, at most
   ``deleteFileBatchMax`` per round. Above ``diskSpaceCleanForciblyRatio``
   (with ``cleanFileForciblyEnable``) age does not matter.
2. above ``diskSpaceWarningLevelRatio`` the store's ``RunningFlags`` get the
   DISK_FULL (commit log partition) or LOGIC_DISK_FULL (consume queue partition)
   bit: puts get ``SERVICE_NOT_AVAILABLE`` until a later round sees the usage
   back below it.
3. consume queues, then index files: when the commit log's min offset moved,
   delete their leading files that only point below it (never the last file).

Disk usage, the clock and the local hour are injectable for tests.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from pyrmq.common.clock import now_ms
from pyrmq.store.running_flags import RunningFlag
from pyrmq.store.space import existing_ancestor

if TYPE_CHECKING:
    from pyrmq.store.commitlog import CommitLog
    from pyrmq.store.consume_queue import ConsumeQueue
    from pyrmq.store.index import IndexService
    from pyrmq.store.running_flags import RunningFlags
    from pyrmq.store.store_config import MessageStoreConfig


class CleanableStore(Protocol):
    """The parts of MessageStore the cleaner works on (declared here, so the store imports
    the cleaner and not the other way round)."""

    config: MessageStoreConfig
    running_flags: RunningFlags
    commit_log: CommitLog
    consume_queue_table: dict[str, dict[int, ConsumeQueue]]
    index_service: IndexService


log = logging.getLogger("pyrmq.store")

#: Java CleanCommitLogService.MAX_MANUAL_DELETE_FILE_TIMES
MAX_MANUAL_DELETE_FILE_TIMES = 20
#: first round after the store starts (Java scheduleAtFixedRate initial delay 1000 * 60)
INITIAL_DELAY_MS = 60_000

DiskUsage = Callable[[str], float]


def disk_partition_space_used_percent(path: str, reserved_ahead: int = 0) -> float:
    """Used fraction (0..1, rounded up to whole percent) of the partition holding ``path``; -1 on error.

    Java UtilAll#getDiskPartitionSpaceUsedPercent: used = total - free,
    ratio = used / (used + usable), so space reserved for root counts as free
    only when root could use it. A path not created yet (a fresh store's commit-log
    folder) is measured on the partition of its nearest existing parent, the one it will be
    created on; Java answers -1 there, which its cleaner then takes for a full disk.
    ``reserved_ahead``: bytes of it the store holds reserved but unwritten, counted as free.
    """
    where = existing_ancestor(path) if path else None
    if where is None:
        return -1.0
    try:
        st = os.statvfs(where)
    except OSError:
        return -1.0
    total = st.f_blocks * st.f_frsize
    if total <= 0:
        return -1.0
    reserved_ahead = min(reserved_ahead, total - st.f_bfree * st.f_frsize)
    used = total - st.f_bfree * st.f_frsize - reserved_ahead
    entire = used + st.f_bavail * st.f_frsize + reserved_ahead
    if entire <= 0:
        return -1.0
    pct = used * 100 // entire + (1 if used * 100 % entire else 0)
    return pct / 100.0


def is_it_time_to_do(when: str, hour: int) -> bool:
    """``deleteWhen`` ("04", "01;02;03") contains ``hour``. Java UtilAll#isItTimeToDo.

    Java throws on a non-number; we log and treat it as "not now".
    """
    for w in when.split(";"):
        w = w.strip()
        if not w:
            continue
        try:
            if int(w) == hour:
                return True
        except ValueError:
            log.warning("deleteWhen %r: %r is not an hour", when, w)
    return False


def _local_hour(now_ms: int) -> int:
    return time.localtime(now_ms / 1000).tm_hour


@dataclass(slots=True)
class CleanRound:
    """What one round saw and did (for logs, tests and the admin CLI)."""

    time_up: bool = False
    space_to_delete: bool = False
    manual: bool = False
    clean_immediately: bool = False
    commit_log_ratio: float = -1.0
    logics_ratio: float = -1.0
    disk_full: bool = False
    commit_log_files_deleted: int = 0
    consume_queue_files_deleted: int = 0
    index_files_deleted: int = 0


def _clamp(v: float, lo: float, hi: float) -> float:
    return min(max(v, lo), hi)


class StoreCleaner:
    """CleanCommitLogService + CleanConsumeQueueService + the DISK_FULL running flag.

    ``run_once()`` is one round (what the background thread calls). The
    disk-full state lives in the store's ``RunningFlags`` (what puts look at);
    ``disk_full``/``disk_full_reason`` say why for logs and tests. The store
    owns one and starts/stops it with itself, like Java's DefaultMessageStore.
    """

    def __init__(
        self,
        store: CleanableStore,
        *,
        disk_usage: DiskUsage | None = None,
        clock: Callable[[], int] | None = None,
        local_hour: Callable[[int], int] = _local_hour,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.store = store
        self.config = store.config
        self.disk_usage = disk_usage or self._partition_usage
        self.clock = clock or getattr(store, "clock", None) or now_ms
        self.local_hour = local_hour
        self.sleep = sleep
        self._manual_times = 0
        self._last_physical_min_offset = 0
        self._disk_full = False
        self.disk_full_reason = ""
        self._unmeasured = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _partition_usage(self, path: str) -> float:
        """Java's measure, less what the commit log holds reserved ahead of its writer there.
        Counting that reservation made a broker that had just reserved its next file's first
        stretch on a nearly full disk see itself over diskSpaceWarningLevelRatio, and refuse puts
        with the space freed, until files were deleted."""
        return disk_partition_space_used_percent(path, self.store.commit_log.space_reserved_ahead(path))

    # --- ratios (Java getters clamp them) ---------------------------------------------------------
    def disk_space_warning_level_ratio(self) -> float:
        return _clamp(self.config.disk_space_warning_level_ratio / 100.0, 0.35, 0.90)

    def disk_space_clean_forcibly_ratio(self) -> float:
        return _clamp(self.config.disk_space_clean_forcibly_ratio / 100.0, 0.30, 0.85)

    def disk_max_used_space_ratio(self) -> float:
        # MessageStoreConfig#getDiskMaxUsedSpaceRatio keeps it within 10..95
        return _clamp(self.config.disk_max_used_space_ratio, 10, 95) / 100.0

    # --- disk-full flag ----------------------------------------------------------------------------
    @property
    def disk_full(self) -> bool:
        return self._disk_full

    def _mark_disk_full(self, logic: bool, reason: str) -> None:
        flags = self.store.running_flags
        changed = flags.get_and_make_logic_disk_full() if logic else flags.get_and_make_disk_full()
        if changed:
            log.error("disk maybe full soon: %s; refusing writes until space is back", reason)
        self._disk_full = True
        self.disk_full_reason = reason

    def _mark_disk_ok(self, logic: bool, ratio: float) -> None:
        flags = self.store.running_flags
        if flags.get_and_make_logic_disk_ok() if logic else flags.get_and_make_disk_ok():
            log.info(
                "%s disk space OK (%.2f used); accepting writes again",
                "consume queue" if logic else "commit log",
                ratio,
            )
        self._disk_full = self.store.running_flags.is_set(RunningFlag.DISK_FULL) or self.store.running_flags.is_set(
            RunningFlag.LOGIC_DISK_FULL
        )
        if not self._disk_full:
            self.disk_full_reason = ""

    def disk_util(self) -> str:
        """``CL: 0.95 CQ: 0.95 INDEX: 0.95``: the used ratios a SERVICE_NOT_AVAILABLE send answer names.

        Java SendMessageProcessor#diskUtil (the lowest commit-log partition, ``%5.2f`` of each ratio)."""
        physic = 100.0
        for p in self._commit_log_paths():
            physic = min(physic, self.disk_usage(p))
        logics = self.disk_usage(self.config.consume_queue_dir)
        index = self.disk_usage(self.config.index_dir)
        return f"CL: {physic:5.2f} CQ: {logics:5.2f} INDEX: {index:5.2f}"

    def execute_delete_files_manually(self) -> None:
        """The admin "delete expired commit log" request: the next 20 rounds delete expired files."""
        self._manual_times = MAX_MANUAL_DELETE_FILE_TIMES

    # --- one round --------------------------------------------------------------------------------
    def _commit_log_paths(self) -> list[str]:
        return [p.strip() for p in self.config.commit_log_dir.split(",") if p.strip()]

    def commit_log_ratio(self) -> float:
        """Used ratio of the emptiest commit-log partition (-1 when it cannot be measured)."""
        ratios = [self.disk_usage(p) for p in self._commit_log_paths()]
        return min(ratios) if ratios else -1.0

    def _is_space_to_delete(self, r: CleanRound) -> bool:
        """Java CleanCommitLogService#isSpaceToDelete (single replica per partition)."""
        warning = self.disk_space_warning_level_ratio()
        forcibly = self.disk_space_clean_forcibly_ratio()
        ratios = [(self.disk_usage(p), p) for p in self._commit_log_paths()]
        physic, path = min(ratios) if ratios else (-1.0, "")
        r.commit_log_ratio = physic
        if physic > warning:
            self._mark_disk_full(
                False,
                f"commit log partition of {path} is {physic:.0%} used, above diskSpaceWarningLevelRatio {warning:.0%}",
            )
            r.clean_immediately = True
            return True
        if physic > forcibly:
            r.clean_immediately = True
            return True
        self._mark_disk_ok(False, physic)

        logics = self.disk_usage(self.config.consume_queue_dir)
        r.logics_ratio = logics
        if logics > warning:
            self._mark_disk_full(
                True, f"consume queue partition is {logics:.0%} used, above diskSpaceWarningLevelRatio {warning:.0%}"
            )
            r.clean_immediately = True
            return True
        if logics > forcibly:
            r.clean_immediately = True
            return True
        self._mark_disk_ok(True, logics)

        ratio = self.disk_max_used_space_ratio()
        # -1 is "could not measure", not "full" (Java counts it as full: a fresh broker then
        # warned about a full disk on every round until its first message)
        self._note_unmeasured(physic, logics)
        if physic > ratio:
            log.info("commit log disk maybe full soon (%.2f), reclaiming space", physic)
            return True
        if logics > ratio:
            log.info("consume queue disk maybe full soon (%.2f), reclaiming space", logics)
            return True
        return False

    def _note_unmeasured(self, physic: float, logics: float) -> None:
        """One warning when disk usage cannot be measured any more, one info when it can again."""
        unmeasured = physic < 0 or logics < 0
        if unmeasured and not self._unmeasured:
            log.warning(
                "cannot measure disk usage of the store (commit log %.2f, consume queue %.2f); "
                "no cleaning for space until it can",
                physic,
                logics,
            )
        elif self._unmeasured and not unmeasured:
            log.info("disk usage of the store measurable again")
        self._unmeasured = unmeasured

    def clean_commit_log(self, r: CleanRound | None = None) -> CleanRound:
        r = r or CleanRound()
        c = self.config
        r.time_up = is_it_time_to_do(c.delete_when, self.local_hour(self.clock()))
        r.space_to_delete = self._is_space_to_delete(r)
        r.manual = self._manual_times > 0
        r.disk_full = self._disk_full
        if not (r.time_up or r.space_to_delete or r.manual):
            return r
        if r.manual:
            self._manual_times -= 1
        clean_at_once = c.clean_file_forcibly_enable and r.clean_immediately
        log.info(
            "deleting commit log files older than %d h (time up %s, space %s, manual %s, at once %s)",
            c.file_reserved_time,
            r.time_up,
            r.space_to_delete,
            r.manual,
            clean_at_once,
        )
        r.commit_log_files_deleted = self.store.commit_log.mapped_file_queue.delete_expired_file_by_time(
            c.file_reserved_time * 3600 * 1000,
            c.delete_commit_log_files_interval,
            clean_at_once,
            c.delete_file_batch_max,
            now_ms=self.clock,
        )
        if r.commit_log_files_deleted == 0 and r.space_to_delete:
            log.warning("disk space will be full soon, but no commit log file could be deleted")
        return r

    def clean_consume_queues(self, r: CleanRound | None = None) -> CleanRound:
        """Java CleanConsumeQueueService#deleteExpiredFiles."""
        r = r or CleanRound()
        min_offset = self.store.commit_log.get_min_offset()
        if min_offset <= self._last_physical_min_offset:
            return r
        self._last_physical_min_offset = min_offset
        interval = self.config.delete_consume_queue_files_interval
        for queues in list(self.store.consume_queue_table.values()):
            for cq in list(queues.values()):
                n = cq.delete_expired_file(min_offset)
                r.consume_queue_files_deleted += n
                if n > 0 and interval > 0:
                    self.sleep(interval / 1000)
        r.index_files_deleted = self.store.index_service.delete_expired_file(min_offset)
        return r

    def run_once(self) -> CleanRound:
        """One ``cleanFilesPeriodically`` round: commit log first, then queues and index."""
        with self._lock:
            r = self.clean_commit_log()
            self.clean_consume_queues(r)
            return r

    # --- background thread -------------------------------------------------------------------------
    def start(self, initial_delay_ms: int | None = None) -> None:
        if self._thread is not None:
            return
        if initial_delay_ms is None:
            initial_delay_ms = INITIAL_DELAY_MS  # read at start: tests shorten it
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, args=(initial_delay_ms,), name="StoreCleaner", daemon=True)
        self._thread.start()

    def _loop(self, initial_delay_ms: int) -> None:
        if self._stop.wait(initial_delay_ms / 1000):
            return
        while True:
            try:
                self.run_once()
            except Exception:  # a failed round must not stop cleaning for good (Java logs and goes on)
                log.exception("store cleaning round failed")
            if self._stop.wait(max(self.config.clean_resource_interval, 10) / 1000):
                return

    def shutdown(self) -> None:
        self._stop.set()
        t, self._thread = self._thread, None
        if t is not None:
            t.join(timeout=10)
