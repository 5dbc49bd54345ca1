"""Kill a writer process with SIGKILL at random points, 20 times; after each restart the store
recovers to a consistent prefix and, with SYNC_FLUSH, every acknowledged append is present.

Note: SIGKILL does not drop the page cache, so this checks recovery of whatever reached the
files (torn in-flight appends, abort-file recovery), not power loss."""

from __future__ import annotations

import functools
import operator
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from pyrmq.store import message as m
from pyrmq.store.message_store import MessageStore
from pyrmq.store.store_config import MessageStoreConfig

WRITER = os.path.join(os.path.dirname(__file__), "store_writer.py")


def _config(root: str, flush_type: str) -> MessageStoreConfig:
    return MessageStoreConfig(
        store_path_root_dir=root,
        mapped_file_size_commit_log=64 * 1024,
        mapped_file_size_consume_queue=20 * 512,
        max_hash_slot_num=256,
        max_index_num=1024,
        flush_disk_type=flush_type,
    )


def _check(root: str, flush_type: str, acked: set[int]) -> int:
    """Open the store (recovery), verify consistency; returns the next id to write."""
    s = MessageStore(_config(root, flush_type))
    s.load()
    try:
        ids = []
        # commit log: a gapless sequence of valid records
        for mf in s.commit_log.mapped_file_queue.mapped_files:
            for rec in m.decode_messages(mf.mm[: mf.get_read_position()], check_crc=True):
                ids.append(int(rec.properties["KEYS"][2:]))
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
        # every consume queue entry points at a record of the right queue, offsets dense
        per_queue = {}
        for qid in range(3):
            recs, offset = [], 0
            while offset < s.get_max_offset_in_queue("Dur", qid):
                r = s.get_message("g", "Dur", qid, offset, 32)
                recs += [m.decode_message(b, check_crc=True) for b in r.message_buffer_list]
                assert r.next_begin_offset > offset
                offset = r.next_begin_offset
                r.release()
            assert [x.queue_offset for x in recs] == list(range(len(recs)))
            assert all(x.queue_id == qid for x in recs)
            per_queue[qid] = [int(x.properties["KEYS"][2:]) for x in recs]
        assert sorted(functools.reduce(operator.iadd, per_queue.values(), [])) == ids
        missing = acked - set(ids)
        if flush_type == "SYNC_FLUSH":
            assert not missing, f"acknowledged but lost: {sorted(missing)[:10]}"
        if ids:
            last = ids[-1]
            assert s.query_message("Dur", f"id{last}", 4, 0, 2**62).phy_offsets
        return (ids[-1] + 1) if ids else 0
    finally:
        s.shutdown()


@pytest.mark.slow
@pytest.mark.parametrize("flush_type", ["SYNC_FLUSH", "ASYNC_FLUSH"])
def test_kill9_twenty_times(tmp_path, flush_type):
    seed = int(os.environ.get("PYRMQ_DURABILITY_SEED", random.randrange(1 << 30)))
    rnd = random.Random(seed)
    print(f"seed={seed}")
    root = str(tmp_path / "store")
    acked: set[int] = set()
    next_id = 0
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    for round_no in range(20):
        p = subprocess.Popen(
            [sys.executable, WRITER, root, flush_type, str(next_id)], stdout=subprocess.PIPE, text=True, env=env
        )
        try:
            assert p.stdout.readline().strip() == "READY", f"round {round_no}: writer did not start"
            time.sleep(rnd.uniform(0.05, 0.6))
            os.kill(p.pid, signal.SIGKILL)
            out, _ = p.communicate(timeout=10)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait(5)
        for line in out.splitlines():
            line = line.strip()
            if line.isdigit():
                acked.add(int(line))
            elif line.startswith("FAIL"):
                pytest.fail(f"round {round_no}: {line}")
        next_id = _check(root, flush_type, acked)
        assert next_id >= (max(acked) + 1 if flush_type == "SYNC_FLUSH" and acked else 0)
    assert len(acked) > 20, f"seed={seed}: writer made too little progress"
