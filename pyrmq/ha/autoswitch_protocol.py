"""The AutoSwitch (controller mode) HA protocol, sans-IO: bytes in, events out; values in, bytes out.

Java: store.ha.autoswitch.AutoSwitchHAClient (HANDSHAKE_HEADER_SIZE, TRANSFER_HEADER_SIZE,
sendHandshakeHeader, reportSlaveOffset, HAClientReader) and AutoSwitchHAConnection (its own
HANDSHAKE_HEADER_SIZE / TRANSFER_HEADER_SIZE, buildHandshakeBuffer, buildTransferHeaderBuffer,
HAServerReader). Every unit starts with the sender's HAConnectionState ordinal (int32); all
big-endian, no framing word:

- slave -> master, handshake (16 bytes): state HANDSHAKE, isSyncFromLastFile int16,
  isAsyncLearner int16, slave broker id int64.
- slave -> master, report (12 bytes): state TRANSFER, the slave's max offset int64.
- master -> slave, handshake (20 bytes + 12 per epoch entry): state HANDSHAKE, body size int32,
  master max offset int64, last epoch int32; body: (epoch int32, start offset int64) per entry.
- master -> slave, transfer (36 bytes + body): state TRANSFER, body size int32, offset int64,
  epoch int32, epoch start offset int64, confirm offset int64; body: commit-log bytes (empty for
  a heartbeat).

Invariant of the decoders: ``feed`` returns events or raises HAProtocolError; after an error the
decoder stays failed (close the connection). docs/ha.md, "Controller mode", tells the rules.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from pyrmq.ha.protocol import MAX_TRANSFER_BODY_SIZE, HAConnectionState, StreamDecoder

_HANDSHAKE = HAConnectionState.HANDSHAKE.ordinal
_TRANSFER = HAConnectionState.TRANSFER.ordinal

#: slave -> master handshake (AutoSwitchHAClient.HANDSHAKE_HEADER_SIZE = 4 + 4 + 8)
SLAVE_HANDSHAKE = struct.Struct(
    ">i"  # current state: HANDSHAKE
    "h"  # isSyncFromLastFile
    "h"  # isAsyncLearner
    "q"  # slaveBrokerId
)
#: slave -> master report (AutoSwitchHAClient.TRANSFER_HEADER_SIZE = 4 + 8)
SLAVE_REPORT = struct.Struct(
    ">i"  # current state: TRANSFER
    "q"  # maxOffset
)
#: master -> slave handshake header (AutoSwitchHAConnection.HANDSHAKE_HEADER_SIZE = 4 + 4 + 8 + 4)
MASTER_HANDSHAKE = struct.Struct(
    ">i"  # current state: HANDSHAKE
    "i"  # body size: 12 * entries
    "q"  # master max physical offset
    "i"  # master's last epoch
)
#: one epoch entry of the master's handshake body (AutoSwitchHAConnection.EPOCH_ENTRY_SIZE)
EPOCH_ENTRY = struct.Struct(
    ">i"  # epoch
    "q"  # start offset
)
#: master -> slave transfer header (AutoSwitchHAConnection.TRANSFER_HEADER_SIZE = 20 + 8 + 8)
MASTER_TRANSFER = struct.Struct(
    ">i"  # current state: TRANSFER
    "i"  # body size
    "q"  # physical offset of the first body byte
    "i"  # epoch of the body
    "q"  # that epoch's start offset
    "q"  # confirm offset
)
#: Java's master keeps at most 1000 entries in its handshake buffer
MAX_HANDSHAKE_ENTRIES = 1000


@dataclass(frozen=True, slots=True)
class SlaveHandshake:
    """The slave's hello: who it is and how it wants the transfer to start."""

    slave_broker_id: int
    sync_from_last_file: bool = False
    async_learner: bool = False


@dataclass(frozen=True, slots=True)
class SlaveReport:
    """The slave's max offset: the first one is its request, every one its acknowledgement."""

    max_offset: int


@dataclass(frozen=True, slots=True)
class MasterHandshake:
    """The master's answer: its max offset, last epoch and epoch list (epoch, start offset)."""

    max_offset: int
    epoch: int
    entries: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class MasterTransfer:
    """A slice of the master's commit log within one epoch; ``body`` empty for a heartbeat."""

    offset: int
    epoch: int
    epoch_start_offset: int
    confirm_offset: int
    body: bytes = b""

    @property
    def is_heartbeat(self) -> bool:
        return not self.body


def encode_slave_handshake(h: SlaveHandshake) -> bytes:
    return SLAVE_HANDSHAKE.pack(_HANDSHAKE, int(h.sync_from_last_file), int(h.async_learner), h.slave_broker_id)


def encode_slave_report(max_offset: int) -> bytes:
    if max_offset < 0:
        raise ValueError(f"a slave reports a non-negative offset, not {max_offset}")
    return SLAVE_REPORT.pack(_TRANSFER, max_offset)


