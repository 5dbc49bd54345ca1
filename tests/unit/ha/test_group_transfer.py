"""HAService.request, the store's ReplicaAcks: Java GroupTransferService#doWaitTransfer counts the
master plus every slave whose ack covers the offset; FLUSH_SLAVE_TIMEOUT at the deadline; any
thread may ask, the answer comes from the event loop."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

from pyrmq.ha.master import HAService
from pyrmq.store.results import PutMessageStatus

OK, TIMEOUT = PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_SLAVE_TIMEOUT


def service(tmp_path) -> HAService:
    store = SimpleNamespace(config=SimpleNamespace(ha_listen_port=0, ha_max_gap_not_in_sync=1 << 28))
    return HAService(store, "127.0.0.1")  # only its config is read


def test_acks_are_counted_with_the_master(tmp_path):
    async def main() -> None:
        s = service(tmp_path)
        await s.start()
        try:
            a, b = SimpleNamespace(acked_offset=0), SimpleNamespace(acked_offset=0)
            s.connections += [a, b]
            three = asyncio.wrap_future(s.request(100, 3, 5000))
            two = asyncio.wrap_future(s.request(100, 2, 5000))
            await asyncio.sleep(0.01)
            assert not two.done()
            a.acked_offset = 100
            s.notify_transfer_some(100)
            assert await two is OK  # the master and one slave
            await asyncio.sleep(0.01)
            assert not three.done()
            b.acked_offset = 120
            s.notify_transfer_some(120)
            assert await three is OK
            # already covered: answered at once
            assert await asyncio.wrap_future(s.request(90, 3, 5000)) is OK
        finally:
            s.connections.clear()  # fakes: nothing to close
            await s.shutdown()

    asyncio.run(main())


def test_timeout_and_a_request_from_another_thread(tmp_path):
    async def main() -> None:
        s = service(tmp_path)
        await s.start()
        try:
            loop = asyncio.get_running_loop()
            t0 = time.monotonic()
            fut = await loop.run_in_executor(None, s.request, 50, 2, 200)  # asked from a store thread
            assert await asyncio.wrap_future(fut) is TIMEOUT
            assert 0.18 <= time.monotonic() - t0 < 1.5
            one = await loop.run_in_executor(None, s.request, 50, 1, 5000)
            s.notify_transfer_some(60)  # one ack: push2SlaveMaxOffset
            assert await asyncio.wrap_future(one) is OK
            pending = asyncio.wrap_future(s.request(1000, 2, 60000))
        finally:
            await s.shutdown()
        assert await pending is TIMEOUT  # shutdown answers what still waits

    asyncio.run(main())


def test_not_started_answers_timeout(tmp_path):
    assert service(tmp_path).request(1, 2, 1000).result(timeout=1) is TIMEOUT
