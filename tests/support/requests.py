"""Raw client requests the HA and controller tests send with pyrmq's own RemotingClient: a
SEND_MESSAGE_V2 like the Java producer's and a PULL_MESSAGE like the Java push consumer's."""

from __future__ import annotations

import time

from pyrmq.protocol.codes import RequestCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import PullMessageRequestHeader, SendMessageRequestHeaderV2
from pyrmq.store import message as m

#: PullSysFlag bits
FLAG_COMMIT_OFFSET, FLAG_SUSPEND, FLAG_SUBSCRIPTION = 0x1, 0x2, 0x4


def send_v2(
    topic: str,
    broker_name: str,
    body: bytes,
    *,
    group: str = "pg",
    queues: int = 4,
    queue_id: int = 0,
    tags: str | None = "TagA",
    **props: str,
) -> RemotingCommand:
    """One message to queue ``queue_id`` (0) of ``topic``, WAIT=true (a SYNC_MASTER answers once
    replicas hold it)."""
    properties = {"WAIT": "true", **props} if tags is None else {"TAGS": tags, "WAIT": "true", **props}
    h = SendMessageRequestHeaderV2(
        a=group,
        b=topic,
        c="TBW102",
        d=queues,
        e=queue_id,
        f=0,
        g=int(time.time() * 1000),
        h=0,
        i=m.message_properties_to_string(properties),
        j=0,
        k=False,
        m=False,
        n=broker_name,
    )
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, h.to_ext_fields(), body)


def pull(
    topic: str, group: str, offset: int, *, suspend_ms: int = 0, commit: int = 0, queue_id: int = 0
) -> RemotingCommand:
    """Up to 32 messages of queue ``queue_id`` (0) from ``offset``, subscription ``*`` carried with
    the pull; a suspend time asks for long polling, ``commit`` piggybacks a consumer offset."""
    flag = FLAG_SUBSCRIPTION | (FLAG_SUSPEND if suspend_ms else 0) | (FLAG_COMMIT_OFFSET if commit else 0)
    h = PullMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=32,
        sys_flag=flag,
        commit_offset=commit,
        suspend_timeout_millis=suspend_ms,
        sub_version=0,
        subscription="*",
        expression_type="TAG",
    )
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, h.to_ext_fields())
