"""`pyrmq controller` as a subprocess, driven by pyrmq's own remoting client: broker ids,
registration, election, SyncStateSet changes, reads, config, a master whose connection drops
(the survivor is elected and told so with NOTIFY_BROKER_ROLE_CHANGED), the state surviving a
SIGKILL through the journal, and the controller embedded in `pyrmq namesrv`."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import probe
from support.ports import free_port
from support.servers import PyrmqController, PyrmqNamesrv

from pyrmq.controller.journal import JOURNAL_FILE
from pyrmq.protocol.bodies.controller import BrokerReplicasInfo, ElectMasterResponseBody, SyncStateSet
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.controller import (
    AlterSyncStateSetRequestHeader,
    ApplyBrokerIdRequestHeader,
    ElectMasterRequestHeader,
    GetNextBrokerIdRequestHeader,
    GetReplicaInfoRequestHeader,
    NotifyBrokerRoleChangedRequestHeader,
    RegisterBrokerToControllerRequestHeader,
)
from pyrmq.protocol.headers.namesrv import BrokerHeartbeatRequestHeader
from pyrmq.remoting.channel import RequestContext, handles
from pyrmq.remoting.client import RemotingClient
from pyrmq.remoting.server import RemotingServer

CLUSTER, NAME = "ItCluster", "it-broker"
ROOT = Path(__file__).resolve().parents[2]


def _req(code: int, header=None, body: bytes | None = None) -> RemotingCommand:
    return RemotingCommand.request(code, header.to_ext_fields() if header else {}, body)


async def _call(client: RemotingClient, addr: str, code: int, header=None, body: bytes | None = None):
    return await client.invoke(addr, _req(code, header, body), 5)


async def _join(client: RemotingClient, addr: str, broker_id: int, broker_addr: str) -> None:
    """What a controller-mode broker does at start: next id, apply it, register."""
    r = await _call(
        client, addr, RequestCode.CONTROLLER_GET_NEXT_BROKER_ID, GetNextBrokerIdRequestHeader(CLUSTER, NAME)
    )
    assert (r.code, r.ext_fields["nextBrokerId"]) == (ResponseCode.SUCCESS, str(broker_id))
    code = f"{broker_addr};{broker_id}"
    h = ApplyBrokerIdRequestHeader(CLUSTER, NAME, broker_id, code)
    assert (await _call(client, addr, RequestCode.CONTROLLER_APPLY_BROKER_ID, h)).code == ResponseCode.SUCCESS
    h2 = RegisterBrokerToControllerRequestHeader(CLUSTER, NAME, broker_id, broker_addr)
    r = await _call(client, addr, RequestCode.CONTROLLER_REGISTER_BROKER, h2)
    assert r.code == ResponseCode.SUCCESS, r


async def _beat(client: RemotingClient, addr: str, broker_id: int, broker_addr: str, offset: int = 0) -> None:
    h = BrokerHeartbeatRequestHeader(CLUSTER, broker_addr, NAME, broker_id, 1, offset, 0, 30_000, None)
    r = await _call(client, addr, RequestCode.BROKER_HEARTBEAT, h)
    assert (r.code, r.remark) == (ResponseCode.SUCCESS, "Heart beat success")


async def _replica_info(client: RemotingClient, addr: str) -> RemotingCommand:
    return await _call(client, addr, RequestCode.CONTROLLER_GET_REPLICA_INFO, GetReplicaInfoRequestHeader(NAME))


async def _form_group(addr: str, b1: str, b2: str) -> tuple[RemotingClient, RemotingClient]:
    """Brokers 1 and 2 each on their own connection (as real brokers are); 1 master, SyncStateSet {1, 2}."""
    c1, c2 = RemotingClient(), RemotingClient()
    await _join(c1, addr, 1, b1)
    await _join(c2, addr, 2, b2)
    await _beat(c1, addr, 1, b1)
    await _beat(c2, addr, 2, b2)
    h = ElectMasterRequestHeader(cluster_name=CLUSTER, broker_name=NAME, broker_id=1)
    r = await _call(c1, addr, RequestCode.CONTROLLER_ELECT_MASTER, h)
    assert r.code == ResponseCode.SUCCESS, r
    assert (r.ext_fields["masterBrokerId"], r.ext_fields["masterAddress"], r.ext_fields["masterEpoch"]) == (
        "1",
        b1,
        "1",
    )
    assert ElectMasterResponseBody.decode(r.body).broker_member_group.broker_addrs == {1: b1, 2: b2}
    alter = AlterSyncStateSetRequestHeader(NAME, 1, 1)
    r = await _call(c1, addr, RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET, alter, SyncStateSet({1, 2}, 1).encode())
    assert (r.code, r.ext_fields["newSyncStateSetEpoch"]) == (ResponseCode.SUCCESS, "2"), r
    return c1, c2


@pytest.fixture
def controller(tmp_path):
    c = PyrmqController(tmp_path / "ctl")
    yield c
    c.stop()


def test_requests_of_a_broker_group(controller):
    async def main():
        addr = controller.addr
        c1, c2 = await _form_group(addr, "127.0.0.1:20911", "127.0.0.1:20921")
        try:
            # a stale master epoch is fenced, an equal set refused
            stale = AlterSyncStateSetRequestHeader(NAME, 1, 0)
            r = await _call(c1, addr, RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET, stale, SyncStateSet({1}, 2).encode())
            assert r.code == ResponseCode.CONTROLLER_FENCED_MASTER_EPOCH
            r = await _replica_info(c1, addr)
            assert (r.code, r.ext_fields["masterBrokerId"], r.ext_fields["masterEpoch"]) == (
                ResponseCode.SUCCESS,
                "1",
                "1",
            )
            assert SyncStateSet.decode(r.body) == SyncStateSet({1, 2}, 2)
            # the master is alive: a controller-side election keeps it
            h = ElectMasterRequestHeader(cluster_name=CLUSTER, broker_name=NAME)
            r = await _call(c1, addr, RequestCode.CONTROLLER_ELECT_MASTER, h)
            assert r.code == ResponseCode.CONTROLLER_MASTER_STILL_EXIST
            r = await _call(c1, addr, RequestCode.CONTROLLER_GET_SYNC_STATE_DATA, body=f'["{NAME}"]'.encode())
            info = BrokerReplicasInfo.decode(r.body).replicas_info_table[NAME]
            assert [(x.broker_id, x.alive) for x in info.in_sync_replicas] == [(1, True), (2, True)]
            r = await _call(c1, addr, RequestCode.CONTROLLER_GET_METADATA_INFO)
            assert r.ext_fields == {
                "group": "group1",
                "controllerLeaderId": "n0",
                "controllerLeaderAddress": addr,
                "isLeader": "true",
                "peers": f"n0:{addr};",
            }
            # config: black list refused, a key updated and shown
            r = await _call(c1, addr, RequestCode.UPDATE_CONTROLLER_CONFIG, body=b"configStorePath=/x\n")
            assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "Can not update config in black list.")
            r = await _call(c1, addr, RequestCode.UPDATE_CONTROLLER_CONFIG, body=b"scanInactiveMasterInterval=7000\n")
            assert r.code == ResponseCode.SUCCESS
            r = await _call(c1, addr, RequestCode.GET_CONTROLLER_CONFIG)
            text = r.body.decode()
            assert "scanInactiveMasterInterval=7000\n" in text and f"listenPort={controller.port}\n" in text
            # a request code the controller does not serve
            r = await _call(c1, addr, RequestCode.GET_ROUTEINFO_BY_TOPIC)
            assert r.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        finally:
            await c1.close()
            await c2.close()

    asyncio.run(main())


class FakeBroker:
    """A server standing in for broker 2: records the NOTIFY_BROKER_ROLE_CHANGED it gets."""

    def __init__(self) -> None:
        self.notified: asyncio.Queue[RemotingCommand] = asyncio.Queue()

    @handles(RequestCode.NOTIFY_BROKER_ROLE_CHANGED)
    async def notify(self, ctx: RequestContext, cmd: RemotingCommand) -> None:
        await self.notified.put(cmd)


def test_master_connection_lost_elects_the_slave_and_notifies_it(controller):
    async def main():
        fake = FakeBroker()
        server = RemotingServer("127.0.0.1", 0, name="fake-broker")
        server.register(fake)
        await server.start()
        b2 = f"127.0.0.1:{server.port}"
        c1, c2 = await _form_group(controller.addr, "127.0.0.1:20911", b2)
        try:
            # the first election was announced to every alive member, broker 2 included
            cmd = await asyncio.wait_for(fake.notified.get(), 10)
            h = NotifyBrokerRoleChangedRequestHeader.from_command(cmd)
            assert (h.master_broker_id, h.master_epoch) == (1, 1)
            await c1.close()  # the master's process is gone: its connection closes
            cmd = await asyncio.wait_for(fake.notified.get(), 10)
            h = NotifyBrokerRoleChangedRequestHeader.from_command(cmd)
            assert (h.master_broker_id, h.master_address, h.master_epoch, h.sync_state_set_epoch) == (2, b2, 2, 3)
            assert SyncStateSet.decode(cmd.body) == SyncStateSet({2}, 3)
            r = await _replica_info(c2, controller.addr)
            assert (r.ext_fields["masterBrokerId"], r.ext_fields["masterEpoch"]) == ("2", "2")
        finally:
            await c2.close()
            await server.close()

    asyncio.run(main())


def test_state_survives_sigkill(tmp_path):
    first = PyrmqController(tmp_path / "ctl")
    try:

        async def build():
            c1, c2 = await _form_group(first.addr, "127.0.0.1:20911", "127.0.0.1:20921")
            # killed while both brokers are connected: no failover changes the state first
            first.kill9()
            await c1.close()
            await c2.close()

        asyncio.run(build())
    finally:
        first.kill9()
    assert (tmp_path / "ctl" / "controller-store" / JOURNAL_FILE).stat().st_size > 0
    second = PyrmqController(tmp_path / "ctl")
    try:

        async def check():
            c = RemotingClient()
            try:
                r = await _replica_info(c, second.addr)
                assert (r.code, r.ext_fields["masterBrokerId"], r.ext_fields["masterEpoch"]) == (
                    ResponseCode.SUCCESS,
                    "1",
                    "1",
                )
                assert SyncStateSet.decode(r.body) == SyncStateSet({1, 2}, 2)
                h = GetNextBrokerIdRequestHeader(CLUSTER, NAME)
                r = await _call(c, second.addr, RequestCode.CONTROLLER_GET_NEXT_BROKER_ID, h)
                assert r.ext_fields["nextBrokerId"] == "3"
            finally:
                await c.close()

        asyncio.run(check())
    finally:
        second.stop()


def test_controller_in_namesrv(tmp_path):
    ctl_port = free_port()
    ns = PyrmqNamesrv(
        tmp_path / "ns",
        enableControllerInNamesrv="true",
        controllerDLegerGroup="nsgroup",
        controllerDLegerPeers=f"n0-127.0.0.1:{ctl_port}",
        controllerDLegerSelfId="n0",
        controllerStorePath=tmp_path / "ctl-store",
    )
    try:
        ns.managed.wait_port(ctl_port, 20)  # the name server's port opens first; under load the gap shows
        r = probe.request(f"127.0.0.1:{ctl_port}", RequestCode.CONTROLLER_GET_METADATA_INFO)
        assert (r.code, r.ext_fields["group"], r.ext_fields["peers"]) == (0, "nsgroup", f"n0:127.0.0.1:{ctl_port};")
        assert probe.cluster_info(ns.addr).code == 0  # the name server answers on its own port
        r = probe.request(ns.addr, RequestCode.CONTROLLER_GET_METADATA_INFO)
        assert r.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        log = ns.tail(200)
        assert "The ControllerManager boot success. serializeType=JSON" in log
        assert "unknown to the NameServer" not in log  # the controller's keys are the controller's
    finally:
        ns.stop()


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ("controllerDLegerSelfId=n0\n", "controllerDLegerPeers of ControllerConfig is null or empty"),
        ("controllerDLegerPeers=n0-127.0.0.1:1;n0-127.0.0.1:2\ncontrollerDLegerSelfId=n0\n", "listed twice"),
    ],
)
def test_config_that_cannot_run_is_one_line(tmp_path, conf, message):
    f = tmp_path / "c.conf"
    f.write_text(conf)
    out = subprocess.run(
        [sys.executable, "-m", "pyrmq", "controller", "-c", str(f)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, HOME=str(tmp_path)),
    )
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1].startswith("pyrmq controller: ") and message in out.stderr
    assert "Traceback" not in out.stderr
