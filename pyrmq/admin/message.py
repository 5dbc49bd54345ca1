"""Message commands: sendMessage, consumeMessage, printMsg, printMsgByQueue, queryMsgById,
queryMsgByKey, queryMsgByUniqueKey, queryMsgByOffset.

Java: ``tools/command/message/*`` with the pull consumer (group ``TOOLS_CONSUMER``) and producer
paths of the client (spec §1.5 end, §3.3, §3.9). Records are decoded by ``pyrmq.store.message``:
the bytes a broker returns are the commit-log records.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from pyrmq.admin.base import Ctx, command, java_bool, java_int
from pyrmq.admin.client import AdminError, MQBrokerError, MQClientError, select_addr
from pyrmq.admin.javafmt import (
    client_msg_id,
    hash_order,
    host_addr,
    human_millis,
    jstr,
    message_ext_str,
    message_props,
    parse_human_date,
)
from pyrmq.admin.options import Opt, OptionSet
from pyrmq.common.constants import AUTO_CREATE_TOPIC_KEY_TOPIC, TOOLS_CONSUMER_GROUP, MessageConst
from pyrmq.protocol.bodies.admin import GroupList
from pyrmq.protocol.bodies.broker import SubscriptionData
from pyrmq.protocol.bodies.namesrv import TopicRouteData
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.headers.admin import QueryTopicConsumeByWhoRequestHeader
from pyrmq.protocol.headers.base import RemotingHeader
from pyrmq.protocol.headers.broker import (
    OffsetResponseHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryMessageRequestHeader,
    SearchOffsetRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    TopicQueueRequestHeader,
    ViewMessageRequestHeader,
)
from pyrmq.store.message import (
    MessageDecodeError,
    StoredMessage,
    UniqIdGenerator,
    decode_message_id,
    decode_messages,
    message_properties_to_string,
)

LONG_MAX = (1 << 63) - 1
FLAG_SUBSCRIPTION = 4  # PullSysFlag


#: PULL_MESSAGE response code -> PullStatus (MQClientAPIImpl#processPullResponse)
PULL_STATUS: dict[int, str] = {
    ResponseCode.SUCCESS: "FOUND",
    ResponseCode.PULL_NOT_FOUND: "NO_NEW_MSG",
    ResponseCode.PULL_RETRY_IMMEDIATELY: "NO_MATCHED_MSG",
    ResponseCode.PULL_OFFSET_MOVED: "OFFSET_ILLEGAL",
}


@dataclass(slots=True)
class PullResult:
    status: str  # FOUND, NO_NEW_MSG, NO_MATCHED_MSG, OFFSET_ILLEGAL
    next_begin_offset: int
    min_offset: int
    max_offset: int
    msgs: list[StoredMessage]


class Queue:
    """MessageQueue with the master address it lives on."""

    def __init__(self, topic: str, broker_name: str | None, queue_id: int, addr: str) -> None:
        self.topic, self.broker_name, self.queue_id, self.addr = topic, broker_name, queue_id, addr

    def __str__(self) -> str:
        return f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, queueId={self.queue_id}]"


async def queues(ctx: Ctx, topic: str) -> list[Queue]:
    """fetchSubscribeMessageQueues: readQueueNums of every readable QueueData, sorted."""
    route = await ctx.client.route(topic)
    addrs = _master_addrs(route)
    out = []
    for qd in route.queue_datas or []:
        addr = addrs.get(qd.broker_name)
        if qd.perm & 4 and addr:
            out += [Queue(topic, qd.broker_name, i, addr) for i in range(qd.read_queue_nums)]
    if not out:
        raise MQClientError(f"Can not find Message Queue for this topic, {topic}")
    return hash_order(out)  # a HashSet<MessageQueue> in Java


def _master_addrs(route: TopicRouteData) -> dict[str | None, str]:
    """Broker name -> master address, for the brokers of a route that have a master."""
    return {bd.broker_name: addr for bd in route.broker_datas or [] if (addr := bd.broker_addrs.get(0))}


async def queue_of(ctx: Ctx, topic: str, broker_name: str, queue_id: int) -> Queue:
    route = await ctx.client.route(topic)
    for bd in route.broker_datas or []:
        if bd.broker_name == broker_name and bd.broker_addrs.get(0):
            return Queue(topic, broker_name, queue_id, bd.broker_addrs[0])
    raise MQClientError(f"The broker[{broker_name}] not exist")


async def offset_call(ctx: Ctx, q: Queue, code: int, ts: int | None = None) -> int:
    h: RemotingHeader
    if code == RequestCode.SEARCH_OFFSET_BY_TIMESTAMP:
        if ts is None:
            raise ValueError("SEARCH_OFFSET_BY_TIMESTAMP needs a timestamp")
        h = SearchOffsetRequestHeader(q.topic, q.queue_id, ts)
    else:
        h = TopicQueueRequestHeader(q.topic, q.queue_id)
    r = await ctx.client.broker(q.addr, code, h)
    return OffsetResponseHeader.from_command(r).offset


async def pull(ctx: Ctx, q: Queue, expr: str, offset: int, n: int) -> PullResult:
    """DefaultMQPullConsumer.pull: one PULL_MESSAGE, tags filtered on the client like Java."""
    sd = SubscriptionData.build(q.topic, expr)
    h = PullMessageRequestHeader(
        consumer_group=TOOLS_CONSUMER_GROUP,
        topic=q.topic,
        queue_id=q.queue_id,
        queue_offset=offset,
        max_msg_nums=n,
        sys_flag=FLAG_SUBSCRIPTION,
        commit_offset=0,
        suspend_timeout_millis=20000,
        sub_version=0,
        subscription=sd.sub_string,
        expression_type="TAG",
    )
    r = await ctx.client.invoke(q.addr, RequestCode.PULL_MESSAGE, h, timeout_s=10)
    status = PULL_STATUS.get(r.code)
    if status is None:
        raise MQBrokerError.of(r.code, r.remark, q.addr)
    rh = PullMessageResponseHeader.from_command(r)
    msgs = []
    if status == "FOUND":
        codes = sd.tags_codes()
        msgs = [
            m for m in decode_messages(r.body or b"") if codes is None or (m.tags is not None and m.tags in sd.tags_set)
        ]
        if not msgs:
            status = "NO_MATCHED_MSG"
    return PullResult(status, rh.next_begin_offset, rh.min_offset, rh.max_offset, msgs)


def pulled_props(msg: StoredMessage, res: PullResult) -> dict[str, str]:
    return message_props(
        msg, {MessageConst.MIN_OFFSET: str(res.min_offset), MessageConst.MAX_OFFSET: str(res.max_offset)}
    )


def print_pulled(ctx: Ctx, q: Queue, res: PullResult, body: bool | None, charset: str = "utf-8") -> None:
    for m in res.msgs:
        text = (m.uncompressed_body() or b"").decode(charset, "replace") if body else "NOT PRINT BODY"
        ctx.printf(
            "MSGID: %s %s BODY: %s%n", client_msg_id(m), message_ext_str(m, q.broker_name, pulled_props(m, res)), text
        )


def timestamp_format(value: str) -> int:
    """PrintMessageSubCommand.timestampFormat: millis or ``yyyy-MM-dd#HH:mm:ss:SSS``."""
    try:
        return int(value)
    except ValueError:
        try:
            return parse_human_date(value)
        except ValueError:
            raise AdminError(f"cannot parse timestamp {value!r}: expected millis or yyyy-MM-dd#HH:mm:ss:SSS") from None


