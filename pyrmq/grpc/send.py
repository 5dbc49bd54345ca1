"""SendMessage. Java: ``proxy/grpc/v2/producer/SendMessageActivity`` and the local producer path:
the messages become the SEND_MESSAGE request a remoting producer sends, handed to this broker's
send processor; the topic name is the producer group (the Java proxy does the same)."""

from __future__ import annotations

import itertools
import time
from typing import Any

from pyrmq.common.constants import AUTO_CREATE_TOPIC_KEY_TOPIC
from pyrmq.grpc.local import LocalInvoker
from pyrmq.grpc.message import build_properties, check_body, check_message_type, group_bucket, sys_flag
from pyrmq.grpc.proto import pb, spb
from pyrmq.grpc.route import RouteActivity, topic_message_type
from pyrmq.grpc.status import Code, GrpcProxyError, from_response, ok, status
from pyrmq.grpc.transaction import TransactionData
from pyrmq.grpc.validate import validate_topic
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import SendMessageRequestHeader, SendMessageResponseHeader
from pyrmq.store.message import decode_message_id, message_properties_to_string

#: SendResult status -> Code (SendMessageActivity#convertToSendMessageResponse)
_SEND_FAILURES: dict[int, tuple[int, str]] = {
    ResponseCode.FLUSH_DISK_TIMEOUT: (Code.MASTER_PERSISTENCE_TIMEOUT, "FLUSH_DISK_TIMEOUT"),
    ResponseCode.FLUSH_SLAVE_TIMEOUT: (Code.SLAVE_PERSISTENCE_TIMEOUT, "FLUSH_SLAVE_TIMEOUT"),
    ResponseCode.SLAVE_NOT_AVAILABLE: (Code.HA_NOT_AVAILABLE, "SLAVE_NOT_AVAILABLE"),
}


class SendActivity:
    def __init__(
        self, controller: Any, route: RouteActivity, invoker: LocalInvoker, transactions: TransactionData
    ) -> None:
        self.controller = controller
        self.route = route
        self.invoker = invoker
        self.transactions = transactions
        self._round_robin = itertools.count()

    def _queue_id(self, request: Any, write_queues: int) -> int:
        """SendMessageQueueSelector: a lone message's group picks its queue by consistent hash,
        else the next queue in turn."""
        if write_queues <= 0:
            raise GrpcProxyError(Code.FORBIDDEN, "no writable queue")
        group = request.messages[0].system_properties.message_group if len(request.messages) == 1 else ""
        if group:
            return group_bucket(group, write_queues)
        return next(self._round_robin) % write_queues

    async def send_message(self, ctx: Any, request: Any) -> Any:
        if not request.messages:
            raise GrpcProxyError(Code.MESSAGE_CORRUPTED, "no message to send")
        topic = request.messages[0].topic
        validate_topic(topic)
        now = int(time.time() * 1000)
        built = []
        for message in request.messages:
            if message.topic != topic:
                raise GrpcProxyError(Code.MESSAGE_CORRUPTED, "topic in message is not same")
            check_body(message.body)
            built.append((message, build_properties(message, topic.name, ctx.remote_addr, now)))
        tc = self.route.topic_config(topic.name)
        check_message_type(topic.name, topic_message_type(tc), built[0][1])
        queue_id = self._queue_id(request, tc.write_queue_nums)
        entries = []
        for message, props in built:
            header = SendMessageRequestHeader(
                producer_group=topic.name,
                topic=topic.name,
                default_topic=AUTO_CREATE_TOPIC_KEY_TOPIC,
                default_topic_queue_nums=4,
                queue_id=queue_id,
                sys_flag=sys_flag(message),
                born_timestamp=now,
                flag=0,
                properties=message_properties_to_string(props),
                reconsume_times=message.system_properties.delivery_attempt,
                unit_mode=False,
                batch=False,
            )
            cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE, header.to_ext_fields(), bytes(message.body))
            response = await self.invoker.invoke(cmd, ctx.remote_addr)
            entries.append(self._entry(message, response))
            if message.system_properties.message_type == pb.TRANSACTION and entries[-1].status.code == Code.OK:
                # the proxy's TransactionService#addTransactionDataByBrokerName: EndTransaction needs the offsets
                h = SendMessageResponseHeader.from_command(response)
                self.transactions.add(
                    topic.name, entries[-1].transaction_id, h.queue_offset, decode_message_id(h.msg_id).offset
                )
        codes = {e.status.code for e in entries}
        if len(codes) > 1:
            top = status(Code.MULTIPLE_RESULTS)
        else:
            top = status(codes.pop())
        return spb.SendMessageResponse(status=top, entries=entries)

    @staticmethod
    def _entry(message: Any, response: RemotingCommand) -> Any:
        if response.code in _SEND_FAILURES:
            code, name = _SEND_FAILURES[response.code]
            return spb.SendResultEntry(status=status(code, f"send message failed, sendStatus={name}"))
        if response.code != ResponseCode.SUCCESS:
            return spb.SendResultEntry(status=from_response(response.code, response.remark))
        h = SendMessageResponseHeader.from_command(response)
        return spb.SendResultEntry(
            status=ok(),
            offset=h.queue_offset,
            message_id=message.system_properties.message_id,
            transaction_id=h.transaction_id or message.system_properties.message_id,
            recall_handle=h.recall_handle or "",  # a timer message's (SendMessageActivity)
        )


__all__ = ["SendActivity"]
