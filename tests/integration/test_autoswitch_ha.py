"""Controller-mode HA over loopback, two MessageStores in one process, roles switched by hand the
way the ReplicasManager does it: AutoSwitchHAService.change_to_master / change_to_slave.

The main scenario is a diverged log: A leads epoch 1 and B replicates; B is cut off, A writes on
alone (records B never got), B is made master of epoch 2 and writes; A comes back as B's slave,
the handshake finds the last offset both logs share (the end of epoch 1 at B), A truncates its
commit log, queues and epoch file there and replicates B's epoch 2. Afterwards both commit logs
are byte-identical and both epoch files are [(1, 0), (2, end of epoch 1)].
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from pyrmq.ha.autoswitch import AutoSwitchHAService
from pyrmq.ha.autoswitch_client import AutoSwitchHAClient
from pyrmq.ha.epoch import EpochFileCache
from pyrmq.store.message import MessageExtBrokerInner
from pyrmq.store.message_store import MessageStore
from pyrmq.store.results import PutMessageStatus
from pyrmq.store.store_config import BrokerRole

from .test_ha_replication import QUEUES, assert_replica, open_store, put, until


def msg(i: int) -> MessageExtBrokerInner:
    return MessageExtBrokerInner(
        topic="T",
        body=b"waiting-%d" % i,
        queue_id=0,
        properties={"WAIT": "true", "UNIQ_KEY": f"W{i:08d}"},
        born_host=("10.0.0.9", 5555),
        store_host=("10.0.0.2", 10911),
    )


class Node:
    """One broker's store + epoch file + AutoSwitchHAService."""

    def __init__(self, root: Path, broker_id: int, **kw: object) -> None:
        self.broker_id = broker_id
        self.store: MessageStore = open_store(root, **kw)
        self.epochs = EpochFileCache(self.store.config.epoch_file_path)
        self.epochs.load()
        self.ha = AutoSwitchHAService(self.store, self.epochs, "127.0.0.1")
        self.ha.local_broker_id = broker_id
        self.ha.client_factory = lambda svc, bid: AutoSwitchHAClient(self.store, self.epochs, bid, retry_interval_s=0.1)

    @property
    def ha_addr(self) -> str:
        return f"127.0.0.1:{self.store.config.ha_listen_port}"

    async def start(self) -> None:
        await self.ha.start()
        self.store.ha_service = self.ha

    async def master(self, epoch: int) -> None:
        self.ha.set_sync_state_set({self.broker_id})  # the controller's answer, set first as the ReplicasManager does
        assert await self.ha.change_to_master(epoch)
        self.store.config.broker_role = BrokerRole.SYNC_MASTER

    async def slave_of(self, master: Node, epoch: int) -> None:
        assert await self.ha.change_to_slave("unused", epoch, self.broker_id)
        self.store.config.broker_role = BrokerRole.SLAVE
        self.ha.update_ha_master_address(master.ha_addr)

    def epoch_list(self) -> list[tuple[int, int]]:
        return [(e.epoch, e.start_offset) for e in self.epochs.entries()]

    async def stop(self) -> None:
        await self.ha.shutdown()
        self.store.shutdown()


def test_diverged_slave_truncates_to_the_new_masters_epoch(tmp_path):
    async def scenario() -> None:
        a, b = Node(tmp_path / "a", 1), Node(tmp_path / "b", 2)
        await a.start()
        await b.start()
        try:
            await a.master(1)
            await b.slave_of(a, 1)
            put(a.store, 0, 30)
            await until(lambda: b.store.get_max_phy_offset() == a.store.get_max_phy_offset())
            assert_replica(a.store, b.store)
            assert a.epoch_list() == b.epoch_list() == [(1, 0)]
            await until(lambda: a.ha.get_sync_state_set() == {2} or 2 in a.ha.remote_sync_state_set)

            # B is cut off; A goes on alone: these records exist only on A
            await b.ha._stop_client()
            shared = b.store.get_max_phy_offset()
            put(a.store, 30, 12)
            assert a.store.get_max_phy_offset() > shared

            # B becomes master of epoch 2 and writes its own records
            await b.master(2)
            assert b.epoch_list() == [(1, 0), (2, shared)]
            put(b.store, 1000, 9)

            # A comes back as B's slave: truncated to `shared`, then B's epoch 2 replicated
            await a.slave_of(b, 2)
            await until(lambda: a.store.get_max_phy_offset() == b.store.get_max_phy_offset(), 15)
            assert_replica(b.store, a.store)
            assert a.epoch_list() == [(1, 0), (2, shared)]
            for q in range(QUEUES):
                assert a.store.get_max_offset_in_queue("T", q) == b.store.get_max_offset_in_queue("T", q)
            # and the epoch files are the same bytes
            assert (
                Path(a.store.config.epoch_file_path).read_bytes() == Path(b.store.config.epoch_file_path).read_bytes()
            )
        finally:
            await b.stop()
            await a.stop()

    asyncio.run(scenario())


