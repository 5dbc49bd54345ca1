"""Bodies of the name-server requests: broker registration, route data, cluster info, KV tables.

Java: ``remoting/protocol/body/{RegisterBrokerBody,ClusterInfo,TopicList,KVTable,
BrokerMemberGroup,GetBrokerMemberGroupResponseBody}`` and ``remoting/protocol/route/``.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

from pyrmq.protocol.bodies.common import DataVersion, TopicConfig, TopicConfigAndMappingSerializeWrapper
from pyrmq.protocol.fastjson import BodyDecodeError, FastJsonBody, JsonObject, fastjson_dumps, lenient_loads
from pyrmq.protocol.version import MQVersion

_INT = struct.Struct(">i")


def _looks_like_zlib(data: bytes | bytearray | memoryview) -> bool:
    """RFC 1950 header: CM = 8 (deflate), CINFO <= 7, FCHECK makes the pair a multiple of 31."""
    if len(data) < 2:
        return False
    cmf, flg = data[0], data[1]
    return cmf & 0x0F == 8 and cmf >> 4 <= 7 and (cmf << 8 | flg) % 31 == 0


@dataclass(slots=True)
class RegisterBrokerBody(FastJsonBody):
    """REGISTER_BROKER body of brokers >= V3_0_11. Java: body/RegisterBrokerBody.

    The compressed form (header ``compressed=true``) is a zlib stream of:
    int32 len + DataVersion JSON; int32 topic count; per topic int32 len +
    ``TopicConfig#encode`` text; int32 len + filterServerList JSON; and, for
    request version >= V5_0_0, int32 count + (int32 len + TopicQueueMappingInfo
    JSON) each. All ints big-endian.
    """

    topic_config_serialize_wrapper: TopicConfigAndMappingSerializeWrapper = field(
        default_factory=TopicConfigAndMappingSerializeWrapper
    )
    filter_server_list: list[str] = field(default_factory=list)

    def encode_compressed(self, version: int = MQVersion.V5_0_0) -> bytes:
        w = self.topic_config_serialize_wrapper
        parts: list[bytes] = []

        def chunk(b: bytes) -> None:
            parts.append(_INT.pack(len(b)))
            parts.append(b)

        chunk(w.data_version.encode())
        parts.append(_INT.pack(len(w.topic_config_table)))
        for tc in w.topic_config_table.values():
            chunk(tc.encode_text().encode("utf-8"))
        chunk(fastjson_dumps(self.filter_server_list))
        if version >= MQVersion.V5_0_0:
            infos = w.topic_queue_mapping_info_map or {}
            parts.append(_INT.pack(len(infos)))
            for info in infos.values():
                chunk(fastjson_dumps(info))
        return zlib.compress(b"".join(parts), 9)

    @classmethod
    def decode_compressed(cls, data: bytes, version: int) -> RegisterBrokerBody:
        """Raises BodyDecodeError for a damaged or truncated stream."""
        try:
            raw = zlib.decompress(bytes(data))
        except zlib.error as e:
            raise BodyDecodeError(f"compressed RegisterBrokerBody: {e}") from None
        pos = 0

        def take(n: int) -> bytes:
            nonlocal pos
            if n < 0 or pos + n > len(raw):
                raise BodyDecodeError("compressed RegisterBrokerBody: End of compressed data has reached")
            b = raw[pos : pos + n]
            pos += n
            return b

        def read_int() -> int:
            (n,) = _INT.unpack(take(4))
            return int(n)

        body = cls()
        w = body.topic_config_serialize_wrapper
        w.data_version = DataVersion.decode(take(read_int()))
        for _ in range(read_int()):
            tc = TopicConfig.decode_text(take(read_int()).decode("utf-8"))
            assert tc.topic_name is not None  # the text's first field
            w.topic_config_table[tc.topic_name] = tc
        try:
            servers = lenient_loads(take(read_int()))
            body.filter_server_list = [str(s) for s in servers] if isinstance(servers, list) else []
        except BodyDecodeError:
            body.filter_server_list = []  # Java logs and goes on with an empty list
        if version >= MQVersion.V5_0_0:
            for _ in range(read_int()):
                info = lenient_loads(take(read_int()))
                if isinstance(info, dict):
                    w.topic_queue_mapping_info_map[str(info.get("topic"))] = info
        return body

    @classmethod
    def decode_request(cls, data: bytes | None, compressed: bool, version: int) -> RegisterBrokerBody:
        """Body of a REGISTER_BROKER request (``DefaultRequestProcessor#registerBroker``)."""
        if not data:
            body = cls()
            body.topic_config_serialize_wrapper.data_version = DataVersion(0, 0, 0)
            return body
        if compressed or _looks_like_zlib(data):
            # 5.x brokers with compressedRegister=true send a compressed body but always
            # set the header's compressed=false (BrokerOuterAPI#registerBrokerAll), which
            # the Java NameServer then fails to parse; a JSON body never starts like zlib.
            return cls.decode_compressed(data, version)
        return cls.decode(data)


# --------------------------------------------------------------------------- route data


@dataclass(slots=True)
class QueueData(FastJsonBody):
    """Queues of one topic on one broker name. Java: route/QueueData.

    Reads the pre-4.9.0 spelling ``topicSynFlag`` too (spec §3.3).
    """

    broker_name: str | None = None
    read_queue_nums: int = 0
    write_queue_nums: int = 0
    perm: int = 0
    topic_sys_flag: int = field(default=0, metadata={"aliases": ("topicSynFlag",)})


@dataclass(slots=True)
class BrokerData(FastJsonBody):
    """Addresses of one broker name (id 0 = master). Java: route/BrokerData."""

    cluster: str | None = None
    broker_name: str | None = None
    broker_addrs: dict[int, str] = field(default_factory=dict)
    zone_name: str | None = None
    enable_acting_master: bool = False

    def copy(self) -> BrokerData:
        return BrokerData(
            self.cluster, self.broker_name, dict(self.broker_addrs), self.zone_name, self.enable_acting_master
        )


@dataclass(slots=True)
class TopicRouteData(FastJsonBody):
    """GET_ROUTEINFO_BY_TOPIC answer. Java: route/TopicRouteData.

    ``encode(standard=True)`` for clients >= V4_9_4 or ``acceptStandardJsonOnly``.
    """

    order_topic_conf: str | None = None
    queue_datas: list[QueueData] | None = None
    broker_datas: list[BrokerData] | None = None
    filter_server_table: dict[str, list[str]] | None = None
    topic_queue_mapping_by_broker: dict[str, JsonObject] | None = None


@dataclass(slots=True)
class ClusterInfo(FastJsonBody):
    """GET_BROKER_CLUSTER_INFO answer. Java: body/ClusterInfo."""

    broker_addr_table: dict[str, BrokerData] | None = None
    cluster_addr_table: dict[str, list[str]] | None = None


@dataclass(slots=True)
class TopicList(FastJsonBody):
    """Topic list answers. Java: body/TopicList (brokerAddr only for system topics)."""

    topic_list: list[str] = field(default_factory=list)
    broker_addr: str | None = None


@dataclass(slots=True)
class KVTable(FastJsonBody):
    """Key/value map of one KV config namespace. Java: body/KVTable."""

    table: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class BrokerMemberGroup(FastJsonBody):
    """All addresses of one broker name. Java: body/BrokerMemberGroup."""

    cluster: str | None = None
    broker_name: str | None = None
    broker_addrs: dict[int, str] = field(default_factory=dict)


@dataclass(slots=True)
class GetBrokerMemberGroupResponseBody(FastJsonBody):
    """GET_BROKER_MEMBER_GROUP answer. Java: body/GetBrokerMemberGroupResponseBody."""

    broker_member_group: BrokerMemberGroup | None = None
