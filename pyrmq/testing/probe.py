"""Blocking one-shot RemotingCommand requests, for readiness checks and the image's health check.

A fresh TCP connection per request, a JSON header (serialize type 0) and one reply
matched by opaque; Java counterpart: ``RemotingCommand#encodeHeader`` / ``decode``.
No asyncio here, so fixtures, Testcontainers wait strategies and ``HEALTHCHECK`` can
call it from any thread.
"""

from __future__ import annotations

import itertools
import json
import socket
import struct
from dataclasses import dataclass

GET_BROKER_CONFIG = 26
GET_BROKER_CLUSTER_INFO = 106
SUCCESS = 0

_opaque = itertools.count(1)


@dataclass(frozen=True)
class Reply:
    code: int
    remark: str | None
    body: bytes


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def request(addr: str, code: int, timeout: float = 3.0) -> Reply:
    """Send request `code` (no ext fields, no body) to ``host:port``; return the response."""
    host, port = addr.rsplit(":", 1)
    opaque = next(_opaque)
    header = json.dumps(
        {
            "code": code,
            "extFields": {},
            "flag": 0,
            "language": "JAVA",
            "opaque": opaque,
            "serializeTypeCurrentRPC": "JSON",
            "version": 479,
        },
        separators=(",", ":"),
    ).encode()
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.settimeout(timeout)
        s.sendall(struct.pack(">ii", 4 + len(header), len(header)) + header)
        while True:
            (length,) = struct.unpack(">i", _recv_exact(s, 4))
            frame = _recv_exact(s, length)
            (word,) = struct.unpack_from(">i", frame)
            hlen = word & 0xFFFFFF
            if word >> 24:
                raise ValueError(f"expected a JSON reply header, got serialize type {word >> 24}")
            h = json.loads(frame[4 : 4 + hlen])
            if h.get("opaque") == opaque and h.get("flag", 0) & 1:
                return Reply(int(h["code"]), h.get("remark"), frame[4 + hlen :])


def namesrv_ok(addr: str, timeout: float = 3.0) -> bool:
    """The name server answers GET_BROKER_CLUSTER_INFO with SUCCESS."""
    try:
        return request(addr, GET_BROKER_CLUSTER_INFO, timeout).code == SUCCESS
    except (OSError, ValueError):
        return False


def broker_ok(addr: str, timeout: float = 3.0) -> bool:
    """The broker answers GET_BROKER_CONFIG with SUCCESS."""
    try:
        return request(addr, GET_BROKER_CONFIG, timeout).code == SUCCESS
    except (OSError, ValueError):
        return False


def broker_registered(namesrv: str, broker_addr: str, timeout: float = 3.0) -> bool:
    """The name server's cluster info lists `broker_addr` (fastjson body: matched as text)."""
    try:
        reply = request(namesrv, GET_BROKER_CLUSTER_INFO, timeout)
    except (OSError, ValueError):
        return False
    return reply.code == SUCCESS and f'"{broker_addr}"'.encode() in reply.body


__all__ = ["Reply", "broker_ok", "broker_registered", "namesrv_ok", "request"]
