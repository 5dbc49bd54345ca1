"""Every RemotingError subclass and the response code it maps to (the one table)."""

from __future__ import annotations

import pytest

from pyrmq.protocol import errors
from pyrmq.protocol.codes import ResponseCode

TABLE = [
    (errors.RemotingError, 1),
    (errors.SystemError_, 1),
    (errors.SystemBusy, 2),
    (errors.RequestCodeNotSupported, 3),
    (errors.TransactionFailed, 4),
    (errors.MessageIllegal, 13),
    (errors.ServiceNotAvailable, 14),
    (errors.VersionNotSupported, 15),
    (errors.NoPermission, 16),
    (errors.TopicNotExist, 17),
    (errors.TopicExistAlready, 18),
    (errors.QueryNotFound, 22),
    (errors.SubscriptionParseFailed, 23),
    (errors.SubscriptionNotExist, 24),
    (errors.SubscriptionNotLatest, 25),
    (errors.SubscriptionGroupNotExist, 26),
    (errors.InvalidParameter, 29),
    (errors.MissingHeaderField, 29),
    (errors.ConsumerNotOnline, 206),
    (errors.ConsumeMsgTimeout, 207),
    (errors.BrokerNotExist, 211),
    (errors.IllegalOperation, 604),
    (errors.GoAway, 1500),
]


@pytest.mark.parametrize("cls,code", TABLE, ids=[c.__name__ for c, _ in TABLE])
def test_code_table(cls, code):
    assert cls.code == code
    exc = cls("some remark") if cls is not errors.MissingHeaderField else cls("topic")
    assert isinstance(exc, errors.RemotingError)
    assert str(exc) == exc.remark


def test_table_covers_every_subclass():
    seen = set()
    stack = [errors.RemotingError]
    while stack:
        c = stack.pop()
        seen.add(c)
        stack.extend(c.__subclasses__())
    assert seen == {c for c, _ in TABLE}


def test_for_code():
    assert errors.for_code(ResponseCode.TOPIC_NOT_EXIST) is errors.TopicNotExist
    assert errors.for_code(ResponseCode.INVALID_PARAMETER) is errors.InvalidParameter
    assert errors.for_code(ResponseCode.SYSTEM_ERROR) is errors.SystemError_
    assert errors.for_code(12345) is errors.RemotingError


def test_protocol_error_is_value_error_and_not_remoting_error():
    assert issubclass(errors.RemotingProtocolError, ValueError)
    assert not issubclass(errors.RemotingProtocolError, errors.RemotingError)


def test_missing_header_field_message_matches_java():
    e = errors.MissingHeaderField("producerGroup")
    assert str(e) == "the custom field <producerGroup> is null"
    assert e.field == "producerGroup"
