"""EndTransaction and the transaction check-back over Telemetry.

Java: ``proxy/grpc/v2/transaction/EndTransactionActivity``, ``processor/TransactionProcessor`` and
the proxy's TransactionService: a half message's queue and commit-log offsets are remembered
when it is sent (or when the broker asks about it), by producer group and transaction id, so
EndTransaction can build the END_TRANSACTION request. The broker's check reaches a gRPC
producer through ``TelemetryChannel`` (Java ``GrpcClientChannel``): registered in the broker's
ProducerManager for each topic the producer publishes to (the topic is the group), it turns
CHECK_TRANSACTION_STATE into a RecoverOrphanedTransactionCommand on the client's stream.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any

from pyrmq.grpc.local import LocalInvoker
from pyrmq.grpc.message import to_v2_message
from pyrmq.grpc.proto import pb, spb
from pyrmq.grpc.status import Code, GrpcProxyError, ok
from pyrmq.grpc.validate import validate_topic
from pyrmq.protocol.bodies.admin import ConsumeMessageDirectlyResult, ConsumerRunningInfo
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.admin import GetConsumerRunningInfoRequestHeader
from pyrmq.protocol.headers.transaction import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from pyrmq.store.message import MessageSysFlag, decode_message

log = logging.getLogger("pyrmq.grpc")

#: status of a VerifyMessageResult -> CMResult (ClientActivity#buildConsumeMessageDirectlyResult)
_CONSUME_RESULTS = {
    pb.Code.OK: "CR_SUCCESS",
    pb.Code.FAILED_TO_CONSUME_MESSAGE: "CR_LATER",
    pb.Code.MESSAGE_CORRUPTED: "CR_RETURN_NULL",
}

MAX_TRANSACTION_DATA = 100_000  # remembered half messages; the oldest are forgotten first


class TransactionData:
    """(producer group, transaction id) -> (tranStateTableOffset, commitLogOffset): Java's TransactionDataManager."""

    def __init__(self) -> None:
        self._data: OrderedDict[tuple[str, str], tuple[int, int]] = OrderedDict()

    def add(self, group: str, transaction_id: str, queue_offset: int, commit_log_offset: int) -> None:
        self._data[(group, transaction_id)] = (queue_offset, commit_log_offset)
        self._data.move_to_end((group, transaction_id))
        while len(self._data) > MAX_TRANSACTION_DATA:
            self._data.popitem(last=False)

    def pop(self, group: str, transaction_id: str) -> tuple[int, int] | None:
        return self._data.pop((group, transaction_id), None)


