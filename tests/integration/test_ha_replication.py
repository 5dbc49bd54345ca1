"""Classic HA over loopback, two MessageStores in one process: pyrmq.ha.master.HAService serves,
pyrmq.ha.slave.HAClient replicates. The slave's commit log is byte-identical over the replicated
range and its own dispatch serves the same messages; a restarted slave resumes from its own max
offset; a bad frame closes the connection and writes nothing. Raw sockets stand in for a Java
peer on either side, speaking the 8-byte report / 12-byte header protocol."""

from __future__ import annotations

import asyncio
import filecmp
import os
import struct
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from pyrmq.ha.master import HAService
from pyrmq.ha.protocol import encode_report, encode_transfer_header
from pyrmq.ha.slave import HAClient
from pyrmq.store.message import MessageExtBrokerInner
from pyrmq.store.message_store import MessageStore
from pyrmq.store.results import GetMessageStatus, PutMessageStatus
from pyrmq.store.store_config import MessageStoreConfig

FILE = 8192
QUEUES = 3


def config(root: Path, **kw: object) -> MessageStoreConfig:
    base: dict[str, object] = dict(
        store_path_root_dir=str(root),
        mapped_file_size_commit_log=FILE,
        mapped_file_size_consume_queue=20 * 64,
        max_hash_slot_num=64,
        max_index_num=256,
        ha_listen_port=0,
        ha_transfer_batch_size=1000,  # frames end inside records
    )
    base.update(kw)
    return MessageStoreConfig(**base)  # type: ignore[arg-type]


def open_store(root: Path, **kw: object) -> MessageStore:
    s = MessageStore(config(root, **kw))
    s.load()
    s.start()
    return s


def put(store: MessageStore, start: int, n: int) -> None:
    for i in range(start, start + n):
        msg = MessageExtBrokerInner(
            topic="T",
            body=f"body-{i}".encode() * (1 + i % 7),
            queue_id=i % QUEUES,
            properties={"TAGS": f"t{i % 2}", "KEYS": f"k{i}", "UNIQ_KEY": f"U{i:08d}"},
            born_host=("10.0.0.9", 5555),
            store_host=("10.0.0.2", 10911),
        )
        assert store.put_message(msg).is_ok()