def test_all_ack_in_sync_state_set_waits_for_every_member(tmp_path):
    """allAckInSyncStateSet: a put is acknowledged once every member of the sync state set holds
    it; with the slave stopped (still a member) it times out as FLUSH_SLAVE_TIMEOUT; a set smaller
    than minInSyncReplicas refuses the put (IN_SYNC_REPLICAS_NOT_ENOUGH)."""

    async def scenario() -> None:
        kw = {"all_ack_in_sync_state_set": True, "slave_timeout": 800}
        a, b = Node(tmp_path / "a", 1, **kw), Node(tmp_path / "b", 2)
        await a.start()
        await b.start()
        try:
            await a.master(1)
            await b.slave_of(a, 1)
            put(a.store, 0, 3)
            await until(lambda: b.store.get_max_phy_offset() == a.store.get_max_phy_offset())
            a.ha.set_sync_state_set({1, 2})  # what the controller answers to the alter request
            assert a.ha.get_confirm_offset() == b.store.get_max_phy_offset()  # the smallest ack of the set
            # a waiting put (SYNC_MASTER, WAIT) through the store's put path
            before = a.store.get_max_offset_in_queue("T", 0)
            result = await asyncio.wrap_future(a.store.put_message_async(msg(3)))
            assert result.put_message_status is PutMessageStatus.PUT_OK
            assert a.store.get_max_offset_in_queue("T", 0) == before + 1  # held by the set: readable
            assert b.store.get_max_phy_offset() == a.store.get_max_phy_offset()
            readable = a.store.get_max_offset_in_queue("T", 0)
            await b.ha._stop_client()
            t0 = time.monotonic()
            result = await asyncio.wrap_future(a.store.put_message_async(msg(4)))
            assert result.put_message_status is PutMessageStatus.FLUSH_SLAVE_TIMEOUT
            assert 0.6 < time.monotonic() - t0 < 3
            # not held by the whole set: written, but not readable (Java: the reput stops at the
            # confirm offset); a consumer must not see what the next master will not have
            assert a.store.get_max_offset_in_queue("T", 0) == readable
            a.ha.set_sync_state_set({1})  # alone in the set: its own write is enough
            assert a.store.get_max_offset_in_queue("T", 0) == readable + 1
            result = await asyncio.wrap_future(a.store.put_message_async(msg(5)))
            assert result.put_message_status is PutMessageStatus.PUT_OK
            # minInSyncReplicas 2 with a set of one: refused before anything is written
            a.store.config.min_in_sync_replicas = 2
            before = a.store.get_max_phy_offset()
            result = await asyncio.wrap_future(a.store.put_message_async(msg(6)))
            assert result.put_message_status is PutMessageStatus.IN_SYNC_REPLICAS_NOT_ENOUGH
            assert a.store.get_max_phy_offset() == before
        finally:
            await b.stop()
            await a.stop()

    asyncio.run(scenario())


def test_a_master_shutting_down_keeps_its_sync_state_set(tmp_path):
    """A slave's connection ending drops it from the sync state set (reported to the controller),
    but not while the master itself shuts down: the set is what the controller elects from."""

    async def scenario() -> None:
        a, b = Node(tmp_path / "a", 1), Node(tmp_path / "b", 2)
        reported: list[set[int]] = []
        a.ha.on_sync_state_set_changed = reported.append
        await a.start()
        await b.start()
        try:
            await a.master(1)
            await b.slave_of(a, 1)
            await until(lambda: reported == [{1, 2}])
            a.ha.set_sync_state_set({1, 2})
            await b.ha._stop_client()  # the slave goes away: reported
            await until(lambda: len(reported) == 2)
            assert reported[-1] == {1}
            a.ha.set_sync_state_set({1, 2})
            await b.slave_of(a, 2)
            await until(lambda: len(a.ha.connections) == 1 and a.ha.connections[0].slave_id == 2)
            await a.ha.shutdown()  # the master stops: nothing reported
            await asyncio.sleep(0.1)
            assert len(reported) == 2
        finally:
            await b.stop()
            await a.stop()

    asyncio.run(scenario())


def test_a_slave_of_an_empty_master_learns_the_epoch_before_the_heartbeat_interval(tmp_path):
    """With no data to send, the master still tells the slave its epoch at once: the slave may join
    the sync state set on its first report, and mqadmin getBrokerEpoch must then show the epoch on
    both (the heartbeat would bring it only after haSendHeartbeatInterval)."""

    async def scenario() -> None:
        a, b = Node(tmp_path / "a", 1), Node(tmp_path / "b", 2)
        for n in (a, b):
            n.store.config.ha_send_heartbeat_interval = 60_000
        await a.start()
        await b.start()
        try:
            await a.master(1)
            await b.slave_of(a, 1)
            await until(lambda: 2 in a.ha.get_sync_state_set() or 2 in a.ha.remote_sync_state_set, 10)
            await until(lambda: b.epoch_list() == [(1, 0)], 10)
            assert a.epoch_list() == [(1, 0)]
        finally:
            await b.stop()
            await a.stop()

    asyncio.run(scenario())
