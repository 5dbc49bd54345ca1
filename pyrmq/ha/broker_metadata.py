"""The broker id a controller assigned, kept on disk. Java BrokerMetadata, TempBrokerMetadata, MetadataFile.

``<storePathRootDir>/brokerIdentity`` (or storePathBrokerIdentity) holds
``clusterName#brokerName#brokerId``; while an id is being applied for, ``brokerIdentity-temp``
holds ``clusterName#brokerName#brokerId#registerCheckCode`` (the check code is
``<broker address>;<timestamp ms>``). No newline. Java deletes the file, then writes it through
``.tmp`` keeping a ``.bak`` (MixAll.string2File); ``clear`` deletes it.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

from pyrmq.common.files import write_file_atomically


@dataclass(slots=True)
class BrokerMetadata:
    path: str
    cluster_name: str | None = None
    broker_name: str | None = None
    broker_id: int | None = None

    def encode(self) -> str:
        return f"{self.cluster_name}#{self.broker_name}#{self.broker_id}"

    def decode(self, text: str) -> None:
        parts = text.split("#")
        if len(parts) < 3:
            raise ValueError(f"bad broker metadata {text!r}")
        self.cluster_name, self.broker_name, self.broker_id = parts[0], parts[1], int(parts[2])

    @property
    def is_loaded(self) -> bool:
        return bool(self.cluster_name) and bool(self.broker_name) and self.broker_id is not None

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def read(self) -> bool:
        """Load the file; False when it is missing or unreadable (the fields stay as they were)."""
        try:
            with open(self.path, encoding="utf-8") as f:
                self.decode(f.read())
        except (OSError, ValueError):
            return False
        return True

    def write(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        write_file_atomically(self.path, self.encode())

    def update_and_persist(self, cluster_name: str, broker_name: str, broker_id: int) -> None:
        self.cluster_name, self.broker_name, self.broker_id = cluster_name, broker_name, broker_id
        self.write()

    def clear_in_mem(self) -> None:
        self.cluster_name = self.broker_name = None
        self.broker_id = None

    def clear(self) -> None:
        self.clear_in_mem()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


@dataclass(slots=True)
class TempBrokerMetadata(BrokerMetadata):
    register_check_code: str | None = None

    def encode(self) -> str:
        return f"{self.cluster_name}#{self.broker_name}#{self.broker_id}#{self.register_check_code}"

    def decode(self, text: str) -> None:
        parts = text.split("#")
        if len(parts) < 4:
            raise ValueError(f"bad temp broker metadata {text!r}")
        self.cluster_name, self.broker_name, self.broker_id = parts[0], parts[1], int(parts[2])
        self.register_check_code = parts[3]

    @property
    def is_loaded(self) -> bool:
        return (
            bool(self.cluster_name)
            and bool(self.broker_name)
            and self.broker_id is not None
            and bool(self.register_check_code)
        )

    def update_and_persist_temp(self, cluster_name: str, broker_name: str, broker_id: int, code: str) -> None:
        self.cluster_name, self.broker_name, self.broker_id = cluster_name, broker_name, broker_id
        self.register_check_code = code
        self.write()

    def clear_in_mem(self) -> None:
        BrokerMetadata.clear_in_mem(self)
        self.register_check_code = None


__all__ = ["BrokerMetadata", "TempBrokerMetadata"]
