"""The slave side of controller-mode HA: handshake, truncate to the last consistent offset, replicate.

Java: store.ha.autoswitch.AutoSwitchHAClient. States READY -> HANDSHAKE -> TRANSFER (SUSPEND is
never entered, as in Java); any error closes the connection and goes back to READY after
``retry_interval_s``. In READY a torn tail is cut (MessageStore.truncate_invalid_msg); after
connecting the slave sends its handshake, the master answers with its epoch list, and the slave
truncates its commit log (and epoch file) to the last offset both logs agree on before it reports
and receives frames. Each frame's epoch not seen yet is appended to the slave's epoch file.
"""

from __future__ import annotations

import asyncio
import logging

from pyrmq.ha.autoswitch_protocol import (
    MasterHandshake,
    MasterStreamDecoder,
    MasterTransfer,
    SlaveHandshake,
    encode_slave_handshake,
    encode_slave_report,
)
from pyrmq.ha.epoch import EpochEntry, EpochFileCache
from pyrmq.ha.protocol import CommitLogStreamCheck, HAConnectionState, HAProtocolError
from pyrmq.ha.slave import RETRY_INTERVAL_S, MasterLink
from pyrmq.store.message_store import MessageStore

log = logging.getLogger("pyrmq.ha")


def truncate_offset(local: list[EpochEntry], local_max: int, master: list[EpochEntry], master_max: int) -> int:
    """Where a slave must cut its log before replicating, or -1 when the logs share no epoch.
    The last entry of each side ends at its own max offset. Java AutoSwitchHAClient#doTruncate."""
    mine = EpochFileCache(entries=local)
    mine.set_last_epoch_entry_end_offset(local_max)
    theirs = EpochFileCache(entries=master)
    theirs.set_last_epoch_entry_end_offset(master_max)
    return mine.find_consistent_point(theirs)


class AutoSwitchHAClient(MasterLink):
    """Replicates the master's commit log into ``store``, keeping ``epoch_cache`` in step."""

    name = "AutoSwitchHAClient"
    task_name = "autoswitch-ha-client"

    def __init__(
        self,
        store: MessageStore,
        epoch_cache: EpochFileCache,
        broker_id: int,
        *,
        retry_interval_s: float = RETRY_INTERVAL_S,
    ) -> None:
        super().__init__(store, retry_interval_s=retry_interval_s)
        self.epoch_cache = epoch_cache
        self.broker_id = broker_id
        self.current_received_epoch = -1
        self.confirm_offset = 0

    def _before_connect(self) -> None:
        """Java AutoSwitchHAClient#doWork in READY: cut a torn tail first (and its epoch entries)."""
        self.state = HAConnectionState.READY
        cut = self.store.truncate_invalid_msg()
        if cut >= 0:
            self.epoch_cache.truncate_suffix_by_offset(cut)

    async def _session(self, reader: asyncio.StreamReader) -> None:
        config = self.store.config
        self.state = HAConnectionState.HANDSHAKE
        self.current_reported_offset = self.store.get_max_phy_offset()
        self.current_received_epoch = -1
        await self._write(
            encode_slave_handshake(SlaveHandshake(self.broker_id, config.sync_from_last_file, config.async_learner))
        )
        decoder = MasterStreamDecoder()

        async def on_data(data: bytes) -> None:
            for event in decoder.feed(data):
                if isinstance(event, MasterHandshake):
                    if self.state is not HAConnectionState.HANDSHAKE:
                        raise HAProtocolError(f"State not matched, masterState:HANDSHAKE, slaveState:{self.state.name}")
                    await self._on_handshake(event)
                else:
                    if self.state is not HAConnectionState.TRANSFER:
                        raise HAProtocolError(f"State not matched, masterState:TRANSFER, slaveState:{self.state.name}")
                    self._on_transfer(event)
            if self.state is HAConnectionState.TRANSFER:
                await self._report_plus()

        async def heartbeat() -> None:  # no report before the handshake is done
            if self.state is HAConnectionState.TRANSFER:
                await self._report(self.current_reported_offset)

        await self._read_master(reader, on_data, heartbeat)

    async def _on_handshake(self, h: MasterHandshake) -> None:
        """Java doTruncate: an empty epoch file truncates nothing; otherwise cut back to the
        consistent point, then report from there."""
        store = self.store
        log.info(
            "Receive handshake, masterMaxPosition %d, masterEpochEntries:%s, try truncate log", h.max_offset, h.entries
        )
        if len(self.epoch_cache) == 0:
            log.info("Slave local epochCache is empty, skip truncate log")
        else:
            master = [EpochEntry(e, s) for e, s in h.entries]
            offset = truncate_offset(self.epoch_cache.entries(), store.get_max_phy_offset(), master, h.max_offset)
            log.info("truncateOffset is %d", offset)
            if offset < 0:
                raise HAProtocolError(
                    f"Failed to find a consistent point between master {h.entries} and slave "
                    f"{[(e.epoch, e.start_offset) for e in self.epoch_cache.entries()]}"
                )
            if not store.truncate_files(offset):
                raise HAProtocolError(f"Failed to truncate slave log to {offset}")
            self.epoch_cache.truncate_suffix_by_offset(offset)
        self.state = HAConnectionState.TRANSFER
        self.current_reported_offset = store.get_max_phy_offset()
        self._check = CommitLogStreamCheck(store.config.mapped_file_size_commit_log, self.current_reported_offset)
        # pyrmq reports at once (Java only when its max offset grew, else after haSendHeartbeatInterval)
        await self._report(self.current_reported_offset)

    def _on_transfer(self, t: MasterTransfer) -> None:
        store = self.store
        slave_offset = store.get_max_phy_offset()
        if slave_offset != 0 and slave_offset != t.offset:
            raise HAProtocolError(
                f"master pushed offset not equal the max phy offset in slave, SLAVE: {slave_offset} MASTER: {t.offset}"
            )
        if t.epoch != self.current_received_epoch:
            self.current_received_epoch = t.epoch
            last = self.epoch_cache.last_entry()
            if last is None or (t.epoch > last.epoch and t.epoch_start_offset > last.start_offset):
                self.epoch_cache.append_entry(t.epoch, t.epoch_start_offset)
        if t.body:
            check = self._check
            assert check is not None
            if slave_offset == 0 and check.stream_end != t.offset:
                check.reset(t.offset)
            check.check(t.offset, t.body)
            if not store.append_to_commit_log(t.offset, t.body):
                check.undo()
                raise HAProtocolError(f"the store refused {len(t.body)} bytes at {t.offset}")
            self.flow.add(len(t.body))
        confirm = min(t.confirm_offset, store.get_max_phy_offset())
        if confirm != self.confirm_offset:
            self.confirm_offset = confirm
            store.reput_now()  # what the master confirmed may be dispatched now

    def _encode_report(self, offset: int) -> bytes:
        return encode_slave_report(offset)


__all__ = ["AutoSwitchHAClient", "truncate_offset"]
