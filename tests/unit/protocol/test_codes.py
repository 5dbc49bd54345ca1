"""Code tables: spot checks against Java's numbers (rocketmq-remoting 5.5.0)."""

from __future__ import annotations

import pytest

from pyrmq.protocol.codes import LanguageCode, RequestCode, ResponseCode, SerializeType


@pytest.mark.parametrize(
    "member,value",
    [
        (RequestCode.SEND_MESSAGE, 10),
        (RequestCode.PULL_MESSAGE, 11),
        (RequestCode.QUERY_CONSUMER_OFFSET, 14),
        (RequestCode.UPDATE_CONSUMER_OFFSET, 15),
        (RequestCode.UPDATE_AND_CREATE_TOPIC, 17),
        (RequestCode.HEART_BEAT, 34),
        (RequestCode.END_TRANSACTION, 37),
        (RequestCode.CHECK_TRANSACTION_STATE, 39),
        (RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, 40),
        (RequestCode.PUT_KV_CONFIG, 100),
        (RequestCode.REGISTER_BROKER, 103),
        (RequestCode.UNREGISTER_BROKER, 104),
        (RequestCode.GET_ROUTEINFO_BY_TOPIC, 105),
        (RequestCode.GET_BROKER_CLUSTER_INFO, 106),
        (RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, 206),
        (RequestCode.GET_KVLIST_BY_NAMESPACE, 219),
        (RequestCode.SEND_MESSAGE_V2, 310),
        (RequestCode.SEND_BATCH_MESSAGE, 320),
        (RequestCode.LITE_PULL_MESSAGE, 361),
        (RequestCode.BROKER_CLOSE_CHANNEL_REQUEST, 1014),  # a `short` constant in Java
        (ResponseCode.SUCCESS, 0),
        (ResponseCode.SYSTEM_ERROR, 1),
        (ResponseCode.SYSTEM_BUSY, 2),
        (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, 3),
        (ResponseCode.TRANSACTION_FAILED, 4),
        (ResponseCode.FLUSH_DISK_TIMEOUT, 10),
        (ResponseCode.TOPIC_NOT_EXIST, 17),
        (ResponseCode.PULL_NOT_FOUND, 19),
        (ResponseCode.PULL_RETRY_IMMEDIATELY, 20),
        (ResponseCode.PULL_OFFSET_MOVED, 21),
        (ResponseCode.QUERY_NOT_FOUND, 22),
        (ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, 26),
        (ResponseCode.INVALID_PARAMETER, 29),
        (ResponseCode.RPC_UNKNOWN, -1000),
        (ResponseCode.GO_AWAY, 1500),
        (LanguageCode.JAVA, 0),
        (LanguageCode.PYTHON, 3),
        (LanguageCode.OTHER, 7),
        (LanguageCode.GO, 9),
        (LanguageCode.RUST, 12),
        (LanguageCode.NODE_JS, 13),
        (SerializeType.JSON, 0),
        (SerializeType.ROCKETMQ, 1),
    ],
    ids=lambda x: getattr(x, "name", str(x)),
)
def test_code_values(member, value):
    assert member == value


def test_tables_are_complete():
    # counts of the 5.5.0 constants read with javap (tools/gen_codes.py)
    assert len(RequestCode.__members__) == 169
    assert len(ResponseCode.__members__) == 68
    assert len(LanguageCode) == 14
    assert [m.value for m in LanguageCode] == list(range(14))


def test_request_codes_fit_where_they_must():
    # codes >= 32768 (5.x POP family) exist but can only travel in JSON headers
    big = [m for m in RequestCode if m > 32767]
    assert all(m.value >= 200000 for m in big)
