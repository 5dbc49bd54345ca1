"""Bodies shared by the name server and the broker: the topic table and its version stamp.

Java: ``remoting/protocol/DataVersion``, ``common/TopicConfig``,
``remoting/protocol/body/TopicConfig{,AndMapping}SerializeWrapper``.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from pyrmq.common.constants import perm_string
from pyrmq.common.properties import PropertiesError, load_properties
from pyrmq.protocol.errors import NoPermission, SystemError_
from pyrmq.protocol.fastjson import BodyDecodeError, FastJsonBody, JsonObject, fastjson_dumps, lenient_loads


@dataclass(slots=True)
class DataVersion(FastJsonBody):
    """Version stamp of a broker's topic table. Java: remoting/protocol/DataVersion.

    Equality and ``compare`` follow Java (stateVersion, then counter, then timestamp).
    """

    counter: int = 0
    state_version: int = 0
    timestamp: int = 0

    def compare(self, other: DataVersion) -> int:
        a = (self.state_version, self.counter, self.timestamp)
        b = (other.state_version, other.counter, other.timestamp)
        return (a > b) - (a < b)

    def next_version(self, now_ms: int, state_version: int | None = None) -> None:
        if state_version is not None:
            self.state_version = state_version
        self.timestamp = now_ms
        self.counter += 1


@dataclass(slots=True)
class TopicConfig(FastJsonBody):
    """One topic as a broker registers it. Java: common/TopicConfig.

    ``encode_text``/``decode_text`` are the space separated form used inside a
    compressed RegisterBrokerBody (``TopicConfig#encode``/``#decode``).
    """

    topic_name: str | None = None
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = 6
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False
    attributes: dict[str, str] = field(default_factory=dict)

    def java_string(self) -> str:
        """``TopicConfig#toString``: what Java puts in remarks and mqadmin prints."""
        attrs = ", ".join(f"{k}={v}" for k, v in (self.attributes or {}).items())
        return (
            f"TopicConfig [topicName={self.topic_name}, readQueueNums={self.read_queue_nums}, "
            f"writeQueueNums={self.write_queue_nums}, perm={perm_string(self.perm)}, "
            f"topicFilterType={self.topic_filter_type}, topicSysFlag={self.topic_sys_flag}, "
            f"order={'true' if self.order else 'false'}, attributes={{{attrs}}}]"
        )

    def encode_text(self) -> str:
        attrs = fastjson_dumps(self.attributes).decode() if self.attributes is not None else ""
        return (
            f"{self.topic_name} {self.read_queue_nums} {self.write_queue_nums} "
            f"{self.perm} {self.topic_filter_type} {attrs}"
        )

    @classmethod
    def decode_text(cls, text: str) -> TopicConfig:
        parts = text.split(" ")
        while parts and parts[-1] == "":  # Java String#split drops trailing empties
            parts.pop()
        if len(parts) < 5:
            raise BodyDecodeError(f"TopicConfig text has {len(parts)} fields: {text[:80]!r}")
        try:
            tc = cls(
                topic_name=parts[0],
                read_queue_nums=int(parts[1]),
                write_queue_nums=int(parts[2]),
                perm=int(parts[3]),
                topic_filter_type=parts[4],
            )
        except ValueError:
            raise BodyDecodeError(f"bad TopicConfig text: {text[:80]!r}") from None
        if len(parts) >= 6:
            # Java ignores an attributes JSON it cannot parse (e.g. one holding a space)
            try:
                attrs = lenient_loads(parts[5])
                if isinstance(attrs, dict):
                    tc.attributes = {str(k): str(v) for k, v in attrs.items()}
            except BodyDecodeError:
                pass
        return tc


@dataclass(slots=True)
class TopicConfigSerializeWrapper(FastJsonBody):
    """A broker's topic table with its version. Java: body/TopicConfigSerializeWrapper.

    Also the whole REGISTER_BROKER body of brokers older than V3_0_11.
    """

    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)


@dataclass(slots=True)
class TopicConfigAndMappingSerializeWrapper(TopicConfigSerializeWrapper):
    """5.x wrapper with static-topic mappings. Java: body/TopicConfigAndMappingSerializeWrapper.

    Mapping infos/details are kept as parsed JSON objects: pyrmq does not
    implement static topics, it only carries them through to route data.
    """

    topic_queue_mapping_info_map: dict[str, JsonObject] = field(default_factory=dict)
    topic_queue_mapping_detail_map: dict[str, JsonObject] = field(default_factory=dict)
    mapping_data_version: DataVersion = field(default_factory=DataVersion)


def decode_config_update(body: bytes | bytearray | memoryview, black_list: Collection[str]) -> dict[str, str]:
    """The properties text of UPDATE_BROKER_CONFIG, UPDATE_NAMESRV_CONFIG and UPDATE_CONTROLLER_CONFIG.

    Java: ``MixAll.string2Properties(new String(body, UTF-8))`` (bad bytes become U+FFFD, never an
    error); SYSTEM_ERROR ``string2Properties error`` when the text does not parse, NO_PERMISSION
    when it names a black-listed key.
    """
    try:
        props = load_properties(bytes(body).decode("utf-8", "replace"))
    except PropertiesError:
        raise SystemError_("string2Properties error") from None
    if any(k in black_list for k in props):
        raise NoPermission("Can not update config in black list.")
    return props
