"""docker/compose.yaml, profile "controller": a group of three controllers and two master + slave
groups, driven by the official Java client 5.5.0 through a SIGKILL of broker-a's master.

The profile's services come up under a unique project name on free ports. Once the controller
group's leader shows a master and two in-sync replicas for broker-a and broker-b, the container of
the controller leader is killed (`compose kill`) and the two others must elect a leader that
holds the same replicas info. Then ControllerFailoverTest creates a
topic, consumes throughout, sends over both groups, runs `compose kill` on the container of
broker-a's master, probes broker-a until a send is SEND_OK again, and checks that every
acknowledged message is consumed (allAckInSyncStateSet: nothing acknowledged is lost). Afterwards
the controller must name the old slave master of broker-a with a newer epoch, and mqadmin
getSyncStateSet must show it. The killed container, started again, must rejoin broker-a as a
slave in the sync state set. `down -v` removes it all.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import socket
import subprocess
import time
import uuid

import pytest
from support.controller_group import serving_leader
from support.java import mqadmin, run_junit

from pyrmq.protocol.bodies.controller import BrokerReplicasInfo, ReplicasInfo
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.errors import RemotingConnectError, RemotingSendRequestError, RemotingTimeout
from pyrmq.remoting.client import RemotingClient
from pyrmq.testing.ports import free_broker_port, free_port
from pyrmq.testing.probe import broker_registered

pytestmark = [pytest.mark.container, pytest.mark.java]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMPOSE_FILE = os.path.join(ROOT, "docker", "compose.yaml")
GROUPS = {"broker-a": ("broker-a-0", "broker-a-1"), "broker-b": ("broker-b-0", "broker-b-1")}
PORT_VARS = {"broker-a-0": "BROKER_A0_PORT", "broker-a-1": "BROKER_A1_PORT"}
PORT_VARS |= {"broker-b-0": "BROKER_B0_PORT", "broker-b-1": "BROKER_B1_PORT"}
CONTROLLER_VARS = {
    "controller-0": "CONTROLLER_PORT",
    "controller-1": "CONTROLLER1_PORT",
    "controller-2": "CONTROLLER2_PORT",
}
ENV_KEYS = ("PYRMQ_IMAGE", "NAMESRV_PORT", *CONTROLLER_VARS.values(), "PYRMQ_CLUSTER", *PORT_VARS.values())


def _broker_ports(n: int) -> list[int]:
    """n brokers' listen ports P with P-2 (VIP) and P+1 (HA) free, no two sharing a port."""
    taken: set[int] = set()
    out: list[int] = []
    while len(out) < n:
        p = free_broker_port()
        trio = {p - 2, p, p + 1}
        if trio & taken:
            continue
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", p + 1))
        except OSError:
            continue
        taken |= trio
        out.append(p)
    return out


async def _replicas(controller: str) -> dict[str, ReplicasInfo]:
    body = json.dumps(sorted(GROUPS)).encode()
    async with RemotingClient() as c:
        r = await c.invoke(controller, RemotingCommand.request(RequestCode.CONTROLLER_GET_SYNC_STATE_DATA, {}, body), 5)
    assert r.code == ResponseCode.SUCCESS, r
    return BrokerReplicasInfo.decode(r.body).replicas_info_table


def replicas(controllers: list[str]) -> dict[str, ReplicasInfo]:
    """The controller leader's view of both groups (CONTROLLER_GET_SYNC_STATE_DATA; the followers
    answer CONTROLLER_NOT_LEADER), {} while no member answers it."""
    for controller in controllers:
        try:
            return asyncio.run(_replicas(controller))
        except (OSError, TimeoutError, AssertionError, RemotingTimeout, RemotingConnectError, RemotingSendRequestError):
            continue
    return {}


def _elected(table: dict[str, ReplicasInfo]) -> dict[str, tuple]:
    """Per group: the master, its epoch and the SyncStateSet (what an election decides)."""
    return {
        name: (i.master_broker_id, i.master_address, i.master_epoch, i.sync_state_set_epoch,
               sorted((r.broker_id, r.broker_address) for r in i.in_sync_replicas))
        for name, i in table.items()
    }  # fmt: skip


async def _leader(controllers: list[str]) -> str:
    async with RemotingClient() as c:
        return await serving_leader(c, controllers, timeout=60)


def _health(container: str) -> str:
    r = subprocess.run(
        ["docker", "inspect", "--format", "{{.State.Health.Status}}", container], capture_output=True, text=True
    )
    return r.stdout.strip() or r.stderr.strip()


