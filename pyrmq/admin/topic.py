"""Topic commands: updateTopic, deleteTopic, updateTopicPerm, topicRoute, topicStatus,
topicClusterList, topicList.

Java: ``tools/command/topic/*SubCommand`` (output formats in spec §3.4/§3.5).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pyrmq.admin.base import Ctx, PrintHelp, command, java_bool, java_int
from pyrmq.admin.client import AdminError, ok, select_addr
from pyrmq.admin.javafmt import human_millis, jstr
from pyrmq.admin.options import Opt, OptionSet
from pyrmq.common.attributes import AttributeModificationError, parse_to_map, parse_to_string
from pyrmq.common.constants import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
)
from pyrmq.protocol.bodies.admin import GroupList, TopicStatsTable, topic_stats_table
from pyrmq.protocol.bodies.broker import MessageQueue
from pyrmq.protocol.bodies.common import TopicConfig
from pyrmq.protocol.bodies.namesrv import TopicList
from pyrmq.protocol.codes import RequestCode
from pyrmq.protocol.fastjson import bean_props as _bean_props
from pyrmq.protocol.fastjson import fastjson_dumps
from pyrmq.protocol.fastjson import is_bean as _is_bean
from pyrmq.protocol.headers.admin import (
    DeleteTopicRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
)
from pyrmq.protocol.headers.broker import CreateTopicRequestHeader
from pyrmq.protocol.headers.namesrv import DeleteKVConfigRequestHeader, DeleteTopicFromNamesrvRequestHeader


def parse_attributes(text: str) -> dict[str, str]:
    """AttributeParser.parseToMap (``+a=b,+c=d,-e``), its refusal as the tool's error."""
    try:
        return parse_to_map(text)
    except AttributeModificationError as e:
        raise AdminError(str(e)) from None


async def create_topic(ctx: Ctx, addr: str, tc: TopicConfig) -> None:
    """UPDATE_AND_CREATE_TOPIC; ``tc.attributes`` holds AttributeParser's ``+k``/``-k`` entries."""
    if tc.topic_name is None:
        raise ValueError("a topic config without a topic name")
    h = CreateTopicRequestHeader(
        topic=tc.topic_name,
        default_topic=AUTO_CREATE_TOPIC_KEY_TOPIC,
        read_queue_nums=tc.read_queue_nums,
        write_queue_nums=tc.write_queue_nums,
        perm=tc.perm,
        topic_filter_type=tc.topic_filter_type,
        topic_sys_flag=tc.topic_sys_flag,
        order=tc.order,
        attributes=parse_to_string(tc.attributes) or None,
    )
    await ctx.client.broker(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, h)


UPDATE_TOPIC = OptionSet(
    [
        Opt("b", "brokerAddr", True, "create topic to which broker", group="target"),
        Opt("c", "clusterName", True, "create topic to which cluster", group="target"),
        Opt("t", "topic", True, "topic name", required=True),
        Opt("r", "readQueueNums", True, "set read queue nums"),
        Opt("w", "writeQueueNums", True, "set write queue nums"),
        Opt("p", "perm", True, "set topic's permission(2|4|6), intro[2:W 4:R; 6:RW]"),
        Opt("o", "order", True, "set topic's order(true|false)"),
        Opt("u", "unit", True, "is unit topic (true|false)"),
        Opt("s", "hasUnitSub", True, "has unit sub (true|false)"),
        Opt("a", "attributes", True, "attribute(+a=b,+c=d,-e)"),
    ],
    required_groups=("target",),
)


