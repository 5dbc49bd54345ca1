"""SEND_REPLY_MESSAGE (324) / SEND_REPLY_MESSAGE_V2 (325): request-reply.

Java: ``broker/processor/ReplyMessageProcessor``. The replying consumer sends
the reply (topic ``<cluster>_REPLY_TOPIC``, property ``REPLY_TO_CLIENT`` = the
requester's client id, ``CORRELATION_ID``); the broker pushes it at once to
the requester's connection as PUSH_REPLY_MESSAGE_TO_CLIENT (326, a
``ReplyMessageRequestHeader`` + the body, with ``PUSH_REPLY_TIME`` added) and
answers SUCCESS only when the requester acknowledged the push. With
``storeReplyMessageEnable`` (default true) the reply is also stored; the
answer then carries the stored msgId / queueOffset.
"""

from __future__ import annotations

import logging
import random
from typing import TYPE_CHECKING, Any

from pyrmq.broker.processor.send import AbstractSendMessageProcessor, parse_send_header
from pyrmq.broker.put import await_put
from pyrmq.common.constants import MessageConst
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.broker import ReplyMessageRequestHeader
from pyrmq.remoting.server import RequestContext, handles
from pyrmq.store import message as m
from pyrmq.store.results import PutMessageStatus

if TYPE_CHECKING:
    from pyrmq.broker.client_manager import ProducerManager

log = logging.getLogger("pyrmq.broker.reply")

#: Java Broker2Client#callClient
PUSH_TIMEOUT_S = 10.0
_PUT_OK = frozenset(
    {
        PutMessageStatus.PUT_OK,
        PutMessageStatus.FLUSH_DISK_TIMEOUT,
        PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
        PutMessageStatus.SLAVE_NOT_AVAILABLE,
    }
)


def _host_str(host: tuple[str, int]) -> str:
    return f"{host[0]}:{host[1]}"


class ReplyMessageProcessor(AbstractSendMessageProcessor):
    def __init__(
        self,
        *,
        producer_manager: ProducerManager,
        **base: Any,
    ) -> None:
        super().__init__(**base)
        self.producer_manager = producer_manager

    @handles(RequestCode.SEND_REPLY_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2)
    async def send_reply_message(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = parse_send_header(cmd)
        refused = self._not_accepting_yet(cmd)
        if refused is not None:
            return refused
        tc, err = self._msg_check(ctx, cmd, h)
        if err is not None:
            return err
        queue_id = h.queue_id
        if queue_id < 0:
            queue_id = random.randrange(99999999) % max(tc.write_queue_nums, 1)
        body = cmd.body or b""
        props = m.string_to_message_properties(h.properties) if h.properties else {}
        born_host = self._born_host(ctx)
        store_host = self._store_host
        msg = m.MessageExtBrokerInner(
            topic=h.topic,
            body=body,
            queue_id=queue_id,
            flag=h.flag,
            properties=dict(props),
            properties_string=h.properties or "",
            born_timestamp=h.born_timestamp,
            born_host=born_host,
            store_host=store_host,
            reconsume_times=h.reconsume_times or 0,
        )
        push_ok, remark = await self._push_reply_message(h, props, body, born_host, store_host)
        extra: dict[str, str] = {}
        if push_ok:
            code, remark = ResponseCode.SUCCESS, None
            extra = {"msgId": "0", "queueId": str(queue_id), "queueOffset": "0"}
        else:
            code = ResponseCode.SYSTEM_ERROR
        if self.config["storeReplyMessageEnable"]:
            result = await await_put(self.message_store.put_message_async(msg))
            amr = result.append_message_result
            if result.put_message_status in _PUT_OK and amr is not None:
                extra = {"msgId": amr.msg_id, "queueId": str(queue_id), "queueOffset": str(amr.logics_offset)}
            else:
                log.warning("process reply message, store putMessage failed: %s", result.put_message_status.name)
        return self._response(cmd, code, remark, extra)

    async def _push_reply_message(
        self, h, props: dict[str, str], body: bytes, born_host, store_host
    ) -> tuple[bool, str | None]:
        """Java ReplyMessageProcessor#pushReplyMessage: (pushed OK, remark when not)."""
        sender = props.get(MessageConst.MESSAGE_REPLY_TO_CLIENT)
        if sender is None:
            log.warning("REPLY_TO_CLIENT is null, can not reply message")
            return False, "reply message properties[REPLY_TO_CLIENT] is null"
        channel = self.producer_manager.find_channel(sender)
        if channel is None:
            remark = f"push reply message fail, channel of <{sender}> not found."
            log.warning(remark)
            return False, remark
        push_props = dict(props)
        push_props[MessageConst.PUSH_REPLY_TIME] = str(self.now())
        header = ReplyMessageRequestHeader(
            producer_group=h.producer_group,
            topic=h.topic,
            default_topic=h.default_topic,
            default_topic_queue_nums=h.default_topic_queue_nums,
            queue_id=h.queue_id,
            sys_flag=h.sys_flag,
            born_timestamp=h.born_timestamp,
            flag=h.flag,
            born_host=_host_str(born_host),
            store_host=_host_str(store_host),
            store_timestamp=self.now(),
            properties=m.message_properties_to_string(push_props),
            reconsume_times=h.reconsume_times,
            unit_mode=bool(h.unit_mode),
        )
        req = RemotingCommand.request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, header.to_ext_fields(), body)
        try:
            resp = await channel.invoke(req, PUSH_TIMEOUT_S)
        except Exception as e:
            log.warning("push reply message to <%s> fail: %s", sender, e)
            return False, f"push reply message to {sender}fail."
        if resp.code != ResponseCode.SUCCESS:
            log.warning("push reply message to <%s> return fail, response remark: %s", sender, resp.remark)
            return False, f"push reply message to {sender}fail."
        return True, None
