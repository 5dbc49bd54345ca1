"""Headers of END_TRANSACTION (37) and CHECK_TRANSACTION_STATE (39).

Java: ``remoting/protocol/header/{EndTransactionRequestHeader,
CheckTransactionStateRequestHeader}`` (both ``RpcRequestHeader``s: ``bname``).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyrmq.protocol.headers.base import RemotingHeader


@dataclass(slots=True)
class EndTransactionRequestHeader(RemotingHeader):
    producer_group: str
    tran_state_table_offset: int
    commit_log_offset: int
    commit_or_rollback: int
    msg_id: str
    topic: str | None = None
    from_transaction_check: bool | None = False
    transaction_id: str | None = None
    bname: str | None = None


@dataclass(slots=True)
class CheckTransactionStateRequestHeader(RemotingHeader):
    tran_state_table_offset: int
    commit_log_offset: int
    topic: str | None = None
    msg_id: str | None = None
    transaction_id: str | None = None
    offset_msg_id: str | None = None
    bname: str | None = None
