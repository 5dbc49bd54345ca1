"""Java ``ConfigManager``: one JSON file under ``config/``, in the format ``pyrmq.store.config`` defines.

``load`` reads the file, else its ``.bak`` (raising ``ConfigFileError`` when neither reads);
``persist`` writes it the Java way. A manager says which wrapper class the file holds, how to
build one from its tables and how to take one back.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from pyrmq.store.config import decode_config, encode_config, persist_config_text, read_config_text

log = logging.getLogger("pyrmq.broker")


class ConfigManager:
    wrapper_class: ClassVar[type]
    path: str | None

    def build_serialize_wrapper(self) -> Any:
        raise NotImplementedError

    def decode_wrapper(self, wrapper: Any) -> None:
        raise NotImplementedError

    def load(self) -> None:
        if not self.path:
            return
        got = read_config_text(self.path, lambda t: decode_config(self.wrapper_class, t))
        if got is not None:
            self.decode_wrapper(got[0])

    def encode(self) -> str:
        """The file as Java 5.5.0 writes it (fastjson2 pretty)."""
        return encode_config(self.build_serialize_wrapper())

    def persist(self) -> bool:
        """True when the file was written."""
        if not self.path:
            return False
        try:
            persist_config_text(self.path, self.encode())
        except OSError as e:
            log.error("persist %s failed: %s", self.path, e)
            return False
        return True
