"""The admin side of the remoting protocol: what ``DefaultMQAdminExt`` sends and how it fails.

Java: ``tools/admin/DefaultMQAdminExtImpl`` and ``client/impl/MQClientAPIImpl`` (spec §1.5).
Name-server answers that are not SUCCESS become ``MQClientException``, broker answers
``MQBrokerException`` (with ``BROKER: addr``), an unreachable server
``RemotingConnectException: connect to <addr> failed``: the same class names and messages the
Java tool prints, so greps for ``CODE: 17`` or ``connect to`` keep working.
"""

from __future__ import annotations

import functools
import os
import random
import ssl

from pyrmq.auth.signature import sign_request, tools_credentials
from pyrmq.common.constants import RETRY_GROUP_TOPIC_PREFIX
from pyrmq.protocol.bodies.admin import ConsumeStats
from pyrmq.protocol.bodies.admin import consume_stats as decode_consume_stats
from pyrmq.protocol.bodies.broker import ConsumerConnection
from pyrmq.protocol.bodies.namesrv import BrokerData, ClusterInfo, TopicRouteData
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.errors import RemotingConnectError, RemotingSendRequestError, RemotingTimeout
from pyrmq.protocol.headers.admin import GetConsumerConnectionListRequestHeader, GetConsumeStatsRequestHeader
from pyrmq.protocol.headers.base import RemotingHeader
from pyrmq.protocol.headers.namesrv import GetRouteInfoRequestHeader
from pyrmq.remoting.client import RemotingClient

#: DefaultMQAdminExt's per-request timeout
TIMEOUT_S = 5.0