@pytest.fixture
def controller_cluster(compose_cmd, pyrmq_image):
    project = f"pyrmq-c-{uuid.uuid4().hex[:8]}"
    ports = _broker_ports(len(PORT_VARS))
    env = dict(
        os.environ,
        PYRMQ_IMAGE=pyrmq_image,
        NAMESRV_PORT=str(free_port()),
        **{var: str(free_port()) for var in CONTROLLER_VARS.values()},
        PYRMQ_CLUSTER=f"Cluster{uuid.uuid4().hex[:6]}",
        **{var: str(p) for var, p in zip(PORT_VARS.values(), ports, strict=True)},
    )
    base = [*compose_cmd, "-f", COMPOSE_FILE, "-p", project, "--profile", "controller"]

    def compose(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
        return subprocess.run([*base, *args], env=env, capture_output=True, text=True, timeout=timeout)

    r = compose("up", "-d", *CONTROLLER_VARS, *PORT_VARS)
    try:
        assert r.returncode == 0, r.stderr
        services = compose("ps", "--services", "--filter", "status=running").stdout.split()
        assert sorted(services) == sorted(["namesrv", *CONTROLLER_VARS, *PORT_VARS]), services  # no plain broker
        ns = f"127.0.0.1:{env['NAMESRV_PORT']}"
        ctrls = {svc: f"127.0.0.1:{env[var]}" for svc, var in CONTROLLER_VARS.items()}
        addrs = {svc: f"127.0.0.1:{env[var]}" for svc, var in PORT_VARS.items()}
        deadline = time.monotonic() + 120
        while True:
            table = replicas(list(ctrls.values()))
            ready = all(
                name in table and table[name].master_address and len(table[name].in_sync_replicas) == 2
                for name in GROUPS
            ) and all(broker_registered(ns, a, timeout=1.0) for a in addrs.values())
            if ready:
                break
            assert time.monotonic() < deadline, f"{table}\n{compose('logs', '--no-color').stdout[-6000:]}"
            time.sleep(0.5)
        # the image's HEALTHCHECK probes the controller on its peer port (CONTROLLER_GET_METADATA_INFO)
        for svc in CONTROLLER_VARS:
            cid = compose("ps", "-q", svc).stdout.strip()
            while (health := _health(cid)) != "healthy":
                assert time.monotonic() < deadline + 30, f"{svc} container {health}"
                time.sleep(1)
        yield ns, ctrls, addrs, compose, " ".join(shlex.quote(a) for a in base), env
    finally:
        print(compose("logs", "--no-color").stdout[-6000:])
        compose("down", "-v", "--timeout", "30")


def test_controller_elects_a_new_master_and_loses_nothing(controller_cluster, java_home):
    ns, ctrls, addrs, compose_run, compose, env = controller_cluster
    table = replicas(list(ctrls.values()))
    before = table["broker-a"]

    # the controller leader's container killed: the two others elect a leader holding the same state
    leader = asyncio.run(_leader(list(ctrls.values())))
    (leader_svc,) = [svc for svc, a in ctrls.items() if a == leader]
    r = compose_run("kill", leader_svc)
    assert r.returncode == 0, r.stderr
    survivors = [a for a in ctrls.values() if a != leader]
    killed_at = time.monotonic()
    new_leader = asyncio.run(_leader(survivors))
    print(f"controller leader {leader_svc} killed; new leader {new_leader} in {time.monotonic() - killed_at:.1f} s")
    assert new_leader in survivors
    assert _elected(replicas(survivors)) == _elected(table)
    ctrl = new_leader
    killed_addr = before.master_address
    (victim,) = [svc for svc in GROUPS["broker-a"] if addrs[svc] == killed_addr]
    (survivor,) = [svc for svc in GROUPS["broker-a"] if svc != victim]
    env_prefix = " ".join(f"{k}={shlex.quote(env[k])}" for k in ENV_KEYS)
    props = {
        "namesrv": ns,
        "topic": f"CtlFailover_{uuid.uuid4().hex[:8]}",
        "failoverGroup": "broker-a",
        "killedAddr": killed_addr,
        "killCmd": f"{env_prefix} {compose} kill {victim}",
        "count": 150,
        "electTimeoutSec": 60,
        "timeoutSec": 90,
    }
    r = run_junit(
        "container",
        "io.pyrmq.compat.container.ControllerFailoverTest",
        "failover",
        props=props,
        home=java_home,
        timeout=420,
    )
    out = r.stdout
    print(out[-3000:])
    outage = r"first SEND_OK on broker-a \d+ ms; last SEND_OK from the old master -> first from the new \d+ ms"
    assert re.search(outage, out), out[-3000:]
    assert re.search(r"acknowledged (\d+), received \1 of them", out), out[-3000:]

    after = replicas(survivors)["broker-a"]
    assert after.master_address == addrs[survivor], after
    assert (after.master_epoch or 0) > (before.master_epoch or 0), (before, after)
    assert replicas(survivors)["broker-b"].master_address in (addrs["broker-b-0"], addrs["broker-b-1"])
    follower = next(a for a in survivors if a != ctrl)  # mqadmin asks it who leads, then asks the leader
    shown = mqadmin("5.5.0", "getSyncStateSet", "-a", follower, "-b", "broker-a", home=java_home)
    print(shown.stdout)
    assert f"#MasterAddr\t{addrs[survivor]}\n#MasterEpoch\t{after.master_epoch}\n" in shown.stdout, shown.stdout

    # the old master, started again on its volume, keeps its controller id and rejoins as a slave
    # of the new epoch (truncating what only it held), back in the sync state set
    r = compose_run("start", victim)
    assert r.returncode == 0, r.stderr
    deadline = time.monotonic() + 90
    while True:
        now = replicas(survivors).get("broker-a")
        if now is not None and len(now.in_sync_replicas) == 2:
            break
        assert time.monotonic() < deadline, now
        time.sleep(0.5)
    assert now.master_address == addrs[survivor] and now.master_epoch == after.master_epoch, now
    ids = {(r.broker_address, r.broker_id) for r in before.in_sync_replicas}  # the ids stay (brokerIdentity)
    assert {(r.broker_address, r.broker_id) for r in now.in_sync_replicas} == ids, (before, now)
