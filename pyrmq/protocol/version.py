"""Java ``MQVersion.Version`` ordinals that change what goes on the wire.

A request's ``version`` field carries the sender's ordinal; pyrmq answers in the
form that ordinal understands. Only the ordinals pyrmq branches on are listed.
"""

from __future__ import annotations

import enum


class MQVersion(enum.IntEnum):
    V3_0_7_SNAPSHOT = 18  # clients from here understand RESET_CONSUMER_CLIENT_OFFSET
    V3_0_11 = 37  # RegisterBrokerBody instead of a bare TopicConfigSerializeWrapper
    V3_1_8_SNAPSHOT = 60  # clients from here answer GET_CONSUMER_RUNNING_INFO
    V3_4_9 = 86  # maxReconsumeTimes honoured from here
    V4_9_3 = 400  # up to here _UNIQUE_KEY_QUERY is left out of the ACL signature (AclClientRPCHook)
    V4_9_4 = 401  # route data with quoted (standard JSON) brokerAddrs keys
    V5_0_0 = 413  # compressed RegisterBrokerBody carries topic queue mapping infos
    V5_5_0 = 513  # the release whose protocol pyrmq follows, and what it says it is


#: the version pyrmq puts in every command it sends and reports as broker and name server (Java
#: 5.5.0's MQVersion.CURRENT_VERSION): at least 232 (Java SQL92 consumers check it, spec §1.3)
#: and within int16 (the Go client)
PYRMQ_VERSION = MQVersion.V5_5_0.value


def version_desc(ordinal: int) -> str:
    """``MQVersion.getVersionDesc``: V4_0_0_SNAPSHOT (212) .. V5_9_9 (611), then HIGHER_VERSION."""
    if ordinal >= 612:
        return "HIGHER_VERSION"
    if ordinal < 212:
        return f"V{ordinal}"  # 3.x names are irregular; no live client sends them
    k = ordinal - 212
    n = k // 2
    name = f"V{4 + n // 100}_{(n // 10) % 10}_{n % 10}"
    return name if k % 2 else name + "_SNAPSHOT"
