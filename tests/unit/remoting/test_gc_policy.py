"""GcPolicy: survivors of a full collection are frozen (later full collections skip them), and
the rescan still frees cycles that died among frozen objects."""

from __future__ import annotations

import asyncio
import gc
import weakref

import pytest

from pyrmq.remoting.gc_policy import GcPolicy


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> tuple[Node, weakref.ref[Node]]:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return a, weakref.ref(b)


@pytest.fixture
def policy():
    made: list[GcPolicy] = []

    def make(**kw: float) -> GcPolicy:
        p = GcPolicy(**kw)
        made.append(p)
        return p

    yield make
    for p in made:
        p.stop()
    assert gc.get_freeze_count() == 0


def test_start_freezes_the_loaded_heap_and_a_full_collection_freezes_its_survivors(policy):
    async def run() -> None:
        long_lived = [Node() for _ in range(5_000)]
        p = policy(rescan_s=3600)
        p.start()
        frozen = gc.get_freeze_count()
        assert frozen >= 5_000
        later = [Node() for _ in range(5_000)]  # created after start: not frozen yet
        gc.collect(2)
        await asyncio.sleep(0)  # the freeze runs on the loop, after the collection
        await asyncio.sleep(0)
        assert p.freezes == 1
        assert gc.get_freeze_count() >= frozen + 5_000
        # a younger collection does not freeze
        gc.collect(0)
        await asyncio.sleep(0)
        assert p.freezes == 1
        del long_lived, later

    asyncio.run(run())


def test_a_cycle_dropped_after_the_freeze_is_freed_by_the_rescan(policy):
    async def run() -> None:
        a, dead = cycle()
        p = policy(rescan_s=0.05)
        p.start()
        del a
        gc.collect()  # a frozen cycle is skipped by ordinary collections
        assert dead() is not None
        for _ in range(100):
            await asyncio.sleep(0.02)
            if dead() is None:
                break
        assert dead() is None and p.rescans >= 2

    asyncio.run(run())


def test_collections_in_other_threads_schedule_the_freeze_on_the_loop(policy):
    async def run() -> None:
        p = policy(rescan_s=3600)
        p.start()
        await asyncio.to_thread(gc.collect, 2)
        for _ in range(50):
            if p.freezes:
                break
            await asyncio.sleep(0.01)
        assert p.freezes == 1

    asyncio.run(run())


def test_stop_thaws_and_removes_the_callback(policy):
    async def run() -> None:
        p = policy(rescan_s=3600)
        p.start()
        assert gc.get_freeze_count() > 0
        p.stop()
        assert gc.get_freeze_count() == 0 and p._on_gc not in gc.callbacks
        gc.collect()
        assert p.freezes == 0

    asyncio.run(run())
