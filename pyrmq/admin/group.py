"""Consumer-group and connection commands: updateSubGroup, deleteSubGroup, getConsumerConfig,
consumerConnection, producerConnection, consumerProgress, consumerStatus.

Java: ``tools/command/consumer/*``, ``tools/command/connection/*`` (spec §3.5-§3.7).
"""

from __future__ import annotations

import os
import time
from typing import Any

import orjson

from pyrmq.admin.base import Ctx, PrintHelp, command, java_bool, java_int
from pyrmq.admin.client import AdminError, ok, select_addr
from pyrmq.admin.javafmt import format_date, jstr
from pyrmq.admin.options import Opt, OptionSet
from pyrmq.admin.topic import delete_topic_everywhere, mq_key
from pyrmq.common.constants import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from pyrmq.protocol.bodies.admin import ProducerConnection
from pyrmq.protocol.bodies.namesrv import TopicList
from pyrmq.protocol.codes import RequestCode
from pyrmq.protocol.fastjson import lenient_loads
from pyrmq.protocol.headers.admin import (
    DeleteSubscriptionGroupRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetProducerConnectionListRequestHeader,
)
from pyrmq.protocol.version import version_desc

#: SubscriptionGroupConfig's declared fields in order, with the client's defaults
GROUP_FIELDS: list[tuple[str, object]] = [
    ("groupName", None),
    ("consumeEnable", True),
    ("consumeFromMinEnable", True),
    ("consumeBroadcastEnable", True),
    ("consumeMessageOrderly", False),
    ("retryQueueNums", 1),
    ("retryMaxTimes", 16),
    ("groupRetryPolicy", {"type": "CUSTOMIZED"}),
    ("brokerId", 0),
    ("whichBrokerWhenConsumeSlowly", 1),
    ("notifyConsumerIdsChangedEnable", True),
    ("groupSysFlag", 0),
    ("consumeTimeoutMinute", 15),
    ("subscriptionDataSet", None),
    ("attributes", {}),
]


def _policy_str(p: object) -> str:
    """GroupRetryPolicy#toString (and its two policies)."""
    if not isinstance(p, dict):
        return jstr(p)
    exp = p.get("exponentialRetryPolicy")
    cus = p.get("customizedRetryPolicy")
    exp_s = (
        "null"
        if exp is None
        else (
            f"ExponentialRetryPolicy{{initial={exp.get('initial', 5000)}, "
            f"max={exp.get('max', 7200000)}, multiplier={exp.get('multiplier', 2)}}}"
        )
    )
    cus_s = "null" if cus is None else f"CustomizedRetryPolicy{{next={jstr(cus.get('next'))}}}"
    return (
        f"GroupRetryPolicy{{type={p.get('type', 'CUSTOMIZED')}, exponentialRetryPolicy={exp_s}, "
        f"customizedRetryPolicy={cus_s}}}"
    )


def _value_str(name: str, v: object) -> str:
    if name == "groupRetryPolicy":
        return _policy_str(v)
    if isinstance(v, list):
        return "[" + ", ".join(jstr(x) for x in v) + "]"
    return jstr(v)


def group_config_str(cfg: dict[str, object]) -> str:
    """SubscriptionGroupConfig#toString."""
    parts = [f"{n}={_value_str(n, cfg.get(n, d))}" for n, d in GROUP_FIELDS]
    return "SubscriptionGroupConfig{" + ", ".join(parts) + "}"


UPDATE_SUB_GROUP = OptionSet(
    [
        Opt("b", "brokerAddr", True, "create subscription group to which broker"),
        Opt("c", "clusterName", True, "create subscription group to which cluster"),
        Opt("g", "groupName", True, "consumer group name", required=True),
        Opt("s", "consumeEnable", True, "consume enable"),
        Opt("m", "consumeFromMinEnable", True, "from min offset"),
        Opt("d", "consumeBroadcastEnable", True, "broadcast"),
        Opt("o", "consumeMessageOrderly", True, "consume message orderly"),
        Opt("q", "retryQueueNums", True, "retry queue nums"),
        Opt("r", "retryMaxTimes", True, "retry max times"),
        Opt(
            "p",
            "groupRetryPolicy",
            True,
            'the json string of retry policy ( exp: {"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":5000,'
            '"max":7200000,"multiplier":2}} {"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000,5000,10000]}} )',
        ),
        Opt("i", "brokerId", True, "consumer from which broker id"),
        Opt("w", "whichBrokerWhenConsumeSlowly", True, "which broker id when consume slowly"),
        Opt("a", "notifyConsumerIdsChanged", True, "notify consumerId changed"),
        Opt(None, "attributes", True, "attribute(+a=b,+c=d,-e)"),
    ]
)


