"""commitlog_scan without Spark: splits anywhere give every record exactly once, the live tail is
never an error, a corrupt record is reported with file and offset."""

from __future__ import annotations

import os
import random
import shutil
import threading
import time

import pytest
from spark.store_builder import CL_SIZE, store_config

from pyrmq.spark import commitlog_scan as scan
from pyrmq.spark.columns import MessageColumns
from pyrmq.store import message as m
from pyrmq.store.message_store import MessageStore


def sequential(root) -> list[tuple[str, int]]:
    """(file, position) of every record, by plain decode_messages over each file."""
    out = []
    for f in scan.list_commit_log(str(root)):
        data = open(f.path, "rb").read()
        pos = 0
        for msg in m.decode_messages(data, read_body=False):
            out.append((f.path, msg.commit_log_offset - f.start))
            pos += msg.store_size
    return out


def scanned(splits, **kw) -> list[tuple[str, int]]:
    return [(s.path, pos) for s in splits for _buf, pos, _msg in scan.iter_split(s, **kw)]


def test_any_split_size_reads_every_record_once(pyrmq_store) -> None:
    root, sent = pyrmq_store
    want = sequential(root)
    assert len(want) == len(sent.by_uniq) - 2 + 1  # inner batch = one record
    assert len(scan.list_commit_log(str(root))) >= 3
    for size in (97, 1000, 4096, 7777, CL_SIZE):
        splits = scan.plan_splits(str(root), scan.PlanOptions(split_size=size))
        assert scanned(splits) == want, size


def test_offset_range_and_offset_lookups(pyrmq_store) -> None:
    root, _ = pyrmq_store
    want = sequential(root)
    offs = [int(os.path.basename(p)) + pos for p, pos in want]
    lo, hi = offs[10], offs[40]
    splits = scan.plan_splits(str(root), scan.PlanOptions(split_size=3000, min_offset=lo, max_offset=hi))
    got = [int(os.path.basename(p)) + pos for p, pos in scanned(splits)]
    assert got == offs[10:40]
    pick = [offs[3], offs[57], offs[-1]]
    got = [int(os.path.basename(p)) + pos for p, pos in scanned(scan.plan_offset_splits(str(root), [*pick, 10**12]))]
    assert got == sorted(pick)


def test_boundary_search_needs_magic_and_own_offset(pyrmq_store) -> None:
    root, _ = pyrmq_store
    f = scan.list_commit_log(str(root))[0]
    buf = open(f.path, "rb").read()
    first = m.decode_message(buf, 0, read_body=False)
    rec = buf[: first.store_size]
    fake = bytearray(4096)
    fake[0 : len(rec)] = rec
    fake[500 : 500 + len(rec)] = rec  # a record copy whose PHYSICALOFFSET (0) is not its position
    moved = bytearray(rec)
    moved[28:36] = (f.start + 1000).to_bytes(8, "big")
    fake[1000 : 1000 + len(rec)] = moved
    assert scan.next_boundary(fake, f.start, 1, len(fake), len(fake)) == 1000
    assert scan.next_boundary(fake, f.start, 1001, len(fake), len(fake)) is None
    assert scan.next_boundary(buf, f.start, 1, len(buf), len(buf)) == first.store_size


def flip(path: str, pos: int) -> None:
    with open(path, "r+b") as fh:
        fh.seek(pos)
        b = fh.read(1)
        fh.seek(pos)
        fh.write(bytes([b[0] ^ 0x5A]))


def test_corrupt_body_is_reported_with_file_and_offset(pyrmq_store, tmp_path) -> None:
    root, _ = pyrmq_store
    copy = tmp_path / "store"
    shutil.copytree(root, copy)
    records = sequential(copy)
    path, pos = records[5][0], records[5][1]
    msg = m.decode_message(open(path, "rb").read(), pos, read_body=False)
    flip(path, pos + m.body_position(msg.sys_flag) + 1)
    splits = scan.plan_splits(str(copy), scan.PlanOptions(split_size=5000))
    with pytest.raises(scan.CorruptRecordError) as e:
        scanned(splits)
    assert e.value.file == path and e.value.file_pos == pos and "CRC" in e.value.reason
    assert os.path.basename(path) in str(e.value) and str(pos) in str(e.value)
    stats = scan.ScanStats()
    got = [(s.path, p) for s in splits for _b, p, _m in scan.iter_split(s, corrupt="skip", stats=stats)]
    assert got == [r for r in records if r != (path, pos)]
    assert [(c[0], c[1]) for c in stats.corrupt] == [(path, pos)]


def test_corrupt_header_resyncs_at_next_record(pyrmq_store, tmp_path) -> None:
    root, _ = pyrmq_store
    copy = tmp_path / "store"
    shutil.copytree(root, copy)
    records = sequential(copy)
    path, pos = records[8]
    flip(path, pos + 2)  # TOTALSIZE: the chain is broken here
    splits = scan.plan_splits(str(copy), scan.PlanOptions(split_size=CL_SIZE))
    stats = scan.ScanStats()
    got = [(s.path, p) for s in splits for _b, p, _m in scan.iter_split(s, corrupt="skip", stats=stats)]
    assert got == [r for r in records if r != (path, pos)]
    assert [(c[0], c[1]) for c in stats.corrupt] == [(path, pos)]


