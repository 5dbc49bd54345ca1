"""Cluster and broker commands: clusterList, brokerStatus, getBrokerConfig, updateBrokerConfig.

Java: ``tools/command/cluster/ClusterListSubCommand``, ``broker/BrokerStatusSubCommand``,
``broker/GetBrokerConfigCommand``, ``broker/UpdateBrokerConfigSubCommand`` (spec §3.1, §3.2, §3.5).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator

from pyrmq.admin.base import Ctx, PrintHelp, command, java_int
from pyrmq.admin.client import AdminError
from pyrmq.admin.options import Opt, OptionSet
from pyrmq.common.properties import PropertiesError, load_properties, properties_text
from pyrmq.protocol.bodies.namesrv import ClusterInfo, KVTable
from pyrmq.protocol.codes import RequestCode


async def runtime_info(ctx: Ctx, addr: str) -> dict[str, str]:
    r = await ctx.client.broker(addr, RequestCode.GET_BROKER_RUNTIME_INFO)
    return KVTable.decode(r.body or b"{}").table


def _first_tps(v: str | None) -> float:
    if v is None or not v.strip():
        return 0.0
    return float(v.split(" ")[0])


CLUSTER_LIST = OptionSet(
    [
        Opt("m", "moreStats", False, "Print more stats"),
        Opt("i", "interval", True, "specify intervals numbers, it is in seconds"),
        Opt("c", "clusterName", True, "which cluster"),
    ]
)


@command("clusterList", "List cluster infos.", "ClusterListSubCommand", CLUSTER_LIST)
async def cluster_list(ctx: Ctx) -> None:
    interval = java_int(ctx.get("i")) if ctx.has("i") else None
    while True:
        ci = await ctx.client.cluster_info()
        table = ci.cluster_addr_table or {}
        cluster = ctx.get("c")
        clusters = [cluster] if cluster else list(table)
        if ctx.has("m"):
            await _more_stats(ctx, ci, clusters)
        else:
            await _base_info(ctx, ci, clusters)
        if interval is None:
            return
        await asyncio.sleep(interval)


def _brokers(ci: ClusterInfo, cluster: str) -> Iterator[tuple[str, int, str]]:
    for name in sorted((ci.cluster_addr_table or {}).get(cluster) or []):
        bd = (ci.broker_addr_table or {}).get(name)
        if bd is not None:
            for bid, addr in sorted(bd.broker_addrs.items()):
                yield name, bid, addr


async def _more_stats(ctx: Ctx, ci: ClusterInfo, clusters: list[str]) -> None:
    ctx.printf(
        "%-16s  %-32s %14s %14s %14s %14s%n",
        "#Cluster Name",
        "#Broker Name",
        "#InTotalYest",
        "#OutTotalYest",
        "#InTotalToday",
        "#OutTotalToday",
    )
    for cluster in clusters:
        for name, _bid, addr in _brokers(ci, cluster):
            vals = [0, 0, 0, 0]
            try:
                kv = await runtime_info(ctx, addr)
                p = [int(kv[f"msgPutTotal{k}"]) for k in ("YesterdayMorning", "TodayMorning", "TodayNow")]
                g = [int(kv[f"msgGetTotal{k}"]) for k in ("YesterdayMorning", "TodayMorning", "TodayNow")]
                vals = [p[1] - p[0], g[1] - g[0], p[2] - p[1], g[2] - g[1]]
            except (AdminError, KeyError, ValueError, TypeError):
                pass
            ctx.printf("%-16s  %-32s %14d %14d %14d %14d%n", cluster, name, *vals)


async def _base_info(ctx: Ctx, ci: ClusterInfo, clusters: list[str]) -> None:
    ctx.printf(
        "%-22s  %-22s  %-4s  %-22s %-16s  %16s  %30s  %-22s  %-11s  %-12s  %-8s  %-10s%n",
        "#Cluster Name",
        "#Broker Name",
        "#BID",
        "#Addr",
        "#Version",
        "#InTPS(LOAD)",
        "#OutTPS(LOAD)",
        "#Timer(Progress)",
        "#PCWait(ms)",
        "#Hour",
        "#SPACE",
        "#ACTIVATED",
    )
    for cluster in clusters:
        for name, bid, addr in _brokers(ci, cluster):
            kv: dict[str, str] = {}
            tin = tout = 0.0
            timer = (0, 0, 0, 0.0, 0.0)
            try:
                kv = await runtime_info(ctx, addr)
                with contextlib.suppress(KeyError, ValueError, TypeError):
                    timer = (
                        int(kv["timerReadBehind"]),
                        int(kv["timerOffsetBehind"]),
                        int(kv["timerCongestNum"]),
                        float(kv["timerEnqueueTps"]),
                        float(kv["timerDequeueTps"]),
                    )
                tin = _first_tps(kv.get("putTps"))
                tout = _first_tps(kv.get("getTransferredTps"))
            except (AdminError, ValueError) as e:
                print(
                    e.java_line() if isinstance(e, AdminError) else f"java.lang.NumberFormatException: {e}",
                    file=__import__("sys").stderr,
                )
            hour = 0.0
            earliest = kv.get("earliestMessageTimeStamp")
            if earliest:
                hour = (time.time() * 1000 - int(earliest)) / 1000.0 / 60.0 / 60.0
            ratio = kv.get("commitLogDiskRatio")
            space = float(ratio) if ratio else 0.0
            ctx.printf(
                "%-22s  %-22s  %-4s  %-22s %-16s  %16s  %30s  %-22s  %11s  %-12s  %-8s  %10s%n",
                cluster,
                name,
                bid,
                addr,
                kv.get("brokerVersionDesc", "" if not kv else None),
                "{:9.2f}({},{}ms)".format(
                    tin, kv.get("sendThreadPoolQueueSize", ""), kv.get("sendThreadPoolQueueHeadWaitTimeMills", "")
                ),
                "{:9.2f}({},{}ms|{},{}ms)".format(
                    tout,
                    kv.get("pullThreadPoolQueueSize", ""),
                    kv.get("pullThreadPoolQueueHeadWaitTimeMills", ""),
                    kv.get("ackThreadPoolQueueSize", "N"),
                    kv.get("ackThreadPoolQueueHeadWaitTimeMills", "N"),
                ),
                "%d-%d(%.1fw, %.1f, %.1f)" % (timer[0], timer[1], timer[2] / 10000.0, timer[3], timer[4]),
                kv.get("pageCacheLockTimeMills", "" if not kv else None),
                f"{hour:2.2f}",
                f"{space:.4f}",
                kv.get("brokerActive", "false").lower() == "true",
            )


BROKER_STATUS = OptionSet(
    [
        Opt("b", "brokerAddr", True, "Broker address", group="target"),
        Opt("c", "clusterName", True, "which cluster", group="target"),
    ],
    required_groups=("target",),
)


@command("brokerStatus", "Fetch broker runtime status data.", "BrokerStatusSubCommand", BROKER_STATUS)
async def broker_status(ctx: Ctx) -> None:
    if ctx.has("b"):
        kv = await runtime_info(ctx, ctx.value("b"))
        for k in sorted(kv):
            ctx.printf("%-32s: %s%n", k, kv[k])
        return
    for addr in await ctx.client.master_addrs(ctx.value("c"), with_slaves=True):
        try:
            kv = await runtime_info(ctx, addr)
        except AdminError as e:
            print(e.java_line(), file=__import__("sys").stderr)
            continue
        for k in sorted(kv):
            ctx.printf("%-24s %-32s: %s%n", addr, k, kv[k])


UPDATE_BROKER_CONFIG = OptionSet(
    [
        Opt("b", "brokerAddr", True, "update which broker"),
        Opt("c", "clusterName", True, "update which cluster"),
        Opt("a", "updateAllBroker", True, "update all brokers include slave"),
        Opt("k", "key", True, "config key", required=True),
        Opt("v", "value", True, "config value", required=True),
    ]
)


@command("updateBrokerConfig", "Update broker's config.", "UpdateBrokerConfigSubCommand", UPDATE_BROKER_CONFIG)
async def update_broker_config(ctx: Ctx) -> None:
    body = properties_text({ctx.value("k"): ctx.value("v")}, escape=True).encode("utf-8")
    if ctx.has("b"):
        addr = ctx.value("b")
        await ctx.client.broker(addr, RequestCode.UPDATE_BROKER_CONFIG, body=body)
        ctx.printf("update broker config success, %s\n", addr)
        return
    if ctx.has("c"):
        for addr in await ctx.client.master_addrs(ctx.value("c"), with_slaves=ctx.has("a")):
            try:
                await ctx.client.broker(addr, RequestCode.UPDATE_BROKER_CONFIG, body=body)
                ctx.printf("update broker config success, %s\n", addr)
            except AdminError as e:
                print(e.java_line(), file=__import__("sys").stderr)
        return
    raise PrintHelp


GET_BROKER_CONFIG = OptionSet(
    [
        Opt("b", "brokerAddr", True, "get which broker", group="target"),
        Opt("c", "clusterName", True, "get which cluster", group="target"),
    ],
    required_groups=("target",),
)


def chm_order(d: dict[str, str]) -> list[str]:
    """Iteration order of Properties (a ConcurrentHashMap since Java 9): by spread hash bucket."""
    from pyrmq.common.java_lang import java_string_hash

    n = 16
    while len(d) >= n * 3 // 4:
        n <<= 1

    def bucket(k: str) -> int:
        h = java_string_hash(k) & 0xFFFFFFFF
        return ((h ^ (h >> 16)) & 0x7FFFFFFF) & (n - 1)

    return sorted(d, key=bucket)


async def _print_config(ctx: Ctx, prefix: str, addr: str) -> None:
    ctx.printf("%s", prefix)
    r = await ctx.client.broker(addr, RequestCode.GET_BROKER_CONFIG)
    try:
        props = load_properties((r.body or b"").decode("utf-8", "replace"))
    except PropertiesError:
        props = None
    if props is None:
        ctx.printf("Broker[%s] has no config property!\n", addr)
        return
    for k in chm_order(props):
        ctx.printf("%-50s=  %s\n", k, props[k])
    ctx.printf("%n")


@command(
    "getBrokerConfig", "Get broker config by cluster or special broker.", "GetBrokerConfigCommand", GET_BROKER_CONFIG
)
async def get_broker_config(ctx: Ctx) -> None:
    if ctx.has("b"):
        addr = ctx.value("b")
        await _print_config(ctx, f"============{addr}============\n", addr)
        return
    ci = await ctx.client.cluster_info()
    names = (ci.cluster_addr_table or {}).get(ctx.value("c"))
    if names is None:
        raise AdminError("Make sure the specified clusterName exists or the name server connected to is correct.")
    for name in names:
        bd = (ci.broker_addr_table or {}).get(name)
        if bd is None:
            continue
        master = bd.broker_addrs.get(0)
        slaves = [a for i, a in sorted(bd.broker_addrs.items()) if i != 0]
        if master is None:
            continue
        await _print_config(ctx, f"============Master: {master}============\n", master)
        for s in slaves:
            await _print_config(ctx, f"============My Master: {master}=====Slave: {s}============\n", s)
