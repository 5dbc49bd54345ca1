"""A message store whose commit log is a DLedger member's (enableDLegerCommitLog=true).

Java: DefaultMessageStore with a DLedgerCommitLog in place of its CommitLog. Consume queues and
the index are the store's own, built from the committed records the commit log dispatches on every
member; reads go through the DLedger data files. Puts run on the member's event loop.
"""

from __future__ import annotations

from collections.abc import Callable

from pyrmq.store.dispatch import DispatchedListener
from pyrmq.store.dledger_commitlog import DLedgerCommitLog, Member
from pyrmq.store.message import is_queued
from pyrmq.store.message_store import MessageStore
from pyrmq.store.results import DispatchRequest
from pyrmq.store.store_config import MessageStoreConfig

__all__ = ["DLedgerMessageStore"]


class DLedgerMessageStore(MessageStore):
    def __init__(
        self,
        config: MessageStoreConfig,
        server: Member,
        clock: Callable[[], int] | None = None,
        on_dispatched: DispatchedListener | None = None,
    ) -> None:
        super().__init__(config, clock, on_dispatched=on_dispatched)
        self.dledger = DLedgerCommitLog(server, config, self._dispatch_committed, clock=self.clock)
        self.commit_log = self.dledger
        self.reput_message_service.commit_log = self.dledger

    def get_store_path_physic(self) -> str:
        """The member's data directory (Java: the DLedgerConfig's dataStorePath)."""
        return self.dledger.ledger.data_path

    def _dispatch_committed(self, req: DispatchRequest) -> None:
        """A committed record: consume queue, index, the long-polling wake-up."""
        reput = self.reput_message_service
        with self._dispatch_lock:
            reput.dispatch(req)
            reput.reput_from_offset = req.commit_log_offset + req.msg_size
        if reput.on_dispatched is not None and is_queued(req.sys_flag):
            reput.on_dispatched(req.topic, req.queue_id, req.consume_queue_offset + 1, req.tags_code, req)

    def recover_topic_queue_table(self) -> None:
        """The consume queues' next offsets are also where the DLedger commit log's dispatch left
        off: a new leader assigns from there (DLedgerRoleChangeHandler's recoverTopicQueueTable)."""
        super().recover_topic_queue_table()
        self.dledger.dispatched_queue_table = dict(self.dledger.topic_queue_table)

    def start(self) -> None:
        super().start()
        # dispatch picks up after the recovered queues, not at the committed end
        self.reput_message_service.reput_from_offset = self.dledger.dispatched_end()