@command("updateTopic", "Update or create topic.", "UpdateTopicSubCommand", UPDATE_TOPIC)
async def update_topic(ctx: Ctx) -> None:
    topic = ctx.value("t")
    tc = TopicConfig(topic, read_queue_nums=8, write_queue_nums=8, perm=6)
    if ctx.has("a"):
        tc.attributes = parse_attributes(ctx.get("a") or "")
    if ctx.has("r"):
        tc.read_queue_nums = java_int(ctx.get("r"))
    if ctx.has("w"):
        tc.write_queue_nums = java_int(ctx.get("w"))
    if ctx.has("p"):
        tc.perm = java_int(ctx.get("p"))
    unit = java_bool(ctx.get("u")) if ctx.has("u") else False
    sub = java_bool(ctx.get("s")) if ctx.has("s") else False
    tc.topic_sys_flag = (1 if unit else 0) | (2 if sub else 0)  # TopicSysFlag.buildSysFlag
    tc.order = java_bool(ctx.get("o")) if ctx.has("o") else False
    if ctx.has("b"):
        addr = ctx.value("b")
        await create_topic(ctx, addr, tc)
        if tc.order:
            name = await ctx.client.broker_name_of(addr)
            conf = f"{name}:{tc.write_queue_nums}"
            await _put_order_conf(ctx, topic, conf, merge_broker=name)
            ctx.printf("%s%n", f"set broker orderConf. isOrder={jstr(True)}, orderConf=[{conf}]")
        ctx.printf("create topic to %s success.%n", addr)
        ctx.printf("%s%n", tc.java_string())
        return
    cluster = ctx.value("c")
    for addr in await ctx.client.master_addrs(cluster):
        await create_topic(ctx, addr, tc)
        ctx.printf("create topic to %s success.%n", addr)
    if tc.order:
        ci = await ctx.client.cluster_info()
        names = (ci.cluster_addr_table or {}).get(cluster) or []
        conf = ";".join(f"{n}:{tc.write_queue_nums}" for n in names)
        await _put_order_conf(ctx, topic, conf)
        ctx.printf("set cluster orderConf. isOrder=%s, orderConf=[%s]%n", True, conf)
    ctx.printf("%s%n", tc.java_string())


async def _put_order_conf(ctx: Ctx, topic: str, conf: str, merge_broker: str | None = None) -> None:
    """createOrUpdateOrderConf: ORDER_TOPIC_CONFIG in every name server (by broker: merged)."""
    if merge_broker is not None:
        r = await ctx.client.ns(RequestCode.GET_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": topic})
        old = (r.ext_fields or {}).get("value") if r.code == 0 else None
        if old:
            items = dict(i.split(":", 1) for i in old.split(";") if ":" in i)
            items[merge_broker] = conf.split(":", 1)[1]
            conf = ";".join(f"{k}:{v}" for k, v in items.items())
    for addr in ctx.client.namesrv:
        ok(
            await ctx.client.invoke(
                addr, RequestCode.PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": topic, "value": conf}
            ),
            broker=False,
        )


DELETE_TOPIC = OptionSet(
    [
        Opt("t", "topic", True, "topic name", required=True),
        Opt("c", "clusterName", True, "delete topic from which cluster", required=True),
    ]
)


async def delete_topic(ctx: Ctx, cluster: str, topic: str) -> None:
    """DeleteTopicSubCommand.deleteTopic: brokers of the cluster, then every name server."""
    for addr in await ctx.client.master_addrs(cluster):
        await ctx.client.broker(addr, RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic))
    ctx.printf("delete topic [%s] from cluster [%s] success.%n", topic, cluster)
    for addr in ctx.client.namesrv:
        ok(
            await ctx.client.invoke(
                addr, RequestCode.DELETE_TOPIC_IN_NAMESRV, DeleteTopicFromNamesrvRequestHeader(topic, cluster)
            ),
            broker=False,
        )
    ctx.printf("delete topic [%s] from NameServer success.%n", topic)


@command("deleteTopic", "Delete topic from broker and NameServer.", "DeleteTopicSubCommand", DELETE_TOPIC)
async def delete_topic_cmd(ctx: Ctx) -> None:
    await delete_topic(ctx, ctx.value("c"), ctx.value("t"))


async def delete_topic_everywhere(ctx: Ctx, topic: str, cluster: str) -> None:
    """MQAdminExt.deleteTopic(topic, cluster): masters and slaves, every name server, the order conf."""
    for addr in await ctx.client.master_addrs(cluster, with_slaves=True):
        await ctx.client.broker(addr, RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic))
    for addr in ctx.client.namesrv:
        ok(
            await ctx.client.invoke(
                addr, RequestCode.DELETE_TOPIC_IN_NAMESRV, DeleteTopicFromNamesrvRequestHeader(topic)
            ),
            broker=False,
        )
        await ctx.client.invoke(
            addr, RequestCode.DELETE_KV_CONFIG, DeleteKVConfigRequestHeader("ORDER_TOPIC_CONFIG", topic)
        )


