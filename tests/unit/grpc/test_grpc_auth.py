"""gRPC calls under the broker's users and ACLs, as the Java proxy checks them: the headers are
the ones the official Python 5.x SDK signs (its own Signature.metadata), the decisions and
messages are the remoting ones', a refusal is Code.UNAUTHORIZED before any activity runs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from rocketmq.v5.client import ClientConfiguration, Credentials
from rocketmq.v5.util import Signature

from pyrmq.auth.config import LOCAL_AUTHENTICATION_METADATA_PROVIDER, LOCAL_AUTHORIZATION_METADATA_PROVIDER, AuthConfig
from pyrmq.auth.contexts import AuthorizationError
from pyrmq.auth.evaluator import AuthenticationError, AuthEvaluator
from pyrmq.auth.model import Acl, Action, Policy, PolicyEntry, PolicyType, Resource, User, UserType
from pyrmq.auth.store import AuthMetadataStore
from pyrmq.grpc.auth import GrpcAuth, contexts_of, credentials_of
from pyrmq.grpc.context import GrpcContext
from pyrmq.grpc.proto import pb, spb
from pyrmq.grpc.server import MessagingServicer
from pyrmq.grpc.status import Code, GrpcProxyError

ADDR = "10.1.2.3:50000"


def _evaluator(**props: str) -> AuthEvaluator:
    store = AuthMetadataStore(None)
    store.put_user(User("root", "root-secret", UserType.SUPER))
    store.put_user(User("app", "app-secret"))
    entries = [
        PolicyEntry(Resource.topic("GOk"), [Action.PUB, Action.SUB]),
        PolicyEntry(Resource.topic("GSubOnly"), [Action.SUB]),
        PolicyEntry(Resource.group("GGroup"), [Action.SUB]),
    ]
    store.put_acl(Acl("User:app", [Policy(PolicyType.CUSTOM, entries)]))
    base = {
        "authenticationEnabled": "true",
        "authorizationEnabled": "true",
        "authenticationMetadataProvider": LOCAL_AUTHENTICATION_METADATA_PROVIDER,
        "authorizationMetadataProvider": LOCAL_AUTHORIZATION_METADATA_PROVIDER,
    }
    return AuthEvaluator(AuthConfig.from_properties({**base, **props}, cluster_name="DefaultCluster"), store)


def sdk_context(ak: str, sk: str) -> GrpcContext:
    """The call metadata the official SDK sends with these credentials."""
    meta = dict(Signature.metadata(ClientConfiguration("127.0.0.1:8081", Credentials(ak, sk)), "client-1"))
    return GrpcContext(
        client_id=meta["x-mq-client-id"],
        remote_addr=ADDR,
        authorization=meta["authorization"],
        date_time=meta["x-mq-date-time"],
    )


def send(topic: str) -> Any:
    return spb.SendMessageRequest(messages=[pb.Message(topic=pb.Resource(name=topic), body=b"x")])


def refusal(auth: GrpcAuth, gctx: GrpcContext, request: Any) -> str | None:
    try:
        auth.check(gctx, request)
    except GrpcProxyError as e:
        assert e.code == Code.UNAUTHORIZED
        return e.message
    return None


def test_sdk_signed_calls_pass_and_forged_ones_get_javas_messages() -> None:
    auth = GrpcAuth(_evaluator())
    assert refusal(auth, sdk_context("app", "app-secret"), send("GOk")) is None
    assert refusal(auth, sdk_context("root", "root-secret"), send("GSubOnly")) is None  # a super user
    assert refusal(auth, sdk_context("app", "wrong"), send("GOk")) == "check signature failed."
    assert refusal(auth, sdk_context("ghost", "x"), send("GOk")) == "User:ghost is not found."
    assert refusal(auth, sdk_context("", ""), send("GOk")) == "username cannot be null."  # the SDK's default
    assert refusal(auth, GrpcContext(client_id="c", remote_addr=ADDR), send("GOk")) == "username cannot be null."
    assert refusal(auth, sdk_context("app", "app-secret"), send("GSubOnly")) == (
        "User:app has no permission to access Topic:GSubOnly from 10.1.2.3, no matched policies."
    )
    # the signature covers the date: another date with the same signature is refused
    signed = sdk_context("app", "app-secret")
    replayed = GrpcContext(
        client_id="c", remote_addr=ADDR, authorization=signed.authorization, date_time="20260101T000000Z"
    )
    assert refusal(auth, replayed, send("GOk")) == "check signature failed."
    # the secret never appears in a refusal
    assert "app-secret" not in (refusal(auth, sdk_context("app", "app-secret"), send("GSubOnly")) or "")


@pytest.mark.parametrize(
    ("authorization", "date_time", "message"),
    [
        ("MQv2-HMAC-SHA1 Credential=app, Signature=00", "", "datetime is null."),
        ("MQv2-HMAC-SHA1", "20261128T120000Z", "authentication header is incorrect."),
        ("MQv2-HMAC-SHA1 Credential", "20261128T120000Z", "authentication keyValues length is incorrect"),
        ("MQv2-HMAC-SHA1 Credential=/", "20261128T120000Z", "authentication credential length is incorrect"),
        ("MQv2-HMAC-SHA1 Credential=app, Signature=xyz", "20261128T120000Z", "create authentication context error."),
        ("MQv2-HMAC-SHA1 Credential=app, Signature=abc", "20261128T120000Z", "create authentication context error."),
    ],
)
def test_malformed_headers_are_refused_like_java(authorization: str, date_time: str, message: str) -> None:
    with pytest.raises(AuthenticationError, match=message.replace(".", r"\.")):
        credentials_of(authorization, date_time)


def test_credentials_are_read_as_java_reads_them() -> None:
    c = credentials_of("MQv2-HMAC-SHA1 Credential=app/x, SignedHeaders=x-mq-date-time, Signature=0aff", "d")
    assert (c.username, c.signature, c.content) == ("app", "Cv8=", b"d")
    assert credentials_of("", "d").username is None


def _names(request: Any) -> list[tuple[str, tuple[str, ...]]]:
    return [(c.resource.key, tuple(a.name for a in c.actions)) for c in contexts_of(request, "app", ADDR)]


def test_each_rpc_asks_for_what_javas_builder_asks() -> None:
    topic, group = pb.Resource(name="T"), pb.Resource(name="G")
    mq = pb.MessageQueue(topic=topic)
    assert _names(send("T")) == [("Topic:T", ("PUB",))]
    assert _names(spb.EndTransactionRequest(topic=topic)) == [("Topic:T", ("PUB",))]
    assert _names(spb.RecallMessageRequest(topic=topic)) == [("Topic:T", ("PUB",))]
    assert _names(spb.QueryRouteRequest(topic=topic)) == [("Topic:T", ("PUB", "SUB"))]
    sub = [("Group:G", ("SUB",)), ("Topic:T", ("SUB",))]
    assert _names(spb.ReceiveMessageRequest(group=group, message_queue=mq)) == sub
    assert _names(spb.AckMessageRequest(group=group, topic=topic)) == sub
    assert _names(spb.ForwardMessageToDeadLetterQueueRequest(group=group, topic=topic)) == sub
    assert _names(spb.QueryAssignmentRequest(group=group, topic=topic)) == sub
    assert _names(spb.ChangeInvisibleDurationRequest(group=group, topic=topic)) == [("Group:G", ("SUB",))]
    assert _names(spb.HeartbeatRequest(group=group, client_type=pb.ClientType.SIMPLE_CONSUMER)) == [
        ("Group:G", ("SUB",))
    ]
    assert _names(spb.HeartbeatRequest(client_type=pb.ClientType.PRODUCER)) == []
    assert _names(spb.NotifyClientTerminationRequest()) == []
    assert _names(spb.NotifyClientTerminationRequest(group=pb.Resource(name="%RETRY%G"))) == [("Group:G", ("SUB",))]
    publishing = pb.Settings(publishing=pb.Publishing(topics=[topic, pb.Resource(name="V")]))
    assert _names(spb.TelemetryCommand(settings=publishing)) == [("Topic:T", ("PUB",)), ("Topic:V", ("PUB",))]
    entry = pb.SubscriptionEntry(topic=pb.Resource(name="U"))
    subscription = pb.Settings(subscription=pb.Subscription(group=group, subscriptions=[entry]))
    assert _names(spb.TelemetryCommand(settings=subscription)) == [("Group:G", ("SUB",)), ("Topic:U", ("SUB",))]
    assert _names(spb.TelemetryCommand(thread_stack_trace=spb.ThreadStackTrace())) == []
    for bad, message in (
        (spb.SendMessageRequest(), "message is null."),
        (spb.ReceiveMessageRequest(group=group), "messageQueue is null."),
        (spb.QueryRouteRequest(), "topic is null."),
        (spb.AckMessageRequest(topic=topic), "group is null."),
        (spb.TelemetryCommand(settings=pb.Settings()), "settings command doesn't have publishing or subscription."),
    ):
        with pytest.raises(AuthorizationError, match=message):
            contexts_of(bad, "app", ADDR)


def test_whitelisted_rpc_and_auth_off() -> None:
    auth = GrpcAuth(_evaluator(authenticationWhitelist="apache.rocketmq.v2.QueryRouteRequest"))
    route = spb.QueryRouteRequest(topic=pb.Resource(name="GOk"))
    anonymous = GrpcContext(client_id="c", remote_addr=ADDR)
    # authentication skipped, authorization still asks who it is
    assert refusal(auth, anonymous, route) == "Authorization failed. Please verify your access rights and try again."

    class Off:
        config = AuthConfig.from_properties({})

    assert GrpcAuth.of(None) is None and GrpcAuth.of(Off()) is None


class _Ctx:
    """What the servicer reads of a grpc.aio context."""

    def __init__(self, metadata: list[tuple[str, str]]) -> None:
        self.metadata = metadata

    def time_remaining(self) -> float:
        return 10.0

    def invocation_metadata(self) -> list[tuple[str, str]]:
        return self.metadata

    def peer(self) -> str:
        return "ipv4:" + ADDR


class _Acts:
    def __init__(self) -> None:
        self.sent: list[Any] = []

    async def send_message(self, gctx: GrpcContext, request: Any) -> Any:
        self.sent.append(request)
        return spb.SendMessageResponse(status=pb.Status(code=Code.OK, message="OK"))


def test_servicer_refuses_before_the_activity_runs() -> None:
    acts = _Acts()
    servicer = MessagingServicer(acts, auth=GrpcAuth(_evaluator()))  # type: ignore[arg-type]

    def call(ak: str, sk: str, topic: str) -> Any:
        meta = Signature.metadata(ClientConfiguration("127.0.0.1:8081", Credentials(ak, sk)), "client-1")
        return asyncio.run(servicer.SendMessage(send(topic), _Ctx(meta)))

    assert call("app", "app-secret", "GOk").status.code == Code.OK
    refused = call("app", "wrong", "GOk").status
    assert (refused.code, refused.message) == (Code.UNAUTHORIZED, "check signature failed.")
    assert call("app", "app-secret", "GSubOnly").status.code == Code.UNAUTHORIZED
    assert [r.messages[0].topic.name for r in acts.sent] == ["GOk"]