TIME_HELP = "timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"
PRINT_MSG = OptionSet(
    [
        Opt("t", "topic", True, "topic name", required=True),
        Opt("c", "charsetName ", True, "CharsetName(eg: UTF-8,GBK)"),
        Opt("s", "subExpression ", True, "Subscribe Expression(eg: TagA || TagB)"),
        Opt("b", "beginTimestamp ", True, "Begin " + TIME_HELP),
        Opt("e", "endTimestamp ", True, "End " + TIME_HELP),
        Opt("d", "printBody ", True, "print body"),
        Opt("l", "lmqParentTopic", True, "Lmq parent topic, lmq is used to find the route."),
    ]
)


@command("printMsg", "Print Message Detail.", "PrintMessageSubCommand", PRINT_MSG)
async def print_msg(ctx: Ctx) -> None:
    topic = ctx.value("t")
    charset = ctx.get("c") or "utf-8"
    expr = ctx.get("s") or "*"
    body = not ctx.has("d") or java_bool(ctx.get("d"))
    for q in await queues(ctx, ctx.get("l") or topic):
        q.topic = topic
        lo = await offset_call(ctx, q, RequestCode.GET_MIN_OFFSET)
        hi = await offset_call(ctx, q, RequestCode.GET_MAX_OFFSET)
        if ctx.has("b"):
            lo = await offset_call(ctx, q, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, timestamp_format(ctx.value("b")))
        if ctx.has("e"):
            hi = await offset_call(ctx, q, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, timestamp_format(ctx.value("e")))
        ctx.printf("minOffset=%s, maxOffset=%s, %s%n", lo, hi, q)
        off = lo
        while off < hi:
            try:
                res = await pull(ctx, q, expr, off, 32)
            except AdminError as e:
                print(e.java_line(), file=__import__("sys").stderr)
                break
            off = res.next_begin_offset
            if res.status == "FOUND":
                print_pulled(ctx, q, res, body, charset)
            elif res.status == "NO_MATCHED_MSG":
                ctx.printf("%s no matched msg. status=%s, offset=%s%n", q, res.status, off)
            else:
                ctx.printf("%s print msg finished. status=%s, offset=%s%n", q, res.status, off)
                break
        ctx.printf("--------------------------------------------------------\n")