UPDATE_TOPIC_PERM = OptionSet(
    [
        Opt("b", "brokerAddr", True, "create topic to which broker"),
        Opt("c", "clusterName", True, "create topic to which cluster"),
        Opt("t", "topic", True, "topic name", required=True),
        Opt("p", "perm", True, "set topic's permission(2|4|6), intro[2:W; 4:R; 6:RW]", required=True),
    ]
)


@command("updateTopicPerm", "Update topic perm.", "UpdateTopicPermSubCommand", UPDATE_TOPIC_PERM)
async def update_topic_perm(ctx: Ctx) -> None:
    topic = ctx.value("t")
    route = await ctx.client.route(topic)
    if not route.queue_datas:
        raise AdminError(f"topic {topic} has no queue data in its route")
    qd = route.queue_datas[0]
    perm = java_int(ctx.get("p"))
    tc = TopicConfig(topic, qd.read_queue_nums, qd.write_queue_nums, perm, topic_sys_flag=qd.topic_sys_flag)
    if ctx.has("b"):
        addr = ctx.value("b")
        name = next((bd.broker_name for bd in route.broker_datas or [] if bd.broker_addrs.get(0) == addr), None)
        if name is None:
            ctx.printf("updateTopicPerm error broker not exit or broker is not master!.%n")
            return
        old = 0
        for q in route.queue_datas or []:
            if q.broker_name == name:
                old = q.perm
                if perm == old:
                    ctx.printf("new perm equals to the old one!%n")
                    return
                break
        await create_topic(ctx, addr, tc)
        ctx.printf("update topic perm from %s to %s in %s success.%n", old, perm, addr)
        ctx.printf("%s.%n", tc.java_string())
        return
    if ctx.has("c"):
        for addr in await ctx.client.master_addrs(ctx.value("c")):
            await create_topic(ctx, addr, tc)
            ctx.printf("update topic perm from %s to %s in %s success.%n", qd.perm, perm, addr)
        return
    raise PrintHelp


TOPIC_ROUTE = OptionSet(
    [
        Opt("t", "topic", True, "topic name", required=True),
        Opt("l", "list", False, "Use list format to print data"),
    ]
)


def pretty_json(value: Any, depth: int = 0) -> str:
    """fastjson ``toJSONString(obj, PrettyFormat)``: tabs, sorted bean properties, no spaces."""
    tab = "\t"
    if _is_bean(value):
        value = dict(_bean_props(value))
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = []
        for k, v in value.items():
            key = fastjson_dumps({k: 0}).decode()[1:-3]  # the key as fastjson writes it
            items.append(f"{tab * (depth + 1)}{key}:{pretty_json(v, depth + 1)}")
        return "{\n" + ",\n".join(items) + "\n" + tab * depth + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        items = [f"{tab * (depth + 1)}{pretty_json(v, depth + 1)}" for v in value]
        return "[\n" + ",\n".join(items) + "\n" + tab * depth + "]"
    return fastjson_dumps(value).decode()


@command("topicRoute", "Examine topic route info.", "TopicRouteSubCommand", TOPIC_ROUTE)
async def topic_route(ctx: Ctx) -> None:
    route = await ctx.client.route(ctx.value("t"))
    if ctx.has("l"):
        ctx.printf(
            "%-45s %-32s %-50s %-10s %-11s %-5s%n",
            "#ClusterName",
            "#BrokerName",
            "#BrokerAddrs",
            "#ReadQueue",
            "#WriteQueue",
            "#Perm",
        )
        qds = {q.broker_name: q for q in route.queue_datas or []}
        tr = tw = 0
        for bd in sorted(route.broker_datas or [], key=lambda b: b.broker_name or ""):
            q = qds.get(bd.broker_name)
            if q is None:
                raise AdminError(f"no queue data of broker {bd.broker_name} in the route")
            addrs = "{" + ", ".join(f"{k}={v}" for k, v in sorted(bd.broker_addrs.items())) + "}"
            ctx.printf(
                "%-45s %-32s %-50s %-10d %-11d %-5d%n",
                bd.cluster,
                bd.broker_name,
                addrs,
                q.read_queue_nums,
                q.write_queue_nums,
                q.perm,
            )
            tr += q.read_queue_nums
            tw += q.write_queue_nums
        ctx.printf("%n%-45s %-32s %-50s %-10d %-11d%n", "Total:", len(route.broker_datas or []), "", tr, tw)
        return
    if route.filter_server_table is None:
        route = dataclasses.replace(route, filter_server_table={})
    ctx.printf("%s%n", pretty_json(route))


