"""How mqadmin's values look when Java prints them: printf, dates, HashMap order, toString()s.

Java: ``String.format`` / ``PrintStream.printf``, ``UtilAll.timeMillisToHumanString2`` and
``formatDate``, ``java.util.HashMap`` iteration order and ``AbstractMap#toString``,
``MessageExt#toString``, ``MQVersion#getVersionDesc``. Scripts grep these strings, so they are
reproduced rather than approximated.
"""

from __future__ import annotations

import time
from typing import Any

from pyrmq.common.java_lang import double_to_string, hashmap_order, java_string_hash
from pyrmq.store.message import StoredMessage


def jstr(v: Any) -> str:
    """``String.valueOf`` for the values the tools print."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, float):
        return double_to_string(v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{jstr(k)}={jstr(x)}" for k, x in v.items()) + "}"
    return str(v)


def jfmt(fmt: str, *args: Any) -> str:
    """Java printf for %s/%d/%f with flags and widths: ``%n`` is a newline, %s uses jstr."""
    fmt = fmt.replace("%n", "\n")
    conv: list[Any] = []
    i = 0
    n = 0
    while True:
        i = fmt.find("%", i)
        if i < 0:
            break
        j = i + 1
        if fmt[j] == "%":
            i = j + 1
            continue
        while fmt[j] not in "sdf":
            j += 1
        a = args[n]
        n += 1
        conv.append(jstr(a) if fmt[j] == "s" else a)
        i = j + 1
    return fmt % tuple(conv)


def human_millis(ms: int) -> str:
    """``UtilAll.timeMillisToHumanString2``: ``yyyy-MM-dd HH:mm:ss,SSS`` in local time."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000)) + f",{ms % 1000:03d}"


def format_date(ms: int) -> str:
    """``UtilAll.formatDate(date, "yyyy-MM-dd HH:mm:ss")``."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000))


def parse_human_date(s: str) -> int:
    """``yyyy-MM-dd#HH:mm:ss:SSS`` (local time) -> epoch millis; ValueError when it does not parse."""
    day, _, rest = s.partition("#")
    hh, mm, ss, sss = rest.split(":")
    t = time.strptime(f"{day} {hh}:{mm}:{ss}", "%Y-%m-%d %H:%M:%S")
    return int(time.mktime(t)) * 1000 + int(sss)


def java_bytes(b: bytes) -> str:
    """``Arrays.toString(byte[])`` (signed bytes)."""
    return "[" + ", ".join(str(x - 256 if x > 127 else x) for x in b) + "]"


def host_str(host: Any) -> str:
    """``InetSocketAddress#toString`` of a record's host: ``/ip:port``."""
    ip, port = host
    return f"/{ip}:{port}"


def host_addr(host: Any) -> str:
    ip, port = host
    return f"{ip}:{port}"


def message_props(msg: StoredMessage, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The client's property map (``MessageDecoder`` fills a HashMap(128)) in Java order."""
    props = dict(msg.properties)
    if extra:
        props.update(extra)
    return hashmap_order(props, 128)


def message_ext_str(msg: StoredMessage, broker_name: str | None, props: dict[str, str]) -> str:
    """``MessageExt#toString`` as the pull consumer's MessageClientExt prints it."""
    crc = msg.body_crc - (1 << 32) if msg.body_crc >= 1 << 31 else msg.body_crc
    body = msg.uncompressed_body() or b""
    tx = props.get("__transactionId__")
    return (
        f"MessageExt [brokerName={jstr(broker_name)}, queueId={msg.queue_id}, storeSize={msg.store_size}, "
        f"queueOffset={msg.queue_offset}, sysFlag={msg.sys_flag}, bornTimestamp={msg.born_timestamp}, "
        f"bornHost={host_str(msg.born_host)}, storeTimestamp={msg.store_timestamp}, "
        f"storeHost={host_str(msg.store_host)}, msgId={msg.msg_id}, commitLogOffset={msg.commit_log_offset}, "
        f"bodyCRC={crc}, reconsumeTimes={msg.reconsume_times}, "
        f"preparedTransactionOffset={msg.prepared_transaction_offset}, "
        f"toString()=Message{{topic='{msg.topic}', flag={msg.flag}, properties={jstr(props)}, "
        f"body={java_bytes(body)}, transactionId='{jstr(tx)}'}}]"
    )


def client_msg_id(msg: StoredMessage) -> str:
    """``MessageClientExt#getMsgId``: the UNIQ_KEY when present, else the offset id."""
    return msg.uniq_key or msg.msg_id


def mq_hash(mq) -> int:
    """MessageQueue#hashCode (brokerName, queueId, topic with prime 31), as a signed int."""
    r = 31 + java_string_hash(mq.broker_name or "")
    r = (31 * r + mq.queue_id) & 0xFFFFFFFF
    r = (31 * r + java_string_hash(mq.topic or "")) & 0xFFFFFFFF
    return r


def hash_order(keys: list) -> list:
    """A java.util.HashMap/HashSet of MessageQueues (default capacity) iterates by spread hash bucket."""
    n = 16
    while len(keys) > n * 3 // 4:
        n <<= 1
    return sorted(keys, key=lambda k: (mq_hash(k) ^ (mq_hash(k) >> 16)) & (n - 1))
