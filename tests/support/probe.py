"""A tiny, independent RemotingCommand client for readiness checks and polls.

Sends one JSON-serialized request and reads one reply over a fresh TCP
connection. Deliberately separate from pyrmq.remoting so the harness can judge
a server (pyrmq's or Java's) without trusting the code under test; the frame
layout is spec §1.2 (length, header word with serialize type 0, JSON header,
body). Only what fixtures need: GET_BROKER_CLUSTER_INFO, GET_ROUTEINFO_BY_TOPIC,
UPDATE_AND_CREATE_TOPIC and UPDATE_AND_CREATE_SUBSCRIPTIONGROUP.
"""

from __future__ import annotations

import itertools
import json
import re
import socket
import struct
from dataclasses import dataclass, field

UPDATE_AND_CREATE_TOPIC = 17
UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200
GET_ROUTEINFO_BY_TOPIC = 105
GET_BROKER_CLUSTER_INFO = 106
SUCCESS = 0
TOPIC_NOT_EXIST = 17

_opaque = itertools.count(1)


@dataclass
class Reply:
    code: int
    remark: str | None
    ext_fields: dict = field(default_factory=dict)
    body: bytes = b""

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def request(
    addr: str, code: int, ext_fields: dict[str, str] | None = None, timeout: float = 5.0, body: bytes = b""
) -> Reply:
    host, port = addr.rsplit(":", 1)
    opaque = next(_opaque)
    header = json.dumps(
        {
            "code": code,
            "extFields": ext_fields or {},
            "flag": 0,
            "language": "JAVA",
            "opaque": opaque,
            "serializeTypeCurrentRPC": "JSON",
            "version": 479,
        },
        separators=(",", ":"),
    ).encode()
    frame = struct.pack(">ii", 4 + len(header) + len(body), len(header)) + header + body
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.settimeout(timeout)
        s.sendall(frame)
        while True:
            (length,) = struct.unpack(">i", _recv_exact(s, 4))
            rest = _recv_exact(s, length)
            (word,) = struct.unpack_from(">i", rest)
            hlen = word & 0xFFFFFF
            if (word >> 24) & 0xFF != 0:
                raise ValueError(f"probe only reads JSON replies, got serialize type {(word >> 24) & 0xFF}")
            h = json.loads(rest[4 : 4 + hlen])
            if h.get("opaque") == opaque and h.get("flag", 0) & 1:
                return Reply(h["code"], h.get("remark"), h.get("extFields") or {}, rest[4 + hlen :])


def cluster_info(namesrv: str, timeout: float = 5.0) -> Reply:
    return request(namesrv, GET_BROKER_CLUSTER_INFO, timeout=timeout)


def broker_registered(namesrv: str, broker_name: str, broker_addr: str | None = None) -> bool:
    """True when the name server's cluster info lists broker_name (at broker_addr, if given).

    The body is fastjson with unquoted integer keys (spec §1.8), so it is matched
    as text rather than parsed.
    """
    try:
        r = cluster_info(namesrv)
    except OSError:
        return False
    if r.code != SUCCESS:
        return False
    text = r.text
    if not re.search(rf'"brokerName"\s*:\s*"{re.escape(broker_name)}"', text):
        return False
    return broker_addr is None or f'"{broker_addr}"' in text


def topic_route(namesrv: str, topic: str, timeout: float = 5.0) -> Reply:
    return request(namesrv, GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, timeout=timeout)


def create_topic(addr: str, topic: str, queues: int = 4, timeout: float = 10.0, attributes: str | None = None) -> None:
    """UPDATE_AND_CREATE_TOPIC on one broker, with every field Java's header requires;
    `attributes` as mqadmin's -a (e.g. "+message.type=FIFO")."""
    fields = {
        "topic": topic,
        "defaultTopic": "TBW102",
        "readQueueNums": str(queues),
        "writeQueueNums": str(queues),
        "perm": "6",
        "topicFilterType": "SINGLE_TAG",
    }
    if attributes is not None:
        fields["attributes"] = attributes
    r = request(addr, UPDATE_AND_CREATE_TOPIC, fields, timeout=timeout)
    if r.code != SUCCESS:
        raise RuntimeError(f"create topic {topic} on {addr}: {r.code} {r.remark}")


def create_group(addr: str, group: str, timeout: float = 10.0, **config) -> None:
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP on one broker: SubscriptionGroupConfig's JSON with
    `config`'s fields in Java's names (consumeMessageOrderly, retryMaxTimes, ...) over its defaults."""
    body = json.dumps({"groupName": group, **config}).encode()
    r = request(addr, UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body=body, timeout=timeout)
    if r.code != SUCCESS:
        raise RuntimeError(f"create group {group} on {addr}: {r.code} {r.remark}")
