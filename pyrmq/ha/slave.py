"""The slave side of classic HA: connect to the master's HA port, report, append what it streams.

Java: store.ha.DefaultHAClient (connectMaster, reportSlaveMaxOffset(Plus), dispatchReadRequest,
closeMasterAndWait). One asyncio task: connect, report the store's max offset, then read frames;
each frame must start at the store's max offset (or the store is empty), its records pass
CommitLogStreamCheck, and its bytes go to MessageStore.append_to_commit_log, whose dispatch builds
the consume queues and index. Any mismatch closes the connection; the client then waits
``retry_interval_s`` (Java: 5 s) and connects again, reporting its max offset anew.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from pyrmq.common.clock import Clock, now_ms
from pyrmq.ha.flow import FlowMonitor
from pyrmq.ha.protocol import (
    CommitLogStreamCheck,
    HAConnectionState,
    HAProtocolError,
    TransferDecoder,
    TransferFrame,
    encode_report,
)
from pyrmq.store.message_store import MessageStore

log = logging.getLogger("pyrmq.ha")

#: DefaultHAClient#closeMasterAndWait / the READY state's wait after a failed connect
RETRY_INTERVAL_S = 5.0
CONNECT_TIMEOUT_S = 3.0
_READ_SIZE = 256 * 1024


def parse_address(addr: str) -> tuple[str, int]:
    """``host:port`` (Java NetworkUtil#string2SocketAddress: the last colon splits)."""
    host, sep, port = addr.strip().rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"bad HA address {addr!r}")
    return host, int(port)


class MasterLink:
    """What every replica client does around its sessions: where the master is, connecting with
    retries, waking up, closing. Subclasses speak a protocol in ``_session``. Java
    DefaultHAClient / AutoSwitchHAClient (their shared service-thread shape).

    ``update_ha_master_address`` sets where to connect (from haMasterAddress, the name server's
    REGISTER_BROKER answer, or the controller); None stops connecting after the current session.
    """

    #: the log name (Java's service name) and the asyncio task name
    name = "HAClient"
    task_name = "ha-client"

    def __init__(self, store: MessageStore, *, retry_interval_s: float = RETRY_INTERVAL_S, clock: Clock = now_ms):
        self.store = store
        self.retry_interval_s = retry_interval_s
        self.clock = clock
        self.master_ha_address: str | None = None
        self.master_address: str | None = None
        self.state = HAConnectionState.READY
        self.current_reported_offset = 0
        self.last_read_timestamp = 0  # epoch ms, for runtime info
        self.last_write_timestamp = 0
        self.flow = FlowMonitor()
        self._check: CommitLogStreamCheck | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._last_write = 0.0  # monotonic

    # --- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=self.task_name)

    async def shutdown(self) -> None:
        self.state = HAConnectionState.SHUTDOWN
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        self._close()

    def update_ha_master_address(self, addr: str | None) -> None:
        if addr != self.master_ha_address:
            log.info("update master ha address, OLD: %s NEW: %s", self.master_ha_address, addr)
            self.master_ha_address = addr
            self._wake.set()

    def update_master_address(self, addr: str | None) -> None:
        if addr != self.master_address:
            log.info("update master address, OLD: %s NEW: %s", self.master_address, addr)
            self.master_address = addr

    def wakeup(self) -> None:
        """Retry now instead of at the end of the current wait."""
        self._wake.set()

    # --- the loop -----------------------------------------------------------------------------------
    def _before_connect(self) -> None:
        """Each round, before connecting (the controller-mode client truncates here)."""

    async def _session(self, reader: asyncio.StreamReader) -> None:
        raise NotImplementedError

    async def _read_master(
        self,
        reader: asyncio.StreamReader,
        on_data: Callable[[bytes], Awaitable[None]],
        heartbeat: Callable[[], Awaitable[None]],
    ) -> None:
        """Read until the connection fails: ``on_data`` with each chunk, ``heartbeat`` (which may
        send nothing) once haSendHeartbeatInterval passed without a write, TimeoutError after
        haHousekeepingInterval without a read. Java DefaultHAClient#run / AutoSwitchHAClient#run."""
        config = self.store.config
        interval = config.ha_send_heartbeat_interval / 1000
        housekeeping = config.ha_housekeeping_interval / 1000
        last_read = time.monotonic()
        while True:
            now = time.monotonic()
            if now - self._last_write > interval:
                await heartbeat()
                now = time.monotonic()
            if now - last_read > housekeeping:
                raise TimeoutError(f"master silent for {now - last_read:.0f} s (haHousekeepingInterval)")
            wait = max(min(self._last_write + interval, last_read + housekeeping) - now, 0.01)
            try:
                data = await asyncio.wait_for(reader.read(_READ_SIZE), wait)
            except TimeoutError:
                continue
            if not data:
                raise ConnectionResetError("master closed the connection")
            last_read = time.monotonic()
            self.last_read_timestamp = self.clock()
            await on_data(data)

    def _encode_report(self, offset: int) -> bytes:
        """The slave's report of its max offset, in this protocol."""
        return encode_report(offset)

    async def _report(self, offset: int) -> None:
        await self._write(self._encode_report(offset))

    async def _report_plus(self) -> None:
        """Report again when the store grew. Java DefaultHAClient#reportSlaveMaxOffsetPlus."""
        current = self.store.get_max_phy_offset()
        if current > self.current_reported_offset:
            self.current_reported_offset = current
            await self._report(current)

    async def _write(self, data: bytes) -> None:
        writer = self._writer
        if writer is None:
            raise ConnectionResetError("not connected")
        writer.write(data)
        await writer.drain()
        self._last_write = time.monotonic()
        self.last_write_timestamp = self.clock()

    def _stopped(self) -> bool:
        return self.state is HAConnectionState.SHUTDOWN

    async def _run(self) -> None:
        while not self._stopped():
            self._before_connect()
            addr = self.master_ha_address
            if not addr:
                await self._sleep(self.retry_interval_s)
                continue
            try:
                host, port = parse_address(addr)
                reader, self._writer = await asyncio.wait_for(asyncio.open_connection(host, port), CONNECT_TIMEOUT_S)
            except (OSError, ValueError, TimeoutError) as e:
                log.warning("%s connect to master %s failed: %s", self.name, addr, e)
                await self._sleep(self.retry_interval_s)
                continue
            log.info("%s connect to master %s", self.name, addr)
            try:
                await self._session(reader)
            except HAProtocolError as e:
                log.error("%s, connection to master %s closed: %s", self.name, addr, e)
            except (OSError, TimeoutError) as e:
                log.warning("%s, connection to master %s closed: %s", self.name, addr, e)
            finally:
                self._close()
            if not self._stopped():
                self.state = HAConnectionState.READY
                await self._sleep(self.retry_interval_s)

    async def _sleep(self, seconds: float) -> None:
        self._wake.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)

    def _close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


