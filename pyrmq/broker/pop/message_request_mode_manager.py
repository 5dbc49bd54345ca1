"""Which groups consume which topics by POP. Java: ``broker/loadbalance/MessageRequestModeManager``,
persisted as ``<storePathRootDir>/config/messageRequestMode.json`` (fastjson2 pretty, like every
ConfigManager file) and sent compact to a slave (GET_ALL_MESSAGE_REQUEST_MODE)."""

from __future__ import annotations

from pyrmq.broker.config_manager import ConfigManager
from pyrmq.protocol.bodies.pop import MessageRequestModeSerializeWrapper, SetMessageRequestModeRequestBody


class MessageRequestModeManager(ConfigManager):
    wrapper_class = MessageRequestModeSerializeWrapper

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.table: dict[str, dict[str, SetMessageRequestModeRequestBody]] = {}

    def decode_wrapper(self, wrapper: MessageRequestModeSerializeWrapper) -> None:
        self.table = wrapper.message_request_mode_map

    def build_serialize_wrapper(self) -> MessageRequestModeSerializeWrapper:
        return MessageRequestModeSerializeWrapper({t: dict(g) for t, g in self.table.items()})

    def set_message_request_mode(self, topic: str, group: str, body: SetMessageRequestModeRequestBody) -> None:
        self.table.setdefault(topic, {})[group] = body

    def get_message_request_mode(self, topic: str, group: str) -> SetMessageRequestModeRequestBody | None:
        return self.table.get(topic, {}).get(group)

    def replace_all(self, wrapper: MessageRequestModeSerializeWrapper) -> None:
        """A slave takes its master's whole table (Java SlaveSynchronize#syncMessageRequestMode)."""
        self.table = dict(wrapper.message_request_mode_map)
