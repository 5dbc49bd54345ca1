"""Authentication and authorization of gRPC calls, the broker's users and ACLs applied to the
5.x SDKs as the Java proxy applies them (proxy/grpc/pipeline Authentication- and
AuthorizationPipeline; auth's DefaultAuthenticationContextBuilder and
DefaultAuthorizationContextBuilder for gRPC messages).

The SDKs sign the call's ``x-mq-date-time`` header: ``authorization: MQv2-HMAC-SHA1
Credential=<accessKey>, SignedHeaders=x-mq-date-time, Signature=<hex HMAC-SHA1(secretKey, date)>``.
A refusal is the RPC's Status with Code.UNAUTHORIZED and Java's message (ResponseBuilder maps
both auth exceptions to it). Without this check the endpoint would serve any SDK client while
the remoting ports refuse it.
"""

from __future__ import annotations

import base64
import hmac
import re
from dataclasses import dataclass
from typing import Any

from pyrmq.auth.contexts import AuthorizationContext, AuthorizationError, source_ip_of
from pyrmq.auth.evaluator import AuthenticationError, AuthEvaluator
from pyrmq.auth.model import Action, Resource
from pyrmq.auth.signature import calc_signature
from pyrmq.grpc.context import GrpcContext
from pyrmq.grpc.proto import pb, spb
from pyrmq.grpc.status import Code, GrpcProxyError

_HEX = re.compile(r"(?:[0-9a-fA-F]{2})*")
_CONSUMERS = frozenset(
    {
        pb.ClientType.PUSH_CONSUMER,
        pb.ClientType.SIMPLE_CONSUMER,
        pb.ClientType.PULL_CONSUMER,
        # not in Java 5.5.0's list; consumers all the same, so their group is checked too
        pb.ClientType.LITE_PUSH_CONSUMER,
        pb.ClientType.LITE_SIMPLE_CONSUMER,
    }
)


@dataclass(frozen=True, slots=True)
class GrpcCredentials:
    username: str | None = None
    signature: str | None = None  # Base64, as remoting's Signature field
    content: bytes = b""  # what was signed: the date header


def _java_split(text: str, sep: str) -> list[str]:
    """String#split without a limit: trailing empty strings dropped (but "" gives [""])."""
    if not text:
        return [""]
    parts = text.split(sep)
    while parts and not parts[-1]:
        parts.pop()
    return parts


def credentials_of(authorization: str, date_time: str) -> GrpcCredentials:
    """DefaultAuthenticationContextBuilder#build(Metadata, ...): no header means no user."""
    if not authorization:
        return GrpcCredentials()
    if not date_time:
        raise AuthenticationError("datetime is null.")
    _scheme, sep, rest = authorization.partition(" ")
    if not sep:
        raise AuthenticationError("authentication header is incorrect.")
    username = signature = None
    for item in _java_split(rest, ","):
        key, eq, value = item.strip().partition("=")
        if not eq:
            raise AuthenticationError("authentication keyValues length is incorrect, actual length=1.")
        if key == "Credential":
            credential = _java_split(value, "/")
            if not credential:
                raise AuthenticationError("authentication credential length is incorrect, actual length=0.")
            username = credential[0]
        elif key == "Signature":
            if _HEX.fullmatch(value) is None:  # Hex.decodeHex fails
                raise AuthenticationError("create authentication context error.")
            signature = base64.b64encode(bytes.fromhex(value)).decode("ascii")
    return GrpcCredentials(username, signature, date_time.encode("utf-8"))


