"""Namespaced key/value settings kept by the NameServer (order-topic config and the like).

Java: ``namesrv/kvconfig/KVConfigManager`` and ``KVConfigSerializeWrapper``.
Persisted after every change to ``kvConfigPath`` as
``{"configTable":{"<namespace>":{"<key>":"<value>"}}}`` and loaded at start;
a missing file is an empty table, an unreadable one is logged and ignored
(Java logs and starts empty).
"""

from __future__ import annotations

import logging
import os

from pyrmq.common.files import write_file_atomically
from pyrmq.protocol.bodies.namesrv import KVTable
from pyrmq.protocol.fastjson import BodyDecodeError, fastjson_dumps, lenient_loads

log = logging.getLogger("pyrmq.namesrv")

#: Java NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG
NAMESPACE_ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


def _present(kv: dict[str, str | None]) -> dict[str, str]:
    # fastjson leaves out map entries whose value is null
    return {k: v for k, v in kv.items() if v is not None}


class KVConfigManager:
    """``config_table``: namespace -> key -> value. Not thread-safe; one event loop owns it."""

    def __init__(self, kv_config_path: str | None) -> None:
        self.kv_config_path = kv_config_path
        self.config_table: dict[str, dict[str, str | None]] = {}

    def load(self) -> None:
        path = self.kv_config_path
        if not path or not os.path.exists(path):
            return
        try:
            with open(path, "rb") as f:
                data = f.read()
            obj = lenient_loads(data) if data.strip() else {}
        except (OSError, BodyDecodeError) as e:
            log.warning("load KV config table from %s failed: %s", path, e)
            return
        table = obj.get("configTable") if isinstance(obj, dict) else None
        if not isinstance(table, dict):
            return
        for ns, kv in table.items():
            if isinstance(kv, dict):
                self.config_table.setdefault(str(ns), {}).update(
                    {str(k): ("" if v is None else str(v)) for k, v in kv.items()}
                )
        log.info("load KV config table OK")

    def to_json(self) -> bytes:
        """The persisted form (``KVConfigSerializeWrapper#toJson``)."""
        return fastjson_dumps({"configTable": {ns: _present(kv) for ns, kv in self.config_table.items()}})

    def persist(self) -> None:
        if not self.kv_config_path:
            return
        try:
            write_file_atomically(self.kv_config_path, self.to_json().decode("utf-8"))
        except OSError as e:
            log.error("persist kvconfig to %s failed: %s", self.kv_config_path, e)

    def put_kv_config(self, namespace: str, key: str, value: str | None) -> None:
        kv = self.config_table.setdefault(namespace, {})
        prev = kv.get(key)
        kv[key] = value  # None like Java's HashMap#put(key, null): invisible to readers
        log.info(
            "putKVConfig %s config item, Namespace: %s Key: %s Value: %s",
            "update" if prev is not None else "create new",
            namespace,
            key,
            value,
        )
        self.persist()

    def delete_kv_config(self, namespace: str | None, key: str | None) -> None:
        """A missing namespace or key (Java lets a null through) deletes nothing."""
        kv = self.config_table.get(namespace) if namespace is not None else None
        if kv is not None and key is not None:
            value = kv.pop(key, None)
            log.info("deleteKVConfig delete a config item, Namespace: %s Key: %s Value: %s", namespace, key, value)
        self.persist()

    def get_kv_config(self, namespace: str | None, key: str | None) -> str | None:
        kv = self.config_table.get(namespace) if namespace is not None else None
        return None if kv is None or key is None else kv.get(key)

    def get_kv_list_by_namespace(self, namespace: str | None) -> bytes | None:
        """KVTable JSON of one namespace, or None when the namespace does not exist."""
        kv = self.config_table.get(namespace) if namespace is not None else None
        if kv is None:
            return None
        return KVTable(_present(kv)).encode()


__all__ = ["NAMESPACE_ORDER_TOPIC_CONFIG", "KVConfigManager"]
