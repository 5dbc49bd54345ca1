"""QUERY_MESSAGE (12) and VIEW_MESSAGE_BY_ID (33). Java: ``broker/processor/QueryMessageProcessor`` (spec §5.9)."""

from __future__ import annotations

from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.errors import SystemError_
from pyrmq.protocol.headers.broker import QueryMessageRequestHeader, ViewMessageRequestHeader
from pyrmq.remoting.server import RequestContext, handles
from pyrmq.store.message_store import MessageStore

UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"


class QueryMessageProcessor:
    def __init__(
        self,
        *,
        message_store: MessageStore,
    ) -> None:
        self.message_store = message_store

    @handles(RequestCode.QUERY_MESSAGE)
    async def query_message(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = QueryMessageRequestHeader.from_ext_fields(cmd.ext_fields)
        max_num = h.max_num
        if (cmd.ext(UNIQUE_KEY_QUERY) or "").lower() == "true":
            max_num = self.message_store.config.default_query_max_num
        result = self.message_store.query_message(h.topic, h.key, max_num, h.begin_timestamp, h.end_timestamp)
        ext = {
            "indexLastUpdateTimestamp": str(result.index_last_update_timestamp),
            "indexLastUpdatePhyoffset": str(result.index_last_update_phyoffset),
        }
        if result.buffer_total_size > 0:
            try:
                body = b"".join(result.message_buffer_list)
            finally:
                for b in result.message_buffer_list:
                    if isinstance(b, memoryview):
                        b.release()
            return cmd.make_response(ResponseCode.SUCCESS, None, ext, body)
        return cmd.make_response(
            ResponseCode.QUERY_NOT_FOUND, "can not find message, maybe time range not correct", ext
        )

    @handles(RequestCode.VIEW_MESSAGE_BY_ID)
    async def view_message_by_id(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = ViewMessageRequestHeader.from_ext_fields(cmd.ext_fields)
        sel = self.message_store.select_one_message_by_offset(h.offset)
        if sel is None:
            raise SystemError_(f"can not find message by the offset, {h.offset}")
        try:
            body = bytes(sel.buffer)
        finally:
            sel.release()
        return cmd.make_response(ResponseCode.SUCCESS, None, None, body)
