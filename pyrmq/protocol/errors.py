"""Errors of the remoting layer, each carrying the response code it maps to.

Two families, after h11/h2: `RemotingProtocolError` means the peer sent bytes
that are not a RocketMQ frame (the connection is closed, like Java's
NettyDecoder closing the channel on a decode exception); `RemotingError` and
its subclasses are raised by processors and turned into a response with
`exc.code` and `str(exc)` as remark by the one dispatcher in server.py
(Java: NettyRemotingAbstract#processRequestCommand).
"""

from __future__ import annotations

from typing import ClassVar

from pyrmq.protocol.codes import ResponseCode


class RemotingProtocolError(ValueError):
    """Malformed frame or header: the connection that sent it must be closed."""


class RemotingError(Exception):
    """A request failed; the response carries `code` and `str(self)` as remark."""

    code: ClassVar[int] = ResponseCode.SYSTEM_ERROR

    def __init__(self, remark: str = "") -> None:
        super().__init__(remark)

    @property
    def remark(self) -> str:
        return str(self)


class SystemError_(RemotingError):
    """Explicit SYSTEM_ERROR (1); named with a trailing underscore to avoid the builtin."""

    code = ResponseCode.SYSTEM_ERROR


class SystemBusy(RemotingError):
    code = ResponseCode.SYSTEM_BUSY


class RequestCodeNotSupported(RemotingError):
    code = ResponseCode.REQUEST_CODE_NOT_SUPPORTED


class TransactionFailed(RemotingError):
    code = ResponseCode.TRANSACTION_FAILED


class ServiceNotAvailable(RemotingError):
    code = ResponseCode.SERVICE_NOT_AVAILABLE


class MessageIllegal(RemotingError):
    code = ResponseCode.MESSAGE_ILLEGAL


class VersionNotSupported(RemotingError):
    code = ResponseCode.VERSION_NOT_SUPPORTED


class NoPermission(RemotingError):
    code = ResponseCode.NO_PERMISSION


class TopicNotExist(RemotingError):
    code = ResponseCode.TOPIC_NOT_EXIST


class TopicExistAlready(RemotingError):
    code = ResponseCode.TOPIC_EXIST_ALREADY


class QueryNotFound(RemotingError):
    code = ResponseCode.QUERY_NOT_FOUND


class SubscriptionParseFailed(RemotingError):
    code = ResponseCode.SUBSCRIPTION_PARSE_FAILED


class SubscriptionNotExist(RemotingError):
    code = ResponseCode.SUBSCRIPTION_NOT_EXIST


class SubscriptionNotLatest(RemotingError):
    code = ResponseCode.SUBSCRIPTION_NOT_LATEST


class SubscriptionGroupNotExist(RemotingError):
    code = ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST


class InvalidParameter(RemotingError):
    """INVALID_PARAMETER (29, 5.x only; 4.9.x clients just see an unknown code)."""

    code = ResponseCode.INVALID_PARAMETER


class ConsumerNotOnline(RemotingError):
    code = ResponseCode.CONSUMER_NOT_ONLINE


class ConsumeMsgTimeout(RemotingError):
    code = ResponseCode.CONSUME_MSG_TIMEOUT


class BrokerNotExist(RemotingError):
    code = ResponseCode.BROKER_NOT_EXIST


class IllegalOperation(RemotingError):
    code = ResponseCode.ILLEGAL_OPERATION


class GoAway(RemotingError):
    code = ResponseCode.GO_AWAY


class MissingHeaderField(InvalidParameter):
    """A required custom-header field is absent.

    Java only logs `@CFNotNull` violations and fails later (SYSTEM_ERROR on an
    unboxing NPE); answering INVALID_PARAMETER with Java's message is clearer.
    """

    def __init__(self, field: str) -> None:
        super().__init__(f"the custom field <{field}> is null")
        self.field = field


class RemotingTimeout(Exception):
    """Client side: no response within the timeout (Java RemotingTimeoutException)."""


class RemotingConnectError(Exception):
    """Client side: could not connect (Java RemotingConnectException)."""


class RemotingSendRequestError(Exception):
    """Client side: the connection dropped before the response came."""


def for_code(code: int) -> type[RemotingError]:
    """The most specific RemotingError subclass for a response code (RemotingError if none)."""
    return _BY_CODE.get(code, RemotingError)


def _collect() -> dict[int, type[RemotingError]]:
    table: dict[int, type[RemotingError]] = {}
    stack = list(RemotingError.__subclasses__())
    while stack:
        cls = stack.pop(0)
        table.setdefault(int(cls.code), cls)
        stack.extend(cls.__subclasses__())
    table[int(ResponseCode.SYSTEM_ERROR)] = SystemError_
    return table


_BY_CODE = _collect()
