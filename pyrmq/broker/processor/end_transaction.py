"""END_TRANSACTION (37): commit or roll back a half message.

Java: ``broker/processor/EndTransactionProcessor``. The producer names the half
message by commit-log offset and half-queue offset; both and the producer
group must match the stored half message. Commit appends the real message
(real topic and queue, COMMIT transaction type, ``preparedTransactionOffset``
= the half message's offset) and then an op message; rollback only the op
message. UNKNOW (0) and unknown types get no answer (the clients send it
one-way). A slave answers SLAVE_NOT_AVAILABLE. With
``CHECK_IMMUNITY_TIME_IN_SECONDS``, a producer's own (non-check) decision
arriving after that time is refused with ILLEGAL_OPERATION: the check decides.
"""

from __future__ import annotations

import logging

from pyrmq.broker.transaction.util import MC, SF, get_immunity_time
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.errors import InvalidParameter, MessageIllegal, SystemError_
from pyrmq.protocol.headers.transaction import EndTransactionRequestHeader
from pyrmq.remoting.server import RequestContext, handles
from pyrmq.store import message as m
from pyrmq.store.results import PutMessageStatus

log = logging.getLogger("pyrmq.broker.transaction")

_FINAL_STATUS = {
    PutMessageStatus.PUT_OK: (ResponseCode.SUCCESS, None),
    PutMessageStatus.FLUSH_DISK_TIMEOUT: (ResponseCode.SUCCESS, None),
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT: (ResponseCode.SUCCESS, None),
    PutMessageStatus.SLAVE_NOT_AVAILABLE: (ResponseCode.SUCCESS, None),
    PutMessageStatus.CREATE_MAPPED_FILE_FAILED: (ResponseCode.SYSTEM_ERROR, "Create mapped file failed."),
    PutMessageStatus.SERVICE_NOT_AVAILABLE: (ResponseCode.SERVICE_NOT_AVAILABLE, "Service not available now."),
    PutMessageStatus.OS_PAGE_CACHE_BUSY: (ResponseCode.SYSTEM_ERROR, "OS page cache busy, please try another machine"),
    PutMessageStatus.UNKNOWN_ERROR: (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"),
    PutMessageStatus.IN_SYNC_REPLICAS_NOT_ENOUGH: (ResponseCode.SYSTEM_ERROR, "in-sync replicas not enough"),
}


def end_message_transaction(half: m.StoredMessage) -> m.MessageExtBrokerInner:
    """Java endMessageTransaction: the real message back from the half message (properties string kept)."""
    props = half.properties
    return m.MessageExtBrokerInner.from_stored(
        half, topic=props.get(MC.REAL_TOPIC, ""), queue_id=int(props.get(MC.REAL_QUEUE_ID, "0"))
    )


class EndTransactionProcessor:
    def __init__(
        self,
        *,
        config,
        transactional_message_service,
        broker_metrics,
        now,
    ) -> None:
        self.config = config
        self.transactional_message_service = transactional_message_service
        self.broker_metrics = broker_metrics
        self.now = now

    @handles(RequestCode.END_TRANSACTION)
    async def end_transaction(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand | None:
        h = EndTransactionRequestHeader.from_ext_fields(cmd.ext_fields)
        if h.commit_or_rollback not in (
            SF.TRANSACTION_NOT_TYPE,
            SF.TRANSACTION_COMMIT_TYPE,
            SF.TRANSACTION_ROLLBACK_TYPE,
        ):
            raise InvalidParameter("commitOrRollback field wrong")
        if not self.config.is_master:
            log.warning("Message store is slave mode, so end transaction is forbidden.")
            return cmd.make_response(ResponseCode.SLAVE_NOT_AVAILABLE)
        source = "Check producer" if h.from_transaction_check else "The producer"
        if h.commit_or_rollback == SF.TRANSACTION_NOT_TYPE:
            log.warning(
                "%s[%s] transaction state is pending (UNKNOW). msgId=%s remark=%s",
                source,
                ctx.channel.remote_addr,
                h.msg_id,
                cmd.remark,
            )
            return None
        if h.commit_or_rollback == SF.TRANSACTION_ROLLBACK_TYPE or h.from_transaction_check:
            log.warning(
                "%s[%s] %s the message %s",
                source,
                ctx.channel.remote_addr,
                "commit" if h.commit_or_rollback == SF.TRANSACTION_COMMIT_TYPE else "rollback",
                h.msg_id,
            )
        result = self.transactional_message_service.get_half_message_by_offset(h.commit_log_offset)
        if result.response_code != ResponseCode.SUCCESS:
            return cmd.make_response(result.response_code, result.response_remark)
        half = result.prepare_message
        assert half is not None
        if self._reject_commit_or_rollback(h, half):
            log.warning(
                "Message %s fail [producer end]. currentTimeMillis - bornTime > checkImmunityTime, msgId=%s, "
                "commitLogOffset=%d, wait check",
                "commit" if h.commit_or_rollback == SF.TRANSACTION_COMMIT_TYPE else "rollback",
                h.msg_id,
                h.commit_log_offset,
            )
            return cmd.make_response(ResponseCode.ILLEGAL_OPERATION)
        bad = self._check_prepare_message(cmd, half, h)
        if bad is not None:
            return bad
        if h.commit_or_rollback == SF.TRANSACTION_COMMIT_TYPE:
            inner = end_message_transaction(half)
            inner.sys_flag = SF.reset_transaction_value(inner.sys_flag, SF.TRANSACTION_COMMIT_TYPE)
            inner.prepared_transaction_offset = h.commit_log_offset
            response = await self._send_final_message(cmd, inner)
            if response.code == ResponseCode.SUCCESS:
                await self.transactional_message_service.delete_prepare_message(half)
                self.broker_metrics.on_commit(inner.topic, half.born_timestamp)
            return response
        await self.transactional_message_service.delete_prepare_message(half)
        self.broker_metrics.on_rollback(half.properties.get(MC.REAL_TOPIC, ""))
        return cmd.make_response(ResponseCode.SUCCESS)

    def _reject_commit_or_rollback(self, h: EndTransactionRequestHeader, half: m.StoredMessage) -> bool:
        if h.from_transaction_check:
            return False
        immunity = half.properties.get(MC.CHECK_IMMUNITY_TIME_IN_SECONDS)
        if immunity:
            timeout = int(self.config["transactionTimeOut"])
            return self.now() - half.born_timestamp > get_immunity_time(immunity, timeout)
        return False

    @staticmethod
    def _check_prepare_message(
        cmd: RemotingCommand, half: m.StoredMessage, h: EndTransactionRequestHeader
    ) -> RemotingCommand | None:
        if half.properties.get(MC.PRODUCER_GROUP) != h.producer_group:
            raise SystemError_("The producer group wrong")
        if half.queue_offset != h.tran_state_table_offset:
            raise SystemError_("The transaction state table offset wrong")
        if half.commit_log_offset != h.commit_log_offset:
            raise SystemError_("The commit log offset wrong")
        return None

    async def _send_final_message(self, cmd: RemotingCommand, inner: m.MessageExtBrokerInner) -> RemotingCommand:
        result = await self.transactional_message_service.put_final_message(inner)
        status = result.put_message_status
        if status in (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
            max_size = self.config.store.max_message_size
            raise MessageIllegal(
                f"The message is illegal, maybe msg body or properties length not matched. msg body length limit "
                f"{max_size}B, msg properties length limit 32KB."
            )
        code, remark = _FINAL_STATUS.get(status, (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT"))
        return cmd.make_response(code, remark)