PRINT_BY_QUEUE = OptionSet(
    [
        Opt("t", "topic", True, "topic name", required=True),
        Opt("a", "brokerName ", True, "broker name", required=True),
        Opt("i", "queueId ", True, "queue id", required=True),
        Opt("c", "charsetName ", True, "CharsetName(eg: UTF-8,GBK)"),
        Opt("s", "subExpression ", True, "Subscribe Expression(eg: TagA || TagB)"),
        Opt("b", "beginTimestamp ", True, "Begin " + TIME_HELP),
        Opt("e", "endTimestamp ", True, "End " + TIME_HELP),
        Opt("p", "print msg", True, "print msg. eg: true | false(default)"),
        Opt("d", "printBody ", True, "print body. eg: true | false(default)"),
        Opt("f", "calculate", True, "calculate by tag. eg: true | false(default)"),
    ]
)


@command("printMsgByQueue", "Print Message Detail by queueId.", "PrintMessageByQueueCommand", PRINT_BY_QUEUE)
async def print_msg_by_queue(ctx: Ctx) -> None:
    print_it = java_bool(ctx.get("p"))
    body = java_bool(ctx.get("d"))
    by_tag = java_bool(ctx.get("f"))
    expr = ctx.get("s") or "*"
    q = await queue_of(ctx, ctx.value("t"), ctx.value("a"), java_int(ctx.get("i")))
    lo = await offset_call(ctx, q, RequestCode.GET_MIN_OFFSET)
    hi = await offset_call(ctx, q, RequestCode.GET_MAX_OFFSET)
    if ctx.has("b"):
        lo = await offset_call(ctx, q, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, timestamp_format(ctx.value("b")))
    if ctx.has("e"):
        hi = await offset_call(ctx, q, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, timestamp_format(ctx.value("e")))
    tags: dict[str, int] = {}
    off = lo
    while off < hi:
        try:
            res = await pull(ctx, q, expr, off, 32)
        except AdminError as e:
            print(e.java_line(), file=__import__("sys").stderr)
            break
        off = res.next_begin_offset
        if res.status != "FOUND":
            break
        for m in res.msgs:
            tags[jstr(m.tags)] = tags.get(jstr(m.tags), 0) + 1
        if print_it:
            print_pulled(ctx, q, res, body, ctx.get("c") or "utf-8")
    if by_tag:
        for tag, n in sorted(tags.items(), key=lambda kv: -kv[1]):
            ctx.printf("Tag: %-30s Count: %s%n", tag, n)


