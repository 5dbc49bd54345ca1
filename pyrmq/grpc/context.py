"""One RPC's context from its metadata (Java ``ProxyContext`` filled by ``GrpcMessagingApplication``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Java proxy/grpc/interceptor/InterceptorConstants
CLIENT_ID = "x-mq-client-id"
LANGUAGE = "x-mq-language"
CLIENT_VERSION = "x-mq-client-version"
NAMESPACE = "x-mq-namespace"
AUTHORIZATION = "authorization"  # GrpcConstants.AUTHORIZATION (pyrmq/grpc/auth.py)
DATE_TIME = "x-mq-date-time"  # GrpcConstants.DATE_TIME: what the SDK signs


def _peer_addr(peer: str) -> str:
    """grpc's ``ipv4:127.0.0.1:1234`` / ``ipv6:[::1]:1234`` as ``host:port``."""
    for scheme in ("ipv4:", "ipv6:"):
        if peer.startswith(scheme):
            return peer[len(scheme) :]
    return peer


@dataclass(slots=True)
class GrpcContext:
    client_id: str = ""
    language: str = ""
    client_version: str = ""
    namespace: str = ""
    remote_addr: str = ""
    local_addr: str = ""
    remaining_ms: int | None = None  # until the call's deadline (None: no deadline)
    authorization: str = ""
    date_time: str = ""

    @classmethod
    def of(cls, context: Any) -> GrpcContext:
        remaining = context.time_remaining()
        meta = {k.lower(): v for k, v in (context.invocation_metadata() or ())}
        return cls(
            client_id=str(meta.get(CLIENT_ID, "")),
            language=str(meta.get(LANGUAGE, "")),
            client_version=str(meta.get(CLIENT_VERSION, "")),
            namespace=str(meta.get(NAMESPACE, "")),
            remote_addr=_peer_addr(context.peer() or ""),
            remaining_ms=None if remaining is None else int(remaining * 1000),
            authorization=str(meta.get(AUTHORIZATION, "")),
            date_time=str(meta.get(DATE_TIME, "")),
        )


__all__ = ["GrpcContext"]