def test_torn_and_unwritten_tail_is_the_end_not_an_error(pyrmq_store, tmp_path) -> None:
    root, _ = pyrmq_store
    copy = tmp_path / "store"
    shutil.copytree(root, copy)
    records = sequential(copy)
    path, pos = records[-1]
    data = open(path, "rb").read()
    last = m.decode_message(data, pos, read_body=False)
    with open(path, "r+b") as fh:  # the last record half written: its tail still zeros
        fh.seek(pos + last.store_size // 2)
        fh.write(b"\0" * (last.store_size - last.store_size // 2))
    for size in (500, CL_SIZE):
        splits = scan.plan_splits(str(copy), scan.PlanOptions(split_size=size))
        assert scanned(splits) == records[:-1]
        assert all(s.data_end == pos for s in splits if s.path == path)


def test_columns_decode_every_shape(pyrmq_store) -> None:
    """IPv6 hosts, compressed bodies, V2 topics, inner batches, through the column builder."""
    import pyarrow as pa

    root, sent = pyrmq_store
    names = [
        "topic",
        "queueId",
        "queueOffset",
        "msgId",
        "keys",
        "tags",
        "properties",
        "body",
        "bodySize",
        "flag",
        "bornHost",
        "storeHost",
        "version",
        "sysFlag",
    ]
    cols = MessageColumns(names)
    for s in scan.plan_splits(str(root)):
        for buf, pos, msg in scan.iter_split(s):
            cols.add(buf, pos, msg, os.path.basename(s.path))
    schema = pa.schema(
        [
            ("topic", pa.string()),
            ("queueId", pa.int32()),
            ("queueOffset", pa.int64()),
            ("msgId", pa.string()),
            ("keys", pa.list_(pa.string())),
            ("tags", pa.string()),
            ("properties", pa.map_(pa.string(), pa.string())),
            ("body", pa.binary()),
            ("bodySize", pa.int32()),
            ("flag", pa.int32()),
            ("bornHost", pa.string()),
            ("storeHost", pa.string()),
            ("version", pa.int32()),
            ("sysFlag", pa.int32()),
        ]
    )
    rows = cols.take_batch(schema).to_pylist()
    assert len(rows) == len(sent.by_uniq)
    for r in rows:
        want = sent.by_uniq[r["msgId"]]
        assert (r["topic"], r["queueId"], r["queueOffset"], r["body"], r["flag"]) == (
            want["topic"],
            want["queue_id"],
            want["queue_offset"],
            want["body"],
            want["flag"],
        )
        assert dict(r["properties"]) == want["props"] if "born" not in want else True
        if "born" in want:
            props = dict(r["properties"])
            assert {k: props[k] for k in want["props"]} == want["props"]
            assert r["keys"] == [k for k in want["props"]["KEYS"].split(" ")]
            ip, port = want["born"]
            assert r["bornHost"] == (f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}")
            ip, port = want["store_host"]
            assert r["storeHost"] == (f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}")
            assert r["bodySize"] == want["stored_len"]
            assert r["version"] == (2 if want["topic"].startswith("LLLL") else 1)
    assert {r["version"] for r in rows} == {1, 2}
    assert any(r["sysFlag"] & 1 for r in rows) and any(":" in r["bornHost"].split("]")[0] for r in rows)


def test_live_writer_gives_a_consistent_prefix(tmp_path) -> None:
    """A writer thread appends while splits are planned and read: no error, and what is read is
    exactly the first N records that the writer reports."""
    root = tmp_path / "live"
    s = MessageStore(store_config(root))
    s.load()
    s.start()
    offsets: list[int] = []
    stop = threading.Event()

    def writer() -> None:
        rnd = random.Random(7)
        i = 0
        while not stop.is_set() and i < 3000:
            r = s.put_message(
                m.MessageExtBrokerInner(
                    topic="Live",
                    body=rnd.randbytes(rnd.randint(1, 3000)),
                    queue_id=i % 2,
                    properties={"UNIQ_KEY": f"L{i}"},
                )
            )
            assert r.is_ok()
            offsets.append(r.append_message_result.wrote_offset)
            i += 1

    th = threading.Thread(target=writer)
    th.start()
    try:
        rounds = 0
        deadline = time.monotonic() + 20
        while th.is_alive() and time.monotonic() < deadline:
            splits = scan.plan_splits(str(root), scan.PlanOptions(split_size=9000))
            random.shuffle(splits)  # tasks run in any order
            got = sorted(int(os.path.basename(sp.path)) + pos for sp in splits for _b, pos, _m in scan.iter_split(sp))
            # the writer appends to `offsets` after put_message returns: let it catch up with what we saw
            wait = time.monotonic() + 5
            while len(offsets) < len(got) and time.monotonic() < wait:
                time.sleep(0.001)
            done = list(offsets)
            bad = next((i for i, (a, b) in enumerate(zip(got, done, strict=False)) if a != b), None)
            assert bad is None and len(got) <= len(done), (
                f"not a prefix of what was written: index {bad}, read {len(got)} of {len(done)}"
            )
            rounds += 1
        assert rounds >= 2
    finally:
        stop.set()
        th.join(30)
        s.shutdown()