CONSUME_MESSAGE = OptionSet(
    [
        Opt("t", "topic", True, "Topic name", required=True),
        Opt("b", "brokerName", True, "Broker name"),
        Opt("i", "queueId", True, "Queue Id"),
        Opt("o", "offset", True, "Queue offset"),
        Opt("g", "consumerGroup", True, "Consumer group name"),
        Opt("s", "beginTimestamp ", True, "Begin " + TIME_HELP),
        Opt("e", "endTimestamp ", True, "End " + TIME_HELP),
        Opt("c", "MessageNumber", True, "Number of message to be consumed"),
    ]
)


@command("consumeMessage", "Consume message.", "ConsumeMessageCommand", CONSUME_MESSAGE)
async def consume_message(ctx: Ctx) -> None:
    """ConsumeMessageCommand: from one queue (-b -i [-o]) or every queue, at most -c messages (default 128)."""
    topic = ctx.value("t")
    count = java_int(ctx.get("c")) if ctx.has("c") else 128
    if ctx.has("b") and ctx.has("i"):
        targets = [await queue_of(ctx, topic, ctx.value("b"), java_int(ctx.get("i")))]
    else:
        targets = await queues(ctx, topic)
    single = len(targets) == 1 and ctx.has("b")
    left = count
    for q in targets:
        lo = await offset_call(ctx, q, RequestCode.GET_MIN_OFFSET)
        hi = await offset_call(ctx, q, RequestCode.GET_MAX_OFFSET)
        if ctx.has("s"):
            lo = max(
                lo, await offset_call(ctx, q, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, timestamp_format(ctx.value("s")))
            )
        if ctx.has("e"):
            hi = min(
                hi, await offset_call(ctx, q, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, timestamp_format(ctx.value("e")))
            )
        if single and ctx.has("o"):
            off = java_int(ctx.get("o"))
            if off < lo or off >= hi:
                ctx.printf("%s no matched msg, offset=%s\n", q, off)
                return
            lo = off
        n = min(left, hi - lo)
        if n <= 0:
            continue
        if single:
            ctx.printf("The oldler %d message will be provided\n", n)
            ctx.printf("Consume ok\n")
        else:
            ctx.printf("The older %d message of the %d queue will be provided\n", n, q.queue_id)
        off, end = lo, lo + n
        while off < end:
            res = await pull(ctx, q, "*", off, min(32, end - off))
            if res.status != "FOUND":
                ctx.printf("%s no matched msg. status=%s, offset=%s\n", q, res.status, res.next_begin_offset)
                break
            res.msgs = res.msgs[: end - off]
            print_pulled(ctx, q, res, True)
            off = res.next_begin_offset
        left -= n
        if left <= 0:
            break


SEND_MESSAGE = OptionSet(
    [
        Opt("t", "topic", True, "Topic name", required=True),
        Opt("p", "body", True, "UTF-8 string format of the message body", required=True),
        Opt("k", "key", True, "Message keys"),
        Opt("c", "tags", True, "Message tags"),
        Opt("b", "broker", True, "Send message to target broker"),
        Opt("i", "qid", True, "Send message to target queue"),
        Opt("m", "msgTraceEnable", True, "Message Trace Enable, Default: false"),
    ]
)
_UNIQ = UniqIdGenerator(seed=int(time.time()) & 0x7FFFFFFF)
SEND_STATUS: dict[int, str] = {
    ResponseCode.SUCCESS: "SEND_OK",
    ResponseCode.FLUSH_DISK_TIMEOUT: "FLUSH_DISK_TIMEOUT",
    ResponseCode.FLUSH_SLAVE_TIMEOUT: "FLUSH_SLAVE_TIMEOUT",
    ResponseCode.SLAVE_NOT_AVAILABLE: "SLAVE_NOT_AVAILABLE",
}