@command("updateSubGroup", "Update or create subscription group.", "UpdateSubGroupSubCommand", UPDATE_SUB_GROUP)
async def update_sub_group(ctx: Ctx) -> None:
    from pyrmq.admin.topic import parse_attributes

    cfg: dict[str, object] = {n: d for n, d in GROUP_FIELDS}
    cfg.update(consumeBroadcastEnable=False, consumeFromMinEnable=False, groupName=ctx.get("g"))
    bools = {
        "s": "consumeEnable",
        "m": "consumeFromMinEnable",
        "d": "consumeBroadcastEnable",
        "o": "consumeMessageOrderly",
        "a": "notifyConsumerIdsChangedEnable",
    }
    ints = {"q": "retryQueueNums", "r": "retryMaxTimes", "i": "brokerId", "w": "whichBrokerWhenConsumeSlowly"}
    for k, n in bools.items():
        if ctx.has(k):
            cfg[n] = java_bool(ctx.get(k))
    for k, n in ints.items():
        if ctx.has(k):
            cfg[n] = java_int(ctx.get(k))
    if ctx.has("p"):
        try:
            cfg["groupRetryPolicy"] = orjson.loads(ctx.get("p") or "")
        except orjson.JSONDecodeError as e:
            raise AdminError(f"groupRetryPolicy is not JSON: {e}") from None
    if ctx.has("attributes"):
        cfg["attributes"] = parse_attributes(ctx.get("attributes") or "")
    body = orjson.dumps({k: v for k, v in cfg.items() if v is not None}, option=orjson.OPT_SORT_KEYS)
    if ctx.has("b"):
        addr = ctx.value("b")
        await ctx.client.broker(addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
        ctx.printf("create subscription group to %s success.%n", addr)
        ctx.printf("%s", group_config_str(cfg))
        return
    if ctx.has("c"):
        for addr in await ctx.client.master_addrs(ctx.value("c")):
            try:
                await ctx.client.broker(addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
                ctx.printf("create subscription group to %s success.%n", addr)
            except AdminError as e:
                print(e.java_line(), file=__import__("sys").stderr)
        ctx.printf("%s", group_config_str(cfg))
        return
    raise PrintHelp


DELETE_SUB_GROUP = OptionSet(
    [
        Opt("b", "brokerAddr", True, "delete subscription group from which broker"),
        Opt("c", "clusterName", True, "delete subscription group from which cluster"),
        Opt("g", "groupName", True, "subscription group name", required=True),
        Opt("r", "removeOffset", True, "remove offset"),
    ]
)


@command("deleteSubGroup", "Delete subscription group from broker.", "DeleteSubscriptionGroupCommand", DELETE_SUB_GROUP)
async def delete_sub_group(ctx: Ctx) -> None:
    group = ctx.value("g")
    clean = java_bool(ctx.get("r")) if ctx.has("r") else False
    header = DeleteSubscriptionGroupRequestHeader(group, clean_offset=clean)
    if ctx.has("b"):
        addr = ctx.value("b")
        await ctx.client.broker(addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, header)
        ctx.printf("delete subscription group [%s] from broker [%s] success.%n", group, addr)
        return
    if ctx.has("c"):
        cluster = ctx.value("c")
        for addr in await ctx.client.master_addrs(cluster):
            await ctx.client.broker(addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, header)
            ctx.printf(
                "delete subscription group [%s] from broker [%s] in cluster [%s] success.%n", group, addr, cluster
            )
        for t in (RETRY_GROUP_TOPIC_PREFIX + group, DLQ_GROUP_TOPIC_PREFIX + group):
            try:
                await delete_topic_everywhere(ctx, t, cluster)
            except AdminError as e:
                print(e.java_line(), file=__import__("sys").stderr)
        return
    raise PrintHelp


GET_CONSUMER_CONFIG = OptionSet([Opt("g", "groupName", True, "subscription group name", required=True)])


@command(
    "getConsumerConfig",
    "Get consumer config by subscription group name.",
    "GetConsumerConfigSubCommand",
    GET_CONSUMER_CONFIG,
)
async def get_consumer_config(ctx: Ctx) -> None:
    group = ctx.value("g")
    ci = await ctx.client.cluster_info()
    found = []
    for name, bd in (ci.broker_addr_table or {}).items():
        cluster = next((c for c, names in (ci.cluster_addr_table or {}).items() if name in names), None)
        addr = select_addr(bd)
        if addr is None:
            continue
        r = await ctx.client.broker(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        table = (lenient_loads(r.body or b"{}") or {}).get("subscriptionGroupTable") or {}
        if group in table:
            found.append((cluster, name, table[group]))
    for cluster, name, cfg in found:
        ctx.printf("=============================%s:%s=============================\n", cluster, name)
        for n, d in GROUP_FIELDS:
            v = cfg.get(n, d)
            ctx.printf("%s%-40s=  %s\n", "", n, "" if v is None else _value_str(n, v))


CONSUMER_CONNECTION = OptionSet(
    [
        Opt("g", "consumerGroup", True, "consumer group name", required=True),
        Opt("b", "brokerAddr", True, "broker address"),
    ]
)


@command(
    "consumerConnection",
    "Query consumer's socket connection, client version and subscription.",
    "ConsumerConnectionSubCommand",
    CONSUMER_CONNECTION,
)
async def consumer_connection(ctx: Ctx) -> None:
    cc = await ctx.client.consumer_connection(ctx.value("g"), ctx.get("b"))
    ctx.printf("%-36s %-22s %-10s %s%n", "#ClientId", "#ClientAddr", "#Language", "#Version")
    for c in cc.connection_set:
        ctx.printf("%-36s %-22s %-10s %s%n", c.client_id, c.client_addr, c.language, version_desc(c.version))
    ctx.printf("%nBelow is subscription:\n")
    ctx.printf("%-20s %s%n", "#Topic", "#SubExpression")
    for sd in cc.subscription_table.values():
        ctx.printf("%-20s %s%n", sd.topic, sd.sub_string)
    ctx.printf("\n")
    ctx.printf("ConsumeType: %s%n", cc.consume_type)
    ctx.printf("MessageModel: %s%n", cc.message_model)
    ctx.printf("ConsumeFromWhere: %s%n", cc.consume_from_where)


PRODUCER_CONNECTION = OptionSet(
    [
        Opt("g", "producerGroup", True, "producer group name", required=True),
        Opt("t", "topic", True, "topic name", required=True),
    ]
)


@command(
    "producerConnection",
    "Query producer's socket connection and client version.",
    "ProducerConnectionSubCommand",
    PRODUCER_CONNECTION,
)
async def producer_connection(ctx: Ctx) -> None:
    import random

    topic = ctx.value("t")
    route = await ctx.client.route(topic)
    addrs = [a for a in (select_addr(bd) for bd in route.broker_datas or []) if a]
    if not addrs:
        raise AdminError(f"no broker in the route of {topic}")
    r = await ctx.client.broker(
        random.choice(addrs),
        RequestCode.GET_PRODUCER_CONNECTION_LIST,
        GetProducerConnectionListRequestHeader(ctx.value("g")),
    )
    pc = ProducerConnection.decode(r.body or b"{}")
    for i, c in enumerate(pc.connection_set, 1):
        ctx.printf("%04d  %-32s %-22s %-8s %s%n", i, c.client_id, c.client_addr, c.language, version_desc(c.version))


CONSUMER_PROGRESS = OptionSet(
    [
        Opt("g", "groupName", True, "consumer group name"),
        Opt("t", "topicName", True, "topic name"),
        Opt("s", "showClientIP", True, "Show Client IP per Queue"),
        Opt("c", "cluster", True, "Cluster name or lmq parent topic, lmq is used to find the route."),
    ]
)


async def running_info(ctx: Ctx, group: str, client_id: str, jstack: bool = False) -> dict[Any, Any]:
    """getConsumerRunningInfo: GET_CONSUMER_RUNNING_INFO relayed by the first broker of %RETRY%group.

    The answer is ConsumerRunningInfo as parsed fastjson (its mqTable is keyed by MessageQueue objects).
    """
    route = await ctx.client.route(RETRY_GROUP_TOPIC_PREFIX + group)
    addr = select_addr(route.broker_datas[0]) if route.broker_datas else None
    if addr is None:
        raise AdminError(f"no broker for {group}")
    r = await ctx.client.broker(
        addr,
        RequestCode.GET_CONSUMER_RUNNING_INFO,
        GetConsumerRunningInfoRequestHeader(group, client_id, jstack),
        timeout_s=10,
    )
    return lenient_loads(r.body or b"{}") or {}


def _mq_of(key: Any) -> tuple[Any, Any, int]:
    d = dict(key) if isinstance(key, tuple) else (lenient_loads(key) if isinstance(key, str) else key)
    return (d.get("topic"), d.get("brokerName"), int(d.get("queueId", 0)))


@command("consumerProgress", "Query consumer's progress, speed.", "ConsumerProgressSubCommand", CONSUMER_PROGRESS)
async def consumer_progress(ctx: Ctx) -> None:
    if ctx.has("g"):
        group = ctx.value("g")
        cs = await ctx.client.consume_stats(group, ctx.get("t"))
        show_ip = (ctx.get("s") or "").lower() == "true"
        owners: dict[tuple[Any, Any, int], str] = {}
        if show_ip:
            try:
                cc = await ctx.client.consumer_connection(group)
                for c in cc.connection_set:
                    if c.client_id is None:  # brokers always fill it; nothing to ask without one
                        continue
                    info = await running_info(ctx, group, c.client_id)
                    for k in info.get("mqTable") or {}:
                        owners[_mq_of(k)] = c.client_id.split("@")[0]
            except AdminError:
                pass
        if show_ip:
            ctx.printf(
                "%-64s  %-32s  %-4s  %-20s  %-20s  %-20s %-20s %-20s%s%n",
                "#Topic",
                "#Broker Name",
                "#QID",
                "#Broker Offset",
                "#Consumer Offset",
                "#Client IP",
                "#Diff",
                "#Inflight",
                "#LastTime",
            )
        else:
            ctx.printf(
                "%-64s  %-32s  %-4s  %-20s  %-20s  %-20s %-20s%s%n",
                "#Topic",
                "#Broker Name",
                "#QID",
                "#Broker Offset",
                "#Consumer Offset",
                "#Diff",
                "#Inflight",
                "#LastTime",
            )
        diff_total = inflight_total = 0
        for mq in sorted(cs.offset_table, key=mq_key):
            o = cs.offset_table[mq]
            diff = o.broker_offset - o.consumer_offset
            inflight = o.pull_offset - o.consumer_offset
            diff_total += diff
            inflight_total += inflight
            last = "N/A" if o.last_timestamp == 0 else format_date(o.last_timestamp)
            if show_ip:
                ip = owners.get((mq.topic, mq.broker_name, mq.queue_id), "N/A")
                ctx.printf(
                    "%-64s  %-32s  %-4d  %-20d  %-20d  %-20s %-20d %-20d %s%n",
                    (mq.topic or "")[:64],
                    (mq.broker_name or "")[:32],
                    mq.queue_id,
                    o.broker_offset,
                    o.consumer_offset,
                    ip,
                    diff,
                    inflight,
                    last,
                )
            else:
                ctx.printf(
                    "%-64s  %-32s  %-4d  %-20d  %-20d  %-20d %-20d %s%n",
                    (mq.topic or "")[:64],
                    (mq.broker_name or "")[:32],
                    mq.queue_id,
                    o.broker_offset,
                    o.consumer_offset,
                    diff,
                    inflight,
                    last,
                )
        ctx.printf("%n")
        ctx.printf("Consume TPS: %.2f%n", cs.consume_tps)
        ctx.printf("Consume Diff Total: %d%n", diff_total)
        ctx.printf("Consume Inflight Total: %d%n", inflight_total)
        return
    ctx.printf(
        "%-64s  %-6s  %-24s %-5s  %-14s  %-7s  %s%n",
        "#Group",
        "#Count",
        "#Version",
        "#Type",
        "#Model",
        "#TPS",
        "#Diff Total",
    )
    r = ok(await ctx.client.ns(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER), broker=False)
    for topic in TopicList.decode(r.body or b"{}").topic_list:
        if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            continue
        group = topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
        tps = diff = count = 0
        version, ctype = "OFFLINE", ""
        model: str | None = ""
        try:
            cs = await ctx.client.consume_stats(group)
            tps = int(cs.consume_tps)
            diff = sum(o.broker_offset - o.consumer_offset for o in cs.offset_table.values())
        except AdminError:
            pass
        try:
            cc = await ctx.client.consumer_connection(group)
            count = len(cc.connection_set)
            if count:
                version = version_desc(min(c.version for c in cc.connection_set))
            ctype = "PULL" if cc.consume_type == "CONSUME_ACTIVELY" else "PUSH"
            model = cc.message_model if ctype == "PUSH" else ""
        except AdminError:
            pass
        ctx.printf(
            "%-64s  %-6d  %-24s %-5s  %-14s  %-7d  %d%n", group[:64], count, version, ctype, model or "", tps, diff
        )


CONSUMER_STATUS = OptionSet(
    [
        Opt("g", "consumerGroup", True, "consumer group name", required=True),
        Opt("i", "clientId", True, "The consumer's client id"),
        Opt("b", "brokerAddr", True, "broker address"),
        Opt("s", "jstack", False, "Run jstack command in the consumer progress"),
    ]
)


def running_info_text(info: dict[Any, Any]) -> str:
    """A readable dump of ConsumerRunningInfo (sections like Java's formatString)."""
    out = ["#Consumer Properties#\n"]
    for k in sorted(info.get("properties") or {}):
        out.append(f"{k:<40}: {info['properties'][k]}\n")
    out.append("\n\n#Consumer Subscription#\n")
    for i, sd in enumerate(sorted(info.get("subscriptionSet") or [], key=lambda s: str(s.get("topic"))), 1):
        out.append(
            f"{i:03d} Topic: {sd.get('topic'):<40} ClassFilter: {jstr(sd.get('classFilterMode', False)):<8}"
            f" SubExpression: {sd.get('subString')}\n"
        )
    out.append("\n\n#Consumer Offset#\n")
    out.append(f"{'#Topic':<64}  {'#Broker Name':<32}  {'#QID':<4}  {'#Consumer Offset':<20}\n")
    for k, pq in sorted((info.get("mqTable") or {}).items(), key=lambda kv: _mq_of(kv[0])):
        t, b, q = _mq_of(k)
        out.append(f"{t:<64}  {b:<32}  {q:<4}  {pq.get('commitOffset', 0):<20}\n")
    if info.get("jstack"):
        out.append("\n\n#Consumer jstack#\n" + str(info["jstack"]) + "\n")
    return "".join(out)


@command("consumerStatus", "Query consumer's internal data structure.", "ConsumerStatusSubCommand", CONSUMER_STATUS)
async def consumer_status(ctx: Ctx) -> None:
    group = ctx.value("g")
    cc = await ctx.client.consumer_connection(group, ctx.get("b"))
    jstack = ctx.has("s")
    if ctx.has("i"):
        ctx.printf("%s", running_info_text(await running_info(ctx, group, ctx.value("i"), jstack)))
        return
    now = int(time.time() * 1000)
    infos: dict[str, dict[Any, Any]] = {}
    ctx.printf("%-10s %-40s %-20s %s%n", "#Index", "#ClientId", "#Version", "#ConsumerRunningInfoFile")
    i = 1
    for c in cc.connection_set:
        if c.client_id is None:  # brokers always fill it; nothing to ask without one
            continue
        try:
            info = await running_info(ctx, group, c.client_id, jstack)
        except AdminError as e:
            print(e.java_line(), file=__import__("sys").stderr)
            continue
        infos[c.client_id] = info
        path = f"{now}/{c.client_id}"
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(running_info_text(info))
        ctx.printf("%-10d %-40s %-20s %s%n", i, c.client_id, version_desc(c.version), path)
        i += 1
    if infos:
        subs = [
            sorted((s.get("topic"), s.get("subString")) for s in (v.get("subscriptionSet") or []))
            for v in infos.values()
        ]
        if all(s == subs[0] for s in subs):
            ctx.printf("%n%nSame subscription in the same group of consumer")
            ctx.printf("%n%nRebalance %s%n", "OK")
        else:
            ctx.printf("%n%nWARN: Different subscription in the same group of consumer!!!")
