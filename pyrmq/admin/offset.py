"""Offset commands: resetOffsetByTime, skipAccumulatedMessage.

Java: ``tools/command/offset/ResetOffsetByTimeCommand``, ``SkipAccumulationSubCommand``,
``ResetOffsetByTimeOldCommand`` (spec §3.8): INVOKE_BROKER_TO_RESET_OFFSET per broker of the
route; when a broker answers CONSUMER_NOT_ONLINE, the offset-by-offset path (consume stats,
max/search offset, UPDATE_CONSUMER_OFFSET).
"""

from __future__ import annotations

import time

from pyrmq.admin.base import Ctx, command, java_bool, java_int
from pyrmq.admin.client import AdminError, MQClientError, ok
from pyrmq.admin.javafmt import hash_order, parse_human_date
from pyrmq.admin.message import Queue, offset_call
from pyrmq.admin.options import Opt, OptionSet
from pyrmq.protocol.bodies.admin import consume_stats, reset_offset_body
from pyrmq.protocol.bodies.broker import MessageQueue
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.headers.admin import GetConsumeStatsRequestHeader, ResetOffsetRequestHeader
from pyrmq.protocol.headers.broker import UpdateConsumerOffsetRequestHeader


async def reset_by_timestamp(ctx: Ctx, topic: str, group: str, ts: int, force: bool) -> dict[MessageQueue, int]:
    """resetOffsetByTimestamp: 222 to every master of the topic's route, bodies merged."""
    route = await ctx.client.route(topic)
    table: dict[MessageQueue, int] = {}
    for bd in route.broker_datas or []:
        addr = bd.broker_addrs.get(0)
        if addr is None:
            continue
        r = await ctx.client.invoke(
            addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ResetOffsetRequestHeader(topic, group, ts, force)
        )
        if r.code == ResponseCode.SUCCESS and r.body:
            table.update(reset_offset_body(r.body).offset_table)
            continue
        raise MQClientError.of(r.code, r.remark)
    return table


async def reset_old(ctx: Ctx, group: str, topic: str, ts: int, force: bool, skip: bool) -> None:
    """ResetOffsetByTimeOldCommand: per queue compute the offset and commit it (UPDATE_CONSUMER_OFFSET)."""
    route = await ctx.client.route(topic)
    rows = []
    for bd in route.broker_datas or []:
        addr = bd.broker_addrs.get(0)
        if addr is None:
            continue
        r = ok(
            await ctx.client.invoke(
                addr, RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader(group, topic), timeout_s=15
            ),
            addr,
        )
        cs = consume_stats(r.body)
        offsets = {mq.queue_id: o for mq, o in cs.offset_table.items() if mq.topic == topic}
        qd = next((q for q in route.queue_datas or [] if q.broker_name == bd.broker_name), None)
        for qid in sorted(offsets) if offsets else range(qd.read_queue_nums if qd else 0):
            q = Queue(topic, bd.broker_name, qid, addr)
            broker_off = await offset_call(ctx, q, RequestCode.GET_MAX_OFFSET)
            consumer_off = offsets[qid].consumer_offset if qid in offsets else 0
            if ts == -1:
                ts_off = broker_off
            else:
                ts_off = await offset_call(ctx, q, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, ts)
            rollback = ts_off if force or ts_off < consumer_off else consumer_off
            ok(
                await ctx.client.invoke(
                    addr,
                    RequestCode.UPDATE_CONSUMER_OFFSET,
                    UpdateConsumerOffsetRequestHeader(group, topic, qid, rollback),
                ),
                addr,
            )
            rows.append((bd.broker_name, qid, broker_off, consumer_off, ts_off, rollback))
    w = 20
    ctx.printf(
        f"%-{w}s  %-{w}s  %-{w}s  %-{w}s  %-{w}s  %-{w}s%n",
        "#brokerName",
        "#queueId",
        "#brokerOffset",
        "#consumerOffset",
        "#timestampOffset",
        "#rollbackOffset",
    )
    for row in rows:
        ctx.printf(f"%-{w}s  %-{w}d  %-{w}d  %-{w}d  %-{w}d  %-{w}d%n", *row)