class TelemetryChannel:
    """One client's Telemetry stream as a broker channel: `send_oneway` of a check request writes
    a RecoverOrphanedTransactionCommand to the stream."""

    def __init__(self, client_id: str, remote_addr: str, transactions: TransactionData) -> None:
        self.client_id = client_id
        self.remote_addr = remote_addr
        self.local_addr = ""
        self.closed = False
        self.attrs: dict[str, Any] = {}
        self.transactions = transactions
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.pending: dict[str, asyncio.Future[tuple[int, str, bytes | None]]] = {}  # nonce -> a waiting call

    def put(self, command: Any) -> None:
        if not self.closed:
            self.queue.put_nowait(command)

    def send_oneway(self, cmd: RemotingCommand) -> None:
        if cmd.code != RequestCode.CHECK_TRANSACTION_STATE or self.closed:
            return
        h = CheckTransactionStateRequestHeader.from_command(cmd)
        msg = decode_message(cmd.body or b"")
        transaction_id = h.transaction_id or h.msg_id or ""
        group = msg.properties.get("PGROUP", msg.topic)
        self.transactions.add(group, transaction_id, h.tran_state_table_offset, h.commit_log_offset)
        command = spb.TelemetryCommand(
            recover_orphaned_transaction_command=spb.RecoverOrphanedTransactionCommand(
                message=to_v2_message(msg, None), transaction_id=transaction_id
            )
        )
        self.put(command)

    def send(self, cmd: RemotingCommand) -> None:
        self.send_oneway(cmd)

    async def invoke(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        """The broker asking the client (GrpcClientChannel): running info becomes a
        PrintThreadStackTraceCommand, CONSUME_MESSAGE_DIRECTLY a VerifyMessageCommand; the client's
        answer (by nonce) becomes the remoting response."""
        if cmd.code == RequestCode.GET_CONSUMER_RUNNING_INFO:
            if not GetConsumerRunningInfoRequestHeader.from_command(cmd).jstack_enable:
                # Java writes nothing and the broker's call times out; here it times out at once
                raise TimeoutError("a gRPC client reports its running info only with jstackEnable=true")
            return await self._relay(
                lambda nonce: spb.TelemetryCommand(
                    print_thread_stack_trace_command=spb.PrintThreadStackTraceCommand(nonce=nonce)
                ),
                timeout,
            )
        if cmd.code == RequestCode.CONSUME_MESSAGE_DIRECTLY:
            msg = decode_message(cmd.body or b"")
            message = to_v2_message(msg, None)
            return await self._relay(
                lambda nonce: spb.TelemetryCommand(
                    verify_message_command=spb.VerifyMessageCommand(nonce=nonce, message=message)
                ),
                timeout,
            )
        raise ConnectionError(f"request {cmd.code} is not relayed to gRPC clients")

    async def _relay(self, command: Any, timeout: float) -> RemotingCommand:
        nonce = uuid.uuid4().hex
        answer: asyncio.Future[tuple[int, str, bytes | None]] = asyncio.get_running_loop().create_future()
        self.pending[nonce] = answer
        try:
            self.put(command(nonce))
            code, remark, body = await asyncio.wait_for(answer, timeout)
        finally:
            self.pending.pop(nonce, None)
        return RemotingCommand.response(code, remark, body=body)

    def _answer(self, nonce: str, result: tuple[int, str, bytes | None]) -> None:
        answer = self.pending.get(nonce)
        if answer is not None and not answer.done():
            answer.set_result(result)

    def report_thread_stack(self, status: Any, report: Any) -> None:
        """ClientActivity#reportThreadStackTrace."""
        if status.code == pb.Code.OK:
            body = ConsumerRunningInfo(jstack=report.thread_stack_trace).encode()
            self._answer(report.nonce, (ResponseCode.SUCCESS, "", body))
        elif status.code == pb.Code.VERIFY_FIFO_MESSAGE_UNSUPPORTED:
            self._answer(report.nonce, (ResponseCode.NO_PERMISSION, "forbidden to verify message", None))
        else:
            self._answer(report.nonce, (ResponseCode.SYSTEM_ERROR, "verify message failed", None))

    def report_verify_result(self, status: Any, report: Any) -> None:
        """ClientActivity#reportVerifyMessageResult + buildConsumeMessageDirectlyResult."""
        consume_result = _CONSUME_RESULTS.get(status.code)
        result = ConsumeMessageDirectlyResult(consume_result=consume_result, remark="from gRPC client")
        self._answer(report.nonce, (ResponseCode.SUCCESS, "", result.encode()))

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.queue.put_nowait(None)

    async def commands(self) -> AsyncIterator[Any]:
        while True:
            item = await self.queue.get()
            if item is None:
                return
            yield item

    def __repr__(self) -> str:
        return f"<TelemetryChannel {self.client_id} {self.remote_addr}>"


class TransactionActivity:
    def __init__(self, controller: Any, invoker: LocalInvoker, data: TransactionData) -> None:
        self.controller = controller
        self.invoker = invoker
        self.data = data

    def sent(self, group: str, transaction_id: str, queue_offset: int, commit_log_offset: int) -> None:
        self.data.add(group, transaction_id, queue_offset, commit_log_offset)

    async def end_transaction(self, ctx: Any, request: Any) -> Any:
        validate_topic(request.topic)
        if not request.transaction_id.strip():
            raise GrpcProxyError(Code.INVALID_TRANSACTION_ID, "transaction id cannot be empty")
        if request.resolution == pb.COMMIT:
            commit_or_rollback = MessageSysFlag.TRANSACTION_COMMIT_TYPE
        elif request.resolution == pb.ROLLBACK:
            commit_or_rollback = MessageSysFlag.TRANSACTION_ROLLBACK_TYPE
        else:
            commit_or_rollback = MessageSysFlag.TRANSACTION_NOT_TYPE
        group = request.topic.name  # the Java proxy's producer group is the topic
        offsets = self.data.pop(group, request.transaction_id)
        if offsets is None:  # ProxyExceptionCode.TRANSACTION_DATA_NOT_FOUND: not in GrpcProxyException's table
            raise GrpcProxyError(Code.INTERNAL_SERVER_ERROR, "cannot found transaction data")
        header = EndTransactionRequestHeader(
            producer_group=group,
            tran_state_table_offset=offsets[0],
            commit_log_offset=offsets[1],
            commit_or_rollback=commit_or_rollback,
            msg_id=request.message_id,
            topic=request.topic.name,
            from_transaction_check=request.source == pb.SOURCE_SERVER_CHECK,
            transaction_id=request.transaction_id,
            bname=self.controller.config["brokerName"],
        )
        cmd = RemotingCommand.request(RequestCode.END_TRANSACTION, header.to_ext_fields())
        await self.invoker.invoke(cmd, ctx.remote_addr, timeout=5)  # oneway in Java: the answer is not read
        return spb.EndTransactionResponse(status=ok())


__all__ = ["TelemetryChannel", "TransactionActivity", "TransactionData"]
