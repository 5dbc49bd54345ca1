"""Names and message rebuilds shared by the transaction services.

Java: ``broker/transaction/queue/TransactionalMessageUtil`` and the
``renew*``/``parseHalfMessageInner`` helpers of ``TransactionalMessageBridge``.
Records keep the half message's properties string as it is (Java copies the
map into ``propertiesString`` before clearing entries from the map only, so a
committed message still carries TRAN_MSG, PGROUP, REAL_TOPIC and REAL_QID on
disk, and consumers see them).
"""

from __future__ import annotations

import re

from pyrmq.common.constants import RMQ_SYS_TRANS_HALF_TOPIC, MessageConst
from pyrmq.store import message as m

REMOVE_TAG = "d"
OFFSET_SEPARATOR = ","

MC = MessageConst
SF = m.MessageSysFlag


def parse_half_message_inner(msg: m.MessageExtBrokerInner) -> m.MessageExtBrokerInner:
    """Java parseHalfMessageInner: remember the real topic/queue, park in the half topic's queue 0."""
    props = msg.get_properties()
    uniq = props.get(MC.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
    if uniq:
        props[MC.TRANSACTION_ID] = uniq
    props[MC.REAL_TOPIC] = msg.topic
    props[MC.REAL_QUEUE_ID] = str(msg.queue_id)
    msg.properties = props
    msg.properties_string = None
    msg.sys_flag = SF.reset_transaction_value(msg.sys_flag, SF.TRANSACTION_NOT_TYPE)
    msg.topic = RMQ_SYS_TRANS_HALF_TOPIC
    msg.queue_id = 0
    return msg


def renew_half_message_inner(stored: m.StoredMessage, properties: dict[str, str]) -> m.MessageExtBrokerInner:
    """Java renewHalfMessageInner: the same half message, appended again (reconsume times not kept)."""
    inner = m.MessageExtBrokerInner.from_stored(stored, properties)
    inner.reconsume_times = 0
    return inner


def renew_immunity_half_message_inner(stored: m.StoredMessage, properties: dict[str, str]) -> m.MessageExtBrokerInner:
    """Java renewImmunityHalfMessageInner: also remember the first queue offset of the half message."""
    props = dict(properties)
    if MC.TRANSACTION_PREPARED_QUEUE_OFFSET not in props:
        props[MC.TRANSACTION_PREPARED_QUEUE_OFFSET] = str(stored.queue_offset)
    return renew_half_message_inner(stored, props)


def get_immunity_time(value: str, transaction_timeout: int) -> int:
    """TransactionalMessageUtil#getImmunityTime (used by END_TRANSACTION): at least the timeout."""
    try:
        t = int(value) * 1000
    except ValueError:
        t = 0
    return max(t, transaction_timeout)


def java_long(value: str | None) -> int:
    """Long.parseLong or -1 (TransactionalMessageServiceImpl#getLong)."""
    if value is None or not re.fullmatch(r"[+-]?[0-9]+", value):
        return -1
    return int(value)