@command("sendMessage", "Send a message.", "SendMessageCommand", SEND_MESSAGE)
async def send_message(ctx: Ctx) -> None:
    topic, body = ctx.value("t"), (ctx.get("p") or "").encode("utf-8")
    if ctx.has("i") and not ctx.has("b"):
        ctx.printf("Broker name must be set if the queue is chosen!")
        return
    route = await ctx.client.route(topic)
    addrs = _master_addrs(route)
    name: str | None
    if ctx.has("b"):
        name = ctx.value("b")
        if not addrs.get(name):
            raise MQClientError(f"The broker[{name}] not exist")
        qd = next((q for q in route.queue_datas or [] if q.broker_name == name), None)
        qid = java_int(ctx.get("i")) if ctx.has("i") else 0
    else:
        writable = [q for q in route.queue_datas or [] if q.perm & 2 and addrs.get(q.broker_name)]
        if not writable:
            raise MQClientError(f"No route info of this topic: {topic}")
        qd = writable[0]
        name = qd.broker_name
        qid = int(time.time() * 1000) % max(qd.write_queue_nums, 1)
    props: dict[str, str] = {}
    if keys := ctx.get("k"):
        props[MessageConst.KEYS] = keys
    if tags := ctx.get("c"):
        props[MessageConst.TAGS] = tags
    props[MessageConst.WAIT_STORE_MSG_OK] = "true"
    uniq = _UNIQ.create()
    props[MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = uniq
    h = SendMessageRequestHeaderV2(
        a=f"{int(time.time() * 1000)}",
        b=topic,
        c=AUTO_CREATE_TOPIC_KEY_TOPIC,
        d=4,
        e=qid,
        f=0,
        g=int(time.time() * 1000),
        h=0,
        i=message_properties_to_string(props),
        j=0,
        k=False,
        m=False,
        n=name,
    )
    addr = addrs[name]
    r = await ctx.client.invoke(addr, RequestCode.SEND_MESSAGE_V2, h, body)
    status = SEND_STATUS.get(r.code)
    if status is None:
        raise MQBrokerError.of(r.code, r.remark, addr)
    rh = SendMessageResponseHeader.from_command(r)
    ctx.printf("%-32s  %-4s  %-20s    %s%n", "#Broker Name", "#QID", "#Send Result", "#MsgId")
    ctx.printf("%-32s  %-4s  %-20s    %s%n", name, rh.queue_id, status, uniq)
    del qd


# --------------------------------------------------------------------------- lookups


async def track(ctx: Ctx, msg: StoredMessage) -> list[str]:
    """messageTrackDetail: per consuming group, NOT_ONLINE / PULL / CONSUMED / NOT_CONSUME_YET."""
    route = await ctx.client.route(msg.topic)
    addr = select_addr((route.broker_datas or [])[0])
    if addr is None:
        raise MQClientError(f"no broker address in the route of {msg.topic}")
    r = await ctx.client.broker(
        addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, QueryTopicConsumeByWhoRequestHeader(msg.topic)
    )
    out = []
    for g in GroupList.decode(r.body or b"{}").group_list:
        kind, desc = "UNKNOWN", None
        try:
            cc = await ctx.client.consumer_connection(g)
        except MQBrokerError as e:
            if e.code == ResponseCode.CONSUMER_NOT_ONLINE:
                kind = "NOT_ONLINE"
            desc = f"CODE:{e.code} DESC:{e.remark}"
            out.append(_track_str(g, kind, desc))
            continue
        except AdminError as e:
            out.append(_track_str(g, kind, f"{e.java_class.rsplit('.', 1)[1]}: {e}"))
            continue
        if cc.consume_type == "CONSUME_ACTIVELY":
            kind = "PULL"
        elif cc.consume_type == "CONSUME_PASSIVELY":
            try:
                consumed = await _consumed(ctx, msg, g)
            except AdminError as e:
                if e.code == ResponseCode.CONSUMER_NOT_ONLINE:
                    kind, desc = "NOT_ONLINE", f"CODE:{e.code} DESC:{e.remark}"
                elif e.code == ResponseCode.BROADCAST_CONSUMPTION:
                    kind = "CONSUME_BROADCASTING"
                out.append(_track_str(g, kind, desc))
                continue
            kind = "CONSUMED" if consumed else "NOT_CONSUME_YET"
            if consumed:
                for t, sd in cc.subscription_table.items():
                    if t == msg.topic and sd.tags_set and "*" not in sd.tags_set and msg.tags not in sd.tags_set:
                        kind = "CONSUMED_BUT_FILTERED"
        out.append(_track_str(g, kind, desc))
    return out


def _track_str(group: str, kind: str, desc: str | None) -> str:
    return f"MessageTrack [consumerGroup={group}, trackType={kind}, exceptionDesc={jstr(desc)}]"


async def _consumed(ctx: Ctx, msg: StoredMessage, group: str) -> bool:
    cs = await ctx.client.consume_stats(group)
    ci = await ctx.client.cluster_info()
    store = host_addr(msg.store_host)
    for mq, o in cs.offset_table.items():
        if mq.topic == msg.topic and mq.queue_id == msg.queue_id and mq.broker_name is not None:
            bd = (ci.broker_addr_table or {}).get(mq.broker_name)
            if bd is not None and bd.broker_addrs.get(0) == store and o.consumer_offset > msg.queue_offset:
                return True
    return False


def _body_file(msg: StoredMessage) -> str:
    path = f"/tmp/rocketmq/msgbodys/{client_msg_id(msg)}"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(msg.uncompressed_body() or b"")
    except OSError:
        pass
    return path


async def print_found(
    ctx: Ctx, msg: StoredMessage | None, props: dict[str, str], charset: str | None = None, offset_id: bool = True
) -> None:
    """QueryMsgByIdSubCommand.printMsg (the unique-key variant leaves out OffsetID)."""
    if msg is None:
        ctx.printf("%nMessage not found!")
        return
    path = _body_file(msg)
    rows: list[tuple[str, object]] = [("OffsetID:", msg.msg_id)] if offset_id else []
    rows += [
        ("Topic:", msg.topic),
        ("Tags:", f"[{jstr(msg.tags)}]"),
        ("Keys:", f"[{jstr(msg.keys)}]"),
        ("Queue ID:", msg.queue_id),
        ("Queue Offset:", msg.queue_offset),
        ("CommitLog Offset:", msg.commit_log_offset),
        ("Reconsume Times:", msg.reconsume_times),
        ("Born Timestamp:", human_millis(msg.born_timestamp)),
        ("Store Timestamp:", human_millis(msg.store_timestamp)),
        ("Born Host:", host_addr(msg.born_host)),
        ("Store Host:", host_addr(msg.store_host)),
        ("System Flag:", msg.sys_flag),
        ("Properties:", jstr(props)),
        ("Message Body Path:", path),
    ]
    for k, v in rows:
        ctx.printf("%-20s %s%n", k, v)
    if charset:
        ctx.printf("%-20s %s%n", "Message Body:", (msg.uncompressed_body() or b"").decode(charset, "replace"))
    try:
        tracks = await track(ctx, msg)
    except AdminError as e:
        print(e.java_line(), file=__import__("sys").stderr)
        return
    if not tracks:
        ctx.printf("%n%nWARN: No Consumer")
    else:
        ctx.printf("%n%n")
        for t in tracks:
            ctx.printf("%s%n", t)


async def view_message(ctx: Ctx, msg_id: str, topic: str | None) -> StoredMessage:
    """viewMessage: VIEW_MESSAGE_BY_ID to the address inside an offset message id."""
    mid = decode_message_id(msg_id)
    ip, port = mid.address if isinstance(mid.address, tuple) else (None, None)
    if ip is None or not 0 < port < 65536:
        raise ValueError("not an offset message id")
    addr = f"{ip}:{port}"
    r = await ctx.client.broker(addr, RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(mid.offset, topic))
    return next(iter(decode_messages(r.body or b"")))


async def query_messages(
    ctx: Ctx, topic: str, key: str, max_num: int, begin: int, end: int, unique: bool, cluster: str | None = None
) -> list[StoredMessage]:
    """queryMessage / queryMessageByUniqKey: QUERY_MESSAGE to every broker of the route, filtered like Java."""
    route = await ctx.client.route(topic)
    members: list[str] | None = None  # the brokers of `cluster`
    if cluster:
        ci = await ctx.client.cluster_info()
        members = (ci.cluster_addr_table or {}).get(cluster) or []
    found: list[StoredMessage] = []
    errors: list[AdminError] = []
    for bd in route.broker_datas or []:
        if members is not None and bd.broker_name not in members:
            continue
        addr = select_addr(bd)
        if addr is None:
            continue
        h = QueryMessageRequestHeader(topic, key, max_num, begin, end).to_ext_fields()
        h["_UNIQUE_KEY_QUERY"] = "true" if unique else "false"
        r = await ctx.client.invoke(addr, RequestCode.QUERY_MESSAGE, h, timeout_s=15)
        if r.code == ResponseCode.QUERY_NOT_FOUND:
            continue
        if r.code != ResponseCode.SUCCESS:
            errors.append(MQBrokerError.of(r.code, r.remark, addr))
            continue
        for m in decode_messages(r.body or b""):
            if m.topic != topic:
                continue
            if unique:
                if m.uniq_key == key:
                    found.append(m)
            elif key in (m.keys or "").split(" "):
                found.append(m)
    if not found and errors:
        raise errors[0]
    if not found:
        raise MQClientError.of(ResponseCode.NO_MESSAGE, "query message by key finished, but no message.")
    return found


QUERY_BY_ID = OptionSet(
    [
        Opt("i", "msgId", True, "Message Id", required=True),
        Opt("g", "consumerGroup", True, "consumer group name"),
        Opt("d", "clientId", True, "The consumer's client id"),
        Opt("s", "sendMessage", True, "resend message"),
        Opt("u", "unitName", True, "unit name"),
        Opt("t", "topic", True, "topic name", required=True),
        Opt("c", "cluster", True, "Cluster name or lmq parent topic, lmq is used to find the route."),
        Opt("f", "bodyFormat", True, "print message body by the specified format"),
    ]
)


async def find_by_id(ctx: Ctx, topic: str, msg_id: str, cluster: str | None) -> StoredMessage:
    try:
        return await view_message(ctx, msg_id, topic)
    except (ValueError, MessageDecodeError, StopIteration, AdminError):
        begin = int(time.time() * 1000) - 3 * 24 * 3600 * 1000
        return (await query_messages(ctx, topic, msg_id, 32, begin, LONG_MAX, True, cluster))[0]


@command("queryMsgById", "Query Message by Id.", "QueryMsgByIdSubCommand", QUERY_BY_ID)
async def query_msg_by_id(ctx: Ctx) -> None:
    topic = ctx.value("t")
    if ctx.has("s") or (ctx.has("g") and ctx.has("d")):
        raise AdminError(
            "resending (-s) and pushing to a consumer (-g -d) are not supported by pyrmq admin; "
            "use the official mqadmin for them"
        )
    for msg_id in [x.strip() for x in (ctx.get("i") or "").split(",") if x.strip()]:
        msg = await find_by_id(ctx, topic, msg_id, ctx.get("c"))
        await print_found(ctx, msg, message_props(msg), ctx.get("f"))


QUERY_BY_KEY = OptionSet(
    [
        Opt("t", "topic", True, "Topic name", required=True),
        Opt("k", "msgKey", True, "Message Key", required=True),
        Opt("b", "beginTimestamp", True, "Begin timestamp(ms). default:0, eg:1676730526212"),
        Opt("e", "endTimestamp", True, "End timestamp(ms). default:Long.MAX_VALUE, eg:1676730526212"),
        Opt("m", "maxNum", True, "The maximum number of messages returned by the query, default:64"),
        Opt("c", "cluster", True, "Cluster name or lmq parent topic, lmq is used to find the route."),
        Opt("p", "keyType", True, "Index key type, default index key type is K, you can use K for keys OR T for tags"),
        Opt("l", "lastKey", True, "Last Key"),
    ]
)


@command("queryMsgByKey", "Query Message by Key.", "QueryMsgByKeySubCommand", QUERY_BY_KEY)
async def query_msg_by_key(ctx: Ctx) -> None:
    topic, key = ctx.value("t"), ctx.value("k")
    begin = java_int(ctx.get("b")) if ctx.has("b") else 0
    end = java_int(ctx.get("e")) if ctx.has("e") else LONG_MAX
    max_num = java_int(ctx.get("m")) if ctx.has("m") else 64
    key_type = ctx.get("p") or "K"
    msgs = await query_messages(ctx, topic, key, max_num, begin, end, False, ctx.get("c"))
    ctx.printf("%-50s %4s %40s %-200s%n", "#Message ID", "#QID", "#Offset", "#IndexKey")
    for m in msgs:
        hour = m.store_timestamp - m.store_timestamp % 3_600_000  # MixAll.dealTimeToHourStamps
        index_key = f"{hour}@{topic}@{key_type}@{key}@{client_msg_id(m)}@{m.commit_log_offset}"
        ctx.printf("%-50s %4d %40d %-200s%n", client_msg_id(m), m.queue_id, m.queue_offset, index_key)


QUERY_BY_UNIQUE = OptionSet(
    [
        Opt("i", "msgId", True, "Message Id", required=True),
        Opt("g", "consumerGroup", True, "consumer group name"),
        Opt("d", "clientId", True, "The consumer's client id"),
        Opt("t", "topic", True, "The topic of msg", required=True),
        Opt("a", "showAll", False, "Print all message, the limit is 32"),
        Opt("c", "cluster", True, "Cluster name or lmq parent topic, lmq is used to find the route."),
        Opt("s", "startTime", True, "startTime"),
        Opt("e", "endTime", True, "endTime"),
    ]
)


@command("queryMsgByUniqueKey", "Query Message by Unique key.", "QueryMsgByUniqueKeySubCommand", QUERY_BY_UNIQUE)
async def query_msg_by_unique_key(ctx: Ctx) -> None:
    if ctx.has("g") and ctx.has("d"):
        raise AdminError("pushing to a consumer (-g -d) is not supported by pyrmq admin; use the official mqadmin")
    begin = java_int(ctx.get("s")) if ctx.has("s") else 0
    end = java_int(ctx.get("e")) if ctx.has("e") else LONG_MAX
    msgs = await query_messages(ctx, ctx.value("t"), ctx.value("i"), 32, begin, end, True, ctx.get("c"))
    msgs.sort(key=lambda m: m.store_timestamp)
    for m in msgs if ctx.has("a") else msgs[:1]:
        await print_found(ctx, m, message_props(m), offset_id=False)


QUERY_BY_OFFSET = OptionSet(
    [
        Opt("t", "topic", True, "topic name", required=True),
        Opt("b", "brokerName", True, "Broker Name", required=True),
        Opt("i", "queueId", True, "Queue Id", required=True),
        Opt("o", "offset", True, "Queue Offset", required=True),
        Opt("f", "bodyFormat", True, "print message body by the specified format"),
        Opt("r", "routeTopic", True, "the topic which is used to find route info"),
    ]
)


@command("queryMsgByOffset", "Query Message by offset.", "QueryMsgByOffsetSubCommand", QUERY_BY_OFFSET)
async def query_msg_by_offset(ctx: Ctx) -> None:
    topic = ctx.value("t")
    q = await queue_of(ctx, ctx.get("r") or topic, ctx.value("b"), java_int(ctx.get("i")))
    q.topic = topic
    res = await pull(ctx, q, "*", java_int(ctx.get("o")), 1)
    if res.status == "FOUND" and res.msgs:
        m = res.msgs[0]
        await print_found(ctx, m, pulled_props(m, res), ctx.get("f"))
