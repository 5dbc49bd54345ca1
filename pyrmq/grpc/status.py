"""rocketmq-apis ``Status``/``Code`` from remoting response codes and errors.

Java: ``proxy/grpc/v2/common/ResponseBuilder`` (the response-code table, the exception
mapping) and ``GrpcProxyException`` (an activity's refusal with its own Code).
"""

from __future__ import annotations

from pyrmq.grpc.proto import pb
from pyrmq.protocol.codes import ResponseCode

Code = pb.Code

#: ResponseBuilder#RESPONSE_CODE_MAPPING; anything else is INTERNAL_SERVER_ERROR
RESPONSE_CODE_MAPPING: dict[int, int] = {
    ResponseCode.SUCCESS: Code.OK,
    ResponseCode.SYSTEM_BUSY: Code.TOO_MANY_REQUESTS,
    ResponseCode.REQUEST_CODE_NOT_SUPPORTED: Code.NOT_IMPLEMENTED,
    ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST: Code.CONSUMER_GROUP_NOT_FOUND,
    ResponseCode.TOPIC_NOT_EXIST: Code.TOPIC_NOT_FOUND,  # TopicRouteHelper#isTopicNotExistError
}


class GrpcProxyError(Exception):
    """An RPC refused with a rocketmq-apis Code (Java GrpcProxyException)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def code_of(response_code: int) -> int:
    return RESPONSE_CODE_MAPPING.get(response_code, Code.INTERNAL_SERVER_ERROR)


def status(code: int, message: str | None = None) -> pb.Status:
    return pb.Status(code=code, message=message if message is not None else Code.Name(code))


def ok() -> pb.Status:
    return status(Code.OK)


def from_response(response_code: int, remark: str | None) -> pb.Status:
    """ResponseBuilder#buildStatus(int, String): the remark, or the number when there is none."""
    return status(code_of(response_code), remark if remark is not None else str(response_code))


def from_error(e: BaseException) -> pb.Status:
    """ResponseBuilder#buildStatus(Throwable)."""
    if isinstance(e, GrpcProxyError):
        return status(e.code, e.message)
    return status(Code.INTERNAL_SERVER_ERROR, f"{type(e).__name__}: {e}")


__all__ = ["Code", "GrpcProxyError", "code_of", "from_error", "from_response", "ok", "status"]
