"""ReceiveMessage, AckMessage, ChangeInvisibleDuration and ForwardMessageToDeadLetterQueue over POP.

Java: ``proxy/grpc/v2/consumer/ReceiveMessageActivity`` (+ its stream writer),
``AckMessageActivity``, ``ChangeInvisibleDurationActivity``, ``producer/ForwardMessageToDLQActivity``
and the local ``ConsumerProcessor``/``LocalMessageService``: each becomes the remoting POP_MESSAGE,
ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME or CONSUMER_SEND_MSG_BACK request handled in-process.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from pyrmq.common.constants import MessageConst
from pyrmq.grpc.client import CONSUMER_MAX_LONG_POLLING_TIMEOUT_MS, ClientActivity
from pyrmq.grpc.local import LocalInvoker
from pyrmq.grpc.message import timestamp, to_v2_message
from pyrmq.grpc.proto import pb, spb
from pyrmq.grpc.receipt import ReceiptHandle
from pyrmq.grpc.renew import ReceiptHandleManager, TrackedHandle
from pyrmq.grpc.status import Code, GrpcProxyError, from_response, ok, status
from pyrmq.grpc.validate import validate_group, validate_invisible_time, validate_topic
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import ConsumerSendMsgBackRequestHeader
from pyrmq.protocol.headers.pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    build_extra_info,
    parse_info,
    retry_flag,
)
from pyrmq.store.message import decode_messages

log = logging.getLogger("pyrmq.grpc")

#: ProxyConfig defaults
MIN_LONG_POLLING_TIMEOUT_MS = 5_000
MIN_INVISIBLE_TIME_FOR_RECV_MS = 10_000
DEFAULT_INVISIBLE_TIME_MS = 60_000
CONSUME_INIT_MODE_MAX = 1  # ConsumeInitMode.MAX
ILLEGAL_POLLING_TIME_INTRODUCED_CLIENT_VERSION = "5.0.3"
RENEW_ADDR = "127.0.0.1:0"  # the endpoint's own renewals (Java ProxyContext#createForInner)


def _ms(duration: Any) -> int:
    return int(duration.seconds) * 1000 + int(duration.nanos) // 1_000_000


class ConsumeActivity:
    def __init__(self, controller: Any, clients: ClientActivity, invoker: LocalInvoker) -> None:
        self.controller = controller
        self.clients = clients
        self.invoker = invoker
        #: the handles of push consumers' messages, renewed until acked (enableProxyAutoRenew)
        self.renewal = ReceiptHandleManager(self._renew, self._consumer_online, self._retry_delay)

    @property
    def broker_name(self) -> str:
        return str(self.controller.config["brokerName"])

    def polling_time(self, ctx: Any, request: Any, settings: Any) -> int:
        """ReceiveMessageActivity: the request's long-polling timeout, or what the deadline leaves."""
        remaining = ctx.remaining_ms if ctx.remaining_ms is not None else CONSUMER_MAX_LONG_POLLING_TIMEOUT_MS * 2
        if request.HasField("long_polling_timeout"):
            polling = _ms(request.long_polling_timeout)
        else:
            polling = remaining - _ms(settings.request_timeout) // 2
        polling = min(max(polling, MIN_LONG_POLLING_TIMEOUT_MS), CONSUMER_MAX_LONG_POLLING_TIMEOUT_MS)
        if polling > remaining:
            if remaining >= MIN_LONG_POLLING_TIMEOUT_MS:
                return remaining
            old = not ctx.client_version or ctx.client_version < ILLEGAL_POLLING_TIME_INTRODUCED_CLIENT_VERSION
            raise GrpcProxyError(
                Code.BAD_REQUEST if old else Code.ILLEGAL_POLLING_TIME,
                "The deadline time remaining is not enough for polling, please check network condition",
            )
        return polling

    async def receive_message(self, ctx: Any, request: Any) -> AsyncIterator[Any]:
        try:
            async for response in self._receive(ctx, request):
                yield response
        except GrpcProxyError as e:
            yield spb.ReceiveMessageResponse(status=status(e.code, e.message))
        # the stream writer's onComplete: the delivery timestamp closes every answer
        yield spb.ReceiveMessageResponse(delivery_timestamp=timestamp(int(time.time() * 1000)))

    async def _receive(self, ctx: Any, request: Any) -> AsyncIterator[Any]:
        settings = self.clients.client_settings(ctx.client_id) or pb.Settings()
        fifo = settings.subscription.fifo
        polling = self.polling_time(ctx, request, settings)
        topic_res = request.message_queue.topic
        validate_topic(topic_res)
        validate_group(request.group)
        topic, group = topic_res.name, request.group.name
        if request.auto_renew:  # enableProxyAutoRenew: the proxy's default invisible time (renewal: docs/grpc.md)
            invisible = DEFAULT_INVISIBLE_TIME_MS
        else:
            invisible = _ms(request.invisible_duration)
            validate_invisible_time(invisible, MIN_INVISIBLE_TIME_FOR_RECV_MS)
        fe = request.filter_expression
        exp_type = "SQL92" if fe.type == pb.SQL else "TAG"
        header = PopMessageRequestHeader(
            consumer_group=group,
            topic=topic,
            queue_id=-1,
            max_msg_nums=request.batch_size,
            invisible_time=invisible,
            poll_time=polling,
            born_time=int(time.time() * 1000),
            init_mode=CONSUME_INIT_MODE_MAX,
            exp_type=exp_type,
            exp=fe.expression or "*",
            order=fifo,
            attempt_id=request.attempt_id if request.HasField("attempt_id") else None,
        )
        cmd = RemotingCommand.request(RequestCode.POP_MESSAGE, header.to_ext_fields())
        r = await self.invoker.invoke(cmd, ctx.remote_addr, timeout=polling / 1000 + 5)
        if r.code == ResponseCode.POLLING_FULL:
            yield spb.ReceiveMessageResponse(status=status(Code.TOO_MANY_REQUESTS, "polling full"))
            return
        if r.code in (ResponseCode.POLLING_TIMEOUT, ResponseCode.PULL_NOT_FOUND):
            yield spb.ReceiveMessageResponse(status=status(Code.MESSAGE_NOT_FOUND, "no new message"))
            return
        if r.code != ResponseCode.SUCCESS:
            yield spb.ReceiveMessageResponse(status=from_response(r.code, r.remark))
            return
        messages = list(decode_messages(r.body or b""))
        if not messages:
            yield spb.ReceiveMessageResponse(status=status(Code.MESSAGE_NOT_FOUND, "no match message"))
            return
        self._set_receipt_handles(r, header, messages)
        max_attempts = settings.backoff_policy.max_attempts
        if max_attempts > 0:  # PopMessageResultFilterImpl: a message past its attempts goes to %DLQ%
            kept = []
            for msg in messages:
                if msg.reconsume_times >= max_attempts:
                    await self._to_dlq(ctx, group, topic, msg)
                else:
                    kept.append(msg)
            messages = kept
            if not messages:
                yield spb.ReceiveMessageResponse(status=status(Code.MESSAGE_NOT_FOUND, "no match message"))
                return
        if request.auto_renew:
            self._track(ctx.client_id, group, topic, messages)
        yield spb.ReceiveMessageResponse(status=ok())
        for msg in messages:
            handle = msg.properties.get(MessageConst.POP_CK)
            yield spb.ReceiveMessageResponse(message=to_v2_message(msg, handle))

    def _track(self, client_id: str, group: str, topic: str, messages: list[Any]) -> None:
        """ReceiveMessageActivity with autoRenew: each message's handle is renewed until acked."""
        now = int(time.time() * 1000)
        for msg in messages:
            message_id = msg.properties.get(MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or msg.msg_id
            handle = msg.properties[MessageConst.POP_CK]
            self.renewal.add(client_id, TrackedHandle(group, topic, message_id, handle, msg.reconsume_times, now))

    def _latest_handle(self, ctx: Any, group: str, message_id: str, handle: str) -> str:
        """The client's own ack, nack or change stops the renewal; a renewed message's handle
        is the latest one, not the one the client holds (Java removeReceiptHandle)."""
        tracked = self.renewal.remove(ctx.client_id, group, message_id, handle)
        return handle if tracked is None else tracked.handle

    def _consumer_online(self, client_id: str, group: str) -> bool:
        return self.controller.consumer_manager.find_channel(group, client_id) is not None

    def _retry_delay(self, tracked: TrackedHandle) -> int:
        """The group's retry policy for a message renewed for RENEW_MAX_MS (STOP_RENEW)."""
        config = self.clients.group_config(tracked.group)
        return config.group_retry_policy.retry_policy().next_delay_duration(tracked.reconsume_times)

    async def _renew(self, tracked: TrackedHandle, invisible: int) -> str | None:
        handle = ReceiptHandle.decode(tracked.handle)
        r = await self._change_invisible(RENEW_ADDR, tracked.group, tracked.topic, handle, invisible)
        if r.code != ResponseCode.SUCCESS:
            log.warning("renew of %s refused: %s %s", tracked.message_id, r.code, r.remark)
            return None
        return self._renewed_handle(handle, r).encode()

    def _set_receipt_handles(self, r: RemotingCommand, header: PopMessageRequestHeader, messages: list[Any]) -> None:
        """LocalMessageService#popMessage: the POP_CK a client builds from the response header,
        plus the commit-log offset (ConsumerProcessor#createHandle)."""
        h = PopMessageResponseHeader.from_command(r)
        starts = parse_info(h.start_offset_info)
        order_counts = parse_info(h.order_count_info)
        for msg in messages:
            ck = msg.properties.get(MessageConst.POP_CK)
            if ck is None:
                key = f"{retry_flag(msg.topic)}@{msg.queue_id}"
                start = int(starts[key]) if key in starts else msg.queue_offset
                ck = build_extra_info(
                    start,
                    h.pop_time,
                    h.invisible_time,
                    h.revive_qid,
                    msg.topic,
                    self.broker_name,
                    msg.queue_id,
                    msg.queue_offset,
                )
                if header.order and key in order_counts and int(order_counts[key]) > 0:
                    msg.reconsume_times = int(order_counts[key])
            msg.properties[MessageConst.POP_CK] = f"{ck} {msg.commit_log_offset}"
            msg.properties.setdefault(MessageConst.FIRST_POP_TIME, str(h.pop_time))

    async def _to_dlq(self, ctx: Any, group: str, topic: str, msg: Any) -> None:
        handle = ReceiptHandle.decode(msg.properties[MessageConst.POP_CK])
        message_id = msg.properties.get(MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or msg.msg_id
        try:
            await self._forward_to_dlq(ctx, group, topic, handle, message_id)
        except GrpcProxyError as e:
            log.warning("forward %s of %s to the DLQ failed: %s", message_id, group, e.message)

    async def _ack(self, ctx: Any, group: str, topic: str, handle: ReceiptHandle) -> RemotingCommand:
        handle.check()
        header = AckMessageRequestHeader(
            consumer_group=group,
            topic=handle.real_topic(topic, group),
            queue_id=handle.queue_id,
            extra_info=handle.text,
            offset=handle.offset,
        )
        cmd = RemotingCommand.request(RequestCode.ACK_MESSAGE, header.to_ext_fields())
        return await self.invoker.invoke(cmd, ctx.remote_addr)

    async def ack_message(self, ctx: Any, request: Any) -> Any:
        validate_topic(request.topic)
        validate_group(request.group)
        entries = []
        for entry in request.entries:
            try:
                text = self._latest_handle(ctx, request.group.name, entry.message_id, entry.receipt_handle)
                handle = ReceiptHandle.decode(text)
                r = await self._ack(ctx, request.group.name, request.topic.name, handle)
                st = (
                    ok()
                    if r.code == ResponseCode.SUCCESS
                    else status(Code.INTERNAL_SERVER_ERROR, "ack failed: status is abnormal")
                )
            except GrpcProxyError as e:
                st = status(e.code, e.message)
            entries.append(
                spb.AckMessageResultEntry(message_id=entry.message_id, receipt_handle=entry.receipt_handle, status=st)
            )
        codes = {e.status.code for e in entries}
        if len(codes) > 1:
            top = status(Code.MULTIPLE_RESULTS)
        elif codes:
            top = status(codes.pop())
        else:
            top = status(Code.INTERNAL_SERVER_ERROR, "ack message result is empty")
        return spb.AckMessageResponse(status=top, entries=entries)

    async def change_invisible_duration(self, ctx: Any, request: Any) -> Any:
        validate_topic(request.topic)
        validate_group(request.group)
        invisible = _ms(request.invisible_duration)
        validate_invisible_time(invisible)
        group, topic = request.group.name, request.topic.name
        ReceiptHandle.decode(request.receipt_handle)  # a malformed one: INVALID_RECEIPT_HANDLE first, as Java
        handle = ReceiptHandle.decode(self._latest_handle(ctx, group, request.message_id, request.receipt_handle))
        handle.check()
        r = await self._change_invisible(ctx.remote_addr, group, topic, handle, invisible)
        if r.code != ResponseCode.SUCCESS:
            return spb.ChangeInvisibleDurationResponse(
                status=status(Code.INTERNAL_SERVER_ERROR, "changeInvisibleDuration failed: status is abnormal")
            )
        return spb.ChangeInvisibleDurationResponse(status=ok(), receipt_handle=self._renewed_handle(handle, r).encode())

    async def _change_invisible(
        self, remote_addr: str, group: str, topic: str, handle: ReceiptHandle, invisible: int
    ) -> RemotingCommand:
        header = ChangeInvisibleTimeRequestHeader(
            consumer_group=group,
            topic=handle.real_topic(topic, group),
            queue_id=handle.queue_id,
            extra_info=handle.text,
            offset=handle.offset,
            invisible_time=invisible,
        )
        cmd = RemotingCommand.request(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header.to_ext_fields())
        return await self.invoker.invoke(cmd, remote_addr)

    @staticmethod
    def _renewed_handle(handle: ReceiptHandle, r: RemotingCommand) -> ReceiptHandle:
        h = ChangeInvisibleTimeResponseHeader.from_command(r)
        return ReceiptHandle(
            handle.start_offset,
            h.pop_time,
            h.invisible_time,
            h.revive_qid,
            handle.topic_type,
            handle.broker_name,
            handle.queue_id,
            handle.offset,
            handle.commit_log_offset,
            "",
        )

    async def forward_to_dlq(self, ctx: Any, request: Any) -> Any:
        """ForwardMessageToDLQActivity + ProducerProcessor#forwardMessageToDeadLetterQueue: send back
        with delay level -1 (straight to %DLQ%), then ack the original."""
        validate_topic(request.topic)
        validate_group(request.group)
        text = self._latest_handle(ctx, request.group.name, request.message_id, request.receipt_handle)
        handle = ReceiptHandle.decode(text)
        r = await self._forward_to_dlq(ctx, request.group.name, request.topic.name, handle, request.message_id)
        return spb.ForwardMessageToDeadLetterQueueResponse(status=from_response(r.code, r.remark))

    async def _forward_to_dlq(
        self, ctx: Any, group: str, topic: str, handle: ReceiptHandle, message_id: str
    ) -> RemotingCommand:
        if handle.commit_log_offset < 0:
            raise GrpcProxyError(Code.INVALID_RECEIPT_HANDLE, "commit log offset is empty")
        header = ConsumerSendMsgBackRequestHeader(
            offset=handle.commit_log_offset,
            group=group,
            delay_level=-1,
            origin_msg_id=message_id,
            origin_topic=handle.real_topic(topic, group),
            max_reconsume_times=0,
        )
        cmd = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext_fields())
        r = await self.invoker.invoke(cmd, ctx.remote_addr)
        if r.code == ResponseCode.SUCCESS:
            try:
                await self._ack(ctx, group, topic, handle)
            except GrpcProxyError:
                pass  # Java acks in the background and does not report the ack's result
        return r


__all__ = ["ConsumeActivity"]