async def until(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


def assert_replica(master: MessageStore, slave: MessageStore) -> None:
    """Byte-identical commit-log files over the slave's range; same messages through the queues."""
    names = sorted(os.listdir(slave.config.commit_log_dir))
    assert names and set(names) <= set(os.listdir(master.config.commit_log_dir))
    match, mismatch, errors = filecmp.cmpfiles(
        master.config.commit_log_dir, slave.config.commit_log_dir, names, shallow=False
    )
    assert (match, mismatch, errors) == (names, [], [])
    for q in range(QUEUES):
        assert slave.get_max_offset_in_queue("T", q) == master.get_max_offset_in_queue("T", q)
        offset = slave.get_min_offset_in_queue("T", q)
        while offset < master.get_max_offset_in_queue("T", q):
            want, got = master.get_message("g", "T", q, offset, 32), slave.get_message("g", "T", q, offset, 32)
            assert got.status is GetMessageStatus.FOUND
            assert [bytes(b) for b in got.message_buffer_list] == [bytes(b) for b in want.message_buffer_list]
            offset = want.next_begin_offset
            want.release()
            got.release()


def run(coro: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(coro())  # type: ignore[arg-type]


def test_slave_replicates_byte_for_byte_and_resumes_after_restart(tmp_path):
    async def main() -> None:
        master = open_store(tmp_path / "m")
        service = HAService(master, "127.0.0.1")
        await service.start()
        slave = open_store(tmp_path / "s")
        client = HAClient(slave, retry_interval_s=0.05)
        client.update_ha_master_address(f"127.0.0.1:{service.port}")
        client.start()
        try:
            put(master, 0, 150)
            await until(lambda: slave.get_max_phy_offset() == master.get_max_phy_offset())
            assert len(os.listdir(master.config.commit_log_dir)) >= 3  # rolled over several files
            assert_replica(master, slave)
            await until(lambda: service.push2slave_max_offset == master.get_max_phy_offset())
            [conn] = service.connections
            assert conn.slave_request_offset == 0 and conn.slave_ack_offset == master.get_max_phy_offset()
            assert service.is_slave_ok(master.get_max_phy_offset())
            assert (
                await asyncio.wrap_future(service.request(master.get_max_phy_offset(), 1, 1000))
                is PutMessageStatus.PUT_OK
            )
            assert (
                await asyncio.wrap_future(service.request(master.get_max_phy_offset(), 2, 1000))
                is PutMessageStatus.PUT_OK
            )
            # the slave goes away; the master goes on
            await client.shutdown()
            held = slave.get_max_phy_offset()
            slave.shutdown()
            await until(lambda: not service.connections)
            put(master, 150, 60)
            timeout = PutMessageStatus.FLUSH_SLAVE_TIMEOUT
            assert await asyncio.wrap_future(service.request(master.get_max_phy_offset(), 1, 200)) is timeout
            # restarted, it reports its own max offset and gets the rest only
            slave = open_store(tmp_path / "s")
            assert slave.get_max_phy_offset() == held
            client = HAClient(slave, retry_interval_s=0.05)
            client.update_ha_master_address(f"127.0.0.1:{service.port}")
            client.start()
            await until(lambda: slave.get_max_phy_offset() == master.get_max_phy_offset())
            [conn] = service.connections
            assert conn.slave_request_offset == held
            assert_replica(master, slave)
        finally:
            await client.shutdown()
            await service.shutdown()
            slave.shutdown()
            master.shutdown()

    run(main)


def test_empty_slave_gets_the_masters_last_file_only(tmp_path):
    async def main() -> None:
        master = open_store(tmp_path / "m")
        put(master, 0, 150)
        last = master.commit_log.mapped_file_queue.mapped_files[-1].file_from_offset
        assert last > 0
        service = HAService(master, "127.0.0.1")
        await service.start()
        slave = open_store(tmp_path / "s")
        client = HAClient(slave, retry_interval_s=0.05)
        client.update_ha_master_address(f"127.0.0.1:{service.port}")
        client.start()
        try:
            await until(lambda: slave.get_max_phy_offset() == master.get_max_phy_offset())
            assert os.listdir(slave.config.commit_log_dir) == [f"{last:020d}"]
            assert_replica(master, slave)
        finally:
            await client.shutdown()
            await service.shutdown()
            slave.shutdown()
            master.shutdown()

    run(main)


async def read_frame(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    offset, size = struct.unpack(">qi", await reader.readexactly(12))
    return offset, await reader.readexactly(size)


def test_master_speaks_the_java_protocol_to_a_raw_slave(tmp_path):
    """What a Java slave sees: nothing before its report; frames from the offset it reported;
    heartbeats (empty frames at the next offset) when idle; its report acknowledges."""

    async def main() -> None:
        master = open_store(tmp_path / "m", ha_send_heartbeat_interval=200)
        put(master, 0, 20)
        service = HAService(master, "127.0.0.1")
        await service.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", service.port)
        try:
            try:
                await asyncio.wait_for(reader.readexactly(1), 0.3)
                raise AssertionError("the master sent before the slave reported")
            except TimeoutError:
                pass
            writer.write(encode_report(1000)[:5])  # a report split over two writes
            await writer.drain()
            await asyncio.sleep(0.05)
            writer.write(encode_report(1000)[5:])
            got = bytearray()
            end = master.get_max_phy_offset()
            while 1000 + len(got) < end:
                offset, body = await read_frame(reader)  # the first may be a heartbeat: idle > 200 ms
                assert offset == 1000 + len(got) and len(body) <= 1000
                got += body
            view = master.get_commit_log_data(1000, end - 1000)
            assert view is not None
            try:
                assert bytes(got[: len(view)]) == bytes(view)  # same bytes (up to the first file end)
            finally:
                view.release()
            writer.write(encode_report(end))
            await until(lambda: service.push2slave_max_offset == end)
            offset, body = await asyncio.wait_for(read_frame(reader), 2)
            assert (offset, body) == (end, b"")  # heartbeat
        finally:
            writer.close()
            await service.shutdown()
            master.shutdown()

    run(main)


async def fake_master(frames: list[bytes]) -> tuple[asyncio.Server, asyncio.Queue[tuple[int, bool]]]:
    """A master that sends `frames` after the first report, then records (first report, closed by peer)."""
    seen: asyncio.Queue[tuple[int, bool]] = asyncio.Queue()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        (report,) = struct.unpack(">q", await reader.readexactly(8))
        for f in frames:
            writer.write(f)
        await writer.drain()
        try:
            while await asyncio.wait_for(reader.read(100), 5):
                pass
            closed = True
        except TimeoutError:
            closed = False
        await seen.put((report, closed))
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0), seen


def test_bad_frames_close_the_connection_and_write_nothing(tmp_path):
    async def main() -> None:
        good = open_store(tmp_path / "m")
        put(good, 0, 3)
        view = good.get_commit_log_data(0, 1 << 20)
        assert view is not None
        data = bytes(view)
        view.release()
        good.shutdown()
        garbage = bytes(reversed(data))
        first = int.from_bytes(data[:4], "big")  # the first record's size
        cases = {
            "garbage_records": encode_transfer_header(0, len(garbage)) + garbage,
            "negative_size": struct.pack(">qi", 0, -4) + data,
            "not_a_file_start": encode_transfer_header(100, len(data) - 100) + data[100:],
            "half_good_then_bad": (
                encode_transfer_header(0, 0)  # a heartbeat
                + encode_transfer_header(0, first)
                + data[:first]
                + encode_transfer_header(first, 60)
                + bytes(60)  # where the second record's head should be
            ),
        }
        for name, payload in cases.items():
            slave = open_store(tmp_path / f"s-{name}")
            server, seen = await fake_master([payload])
            client = HAClient(slave, retry_interval_s=30)
            client.update_ha_master_address(f"127.0.0.1:{server.sockets[0].getsockname()[1]}")
            client.start()
            try:
                report, closed = await asyncio.wait_for(seen.get(), 10)
                assert report == 0 and closed, name
                if name == "half_good_then_bad":
                    # the good frame is kept; nothing of the bad one
                    assert slave.get_max_phy_offset() == first, name
                else:
                    assert slave.get_max_phy_offset() == 0, name
                    assert not os.path.exists(slave.config.commit_log_dir), name
            finally:
                await client.shutdown()
                server.close()
                await server.wait_closed()
                slave.shutdown()

    run(main)


def test_offset_mismatch_closes_like_java(tmp_path):
    """A slave that holds data closes on a frame (heartbeat included) not at its max offset."""

    async def main() -> None:
        slave = open_store(tmp_path / "s")
        put(slave, 0, 2)
        held = slave.get_max_phy_offset()
        server, seen = await fake_master([encode_transfer_header(held + 8, 0)])
        client = HAClient(slave, retry_interval_s=30)
        client.update_ha_master_address(f"127.0.0.1:{server.sockets[0].getsockname()[1]}")
        client.start()
        try:
            assert await asyncio.wait_for(seen.get(), 10) == (held, True)
            assert slave.get_max_phy_offset() == held
        finally:
            await client.shutdown()
            server.close()
            await server.wait_closed()
            slave.shutdown()

    run(main)


def test_slave_reconnects_when_the_master_comes_back(tmp_path):
    async def main() -> None:
        master = open_store(tmp_path / "m")
        put(master, 0, 10)
        service = HAService(master, "127.0.0.1")
        await service.start()
        port = service.port
        await service.shutdown()  # the master's HA port is closed: connects fail
        slave = open_store(tmp_path / "s")
        client = HAClient(slave, retry_interval_s=0.05)
        client.update_ha_master_address(f"127.0.0.1:{port}")
        client.start()
        try:
            await asyncio.sleep(0.3)
            assert slave.get_max_phy_offset() == 0
            master.config.ha_listen_port = port
            service = HAService(master, "127.0.0.1")
            await service.start()
            await until(lambda: slave.get_max_phy_offset() == master.get_max_phy_offset())
            assert_replica(master, slave)
        finally:
            await client.shutdown()
            await service.shutdown()
            slave.shutdown()
            master.shutdown()

    run(main)


def test_a_slave_ahead_of_its_master_gets_heartbeats_only_and_never_acks(tmp_path):
    """The slave's log ends beyond the master's (a master that lost unflushed data, say). Java would
    stream from the slave's offset once the master grows past it and count the slave's acks; pyrmq
    keeps the connection on heartbeats, writes nothing to the slave, and a put that needs its ack
    times out instead of a false SEND_OK."""

    async def main() -> None:
        master = open_store(tmp_path / "m", ha_send_heartbeat_interval=100)
        put(master, 0, 3)
        slave = open_store(tmp_path / "s")
        put(slave, 100, 8)
        held = slave.get_max_phy_offset()
        assert held > master.get_max_phy_offset()
        service = HAService(master, "127.0.0.1")
        await service.start()
        client = HAClient(slave, retry_interval_s=0.05)
        client.update_ha_master_address(f"127.0.0.1:{service.port}")
        client.start()
        try:
            await until(lambda: bool(service.connections) and service.connections[0].slave_request_offset == held)
            (conn,) = service.connections
            await until(lambda: conn.diverged is not None)
            put(master, 3, 20)  # the master now grows past the slave's end
            await asyncio.sleep(0.5)
            assert slave.get_max_phy_offset() == held
            assert service.connections == [conn] and conn.slave_ack_offset == held  # still connected
            assert not service.runtime_info(master.get_max_phy_offset())[0].in_sync
            future = service.request(master.get_max_phy_offset(), 2, 300)
            assert await asyncio.wrap_future(future) is PutMessageStatus.FLUSH_SLAVE_TIMEOUT
            # heartbeats keep coming: the slave's last read is recent
            before = client.last_read_timestamp
            await until(lambda: client.last_read_timestamp > before, 3)
        finally:
            await client.shutdown()
            await service.shutdown()
            slave.shutdown()
            master.shutdown()

    run(main)


def test_a_slave_behind_the_masters_cleaned_files_is_told_and_kept_waiting(tmp_path):
    """The slave reconnects after the master rolled and deleted the files it still needed: no data
    can be sent from its offset; it stays connected on heartbeats, writes nothing, acks nothing."""

    async def main() -> None:
        master = open_store(tmp_path / "m", ha_send_heartbeat_interval=100)
        put(master, 0, 4)
        slave = open_store(tmp_path / "s")
        service = HAService(master, "127.0.0.1")
        await service.start()
        client = HAClient(slave, retry_interval_s=0.05)
        client.update_ha_master_address(f"127.0.0.1:{service.port}")
        client.start()
        await until(lambda: slave.get_max_phy_offset() == master.get_max_phy_offset())
        await client.shutdown()
        held = slave.get_max_phy_offset()
        put(master, 4, 200)  # several files
        queue = master.commit_log.mapped_file_queue
        assert len(queue.mapped_files) >= 3
        queue.delete_expired_file_by_time(0, 0, True, delete_file_batch_max=2)
        assert master.get_min_phy_offset() > held
        client = HAClient(slave, retry_interval_s=0.05)
        client.update_ha_master_address(f"127.0.0.1:{service.port}")
        client.start()
        try:
            await until(lambda: any(c.diverged for c in service.connections))
            await asyncio.sleep(0.4)
            assert slave.get_max_phy_offset() == held
            future = service.request(master.get_max_phy_offset(), 2, 200)
            assert await asyncio.wrap_future(future) is PutMessageStatus.FLUSH_SLAVE_TIMEOUT
        finally:
            await client.shutdown()
            await service.shutdown()
            slave.shutdown()
            master.shutdown()

    run(main)
