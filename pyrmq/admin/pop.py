"""setConsumeMode: switch a consumer group to POP (or back to PULL) for a topic.

Java: ``tools/command/consumer/SetConsumeModeSubCommand`` (DefaultMQAdminExt#setMessageRequestMode
-> SET_MESSAGE_REQUEST_MODE with a SetMessageRequestModeRequestBody; a failure is an
MQClientException).
"""

from __future__ import annotations

import sys

from pyrmq.admin.base import Ctx, PrintHelp, command, java_int
from pyrmq.admin.client import AdminError, ok
from pyrmq.admin.options import Opt, OptionSet
from pyrmq.protocol.bodies.pop import MessageRequestMode, SetMessageRequestModeRequestBody
from pyrmq.protocol.codes import RequestCode

SET_CONSUME_MODE = OptionSet(
    [
        Opt("b", "brokerAddr", True, "create subscription group to which broker"),
        Opt("c", "clusterName", True, "create subscription group to which cluster"),
        Opt("t", "topicName", True, "topic name", required=True),
        Opt("g", "groupName", True, "consumer group name", required=True),
        Opt("m", "mode", True, "consume mode. PULL/POP", required=True),
        Opt("q", "popShareQueueNum", True, "num of queue which share in pop mode"),
    ]
)


@command("setConsumeMode", "set consume mode", "SetConsumeModeSubCommand", SET_CONSUME_MODE)
async def set_consume_mode(ctx: Ctx) -> None:
    topic, group, mode_name = ctx.value("t"), ctx.value("g"), ctx.value("m")
    try:
        mode = MessageRequestMode[mode_name]
    except KeyError:
        raise AdminError(
            f"No enum constant org.apache.rocketmq.common.message.MessageRequestMode.{mode_name}"
        ) from None
    share = java_int(ctx.get("q")) if ctx.has("q") else 0
    body = SetMessageRequestModeRequestBody(topic, group, mode, share).encode()

    async def set_on(addr: str) -> None:
        resp = await ctx.client.invoke(addr, RequestCode.SET_MESSAGE_REQUEST_MODE, None, body, 5.0)
        ok(resp, addr, broker=False)
        ctx.printf("set consume mode to %s success.%n", addr)

    if ctx.has("b"):
        await set_on(ctx.value("b"))
    elif ctx.has("c"):
        for addr in await ctx.client.master_addrs(ctx.value("c")):
            try:
                await set_on(addr)
            except AdminError as e:
                print(e.java_line(), file=sys.stderr)
    else:
        raise PrintHelp
    ctx.printf("topic[%s] group[%s] consume mode[%s] popShareQueueNum[%d]", topic, group, mode.name, share)