def encode_master_handshake(h: MasterHandshake) -> bytes:
    body = b"".join(EPOCH_ENTRY.pack(e, s) for e, s in h.entries)
    return MASTER_HANDSHAKE.pack(_HANDSHAKE, len(body), h.max_offset, h.epoch) + body


def encode_master_transfer_header(t: MasterTransfer, body_size: int | None = None) -> bytes:
    size = len(t.body) if body_size is None else body_size
    return MASTER_TRANSFER.pack(_TRANSFER, size, t.offset, t.epoch, t.epoch_start_offset, t.confirm_offset)


class SlaveStreamDecoder(StreamDecoder):
    """Master side: the slave's bytes -> SlaveHandshake / SlaveReport events, in order.

    Java HAServerReader: the first int says which unit follows; any state other than HANDSHAKE
    or TRANSFER is an error (Java logs "Current state illegal" and closes)."""

    __slots__ = ()

    def feed(self, data: bytes | bytearray | memoryview) -> list[SlaveHandshake | SlaveReport]:
        buf = self._append(data)
        out: list[SlaveHandshake | SlaveReport] = []
        while len(buf) >= 4:
            (state,) = buf.peek(_STATE)  # type: ignore[misc]
            if state == _HANDSHAKE:
                fields = buf.peek(SLAVE_HANDSHAKE)
                if fields is None:
                    break
                buf.skip(SLAVE_HANDSHAKE.size)
                _, last_file, learner, broker_id = fields
                out.append(SlaveHandshake(broker_id, last_file == 1, learner == 1))
            elif state == _TRANSFER:
                fields = buf.peek(SLAVE_REPORT)
                if fields is None:
                    break
                buf.skip(SLAVE_REPORT.size)
                if fields[1] < 0:
                    raise self._fail(f"slave reported a negative offset {fields[1]}")
                out.append(SlaveReport(fields[1]))
            else:
                raise self._fail(f"slave sent state {state}: only HANDSHAKE or TRANSFER may come")
        return out


_STATE = struct.Struct(">i")


class MasterStreamDecoder(StreamDecoder):
    """Slave side: the master's bytes -> MasterHandshake / MasterTransfer events, in order.

    Java HAClientReader: the state int picks the header (20 bytes for HANDSHAKE, 36 for
    TRANSFER). A body size outside [0, MAX_TRANSFER_BODY_SIZE], a handshake body that is not
    whole entries, or any other state raises HAProtocolError. Whether the state matches the
    slave's own is the client's check (Java closes on a mismatch)."""

    __slots__ = ()

    def feed(self, data: bytes | bytearray | memoryview) -> list[MasterHandshake | MasterTransfer]:
        buf = self._append(data)
        out: list[MasterHandshake | MasterTransfer] = []
        while len(buf) >= 4:
            (state,) = buf.peek(_STATE)  # type: ignore[misc]
            if state == _HANDSHAKE:
                fields = buf.peek(MASTER_HANDSHAKE)
                if fields is None:
                    break
                _, size, max_offset, epoch = fields
                if size < 0 or size % EPOCH_ENTRY.size or size > EPOCH_ENTRY.size * MAX_HANDSHAKE_ENTRIES:
                    raise self._fail(f"bad handshake body size {size}")
                if len(buf) < MASTER_HANDSHAKE.size + size:
                    break
                buf.skip(MASTER_HANDSHAKE.size)
                body = buf.take(size)
                entries = tuple(EPOCH_ENTRY.unpack_from(body, i) for i in range(0, size, EPOCH_ENTRY.size))
                out.append(MasterHandshake(max_offset, epoch, entries))
            elif state == _TRANSFER:
                fields = buf.peek(MASTER_TRANSFER)
                if fields is None:
                    break
                _, size, offset, epoch, epoch_start, confirm = fields
                if offset < -1 or not 0 <= size <= MAX_TRANSFER_BODY_SIZE:
                    raise self._fail(f"bad transfer header: offset {offset}, body size {size}")
                if len(buf) < MASTER_TRANSFER.size + size:
                    break
                buf.skip(MASTER_TRANSFER.size)
                out.append(MasterTransfer(offset, epoch, epoch_start, confirm, buf.take(size)))
            else:
                raise self._fail(f"master sent state {state}: only HANDSHAKE or TRANSFER may come")
        return out


__all__ = [
    "EPOCH_ENTRY",
    "MASTER_HANDSHAKE",
    "MASTER_TRANSFER",
    "SLAVE_HANDSHAKE",
    "SLAVE_REPORT",
    "MasterHandshake",
    "MasterStreamDecoder",
    "MasterTransfer",
    "SlaveHandshake",
    "SlaveReport",
    "SlaveStreamDecoder",
    "encode_master_handshake",
    "encode_master_transfer_header",
    "encode_slave_handshake",
    "encode_slave_report",
]