class HAClient(MasterLink):
    """Replicates the master's commit log into ``store``. Java DefaultHAClient."""

    def start(self) -> None:
        # the store's max offset is a record boundary after recovery (a torn record was cut)
        self._check = CommitLogStreamCheck(
            self.store.config.mapped_file_size_commit_log, self.store.get_max_phy_offset()
        )
        super().start()

    async def _session(self, reader: asyncio.StreamReader) -> None:
        self.state = HAConnectionState.TRANSFER
        await self._transfer(reader)

    async def _transfer(self, reader: asyncio.StreamReader) -> None:
        """Report, then read frames until the connection fails. Java DefaultHAClient#transferFromMaster."""
        decoder = TransferDecoder()
        self.current_reported_offset = self.store.get_max_phy_offset()
        await self._report(self.current_reported_offset)  # pyrmq: at once (Java: after the heartbeat interval)

        async def on_data(data: bytes) -> None:
            for frame in decoder.feed(data):
                self._append(frame)
            await self._report_plus()

        await self._read_master(reader, on_data, lambda: self._report(self.current_reported_offset))

    def _append(self, frame: TransferFrame) -> None:
        """Java DefaultHAClient#dispatchReadRequest for one frame: the offsets must agree unless the
        store is empty; the records must look like records; then append."""
        store = self.store
        slave_offset = store.get_max_phy_offset()
        if slave_offset != 0 and slave_offset != frame.physical_offset:
            raise HAProtocolError(
                f"master pushed offset not equal the max phy offset in slave, SLAVE: {slave_offset} "
                f"MASTER: {frame.physical_offset}"
            )
        if frame.is_heartbeat:
            return
        check = self._check
        assert check is not None
        if slave_offset == 0 and check.stream_end != frame.physical_offset:
            check.reset(frame.physical_offset)  # an empty store starts where the master starts
        check.check(frame.physical_offset, frame.body)
        if not store.append_to_commit_log(frame.physical_offset, frame.body):
            check.undo()
            raise HAProtocolError(f"the store refused {len(frame.body)} bytes at {frame.physical_offset}")
        self.flow.add(len(frame.body))


__all__ = ["HAClient", "MasterLink", "parse_address"]
