"""Request checks with the Codes the Java proxy answers. Java: ``proxy/grpc/v2/common/GrpcValidator``."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from pyrmq.common import constants
from pyrmq.grpc.status import Code, GrpcProxyError

MAX_INVISIBLE_TIME_MS = 12 * 3600 * 1000  # ProxyConfig#maxInvisibleTimeMills


def contains_control(data: str) -> bool:
    """Guava CharMatcher.javaIsoControl: U+0000..U+001F and U+007F..U+009F."""
    return any(unicodedata.category(c) == "Cc" for c in data)


#: client/Validators: the proxy checks names with the client's rules and messages (not the broker's)
TOPIC_MAX_LENGTH = 127
GROUP_MAX_LENGTH = 120
_LEGAL_NAME = re.compile(r"[%|a-zA-Z0-9_-]+")
_LEGAL_PATTERN = "^[%|a-zA-Z0-9_-]+$"


def check_topic(name: str) -> str | None:
    """Validators#checkTopic's message, or None."""
    if not name.strip():
        return "The specified topic is blank"
    if len(name) > TOPIC_MAX_LENGTH:
        return f"The specified topic is longer than topic max length {TOPIC_MAX_LENGTH}."
    if not _LEGAL_NAME.fullmatch(name):
        return f"The specified topic[{name}] contains illegal characters, allowing only {_LEGAL_PATTERN}"
    return None


def check_group(name: str) -> str | None:
    """Validators#checkGroup's message, or None."""
    if not name.strip():
        return "the specified group is blank"
    if len(name) > GROUP_MAX_LENGTH:
        return f"the specified group[{name}] is longer than group max length: {GROUP_MAX_LENGTH}."
    if not _LEGAL_NAME.fullmatch(name):
        return f"the specified group[{name}] contains illegal characters, allowing only {_LEGAL_PATTERN}"
    return None


def validate_topic(topic: Any) -> None:
    name = topic.name
    remark = check_topic(name)
    if remark is not None:
        raise GrpcProxyError(Code.ILLEGAL_TOPIC, remark)
    if constants.is_system_topic(name):
        raise GrpcProxyError(Code.ILLEGAL_TOPIC, "cannot access system topic")


def validate_group(group: Any) -> None:
    name = group.name
    remark = check_group(name)
    if remark is not None:
        raise GrpcProxyError(Code.ILLEGAL_CONSUMER_GROUP, remark)
    if name.startswith(constants.CID_RMQ_SYS_PREFIX):
        raise GrpcProxyError(Code.ILLEGAL_CONSUMER_GROUP, "cannot use system consumer group")


def validate_tag(tag: str) -> None:
    if not tag:
        return
    if not tag.strip():
        raise GrpcProxyError(Code.ILLEGAL_MESSAGE_TAG, "tag cannot be the char sequence of whitespace")
    if "|" in tag:
        raise GrpcProxyError(Code.ILLEGAL_MESSAGE_TAG, "tag cannot contain '|'")
    if contains_control(tag):
        raise GrpcProxyError(Code.ILLEGAL_MESSAGE_TAG, "tag cannot contain control character")


def validate_invisible_time(invisible_ms: int, min_ms: int = 0) -> None:
    if invisible_ms < min_ms:
        raise GrpcProxyError(Code.ILLEGAL_INVISIBLE_TIME, f"the invisibleTime is too small. min is {min_ms}")
    if invisible_ms > MAX_INVISIBLE_TIME_MS:
        raise GrpcProxyError(
            Code.ILLEGAL_INVISIBLE_TIME, f"the invisibleTime is too large. max is {MAX_INVISIBLE_TIME_MS}"
        )


__all__ = ["contains_control", "validate_group", "validate_invisible_time", "validate_tag", "validate_topic"]