class AdminError(Exception):
    """A failure printed the way Java prints the exception (class name, then message)."""

    java_class = "org.apache.rocketmq.client.exception.MQClientException"

    def __init__(self, message: str, code: int = -1, remark: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.remark = remark

    def java_line(self) -> str:
        return f"{self.java_class}: {self}"


class MQClientError(AdminError):
    @classmethod
    def of(cls, code: int, remark: str | None) -> MQClientError:
        return cls(f"CODE: {code}  DESC: {remark}", code, remark)


class MQBrokerError(AdminError):
    java_class = "org.apache.rocketmq.client.exception.MQBrokerException"

    @classmethod
    def of(cls, code: int, remark: str | None, addr: str | None = None) -> MQBrokerError:
        tail = f" BROKER: {addr}" if addr else ""
        return cls(f"CODE: {code}  DESC: {remark}{tail}", code, remark)


class ConnectError(AdminError):
    java_class = "org.apache.rocketmq.remoting.exception.RemotingConnectException"


class TimeoutError_(AdminError):
    java_class = "org.apache.rocketmq.remoting.exception.RemotingTimeoutException"


class SendRequestError(AdminError):
    """The connection dropped before the answer (e.g. a TLS-only server closing a plain one)."""

    java_class = "org.apache.rocketmq.remoting.exception.RemotingSendRequestException"


def ok(resp: RemotingCommand, addr: str | None = None, *, broker: bool = True) -> RemotingCommand:
    if resp.code != ResponseCode.SUCCESS:
        if broker:
            raise MQBrokerError.of(resp.code, resp.remark, addr)
        raise MQClientError.of(resp.code, resp.remark)
    return resp


def _sign(cmd: RemotingCommand, *, access_key: str, secret_key: str) -> None:
    sign_request(cmd, access_key, secret_key)


class AdminClient:
    """One admin session: a name-server list, a connection pool, helpers named after MQAdminExt."""

    def __init__(self, namesrv: str | None, *, tls: ssl.SSLContext | None = None) -> None:
        addrs = namesrv or os.environ.get("NAMESRV_ADDR") or ""
        self.namesrv = [a.strip() for a in addrs.split(";") if a.strip()]
        self.remoting = RemotingClient(connect_timeout_s=3, tls=tls)
        creds = tools_credentials(os.environ.get("ROCKETMQ_HOME", ""))
        if creds is not None:  # sign like mqadmin with conf/tools.yml (the secret is never printed)
            self.remoting.rpc_hook = functools.partial(_sign, access_key=creds[0], secret_key=creds[1])

    async def close(self) -> None:
        await self.remoting.close()

    # ------------------------------------------------------------------ transport
    async def invoke(
        self,
        addr: str,
        code: int,
        header: RemotingHeader | dict[str, str] | None = None,
        body: bytes | None = None,
        timeout_s: float = TIMEOUT_S,
    ) -> RemotingCommand:
        ext = header.to_ext_fields() if isinstance(header, RemotingHeader) else header
        cmd = RemotingCommand.request(code, ext, body)
        try:
            return await self.remoting.invoke(addr, cmd, timeout_s)
        except RemotingConnectError:
            raise ConnectError(f"connect to {addr} failed") from None
        except RemotingSendRequestError:
            raise SendRequestError(f"send request to <{addr}> failed") from None
        except (RemotingTimeout, TimeoutError):
            raise TimeoutError_(f"wait response on the channel <{addr}> timeout, {int(timeout_s * 1000)}(ms)") from None

    async def ns(
        self, code: int, header: RemotingHeader | dict[str, str] | None = None, body: bytes | None = None
    ) -> RemotingCommand:
        """A name-server request: the first reachable server of the list answers."""
        if not self.namesrv:
            raise MQClientError("No name server address, please set it (-n or NAMESRV_ADDR)")
        last: AdminError | None = None
        for addr in self.namesrv:
            try:
                return await self.invoke(addr, code, header, body)
            except (ConnectError, SendRequestError) as e:
                last = e
        assert last is not None
        raise last

    async def ns_all(
        self, code: int, header: RemotingHeader | dict[str, str] | None = None
    ) -> list[tuple[str, RemotingCommand]]:
        return [(a, await self.invoke(a, code, header)) for a in self.namesrv]

    async def broker(
        self,
        addr: str,
        code: int,
        header: RemotingHeader | dict[str, str] | None = None,
        body: bytes | None = None,
        timeout_s: float = TIMEOUT_S,
    ) -> RemotingCommand:
        """A broker request whose failure is an MQBrokerException."""
        return ok(await self.invoke(addr, code, header, body, timeout_s), addr)

    # ------------------------------------------------------------------ name server views
    async def cluster_info(self) -> ClusterInfo:
        r = ok(await self.ns(RequestCode.GET_BROKER_CLUSTER_INFO), broker=False)
        return ClusterInfo.decode(r.body or b"{}")

    async def route(self, topic: str) -> TopicRouteData:
        r = ok(await self.ns(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic)), broker=False)
        if not r.body:
            raise MQClientError.of(
                ResponseCode.TOPIC_NOT_EXIST, f"No topic route info in name server for the topic: {topic}"
            )
        return TopicRouteData.decode(r.body)

    async def master_addrs(self, cluster: str, with_slaves: bool = False) -> list[str]:
        """CommandUtil.fetchMasterAddrByClusterName (and ...AndSlave...)."""
        ci = await self.cluster_info()
        names = (ci.cluster_addr_table or {}).get(cluster)
        if names is None:
            print("[error] Make sure the specified clusterName exists or the name server connected to is correct.")
            return []
        out: list[str] = []
        for name in names:
            bd = (ci.broker_addr_table or {}).get(name)
            if bd is None:
                continue
            if with_slaves:
                out.extend(bd.broker_addrs.values())
            elif 0 in bd.broker_addrs:
                out.append(bd.broker_addrs[0])
        return out

    async def broker_name_of(self, addr: str) -> str | None:
        ci = await self.cluster_info()
        for bd in (ci.broker_addr_table or {}).values():
            if addr in bd.broker_addrs.values():
                return bd.broker_name
        return None

    # ------------------------------------------------------------------ composite MQAdminExt calls
    async def consumer_connection(self, group: str, addr: str | None = None) -> ConsumerConnection:
        """examineConsumerConnectionInfo: a random broker of %RETRY%group's route (or `addr`)."""
        if addr is None:
            route = await self.route(RETRY_GROUP_TOPIC_PREFIX + group)
            addrs = [a for a in (select_addr(bd) for bd in route.broker_datas or []) if a]
            addr = random.choice(addrs) if addrs else None
            if addr is None:
                raise MQClientError.of(ResponseCode.CONSUMER_NOT_ONLINE, "Not found the consumer group connection")
        r = await self.broker(
            addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, GetConsumerConnectionListRequestHeader(group)
        )
        cc = ConsumerConnection.decode(r.body or b"{}")
        if not cc.connection_set:
            raise MQClientError.of(ResponseCode.CONSUMER_NOT_ONLINE, "Not found the consumer group connection")
        return cc

    async def consume_stats(self, group: str, topic: str | None = None) -> ConsumeStats:
        """examineConsumeStats(group[, topic]): B 208 on every broker of %RETRY%group's route (5.x
        falls back to the topic's route), merged; an empty result tells not-online from broadcast."""
        try:
            route = await self.route(RETRY_GROUP_TOPIC_PREFIX + group)
        except MQClientError:
            if topic is None:
                raise
            route = await self.route(topic)
        total = ConsumeStats()
        for bd in route.broker_datas or []:
            addr = select_addr(bd)
            if addr is None:
                continue
            r = await self.broker(
                addr, RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader(group, topic), timeout_s=TIMEOUT_S * 3
            )
            cs = decode_consume_stats(r.body)
            total.offset_table.update(cs.offset_table)
            total.consume_tps += cs.consume_tps
        if not total.offset_table:
            try:
                cc = await self.consumer_connection(group)
            except AdminError:
                raise MQClientError.of(
                    ResponseCode.CONSUMER_NOT_ONLINE,
                    "Not found the consumer group consume stats, because return offset table is "
                    "empty, maybe the consumer not online",
                ) from None
            if cc.message_model == "BROADCASTING":
                raise MQClientError.of(
                    ResponseCode.BROADCAST_CONSUMPTION,
                    "Not found the consumer group consume stats, because return offset table is "
                    "empty, the consumer is under the broadcast mode",
                )
        return total


def select_addr(bd: BrokerData) -> str | None:
    """BrokerData.selectBrokerAddr: the master, else any slave."""
    addrs = bd.broker_addrs or {}
    if 0 in addrs:
        return addrs[0]
    return random.choice(list(addrs.values())) if addrs else None
