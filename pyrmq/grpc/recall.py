"""RecallMessage: take back a delay/timer message before its delivery time.

Java: ``proxy/grpc/v2/producer/RecallMessageActivity`` + ``ProducerProcessor#recallMessage``: the
topic's checks, the topic's message type must be DELAY (UNSPECIFIED for a topic this broker does
not have), the recall handle must decode (``common/producer/RecallMessageHandle``, v1), then the
broker's RECALL_MESSAGE (370) with the handle (pyrmq/broker/processor/recall.py); the broker's
answer is the RPC's status (``recallMessageEnable=false``, Java's default: its refusal).
"""

from __future__ import annotations

from typing import Any

from pyrmq.common.attributes import TopicMessageType
from pyrmq.common.recall_handle import RecallHandle
from pyrmq.grpc.local import LocalInvoker
from pyrmq.grpc.proto import spb
from pyrmq.grpc.route import topic_message_type
from pyrmq.grpc.status import Code, GrpcProxyError, from_response, ok
from pyrmq.grpc.validate import validate_topic
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import RecallMessageRequestHeader

RECALL_TIMEOUT_S = 2.0  # RecallMessageActivity: Duration.ofSeconds(2)
#: how ProducerProcessor's failed type check reads in the status (the future's wrapped exception)
_PROXY_EXCEPTION = "org.apache.rocketmq.proxy.common.ProxyException: "


class RecallActivity:
    def __init__(self, controller: Any, invoker: LocalInvoker) -> None:
        self.controller = controller
        self.invoker = invoker

    async def recall_message(self, ctx: Any, request: Any) -> Any:
        validate_topic(request.topic)
        topic = request.topic.name
        tc = self.controller.topic_config_manager.select_topic_config(topic)
        expected = topic_message_type(tc) if tc is not None else "UNSPECIFIED"
        if expected not in (TopicMessageType.DELAY, TopicMessageType.MIXED):  # enableTopicMessageTypeCheck
            raise GrpcProxyError(
                Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
                f"{_PROXY_EXCEPTION}TopicMessageType validate failed, the expected type is {expected}, "
                "but actual type is DELAY",
            )
        try:
            handle = RecallHandle.decode(request.recall_handle)
        except ValueError as e:
            raise GrpcProxyError(Code.INTERNAL_SERVER_ERROR, str(e)) from None
        header = RecallMessageRequestHeader(topic=topic, recall_handle=request.recall_handle)
        ext = {**header.to_ext_fields(), "brokerName": handle.broker_name}  # TopicRequestHeader's
        cmd = RemotingCommand.request(RequestCode.RECALL_MESSAGE, ext)
        response = await self.invoker.invoke(cmd, ctx.remote_addr, timeout=RECALL_TIMEOUT_S)
        if response.code != ResponseCode.SUCCESS:
            return spb.RecallMessageResponse(status=from_response(response.code, response.remark))
        return spb.RecallMessageResponse(status=ok(), message_id=(response.ext_fields or {}).get("msgId", ""))


__all__ = ["RecallActivity"]