RESET = OptionSet(
    [
        Opt("g", "group", True, "set the consumer group", required=True),
        Opt("t", "topic", True, "set the topic", required=True),
        Opt("s", "timestamp", True, "set the timestamp[now|currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]", required=True),
        Opt("f", "force", True, "set the force rollback by timestamp switch[true|false]. Deprecated."),
        Opt("c", "cluster", True, "Cluster name or lmq parent topic, lmq is used to find the route."),
        Opt("b", "broker", True, "broker addr"),
        Opt("q", "queue", True, "queue id"),
        Opt("o", "offset", True, "Expect queue offset, not support old version broker"),
    ]
)


@command(
    "resetOffsetByTime",
    "Reset consumer offset by timestamp(without client restart).",
    "ResetOffsetByTimeCommand",
    RESET,
)
async def reset_offset_by_time(ctx: Ctx) -> None:
    group, topic, when = ctx.value("g"), ctx.value("t"), ctx.value("s")
    if when == "now":
        ts = int(time.time() * 1000)
    else:
        try:
            ts = int(when)
        except ValueError:
            try:
                ts = parse_human_date(when)
            except ValueError:
                raise AdminError(
                    f"cannot parse timestamp {when!r}: expected now, millis or yyyy-MM-dd#HH:mm:ss:SSS"
                ) from None
    force = java_bool(ctx.get("f")) if ctx.has("f") else True
    if ctx.has("b") and ctx.has("q") and java_int(ctx.get("q")) >= 0:
        addr, qid = ctx.value("b"), java_int(ctx.get("q"))
        ctx.printf(
            "start reset consumer offset by specified, group[%s], topic[%s], queueId[%s], broker[%s], "
            "timestamp(string)[%s], timestamp(long)[%s]%n",
            group,
            topic,
            qid,
            addr,
            when,
            ts,
        )
        q = Queue(topic, "", qid, addr)
        off = (
            java_int(ctx.get("o"))
            if ctx.has("o")
            else await offset_call(ctx, q, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, ts)
        )
        ctx.printf("reset consumer offset to %d%n", off)
        if off > 0:
            await ctx.client.broker(
                addr, RequestCode.UPDATE_CONSUMER_OFFSET, UpdateConsumerOffsetRequestHeader(group, topic, qid, off)
            )
            await ctx.client.broker(
                addr,
                RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
                ResetOffsetRequestHeader(topic, group, ts, force, qid, off),
            )
        return
    try:
        table = await reset_by_timestamp(ctx, topic, group, ts, force)
    except MQClientError as e:
        if e.code == ResponseCode.CONSUMER_NOT_ONLINE:
            await reset_old(ctx, group, topic, ts, force, False)
            return
        raise
    ctx.printf(
        "start reset consumer offset by specified, group[%s], topic[%s], force[%s], timestamp(string)[%s], "
        "timestamp(long)[%s]%n",
        group,
        topic,
        force,
        when,
        ts,
    )
    ctx.printf("%-40s  %-40s  %-40s%n", "#brokerName", "#queueId", "#offset")
    for mq in hash_order(list(table)):
        ctx.printf("%-40s  %-40d  %-40d%n", (mq.broker_name or "")[:32], mq.queue_id, table[mq])


SKIP = OptionSet(
    [
        Opt("g", "group", True, "set the consumer group", required=True),
        Opt("t", "topic", True, "set the topic", required=True),
        Opt("f", "force", True, "set the force rollback by timestamp switch[true|false]"),
        Opt("c", "cluster", True, "Cluster name or lmq parent topic, lmq is used to find the route."),
    ]
)


@command(
    "skipAccumulatedMessage",
    "Skip all messages that are accumulated (not consumed) currently.",
    "SkipAccumulationSubCommand",
    SKIP,
)
async def skip_accumulated(ctx: Ctx) -> None:
    group, topic = ctx.value("g"), ctx.value("t")
    force = java_bool(ctx.get("f")) if ctx.has("f") else True
    try:
        table = await reset_by_timestamp(ctx, topic, group, -1, force)
    except MQClientError as e:
        if e.code == ResponseCode.CONSUMER_NOT_ONLINE:
            await reset_old(ctx, group, topic, -1, force, True)
            return
        raise
    ctx.printf("%-40s  %-40s  %-40s%n", "#brokerName", "#queueId", "#offset")
    for mq in hash_order(list(table)):
        ctx.printf("%-40s  %-40d  %-40d%n", (mq.broker_name or "")[:32], mq.queue_id, table[mq])