TOPIC_STATUS = OptionSet(
    [
        Opt("t", "topic", True, "topic name", required=True),
        Opt("c", "cluster", True, "cluster name or lmq parent topic, lmq is used to find the route."),
    ]
)


async def topic_stats(ctx: Ctx, topic: str, route_topic: str | None = None) -> TopicStatsTable:
    """examineTopicStats(topic): GET_TOPIC_STATS_INFO on every broker of the route, merged."""
    route = await ctx.client.route(route_topic or topic)
    total = TopicStatsTable()
    for bd in route.broker_datas or []:
        addr = select_addr(bd)
        if addr is None:
            continue
        r = await ctx.client.broker(addr, RequestCode.GET_TOPIC_STATS_INFO, GetTopicStatsInfoRequestHeader(topic))
        t = topic_stats_table(r.body)
        total.offset_table.update(t.offset_table)
    return total


def mq_key(mq: MessageQueue) -> tuple[str, str, int]:
    """MessageQueue#compareTo: topic, broker name, queue id."""
    return (mq.topic or "", mq.broker_name or "", mq.queue_id)


@command("topicStatus", "Examine topic Status info.", "TopicStatusSubCommand", TOPIC_STATUS)
async def topic_status(ctx: Ctx) -> None:
    table = await topic_stats(ctx, ctx.value("t"), ctx.get("c"))
    ctx.printf(
        "%-32s  %-4s  %-20s  %-20s    %s%n", "#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated"
    )
    for mq in sorted(table.offset_table, key=mq_key):
        o = table.offset_table[mq]
        when = human_millis(o.last_update_timestamp) if o.last_update_timestamp > 0 else ""
        ctx.printf(
            "%-32s  %-4d  %-20d  %-20d    %s%n",
            (mq.broker_name or "")[:32],
            mq.queue_id,
            o.min_offset,
            o.max_offset,
            when,
        )
    ctx.printf("%n")
    ctx.printf("Topic Put TPS: %s%n", table.topic_put_tps)


TOPIC_CLUSTER = OptionSet([Opt("t", "topic", True, "topic name", required=True)])


async def topic_clusters(ctx: Ctx, topic: str) -> list[str]:
    """getTopicClusterList: clusters holding the first broker of the topic's route."""
    route = await ctx.client.route(topic)
    if not route.broker_datas:
        return []
    name = route.broker_datas[0].broker_name
    ci = await ctx.client.cluster_info()
    return [c for c, names in (ci.cluster_addr_table or {}).items() if name in names]


@command("topicClusterList", "Get cluster info for topic.", "TopicClusterSubCommand", TOPIC_CLUSTER)
async def topic_cluster_list(ctx: Ctx) -> None:
    for c in await topic_clusters(ctx, ctx.value("t")):
        ctx.printf("%s%n", c)


TOPIC_LIST = OptionSet([Opt("c", "clusterModel", False, "clusterModel")])


@command("topicList", "Fetch all topic list from name server.", "TopicListSubCommand", TOPIC_LIST)
async def topic_list(ctx: Ctx) -> None:
    r = ok(await ctx.client.ns(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER), broker=False)
    topics = TopicList.decode(r.body or b"{}").topic_list
    if not ctx.has("c"):
        for t in topics:
            ctx.printf("%s%n", t)
        return
    ctx.printf("%-20s  %-48s  %-48s%n", "#Cluster Name", "#Topic", "#Consumer Group")
    for t in topics:
        if t.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)):
            continue
        cluster, groups = "", [""]
        try:
            clusters = await topic_clusters(ctx, t)
            cluster = clusters[0] if clusters else ""
            route = await ctx.client.route(t)
            addr = select_addr((route.broker_datas or [])[0])
            if addr is not None:
                r = await ctx.client.broker(
                    addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, QueryTopicConsumeByWhoRequestHeader(t)
                )
                groups = GroupList.decode(r.body or b"{}").group_list or [""]
        except (AdminError, IndexError):
            pass
        for g in groups:
            ctx.printf("%-20s  %-64s  %-64s%n", cluster[:20], t[:64], g[:64])
