"""Controller-mode HA: the epoch-aware master side, the sync state set, and role changes.

Java: store.ha.autoswitch.AutoSwitchHAService and AutoSwitchHAConnection. One service object per
broker for its whole life: it always listens on haListenPort (like Java's accept service), serves
slaves while this broker is master, and runs an AutoSwitchHAClient (autoswitch_client.py) while it
is a slave. The controller decides the role; the broker's ReplicasManager calls
``change_to_master`` / ``change_to_slave``.

The sync state set is the set of broker ids (the master's own included) whose commit log is
caught up: a slave whose report reaches the master's max offset at the time of the last transfer
joins; one that has not caught up for haMaxTimeSlaveNotCatchup, or whose connection ended, leaves.
Changes go to ``on_sync_state_set_changed`` (the ReplicasManager asks the controller to alter the
set; the controller's answer comes back through ``set_sync_state_set``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from pyrmq.ha.autoswitch_protocol import (
    MasterHandshake,
    MasterTransfer,
    SlaveHandshake,
    SlaveReport,
    SlaveStreamDecoder,
    encode_master_handshake,
    encode_master_transfer_header,
)
from pyrmq.ha.epoch import OPEN_END, EpochFileCache
from pyrmq.ha.master import POLL_INTERVAL_S, GroupTransferRequest, HAConnection, HAService
from pyrmq.ha.protocol import HAConnectionState
from pyrmq.store.message_store import MessageStore
from pyrmq.store.replica import ALL_ACK_IN_SYNC_STATE_SET

log = logging.getLogger("pyrmq.ha")

_READ_SIZE = 64 * 1024


def _now_ms() -> int:
    return int(time.time() * 1000)


class AutoSwitchHAConnection(HAConnection):
    """One slave, epoch-aware. Java AutoSwitchHAConnection (ReadSocketService, WriteSocketService).

    HANDSHAKE until the slave's first report: the slave says who it is, the master answers with
    its epoch list; then TRANSFER: frames never mix epochs (a frame stops at its epoch's end)."""

    service: AutoSwitchHAService

    def __init__(self, service: AutoSwitchHAService, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        super().__init__(service, reader, writer)
        self.state = HAConnectionState.HANDSHAKE
        self.slave_id = -1
        self.sync_from_last_file = False
        self.async_learner = False
        self._handshake_wanted = asyncio.Event()
        self.current_transfer_epoch = -1
        self.current_transfer_epoch_end = 0
        self.last_master_max_offset = -1
        self.last_transfer_time_ms = 0

    async def _read_loop(self) -> None:
        decoder = SlaveStreamDecoder()
        housekeeping = self.service.store.config.ha_housekeeping_interval / 1000
        while True:
            try:
                data = await asyncio.wait_for(self._reader.read(_READ_SIZE), housekeeping)
            except TimeoutError:
                log.warning("ha housekeeping, found this connection[%s] expired", self.client_address)
                return
            if not data:
                log.info("slave %s closed the HA connection", self.client_address)
                return
            for event in decoder.feed(data):  # HAProtocolError ends the task and the connection
                if isinstance(event, SlaveHandshake):
                    self.slave_id = event.slave_broker_id
                    self.sync_from_last_file = event.sync_from_last_file
                    self.async_learner = event.async_learner
                    self.state = HAConnectionState.HANDSHAKE
                    log.info(
                        "Receive slave handshake, slaveBrokerId:%d, isSyncFromLastFile:%s, isAsyncLearner:%s",
                        self.slave_id,
                        self.sync_from_last_file,
                        self.async_learner,
                    )
                    self._handshake_wanted.set()
                else:
                    self._on_report(event)

    def _on_report(self, report: SlaveReport) -> None:
        if self.state is HAConnectionState.SHUTDOWN:
            return
        if self.state is not HAConnectionState.TRANSFER:
            log.info("Master change state from %s to TRANSFER", self.state.name)
            self.state = HAConnectionState.TRANSFER
        self.slave_ack_offset = report.max_offset
        if self.slave_request_offset < 0:
            self.slave_request_offset = report.max_offset
            self._requested.set()
        self._maybe_expand_in_sync_state_set(report.max_offset)
        self.service.update_confirm_offset_when_slave_ack(self.slave_id)
        self.service.notify_transfer_some(report.max_offset)

    def _maybe_expand_in_sync_state_set(self, slave_max_offset: int) -> None:
        if self.async_learner or slave_max_offset < self.last_master_max_offset:
            return
        store = self.service.store
        caught_up = _now_ms() if store.get_max_phy_offset() == slave_max_offset else self.last_transfer_time_ms
        self.service.update_connection_last_caught_up_time(self.slave_id, caught_up)
        self.service.maybe_expand_in_sync_state_set(self.slave_id, slave_max_offset)

    async def _write_loop(self) -> None:
        writer = self._writer
        await self._handshake_wanted.wait()
        self._handshake_wanted.clear()
        writer.write(encode_master_handshake(self.service.build_handshake()))
        await self._drained()
        await self._requested.wait()
        store = self.service.store
        config = store.config
        cache = self.service.epoch_cache
        # pyrmq tells the slave its epoch at once (Java, with nothing to send, waits one
        # haSendHeartbeatInterval): the slave joins the sync state set on its first report, and
        # getBrokerEpoch must then show the epoch on it too
        self._last_write = 0.0
        while self.next_transfer_from_where == -1:
            if self.slave_request_offset == 0:
                if self.sync_from_last_file:
                    mx = store.get_max_phy_offset()
                    start = max(mx - mx % config.mapped_file_size_commit_log, 0)
                else:
                    start = store.commit_log.get_min_offset()
            else:
                start = self.slave_request_offset
            entry = cache.find_epoch_entry_by_offset(start) if start >= 0 else None
            if entry is None:
                if start >= 0:
                    log.error("Failed to find an epochEntry to match nextTransferFromWhere %d", start)
                await self._heartbeat_if_needed()
                await asyncio.sleep(0.5)
                continue
            self.next_transfer_from_where = start
            self._change_transfer_epoch(entry.epoch, entry.end_offset)
            log.info(
                "Master transfer data to slave %s, from offset:%d, currentEpoch:%d",
                self.client_address,
                start,
                entry.epoch,
            )
        while True:
            await self._heartbeat_if_needed()
            view = store.get_commit_log_data(self.next_transfer_from_where, config.ha_transfer_batch_size)
            if view is None:
                self.service.update_connection_last_caught_up_time(self.slave_id, _now_ms())
                await self.service.wait_for_data(POLL_INTERVAL_S)
                continue
            try:
                body = bytes(view)
            finally:
                view.release()
            end = self.current_transfer_epoch_end
            if end != -1 and self.next_transfer_from_where + len(body) > end:
                nxt = cache.next_entry(self.current_transfer_epoch)
                if nxt is None:
                    log.error("Can't find a bigger epochEntry than epoch %d", self.current_transfer_epoch)
                    await asyncio.sleep(POLL_INTERVAL_S)
                    continue
                body = body[: end - self.next_transfer_from_where]
                self._change_transfer_epoch(nxt.epoch, nxt.end_offset)
            offset = self.next_transfer_from_where
            self.next_transfer_from_where = offset + len(body)
            self.last_master_max_offset = store.get_max_phy_offset()
            self.last_transfer_time_ms = _now_ms()
            header = self._transfer_header(offset, len(body))
            if header is None:
                await asyncio.sleep(POLL_INTERVAL_S)
                continue
            if body:
                writer.writelines((header, body))
            else:
                writer.write(header)
            await self._drained()

    def _change_transfer_epoch(self, epoch: int, end_offset: int) -> None:
        self.current_transfer_epoch = epoch
        # -1 stands for "no end": the last epoch grows with every put
        last = self.service.epoch_cache.last_epoch()
        self.current_transfer_epoch_end = -1 if epoch == last or end_offset == OPEN_END else end_offset

    def _transfer_header(self, offset: int, size: int) -> bytes | None:
        """Java buildTransferHeaderBuffer: the current transfer epoch's entry (the first entry for a
        heartbeat before any transfer); None when a data frame has no epoch to carry."""
        cache = self.service.epoch_cache
        entry = cache.get_entry(self.current_transfer_epoch)
        if entry is None:
            if offset != -1 or self.current_transfer_epoch != -1 or size > 0:
                log.error("Failed to find epochEntry with epoch %d when build msg header", self.current_transfer_epoch)
            if size > 0:
                return None
            entry = cache.first_entry()
            if entry is None:
                return None
        t = MasterTransfer(offset, entry.epoch, entry.start_offset, self.service.get_confirm_offset())
        return encode_master_transfer_header(t, size)

    async def _heartbeat_if_needed(self) -> None:
        interval = self.service.store.config.ha_send_heartbeat_interval / 1000
        if time.monotonic() - self._last_write > interval:
            header = self._transfer_header(self.next_transfer_from_where, 0)
            if header is not None:
                self._writer.write(header)
                await self._drained()


class AutoSwitchHAService(HAService):
    """Java AutoSwitchHAService. ``epoch_cache`` is the broker's epoch file."""

    connections: list[AutoSwitchHAConnection]  # type: ignore[assignment]
    controller_mode = True

    def __init__(self, store: MessageStore, epoch_cache: EpochFileCache, host: str = "0.0.0.0") -> None:
        super().__init__(store, host)
        self.epoch_cache = epoch_cache
        self.local_broker_id: int | None = None
        self.sync_state_set: set[int] = set()
        self.remote_sync_state_set: set[int] = set()
        self.is_synchronizing_sync_state_set = False
        self.connection_caught_up_time: dict[int, int] = {}
        self.is_master = False
        self._confirm_offset = -1  # Java CommitLog#confirmOffset (controller mode)
        self.on_sync_state_set_changed: Callable[[set[int]], None] | None = None
        self.client: Any = None  # AutoSwitchHAClient while a slave (set by change_to_slave)
        self.client_factory: Callable[[AutoSwitchHAService, int], object] | None = None
        self._stopping = False

    def new_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> HAConnection:
        return AutoSwitchHAConnection(self, reader, writer)

    def remove_connection(self, conn: HAConnection) -> None:
        """A slave that left drops out of the sync state set, except while this broker shuts down
        (Java checks isShutdown): a master stopping must not shrink the set its successor is
        elected from."""
        slave = getattr(conn, "slave_id", None)
        if not self._stopping and slave is not None and slave in self.sync_state_set:
            new = set(self.sync_state_set)
            new.discard(slave)
            self._mark_synchronizing(new)
            self._notify_sync_state_set_changed(new)
        super().remove_connection(conn)

    def build_handshake(self) -> MasterHandshake:
        entries = self.epoch_cache.entries()
        return MasterHandshake(
            self.store.get_max_phy_offset(),
            self.epoch_cache.last_epoch(),
            tuple((e.epoch, e.start_offset) for e in entries),
        )

    # --- role changes ---------------------------------------------------------------------------
    async def destroy_connections(self) -> None:
        for conn in list(self.connections):
            conn.close()

    async def _stop_client(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            await client.shutdown()

    async def change_to_master(self, master_epoch: int) -> bool:
        """Stop replicating, cut a torn tail, open a new epoch at the max offset. Java changeToMaster."""
        last = self.epoch_cache.last_epoch()
        if master_epoch < last:
            log.warning("newMasterEpoch %d < lastEpoch %d, fail to change to master", master_epoch, last)
            return False
        await self.destroy_connections()
        await self._stop_client()
        self.store.confirm_offset_source = None
        truncated = self.store.truncate_invalid_msg()
        self.is_master = True
        if self.store.config.all_ack_in_sync_state_set:
            # Java's reput end is the confirm offset on a master too: a consumer must not read a
            # record the sync state set does not hold yet (the next master would not have it, and
            # would write other records at the same queue offsets)
            self.store.confirm_offset_source = self.get_confirm_offset
        self._confirm_offset = self.compute_confirm_offset()
        if truncated >= 0:
            self.epoch_cache.truncate_suffix_by_offset(truncated)
        if self.epoch_cache.last_epoch() >= master_epoch:
            self.epoch_cache.truncate_suffix_by_epoch(master_epoch)
        start = self.store.get_max_phy_offset()
        self.epoch_cache.append_entry(master_epoch, start)
        self.store.reput_now()
        self.store.recover_topic_queue_table()
        log.info("Change ha to master success, newMasterEpoch:%d, startOffset:%d", master_epoch, start)
        return True

    def change_to_master_when_last_role_is_master(self, master_epoch: int) -> bool:
        last = self.epoch_cache.last_epoch()
        if master_epoch < last:
            log.warning("newMasterEpoch %d < lastEpoch %d, fail to change to master", master_epoch, last)
            return False
        if last >= master_epoch:
            self.epoch_cache.truncate_suffix_by_epoch(master_epoch)
        self.epoch_cache.append_entry(master_epoch, self.store.get_max_phy_offset())
        return True

    async def change_to_slave(self, master_addr: str | None, master_epoch: int, slave_id: int) -> bool:
        """Drop slaves, (re)start the client towards the new master; it learns the master's HA
        address later (``update_ha_master_address``). Java changeToSlave."""
        last = self.epoch_cache.last_epoch()
        if master_epoch < last:
            log.warning("newMasterEpoch %d < lastEpoch %d, fail to change to slave", master_epoch, last)
            return False
        await self.destroy_connections()
        await self._stop_client()
        self.is_master = False
        assert self.client_factory is not None
        client = self.client_factory(self, slave_id)
        client.update_master_address(master_addr)  # type: ignore[attr-defined]
        client.start()  # type: ignore[attr-defined]
        self.client = client
        self.store.confirm_offset_source = self.get_confirm_offset
        log.info("Change ha to slave success, newMasterAddress:%s, newMasterEpoch:%d", master_addr, master_epoch)
        return True

    def change_to_slave_when_master_not_change(self, master_addr: str | None, master_epoch: int) -> bool:
        last = self.epoch_cache.last_epoch()
        if master_epoch < last:
            log.warning("newMasterEpoch %d < lastEpoch %d, fail to change to slave", master_epoch, last)
            return False
        return True

    def update_ha_master_address(self, addr: str | None) -> None:
        if self.client is not None:
            self.client.update_ha_master_address(addr)

    async def shutdown(self) -> None:
        self._stopping = True
        await self._stop_client()
        await super().shutdown()

    # --- sync state set -------------------------------------------------------------------------
    def _mark_synchronizing(self, new: set[int]) -> None:
        self.is_synchronizing_sync_state_set = True
        self.remote_sync_state_set = set(new)

    def _notify_sync_state_set_changed(self, new: set[int]) -> None:
        log.info("Notify the syncStateSet has been changed into %s.", sorted(new))
        if self.on_sync_state_set_changed is not None:
            self.on_sync_state_set_changed(set(new))

    def update_connection_last_caught_up_time(self, slave_id: int, ms: int) -> None:
        self.connection_caught_up_time[slave_id] = max(self.connection_caught_up_time.get(slave_id, 0), ms)

    def maybe_expand_in_sync_state_set(self, slave_id: int, slave_max_offset: int) -> None:
        """A slave joins once it holds the confirm offset and reached the current epoch."""
        current = set(self.sync_state_set)
        if slave_id in current:
            return
        last = self.epoch_cache.last_entry()
        confirm = self.get_confirm_offset()
        if slave_max_offset >= confirm and last is not None and slave_max_offset >= last.start_offset:
            log.info(
                "The slave %d has caught up, slaveMaxOffset: %d, confirmOffset: %d", slave_id, slave_max_offset, confirm
            )
            current.add(slave_id)
            self._mark_synchronizing(current)
            self._notify_sync_state_set_changed(current)

    def maybe_shrink_sync_state_set(self, now_ms: int | None = None) -> set[int]:
        """The local set without the slaves that did not catch up for haMaxTimeSlaveNotCatchup or
        have no connection record. Java maybeShrinkSyncStateSet."""
        now = _now_ms() if now_ms is None else now_ms
        new = set(self.sync_state_set)
        limit = self.store.config.ha_max_time_slave_not_catchup
        changed = False
        for slave, caught_up in self.connection_caught_up_time.items():
            if slave in new and now - caught_up > limit:
                new.discard(slave)
                changed = True
        for slave in list(new):
            if slave != self.local_broker_id and slave not in self.connection_caught_up_time:
                new.discard(slave)
                changed = True
        if changed:
            self._mark_synchronizing(new)
        return new

    def set_sync_state_set(self, new: set[int]) -> None:
        self.is_synchronizing_sync_state_set = False
        self.sync_state_set = set(new)
        self._confirm_offset = self.compute_confirm_offset()
        self._reput_confirmed()

    def get_sync_state_set(self) -> set[int]:
        if self.is_synchronizing_sync_state_set:
            return self.sync_state_set | self.remote_sync_state_set
        return set(self.sync_state_set)

    def update_confirm_offset_when_slave_ack(self, slave_id: int) -> None:
        if slave_id in self.sync_state_set:
            self._confirm_offset = self.compute_confirm_offset()
            self._reput_confirmed()

    def _reput_confirmed(self) -> None:
        """A master that dispatches only confirmed records: dispatch what the confirm offset now covers."""
        if self.is_master and self.store.confirm_offset_source is not None:
            self.store.reput_now()

    def compute_confirm_offset(self) -> int:
        """The smallest ack among connected sync-state-set members (the max offset without any);
        unchanged while a member has no connection. Java computeConfirmOffset."""
        members = self.get_sync_state_set()
        connected = {c.slave_id for c in self.connections}
        for sid in members:
            if sid not in connected and self.local_broker_id is not None and sid != self.local_broker_id:
                return self._confirm_offset
        offset = self.store.get_max_phy_offset()
        for c in self.connections:
            if c.slave_id in members and c.slave_ack_offset > 0:
                offset = min(offset, c.slave_ack_offset)
        return offset

    def get_confirm_offset(self) -> int:
        """Java CommitLog#getConfirmOffset in controller mode: a master alone in its sync state set,
        or without allAckInSyncStateSet, confirms everything it wrote; otherwise the smallest ack
        of the set. A slave takes the master's (from the transfer header, capped at its own end)."""
        if self.is_master:
            if len(self.sync_state_set) == 1 or not self.store.config.all_ack_in_sync_state_set:
                return self.store.get_max_phy_offset()
            if self._confirm_offset < 0:
                self._confirm_offset = self.compute_confirm_offset()
            return self._confirm_offset
        if self.client is not None:
            return int(self.client.confirm_offset)
        return self._confirm_offset

    def in_sync_replicas_nums(self, master_put_where: int) -> int:
        if self.is_synchronizing_sync_state_set:
            return max(len(self.sync_state_set), len(self.remote_sync_state_set))
        return len(self.sync_state_set)

    def _transfer_ok(self, req: GroupTransferRequest) -> bool:
        """allAckInSyncStateSet: every member of the sync state set holds the offset (Java
        GroupTransferService#doWaitTransfer, AutoSwitch branch); otherwise as classic HA."""
        if req.ack_nums != ALL_ACK_IN_SYNC_STATE_SET:
            return super()._transfer_ok(req)
        members = self.get_sync_state_set()
        if len(members) <= 1:
            return True
        acks = 1 + sum(1 for c in self.connections if c.slave_id in members and c.slave_ack_offset >= req.next_offset)
        return acks >= len(members)


__all__ = ["ALL_ACK_IN_SYNC_STATE_SET", "AutoSwitchHAConnection", "AutoSwitchHAService"]
