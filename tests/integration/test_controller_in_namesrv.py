"""A controller group of 3 embedded in three `pyrmq namesrv` processes (enableControllerInNamesrv),
as Java's NamesrvStartup runs it: each process is a name server on its own port and a controller
group member on its peer port.

Two pyrmq brokers in controller mode, namesrvAddr = the three name servers and controllerAddr =
the three peer addresses, form a master/slave pair. The name server process holding the
controller leader is SIGKILLed: the two others elect a controller leader with the same replicas
info, and the topic's route still resolves through them. Then the broker master is SIGKILLed: the
slave is elected, takes a send, and the surviving name servers route to it as the master.
"""

from __future__ import annotations

import asyncio
import re
import time

from support import probe
from support.controller_group import (
    assert_one_leader,
    controller_mode_conf,
    in_sync_ids,
    serving_leader,
    until_serving_leader,
    wait_replica_state,
)
from support.ports import free_port
from support.pyrmq_proc import PyrmqBroker
from support.requests import send_v2
from support.servers import PyrmqNamesrvControllerMember, controller_peers

from pyrmq.protocol.codes import ResponseCode
from pyrmq.remoting.client import RemotingClient

NAME = "ctl-ns-pair"
TOPIC = "CtlNsT"


def _routes_to_master(ns_addr: str, master_addr: str) -> bool:
    """The name server's route of TOPIC names `master_addr` as broker id 0."""
    try:
        r = probe.topic_route(ns_addr, TOPIC)
    except OSError:
        return False
    return r.code == ResponseCode.SUCCESS and re.search(rf'[{{,]"?0"?:"{re.escape(master_addr)}"', r.text) is not None


async def _until(cond, what: str, detail=lambda: "", timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(cond):
        assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}: {detail()}"
        await asyncio.sleep(0.2)


async def _send_until_ok(c: RemotingClient, addr: str, body: bytes, since: float) -> float:
    """Sends to `addr` every 0.1 s until SEND_OK; seconds since `since`."""
    while True:
        try:
            r = await c.invoke(addr, send_v2(TOPIC, NAME, body, group="CtlNsPG", tags=None), 10)
            if r.code == ResponseCode.SUCCESS:
                return time.monotonic() - since
        except Exception as e:  # the master's connection may still be closing
            r = e  # type: ignore[assignment]
        assert time.monotonic() - since < 30, f"no successful send to {addr} within 30 s: {r}"
        await asyncio.sleep(0.1)


def test_group_of_three_in_name_servers_fails_over(tmp_path):
    ports = [free_port() for _ in range(3)]
    peers = controller_peers(ports)
    servers: list[PyrmqNamesrvControllerMember] = []
    brokers: list[PyrmqBroker] = []
    try:
        servers = [
            PyrmqNamesrvControllerMember(tmp_path / f"ns{i}", f"n{i}", p, peers, scanInactiveMasterInterval=1000)
            for i, p in enumerate(ports)
        ]
        by_ctl = {s.controller_addr: s for s in servers}
        conf = controller_mode_conf(list(by_ctl), name=NAME, namesrvAddr=";".join(s.addr for s in servers))
        leader = by_ctl[until_serving_leader(list(by_ctl))]
        brokers.append(PyrmqBroker(servers[0].addr, tmp_path / "b1", **conf))  # registered: the master
        brokers.append(PyrmqBroker(servers[1].addr, tmp_path / "b2", **conf))
        first, second = brokers

        async def scenario() -> tuple[float, float]:
            async with RemotingClient() as c:
                before = await wait_replica_state(
                    c, leader.controller_addr, NAME, lambda s: s[1] == first.addr and s[4] == [1, 2]
                )
                assert before[:3] == ("1", first.addr, "1"), before
                await _send_until_ok(c, first.addr, b"before", time.monotonic())  # creates the topic
                for s in servers:
                    await _until(
                        lambda s=s: _routes_to_master(s.addr, first.addr),
                        f"{s.addr} routing to the master",
                        lambda s=s: probe.topic_route(s.addr, TOPIC),
                    )
                followers = [s for s in servers if s is not leader]
                await assert_one_leader(c, leader.controller_addr, [s.controller_addr for s in followers], ports)

                killed = time.monotonic()
                leader.kill9()  # the name server and its controller: one process
                new_leader = by_ctl[await serving_leader(c, [s.controller_addr for s in followers], timeout=30)]
                elected_in = time.monotonic() - killed
                assert await wait_replica_state(c, new_leader.controller_addr, NAME, lambda s: True) == before
                assert await in_sync_ids(c, new_leader.controller_addr, NAME) == [1, 2]
                for s in followers:  # the routes did not go with the killed name server
                    assert _routes_to_master(s.addr, first.addr), s
                await _send_until_ok(c, first.addr, b"between", time.monotonic())

                killed = time.monotonic()
                first.kill9()
                failover = await _send_until_ok(c, second.addr, b"after", killed)
                after = await wait_replica_state(c, new_leader.controller_addr, NAME, lambda s: s[1] == second.addr)
                assert after[:3] == ("2", second.addr, "2") and after[4] == [2], after
                for s in followers:
                    await _until(
                        lambda s=s: _routes_to_master(s.addr, second.addr), f"{s.addr} routing to the new master"
                    )
                return elected_in, failover

        elected_in, failover = asyncio.run(scenario())
        print(
            f"\nname server with the controller leader kill -> new serving leader {elected_in:.2f} s; "
            f"master kill -> send {failover:.2f} s"
        )
    finally:
        for b in brokers:
            b.stop()
        for s in servers:
            s.stop()
