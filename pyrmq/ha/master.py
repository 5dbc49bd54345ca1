"""The master side of classic HA: serve slaves on haListenPort, stream the commit log to each.

Java: store.ha.DefaultHAService (AcceptSocketService, push2SlaveMaxOffset, isSlaveOK,
inSyncReplicasNums) and store.ha.DefaultHAConnection (ReadSocketService: the slave's reports;
WriteSocketService: frames and heartbeats). One asyncio task pair per slave instead of two
threads; the store is read on the event loop, which is also where the broker puts, so a read
never sees a half-written record past the write position.

The master learns of new data by polling every 100 ms (Java: WaitNotifyObject#allWaitForRunning(100)
for an ASYNC_MASTER) or at once through ``wakeup()``; the put path of an ASYNC_MASTER (or of a put that does not wait) does no HA work.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field

from pyrmq.ha.flow import FlowMonitor
from pyrmq.ha.protocol import HAConnectionState, ReportDecoder, encode_transfer_header, first_transfer_offset
from pyrmq.protocol.bodies.admin import HAConnectionRuntimeInfo
from pyrmq.store.message_store import MessageStore
from pyrmq.store.results import PutMessageStatus

log = logging.getLogger("pyrmq.ha")

#: WaitNotifyObject#allWaitForRunning(100): how long a connection with nothing to send sleeps
POLL_INTERVAL_S = 0.1
_READ_SIZE = 64 * 1024


class HAConnection:
    """One slave's connection. Java DefaultHAConnection.

    ``slave_request_offset`` is the slave's first report (where the transfer starts),
    ``slave_ack_offset`` its latest (what it holds). Ends on EOF, a read or write error, a bad
    report, or ``haHousekeepingInterval`` without a report.
    """

    def __init__(self, service: HAService, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.service = service
        self._reader = reader
        self._writer = writer
        peer = writer.get_extra_info("peername")
        self.client_address = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.state = HAConnectionState.TRANSFER
        self.slave_request_offset = -1
        self.slave_ack_offset = -1
        self.next_transfer_from_where = -1
        #: why this slave gets heartbeats only (see _check_request); None for a normal slave
        self.diverged: str | None = None
        self.flow = FlowMonitor()
        self._requested = asyncio.Event()
        self._last_write = time.monotonic()

    async def run(self) -> None:
        """Serve until either direction ends, then close."""
        reading = asyncio.create_task(self._read_loop(), name=f"ha-read-{self.client_address}")
        writing = asyncio.create_task(self._write_loop(), name=f"ha-write-{self.client_address}")
        try:
            done, _ = await asyncio.wait((reading, writing), return_when=asyncio.FIRST_COMPLETED)
            for t in done:
                if not t.cancelled() and t.exception() is not None:
                    log.warning("HA connection %s closed: %s", self.client_address, t.exception())
        finally:
            for t in (reading, writing):
                t.cancel()
            for t in (reading, writing):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t
            self.close()

    def close(self) -> None:
        self.state = HAConnectionState.SHUTDOWN
        self._writer.close()

    async def _read_loop(self) -> None:
        """Java ReadSocketService: the last whole report wins; the first one is the request."""
        decoder = ReportDecoder()
        housekeeping = self.service.store.config.ha_housekeeping_interval / 1000
        while True:
            try:
                data = await asyncio.wait_for(self._reader.read(_READ_SIZE), housekeeping)
            except TimeoutError:
                log.warning("ha housekeeping: slave %s silent for %.0f s, closing", self.client_address, housekeeping)
                return
            if not data:
                log.info("slave %s closed the HA connection", self.client_address)
                return
            offset = decoder.feed(data)  # HAProtocolError ends the task, and so the connection
            if offset is None:
                continue
            self.slave_ack_offset = offset
            if self.slave_request_offset < 0:
                self.slave_request_offset = offset
                log.info("slave[%s] request offset %d", self.client_address, offset)
                self._check_request(offset)
                self._requested.set()
            if self.diverged is None:
                self.service.notify_transfer_some(offset)

    @property
    def acked_offset(self) -> int:
        """What this slave holds of the master's log: -1 for a diverged slave, whatever it reports."""
        return -1 if self.diverged is not None else self.slave_ack_offset

    def _check_request(self, offset: int) -> None:
        """Stricter than Java, which streams from any requested offset: a slave ahead of the master
        holds records the master never wrote (say the master lost unflushed data in a crash), and
        one below the master's first file asks for data already cleaned. Java would ack the first
        falsely and later send it data that does not line up; it would keep the second waiting.
        pyrmq keeps both connected on heartbeats only, never counts their acks, and says why."""
        store = self.service.store
        max_offset, min_offset = store.get_max_phy_offset(), store.get_min_phy_offset()
        if offset > max_offset:
            self.diverged = f"its commit log ends at {offset}, beyond the master's {max_offset}"
        elif 0 < offset < min_offset:
            self.diverged = f"it asks for {offset}, before the master's first offset {min_offset} (cleaned)"
        if self.diverged is not None:
            log.error(
                "slave[%s] cannot replicate: %s; it gets heartbeats only and its acks do not count",
                self.client_address,
                self.diverged,
            )

    async def _write_loop(self) -> None:
        """Java WriteSocketService: once the slave asked, frames of at most haTransferBatchSize from
        one file; a heartbeat (empty frame at the next offset) after haSendHeartbeatInterval idle."""
        await self._requested.wait()
        service = self.service
        store = service.store
        config = store.config
        self.next_transfer_from_where = first_transfer_offset(
            self.slave_request_offset, store.get_max_phy_offset(), config.mapped_file_size_commit_log
        )
        log.info(
            "master transfer data from %d to slave[%s], and slave request %d",
            self.next_transfer_from_where,
            self.client_address,
            self.slave_request_offset,
        )
        writer = self._writer
        while self.diverged is not None:
            writer.write(encode_transfer_header(self.next_transfer_from_where, 0))
            await self._drained()
            await asyncio.sleep(config.ha_send_heartbeat_interval / 1000)
        while True:
            if time.monotonic() - self._last_write > config.ha_send_heartbeat_interval / 1000:
                writer.write(encode_transfer_header(self.next_transfer_from_where, 0))
                await self._drained()
            view = store.get_commit_log_data(self.next_transfer_from_where, config.ha_transfer_batch_size)
            if view is None:
                await service.wait_for_data(POLL_INTERVAL_S)
                continue
            try:
                body = bytes(view)  # the transport may keep what it cannot send at once: no mmap views
            finally:
                view.release()
            offset = self.next_transfer_from_where
            self.next_transfer_from_where = offset + len(body)
            writer.writelines((encode_transfer_header(offset, len(body)), body))
            self.flow.add(len(body))
            await self._drained()

    async def _drained(self) -> None:
        await self._writer.drain()
        self._last_write = time.monotonic()


