"""Asking a controller group of several members (standalone or inside name servers) who leads
and what it holds: the raw CONTROLLER_* requests the group tests make, over one RemotingClient.

Members are named by the address their controller serves on (the DLedger peer port).
"""

from __future__ import annotations

import asyncio
import json
import time

from pyrmq.protocol.bodies.controller import BrokerReplicasInfo, SyncStateSet
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.controller import GetMetaDataResponseHeader, GetReplicaInfoRequestHeader
from pyrmq.remoting.client import RemotingClient


async def call(c: RemotingClient, addr: str, code: RequestCode, ext=None, body=None) -> RemotingCommand:
    return await c.invoke(addr, RemotingCommand.request(code, ext or {}, body), 5)


async def metadata(c: RemotingClient, addr: str) -> GetMetaDataResponseHeader:
    r = await call(c, addr, RequestCode.CONTROLLER_GET_METADATA_INFO)
    assert r.code == ResponseCode.SUCCESS, r
    return GetMetaDataResponseHeader.from_ext_fields(r.ext_fields)


async def replica_info(c: RemotingClient, addr: str, broker_name: str) -> RemotingCommand:
    ext = GetReplicaInfoRequestHeader(broker_name).to_ext_fields()
    return await call(c, addr, RequestCode.CONTROLLER_GET_REPLICA_INFO, ext)


async def serving_leader(c: RemotingClient, addrs: list[str], timeout: float = 30) -> str:
    """The address every live member names as leader, once it serves (its initial entry committed)."""
    deadline = time.monotonic() + timeout
    while True:
        named = set()
        for addr in addrs:
            try:
                named.add((await metadata(c, addr)).controller_leader_address)
            except Exception:
                named.add(None)
        leader = next((a for a in addrs if a in named), None)
        if len(named) == 1 and leader is not None:  # at first the survivors still name the killed one
            if (await replica_info(c, leader, "none")).code != ResponseCode.CONTROLLER_NOT_LEADER:
                return leader
        assert time.monotonic() < deadline, f"no single serving controller leader: {named}"
        await asyncio.sleep(0.2)


def replica_state(r: RemotingCommand) -> tuple:
    """What GET_REPLICA_INFO answers: master id, address, epoch, SyncStateSet epoch, sorted SyncStateSet."""
    assert r.code == ResponseCode.SUCCESS, r
    sss = SyncStateSet.decode(r.body)
    e = r.ext_fields
    return (e.get("masterBrokerId"), e.get("masterAddress"), e.get("masterEpoch"), sss.sync_state_set_epoch,
            sorted(sss.sync_state_set))  # fmt: skip


async def wait_replica_state(c: RemotingClient, addr: str, broker_name: str, ok, timeout: float = 30) -> tuple:
    """Until `addr`'s GET_REPLICA_INFO of `broker_name` satisfies `ok(replica_state)`."""
    deadline = time.monotonic() + timeout
    while True:
        r = await replica_info(c, addr, broker_name)
        if r.code == ResponseCode.SUCCESS and ok(replica_state(r)):
            return replica_state(r)
        assert time.monotonic() < deadline, f"replica info never as expected: {r.code} {r.remark} {r.ext_fields}"
        await asyncio.sleep(0.2)


def until_serving_leader(addrs: list[str], timeout: float = 30) -> str:
    """serving_leader from synchronous code (its own client)."""

    async def run() -> str:
        async with RemotingClient() as c:
            return await serving_leader(c, addrs, timeout)

    return asyncio.run(run())


def controller_mode_conf(controller_addrs: list[str], **conf) -> dict:
    """broker.conf of a small pyrmq test broker in controller mode: `controllerAddr` lists every
    member, heartbeats and metadata syncs fast, a tiny commit log."""
    return {
        "enableControllerMode": "true",
        "controllerAddr": ";".join(controller_addrs),
        "controllerHeartBeatTimeoutMills": 3000,
        "syncControllerMetadataPeriod": 1000,
        "mappedFileSizeCommitLog": 64 * 1024,
        "bindAddress": "127.0.0.1",
        **conf,
    }


async def assert_one_leader(c: RemotingClient, leader: str, followers: list[str], ports: list[int]) -> None:
    """`followers` refuse a scheduled request (CONTROLLER_NOT_LEADER) and name `leader`, which says
    it leads; every member lists the group's peers (n0, n1, ... on `ports`) as Java does."""
    peers = "".join(f"n{i}:127.0.0.1:{p};" for i, p in enumerate(ports))
    for addr in followers:
        r = await replica_info(c, addr, "none")
        assert (r.code, r.remark) == (ResponseCode.CONTROLLER_NOT_LEADER, "The controller is not in leader state")
        meta = await metadata(c, addr)
        assert (meta.controller_leader_address, meta.is_leader, meta.peers) == (leader, False, peers), meta
    meta = await metadata(c, leader)
    assert meta.is_leader and meta.peers == peers, meta


async def in_sync_ids(c: RemotingClient, addr: str, broker_name: str) -> list[int]:
    """The sorted broker ids CONTROLLER_GET_SYNC_STATE_DATA lists as in sync for `broker_name`."""
    r = await call(c, addr, RequestCode.CONTROLLER_GET_SYNC_STATE_DATA, body=json.dumps([broker_name]).encode())
    assert r.code == ResponseCode.SUCCESS, r
    info = BrokerReplicasInfo.decode(r.body).replicas_info_table[broker_name]
    return sorted(m.broker_id for m in info.in_sync_replicas)


def until_replica_state(addr: str, broker_name: str, ok, timeout: float = 120) -> tuple:
    """wait_replica_state from synchronous code (its own client)."""

    async def run() -> tuple:
        async with RemotingClient() as c:
            return await wait_replica_state(c, addr, broker_name, ok, timeout)

    return asyncio.run(run())


def in_sync_ids_now(addr: str, broker_name: str) -> list[int]:
    """in_sync_ids from synchronous code (its own client)."""

    async def run() -> list[int]:
        async with RemotingClient() as c:
            return await in_sync_ids(c, addr, broker_name)

    return asyncio.run(run())
