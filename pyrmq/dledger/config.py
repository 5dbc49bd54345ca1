"""DLedgerConfig: the keys a member runs with, and the ``peers`` string both Java and pyrmq read.

Java: ``io.openmessaging.storage.dledger.DLedgerConfig`` (0.3.2). A RocketMQ broker fills it from
its own keys (``dLegerGroup``, ``dLegerPeers``, ``dLegerSelfId``, ``storePathRootDir`` as the store
base directory, ``mappedFileSizeCommitLog`` as the data file size).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .raft import Timing
from .store_files import DEFAULT_DATA_FILE_SIZE, DEFAULT_INDEX_FILE_SIZE, default_path

__all__ = ["DLedgerConfig", "parse_peers"]


def parse_peers(peers: str) -> dict[str, str]:
    """``n0-127.0.0.1:40911;n1-127.0.0.1:40912``: id -> address, in the string's order
    (DLedgerConfig#getPeers split on ``;``, then on the first ``-``). Raises ValueError."""
    out: dict[str, str] = {}
    for part in peers.split(";"):
        part = part.strip()
        if not part:
            continue
        member_id, sep, addr = part.partition("-")
        host, colon, port = addr.rpartition(":")
        if not sep or not member_id or not colon or not host or not port.isdigit():
            raise ValueError(f"bad DLedger peer {part!r}: expected <id>-<host>:<port>")
        if member_id in out:
            raise ValueError(f"DLedger peer {member_id!r} is listed twice")
        out[member_id] = addr
    if not out:
        raise ValueError("no DLedger peers")
    return out


@dataclass(frozen=True, slots=True)
class DLedgerConfig:
    """What one member needs. ``peers`` is the Java string; ``store_base_dir`` holds
    ``dledger-<self_id>/`` (``data_store_path`` replaces its ``data/`` when set)."""

    group: str
    self_id: str
    peers: str
    store_base_dir: str
    data_file_size: int = DEFAULT_DATA_FILE_SIZE  # mappedFileSizeForEntryData
    index_file_size: int = DEFAULT_INDEX_FILE_SIZE  # mappedFileSizeForEntryIndex
    data_store_path: str | None = None  # dataStorePath
    timing: Timing = field(default_factory=Timing)
    flush_interval_ms: int = 10  # flushFileInterval
    checkpoint_interval_ms: int = 3000  # checkPointInterval
    max_wait_ack_time_ms: int = 2500  # maxWaitAckTimeMs
    rpc_timeout_ms: int = 3000  # DLedgerRpcNettyService's invokeAsync timeout
    preferred_leader_ids: str | None = None  # preferredLeaderIds: ``n0;n1``, who should lead when alive

    def peer_map(self) -> dict[str, str]:
        peers = parse_peers(self.peers)
        if self.self_id not in peers:
            raise ValueError(f"self id {self.self_id!r} is not one of the peers {list(peers)}")
        return peers

    @property
    def store_path(self) -> str:
        return default_path(self.store_base_dir, self.self_id)