def contexts_of(request: Any, username: str | None, remote_addr: str) -> list[AuthorizationContext]:
    """The resources and actions one gRPC request needs (DefaultAuthorizationContextBuilder#build
    for gRPC messages); AuthorizationError when a name it needs is missing."""
    wanted: list[tuple[Resource, tuple[Action, ...]]] = []
    if isinstance(request, spb.SendMessageRequest):
        if not request.messages:
            raise AuthorizationError("message is null.")
        _pub(wanted, request.messages[0].topic)
    elif isinstance(request, spb.RecallMessageRequest | spb.EndTransactionRequest):
        _pub(wanted, request.topic)
    elif isinstance(request, spb.HeartbeatRequest):
        if request.client_type in _CONSUMERS:
            _group_sub(wanted, request.group)
    elif isinstance(request, spb.ReceiveMessageRequest):
        if not request.HasField("message_queue"):
            raise AuthorizationError("messageQueue is null.")
        _group_sub(wanted, request.group)
        _topic_sub(wanted, request.message_queue.topic)
    elif isinstance(
        request, spb.AckMessageRequest | spb.ForwardMessageToDeadLetterQueueRequest | spb.QueryAssignmentRequest
    ):
        _group_sub(wanted, request.group)
        _topic_sub(wanted, request.topic)
    elif isinstance(request, spb.NotifyClientTerminationRequest):
        if request.group.name.strip():
            _group_sub(wanted, request.group)
    elif isinstance(request, spb.ChangeInvisibleDurationRequest):
        _group_sub(wanted, request.group)
    elif isinstance(request, spb.QueryRouteRequest):
        if not request.topic.name.strip():
            raise AuthorizationError("topic is null.")
        wanted.append((Resource.topic(request.topic.name), (Action.PUB, Action.SUB)))
    elif isinstance(request, spb.TelemetryCommand):
        if request.WhichOneof("command") == "settings":
            _settings(wanted, request.settings)
    else:  # every RPC pyrmq serves is named above; an unknown one asks for the cluster's admin rights
        raise AuthorizationError(f"{type(request).__name__} is not authorized.")
    ip = source_ip_of(remote_addr)
    code = request.DESCRIPTOR.full_name
    return [AuthorizationContext(username, r, a, ip, code) for r, a in wanted]


def _settings(wanted: list[tuple[Resource, tuple[Action, ...]]], settings: Any) -> None:
    publishing, subscription = settings.HasField("publishing"), settings.HasField("subscription")
    if not publishing and not subscription:
        # Java: AclException, answered INTERNAL_SERVER_ERROR; refused here all the same
        raise AuthorizationError("settings command doesn't have publishing or subscription.")
    if publishing:
        for topic in settings.publishing.topics:
            _pub(wanted, topic)
    if subscription:
        _group_sub(wanted, settings.subscription.group)
        for entry in settings.subscription.subscriptions:
            _topic_sub(wanted, entry.topic)


def _pub(wanted: list[tuple[Resource, tuple[Action, ...]]], topic: Any) -> None:
    if not topic.name.strip():
        raise AuthorizationError("topic is null.")
    wanted.append((Resource.topic(topic.name), (Action.PUB,)))


def _topic_sub(wanted: list[tuple[Resource, tuple[Action, ...]]], topic: Any) -> None:
    if not topic.name.strip():
        raise AuthorizationError("topic is null.")
    wanted.append((Resource.topic(topic.name), (Action.SUB,)))


def _group_sub(wanted: list[tuple[Resource, tuple[Action, ...]]], group: Any) -> None:
    if not group.name.strip():
        raise AuthorizationError("group is null.")
    wanted.append((Resource.group(group.name), (Action.SUB,)))


class GrpcAuth:
    """The broker's evaluator applied to gRPC calls; ``check`` raises the refusal."""

    def __init__(self, evaluator: AuthEvaluator) -> None:
        self.evaluator = evaluator

    @classmethod
    def of(cls, broker_auth: Any) -> GrpcAuth | None:
        """None when the broker has no auth (no cost per call), as for the remoting ports."""
        if broker_auth is None or not broker_auth.config.enabled:
            return None
        return cls(broker_auth.evaluator)

    def check(self, gctx: GrpcContext, request: Any) -> None:
        authorization, date_time = gctx.authorization, gctx.date_time
        config = self.evaluator.config
        try:
            if config.authentication_enabled:
                creds = credentials_of(authorization, date_time)
                self.evaluator.authenticate_user(
                    request.DESCRIPTOR.full_name, creds.username, lambda password: _matches(creds, password)
                )
            else:  # as remoting's AccessKey: the claimed name, for authorization alone
                try:
                    creds = credentials_of(authorization, date_time)
                except AuthenticationError:
                    creds = GrpcCredentials()
            if config.authorization_enabled:
                for ctx in contexts_of(request, creds.username or None, gctx.remote_addr):
                    self.evaluator.authorize(ctx)
        except (AuthenticationError, AuthorizationError) as e:
            raise GrpcProxyError(Code.UNAUTHORIZED, str(e)) from None


def _matches(creds: GrpcCredentials, password: str) -> bool:
    if creds.signature is None:
        return False
    expected = calc_signature(creds.content, password)
    return hmac.compare_digest(expected.encode("ascii"), creds.signature.encode("ascii"))


__all__ = ["GrpcAuth", "GrpcCredentials", "contexts_of", "credentials_of"]