@dataclass(slots=True)
class GroupTransferRequest:
    """One waiting put. Java CommitLog.GroupCommitRequest as the HA service holds it."""

    next_offset: int
    ack_nums: int
    future: Future[PutMessageStatus]
    timer: asyncio.TimerHandle | None = field(default=None)


def _complete(fut: Future[PutMessageStatus], status: PutMessageStatus) -> None:
    with contextlib.suppress(InvalidStateError):
        fut.set_result(status)


class HAService:
    """Accepts slaves on haListenPort and tracks what they hold. Java DefaultHAService (master part).

    ``push2slave_max_offset`` is the highest offset any slave acknowledged. A SYNC_MASTER's
    waiting puts ask ``request`` (the store's ReplicaAcks) for acks (Java GroupTransferService).
    """

    #: the store's ReplicaAcks: classic HA never waits for a sync state set
    controller_mode = False

    def __init__(self, store: MessageStore, host: str = "0.0.0.0") -> None:
        self.store = store
        self.host = host
        self.connections: list[HAConnection] = []
        self.push2slave_max_offset = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._data = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._requests: list[GroupTransferRequest] = []

    @property
    def port(self) -> int:
        return self.store.config.ha_listen_port

    async def start(self) -> None:
        """Listen; port 0 lets the OS pick and writes the port back to haListenPort (Java
        AcceptSocketService#beginAccept)."""
        self._loop = asyncio.get_running_loop()
        self._server = await asyncio.start_server(
            self._accept, self.host, self.store.config.ha_listen_port, reuse_address=True
        )
        if self.store.config.ha_listen_port == 0:
            self.store.config.ha_listen_port = self._server.sockets[0].getsockname()[1]
        log.info("HAService listening on %s:%d", self.host, self.store.config.ha_listen_port)

    async def shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for conn in list(self.connections):
            conn.close()  # its read loop sees the end and the connection task returns
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)
        requests, self._requests = self._requests, []
        for req in requests:
            self._finish(req, PutMessageStatus.FLUSH_SLAVE_TIMEOUT)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = self.new_connection(reader, writer)
        log.info("HAService receive new connection, %s", conn.client_address)
        self.connections.append(conn)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await conn.run()
        finally:
            self.remove_connection(conn)
            if task is not None:
                self._tasks.discard(task)

    def new_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> HAConnection:
        """The connection object of an accepted slave (AutoSwitch HA serves its own kind)."""
        return HAConnection(self, reader, writer)

    def remove_connection(self, conn: HAConnection) -> None:
        """A slave's connection ended (Java DefaultHAService#removeConnection)."""
        self.connections.remove(conn)

    # --- data and acknowledgements ---------------------------------------------------------------
    def wakeup(self) -> None:
        """New data in the commit log: every connection waiting for some looks at once."""
        event, self._data = self._data, asyncio.Event()
        event.set()

    async def wait_for_data(self, timeout_s: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._data.wait(), timeout_s)

    def notify_transfer_some(self, offset: int) -> None:
        """A slave acknowledged ``offset``: waiting puts it completes answer PUT_OK. Java
        DefaultHAService#notifyTransferSome and GroupTransferService#doWaitTransfer."""
        if offset > self.push2slave_max_offset:
            self.push2slave_max_offset = offset
        if self._requests:
            keep = []
            for req in self._requests:
                if self._transfer_ok(req):
                    self._finish(req, PutMessageStatus.PUT_OK)
                elif not req.future.done():
                    keep.append(req)
            self._requests = keep

    def request(self, next_offset: int, ack_nums: int, timeout_ms: int) -> Future[PutMessageStatus]:
        """The store's ReplicaAcks (pyrmq/store/replica.py): PUT_OK once ``ack_nums`` replicas,
        the master included, hold the commit log up to ``next_offset``; FLUSH_SLAVE_TIMEOUT after
        ``timeout_ms``. Any thread may call it; the future is completed on the event loop, by an
        acknowledgement or by a timer. Java HAService#putRequest and GroupTransferService."""
        fut: Future[PutMessageStatus] = Future()
        req = GroupTransferRequest(next_offset, ack_nums, fut)
        loop = self._loop
        if loop is None or loop.is_closed():
            _complete(fut, PutMessageStatus.FLUSH_SLAVE_TIMEOUT)
            return fut
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._add_request(req, timeout_ms)
        else:
            try:
                loop.call_soon_threadsafe(self._add_request, req, timeout_ms)
            except RuntimeError:  # the loop closed meanwhile: nobody will acknowledge
                _complete(fut, PutMessageStatus.FLUSH_SLAVE_TIMEOUT)
        return fut

    def _add_request(self, req: GroupTransferRequest, timeout_ms: int) -> None:
        if self._transfer_ok(req):
            self._finish(req, PutMessageStatus.PUT_OK)
            return
        if self._server is None or self._loop is None:  # shut down
            self._finish(req, PutMessageStatus.FLUSH_SLAVE_TIMEOUT)
            return
        req.timer = self._loop.call_later(timeout_ms / 1000, self._expire, req)
        self._requests.append(req)
        self.wakeup()  # Java: haService.getWaitNotifyObject().wakeupAll()

    def _expire(self, req: GroupTransferRequest) -> None:
        if not req.future.done():
            log.warning(
                "transfer message to slave timeout, offset : %d, request acks: %d", req.next_offset, req.ack_nums
            )
        self._finish(req, PutMessageStatus.FLUSH_SLAVE_TIMEOUT)
        with contextlib.suppress(ValueError):
            self._requests.remove(req)

    def _transfer_ok(self, req: GroupTransferRequest) -> bool:
        """One ack: some slave acknowledged it (push2SlaveMaxOffset); more: the master plus every
        connection whose ack covers it. Java GroupTransferService#doWaitTransfer (not controller mode)."""
        if req.ack_nums <= 1:
            return self.push2slave_max_offset >= req.next_offset
        acks = 1 + sum(1 for c in self.connections if c.acked_offset >= req.next_offset)
        return acks >= req.ack_nums

    @staticmethod
    def _finish(req: GroupTransferRequest, status: PutMessageStatus) -> None:
        if req.timer is not None:
            req.timer.cancel()
        _complete(req.future, status)

    def is_slave_ok(self, master_put_where: int) -> bool:
        """A slave is connected and at most haMaxGapNotInSync behind. Java DefaultHAService#isSlaveOK."""
        return (
            bool(self.connections)
            and master_put_where - self.push2slave_max_offset < self.store.config.ha_max_gap_not_in_sync
        )

    def is_in_sync_slave(self, master_put_where: int, conn: HAConnection) -> bool:
        return (
            conn.diverged is None
            and master_put_where - conn.slave_ack_offset < self.store.config.ha_max_gap_not_in_sync
        )

    def in_sync_replicas_nums(self, master_put_where: int) -> int:
        """The master plus every in-sync slave. Java DefaultHAService#inSyncReplicasNums."""
        return 1 + sum(1 for c in self.connections if self.is_in_sync_slave(master_put_where, c))

    def runtime_info(self, master_put_where: int) -> list[HAConnectionRuntimeInfo]:
        """Per slave, what HARuntimeInfo shows (Java DefaultHAService#getRuntimeInfo, master side)."""
        return [
            HAConnectionRuntimeInfo(
                addr=c.client_address,
                slave_ack_offset=c.slave_ack_offset,
                diff=master_put_where - c.slave_ack_offset,
                in_sync=self.is_in_sync_slave(master_put_where, c),
                transferred_byte_in_second=c.flow.transferred_byte_in_second(),
                transfer_from_where=c.next_transfer_from_where,
            )
            for c in self.connections
        ]


__all__ = ["GroupTransferRequest", "HAConnection", "HAService"]
