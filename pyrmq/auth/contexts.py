"""What one request asks for: Java DefaultAuthorizationContextBuilder#build for remoting.

A few codes are read by hand in Java (sends, pulls, heartbeats, offsets, locks); the others
follow the @RocketMQAction / @RocketMQResource annotations of their header class, generated
into actions.py. A code with neither gives no context: Java lets any authenticated user send it. pyrmq is
stricter for the codes of that kind that write or read messages (STRICTER below).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyrmq.auth.actions import HEADER_ACTIONS
from pyrmq.auth.model import Action, Resource, ResourcePattern, ResourceType, is_retry_topic
from pyrmq.auth.signature import ACCESS_KEY
from pyrmq.protocol.bodies.broker import HeartbeatData, LockBatchRequestBody, UnlockBatchRequestBody
from pyrmq.protocol.codes import RequestCode
from pyrmq.protocol.command import RemotingCommand


class AuthorizationError(Exception):
    """Java AuthorizationException: the request is answered NO_PERMISSION with this message."""


@dataclass(frozen=True, slots=True)
class AuthorizationContext:
    username: str | None
    resource: Resource
    actions: tuple[Action, ...]
    source_ip: str
    rpc_code: int | str  # a remoting request code, or a gRPC request's message name


_SUB_GET = (Action.SUB, Action.GET)

#: Codes Java 5.5.0 leaves to any authenticated user (no annotated header), checked here:
#: LITE_PULL_MESSAGE as a pull, the reply sends as sends, and the broker-changing admin codes
#: (broker config, subscription groups, clean-ups) as Update on the cluster.
CLUSTER_UPDATE_CODES = frozenset(
    {
        RequestCode.UPDATE_BROKER_CONFIG,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST,
        RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE,
        RequestCode.CLEAN_UNUSED_TOPIC,
        RequestCode.DELETE_EXPIRED_COMMITLOG,
    }
)
STRICTER = CLUSTER_UPDATE_CODES | {
    RequestCode.LITE_PULL_MESSAGE,
    RequestCode.SEND_REPLY_MESSAGE,
    RequestCode.SEND_REPLY_MESSAGE_V2,
}


def source_ip_of(remote_addr: str) -> str:
    """StringUtils.substringBeforeLast(remoteAddr, ":")."""
    head, sep, _ = remote_addr.rpartition(":")
    return head if sep else remote_addr


def build_contexts(cmd: RemotingCommand, remote_addr: str, cluster_name: str) -> list[AuthorizationContext]:
    """The resources and actions ``cmd`` needs; AuthorizationError when it cannot be read."""
    fields = cmd.ext_fields
    if not fields:
        return []
    user = fields.get(ACCESS_KEY)
    ip = source_ip_of(remote_addr)
    out: list[tuple[Resource, tuple[Action, ...]]] = []
    code = cmd.code
    get = fields.get
    try:
        if code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            t = get("topic")
            if is_retry_topic(t):
                out.append((Resource.group(t), _SUB_GET))
            else:
                out.append((Resource.topic(t), (Action.PUB, Action.SUB, Action.GET)))
        elif code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_REPLY_MESSAGE):
            _send(out, get("topic"), get("group"))
        elif code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2):
            _send(out, get("b"), get("a"))
        elif code == RequestCode.RECALL_MESSAGE:
            out.append((Resource.topic(get("topic")), (Action.PUB,)))
        elif code == RequestCode.END_TRANSACTION:
            if (get("topic") or "").strip():
                out.append((Resource.topic(get("topic")), (Action.PUB,)))
        elif code == RequestCode.CONSUMER_SEND_MSG_BACK:
            out.append((Resource.group(get("group")), (Action.SUB,)))
        elif code in (RequestCode.PULL_MESSAGE, RequestCode.LITE_PULL_MESSAGE):
            if not is_retry_topic(get("topic")):
                out.append((Resource.topic(get("topic")), (Action.SUB,)))
            out.append((Resource.group(get("consumerGroup")), (Action.SUB,)))
        elif code == RequestCode.QUERY_MESSAGE:
            out.append((Resource.topic(get("topic")), _SUB_GET))
        elif code == RequestCode.HEART_BEAT:
            hb = HeartbeatData.decode(cmd.body or b"")
            for data in hb.consumer_data_set:
                out.append((Resource.group(data.group_name), (Action.SUB,)))
                for sub in data.subscription_data_set:
                    if not is_retry_topic(sub.topic):
                        out.append((Resource.topic(sub.topic), (Action.SUB,)))
        elif code == RequestCode.UNREGISTER_CLIENT:
            if (get("consumerGroup") or "").strip():
                out.append((Resource.group(get("consumerGroup")), (Action.SUB,)))
        elif code == RequestCode.GET_CONSUMER_LIST_BY_GROUP:
            out.append((Resource.group(get("consumerGroup")), _SUB_GET))
        elif code in (RequestCode.QUERY_CONSUMER_OFFSET, RequestCode.UPDATE_CONSUMER_OFFSET):
            acts = _SUB_GET if code == RequestCode.QUERY_CONSUMER_OFFSET else (Action.SUB, Action.UPDATE)
            if not is_retry_topic(get("topic")):
                out.append((Resource.topic(get("topic")), acts))
            out.append((Resource.group(get("consumerGroup")), acts))
        elif code in (RequestCode.LOCK_BATCH_MQ, RequestCode.UNLOCK_BATCH_MQ):
            body_cls = LockBatchRequestBody if code == RequestCode.LOCK_BATCH_MQ else UnlockBatchRequestBody
            lock = body_cls.decode(cmd.body or b"")
            out.append((Resource.group(lock.consumer_group), (Action.SUB,)))
            for mq in lock.mq_set:
                if not is_retry_topic(mq.topic):
                    out.append((Resource.topic(mq.topic), (Action.SUB,)))
        elif code in CLUSTER_UPDATE_CODES:
            out.append((Resource.cluster(cluster_name), (Action.UPDATE,)))
        else:
            _by_annotation(out, code, fields, cluster_name)
    except AuthorizationError:
        raise
    except Exception as e:
        raise AuthorizationError("parse authorization context error.") from e
    return [AuthorizationContext(user, r, a, ip, code) for r, a in out]


def _send(out: list[tuple[Resource, tuple[Action, ...]]], topic: str | None, group: str | None) -> None:
    if is_retry_topic(topic):
        out.append((Resource.group(group if (group or "").strip() else topic), (Action.SUB,)))
    else:
        out.append((Resource.topic(topic), (Action.PUB,)))


def _by_annotation(
    out: list[tuple[Resource, tuple[Action, ...]]], code: int, fields: dict[str, str], cluster_name: str
) -> None:
    row = HEADER_ACTIONS.get(code)
    if row is None:
        return
    _cls, class_resource, action_names, resource_fields = row
    actions = tuple(Action[a] for a in action_names)
    fallback = Resource.cluster(cluster_name) if class_resource == "CLUSTER" else None
    for name, rtype_name, splitter in resource_fields:
        value = fields.get(name)
        if value is None:
            continue
        values = [v for v in value.split(splitter) if v] if splitter else [value]
        rtype = ResourceType[rtype_name]
        for v in values:
            if rtype is ResourceType.TOPIC and is_retry_topic(v):
                out.append((Resource.group(v), actions))
            else:
                out.append((Resource(rtype, v, ResourcePattern.LITERAL), actions))
    if not out and fallback is not None:
        out.append((fallback, actions))
