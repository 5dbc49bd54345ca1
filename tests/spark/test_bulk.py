"""The bulk decoder (pyrmq.spark.bulk) gives the reference decoder's rows, in the same order, for
every record shape, every filter, any split and batch size, and the same corrupt-record handling
(without Spark: both decoders are called directly). Every comparison runs twice: with the
record walk's numpy reference (bulk.walk_records as PYRMQ_PURE=1 selects it) and with its compiled
twin in pyrmq._speedups."""

from __future__ import annotations

import importlib
import os
import random
import shutil
import subprocess
import sys
import zlib
from pathlib import Path
from types import ModuleType

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from spark.store_builder import BASE_TS, CL_SIZE, LONG_TOPIC
from support.fakes import GOLDEN_DIR
from support.fakes import golden as load_golden

from pyrmq import _speedups
from pyrmq.spark import bulk
from pyrmq.spark import commitlog_scan as scan
from pyrmq.spark.bulk import BulkScan
from pyrmq.spark.columns import MESSAGE_COLUMNS, MessageColumns, RecordFilter, arrow_schema
from pyrmq.store import message as m

ALL = list(MESSAGE_COLUMNS)
HEADER = ["topic", "queueId", "queueOffset", "commitLogOffset", "storeSize", "bodySize", "storeTimestamp"]
REFERENCE_WALK = _speedups.REFERENCES["walk_records"]


def _import_native() -> ModuleType | None:
    try:
        return importlib.import_module("pyrmq._speedups._native")
    except ImportError:
        return None


#: the compiled extension itself, whatever PYRMQ_PURE says (that picks the path pyrmq runs)
NATIVE = _import_native()


def native() -> ModuleType:
    """The compiled twins under test; their absence fails the test (the install builds them)."""
    if NATIVE is None:
        pytest.fail("pyrmq._speedups._native is not built: `pip install -e .` needs Cython and a C compiler")
    return NATIVE


#: the bulk decoder's functions with a compiled twin
TWINS = ("walk_records", "record_fields", "copy_ranges")


@pytest.fixture(params=["reference", "compiled"])
def walk(request, monkeypatch) -> str:
    """The bulk decoder with its numpy references (the PYRMQ_PURE=1 path), then with the
    compiled twins of the walk, the field gather and the range copy."""
    if request.param == "compiled":
        for name in TWINS:
            monkeypatch.setattr(bulk, name, getattr(native(), name))
    else:
        for name in TWINS:
            monkeypatch.setattr(bulk, name, _speedups.REFERENCES[name])
    return str(request.param)


def reference_rows(root, names, flt=None, *, split_size=CL_SIZE, corrupt="fail", check_crc=True):
    """Rows by the reference decoder (iter_split + MessageColumns + RecordFilter.accepts), with the
    tag filter applied row by row as the Spark reader does."""
    flt = flt or RecordFilter()
    build = names if flt.tags is None or "tags" in names else [*names, "tags"]
    schema = arrow_schema(build)
    stats = scan.ScanStats()
    rows = []
    for sp in scan.plan_splits(str(root), scan.PlanOptions(split_size=split_size)):
        cols = MessageColumns(build)
        for buf, pos, msg in scan.iter_split(sp, check_crc=check_crc, corrupt=corrupt, stats=stats):
            if flt.accepts(msg):
                cols.add(buf, pos, msg, Path(sp.path).name)
        rows += flt.keep_tags(cols.take_batch(schema), names).to_pylist()
    return rows, stats


def bulk_rows(
    root, names, flt=None, *, split_size=CL_SIZE, corrupt="fail", check_crc=True, batch_rows=16384, batch_bytes=1 << 26
):
    scan_ = BulkScan(names, arrow_schema(names), flt or RecordFilter(), check_crc, corrupt, batch_rows, batch_bytes)
    stats = scan.ScanStats()
    rows = []
    for sp in scan.plan_splits(str(root), scan.PlanOptions(split_size=split_size)):
        for batch in scan_.read(sp, stats):
            assert batch.schema == arrow_schema(names)
            rows += batch.to_pylist()
    return rows, stats


def test_every_column_equals_the_reference(pyrmq_store, walk) -> None:
    root, sent = pyrmq_store
    want, _ = reference_rows(root, ALL)
    assert len(want) == len(sent.by_uniq)  # inner-batch elements are rows, their record is not
    shapes = {
        "ipv6 born": any(r["bornHost"].startswith("[") for r in want),
        "ipv6 store": any(r["storeHost"].startswith("[") for r in want),
        "compressed": any(r["sysFlag"] & m.MessageSysFlag.COMPRESSED_FLAG for r in want),
        "inner batch": any(r["topic"] == "TopicC" for r in want),
        "v2": any(r["version"] == 2 and r["topic"] == LONG_TOPIC for r in want),
    }
    assert all(shapes.values()), shapes
    for split_size, batch_rows, batch_bytes in (
        (CL_SIZE, 16384, 1 << 26),
        (1000, 7, 1 << 26),
        (97, 1, 1),
        (CL_SIZE, 99, 700),
    ):
        got, _ = bulk_rows(root, ALL, split_size=split_size, batch_rows=batch_rows, batch_bytes=batch_bytes)
        assert got == want, (split_size, batch_rows, batch_bytes)


@pytest.mark.parametrize(
    "flt",
    [
        RecordFilter(topics=frozenset({"TopicB", LONG_TOPIC})),
        RecordFilter(queue_ids=frozenset({1, 3})),
        RecordFilter(min_offset=3000, max_offset=20000),
        RecordFilter(min_store_us=(BASE_TS + 70) * 1000, max_store_us=(BASE_TS + 500) * 1000),
        RecordFilter(tags=frozenset({"tag1", "it"})),
        RecordFilter(topics=frozenset({"TopicA"}), queue_ids=frozenset({0}), tags=frozenset({"tag0", "tag2"})),
        RecordFilter(topics=frozenset({"nope"})),
    ],
    ids=["topics", "queues", "offsets", "time", "tags", "combined", "none"],
)
def test_filters_equal_the_reference(pyrmq_store, flt, walk) -> None:
    root, _ = pyrmq_store
    for names in (HEADER, ["commitLogOffset", "body", "keys"]):
        want, _ = reference_rows(root, names, flt)
        got, _ = bulk_rows(root, names, flt, batch_rows=5)
        assert got == want
    if flt.tags is not None:
        assert want and all(r in want for r in got)


def _copy(root, tmp_path) -> Path:
    copy = tmp_path / "store"
    shutil.copytree(root, copy)
    return copy


def _records(root) -> list[tuple[str, int]]:
    rows, _ = reference_rows(root, ["file", "commitLogOffset"])
    files = {Path(f.path).name: f for f in scan.list_commit_log(str(root))}
    return [(files[r["file"]].path, r["commitLogOffset"] - files[r["file"]].start) for r in rows]


def _flip(path: str, pos: int) -> None:
    with open(path, "r+b") as fh:
        fh.seek(pos)
        b = fh.read(1)
        fh.seek(pos)
        fh.write(bytes([b[0] ^ 0x5A]))


@pytest.mark.parametrize("where", ["body", "totalsize", "topic length", "magic"])
def test_corrupt_records_are_handled_like_the_reference(pyrmq_store, tmp_path, where, walk) -> None:
    copy = _copy(pyrmq_store[0], tmp_path)
    recs = _records(copy)
    for path, pos in (recs[5], recs[30]):
        data = open(path, "rb").read()
        msg = m.decode_message(data, pos, read_body=False)
        body_at = pos + m.body_position(msg.sys_flag)
        at = {
            "body": body_at + 1,
            "totalsize": pos + 2,
            "topic length": body_at + msg.body_length,
            "magic": pos + 5,
        }[where]
        _flip(path, at)
    for split_size in (777,):
        with pytest.raises(scan.CorruptRecordError) as want_err:
            reference_rows(copy, HEADER, split_size=split_size)
        with pytest.raises(scan.CorruptRecordError) as got_err:
            bulk_rows(copy, HEADER, split_size=split_size, batch_rows=3)
        assert str(got_err.value) == str(want_err.value)
        want, want_stats = reference_rows(copy, ALL, split_size=split_size, corrupt="skip")
        got, got_stats = bulk_rows(copy, ALL, split_size=split_size, corrupt="skip", batch_rows=3, batch_bytes=500)
        assert got == want
        assert got_stats.corrupt == want_stats.corrupt and len(got_stats.corrupt) >= 2
        assert got_stats.records == want_stats.records


def test_crc_check_off_reads_a_bad_body_like_the_reference(pyrmq_store, tmp_path, walk) -> None:
    copy = _copy(pyrmq_store[0], tmp_path)
    path, pos = _records(copy)[12]
    msg = m.decode_message(open(path, "rb").read(), pos, read_body=False)
    _flip(path, pos + m.body_position(msg.sys_flag))
    want, _ = reference_rows(copy, ALL, check_crc=False)
    got, stats = bulk_rows(copy, ALL, check_crc=False)
    assert got == want and not stats.corrupt


def test_torn_tail_and_zeros_end_the_data(pyrmq_store, tmp_path, walk) -> None:
    copy = _copy(pyrmq_store[0], tmp_path)
    path, pos = _records(copy)[-1]
    with open(path, "r+b") as fh:  # the last record half-written, zeros after it
        fh.seek(pos + 40)
        fh.write(bytes(200))
    want, want_stats = reference_rows(copy, ALL, corrupt="fail")
    got, got_stats = bulk_rows(copy, ALL, corrupt="fail")
    assert got == want and not got_stats.corrupt and not want_stats.corrupt


def _golden_log(tmp_path: Path) -> Path:
    """A commit-log file of the hand-checked Java-format records in tests/golden/store (V1 with
    IPv4 hosts, V2 with IPv6 hosts), each placed at the offset it names, then a blank record."""
    recs = [
        load_golden(GOLDEN_DIR / "store" / n) for n in ("commitlog_message_v1.hex", "commitlog_message_v2_ipv6.hex")
    ]
    size = 4096
    data = bytearray(size)
    pos = 0
    for rec in recs * 3:
        r = bytearray(rec)
        r[m.PHYSICALOFFSET_OFFSET : m.PHYSICALOFFSET_OFFSET + 8] = pos.to_bytes(8, "big")
        data[pos : pos + len(r)] = r
        pos += len(r)
    data[pos : pos + 8] = m.encode_blank(size - pos)[:8]
    root = tmp_path / "golden-store"
    (root / "commitlog").mkdir(parents=True)
    (root / "commitlog" / f"{0:020d}").write_bytes(bytes(data))
    (root / "commitlog" / f"{size:020d}").write_bytes(bytes(size))  # the preallocated next file
    return root


def test_java_format_golden_records(tmp_path, walk) -> None:
    root = _golden_log(tmp_path)
    want, _ = reference_rows(root, ALL)
    assert len(want) == 6 and {r["version"] for r in want} == {1, 2}
    assert any(r["storeHost"].startswith("[") for r in want)
    for batch_rows in (16384, 2):
        got, _ = bulk_rows(root, ALL, batch_rows=batch_rows)
        assert got == want


def test_compressed_body_in_the_body_column(pyrmq_store, walk) -> None:
    root, sent = pyrmq_store
    got, _ = bulk_rows(root, ["msgId", "body", "bodySize", "sysFlag"])
    compressed = [r for r in got if r["sysFlag"] & m.MessageSysFlag.COMPRESSED_FLAG]
    assert compressed
    for r in compressed:
        assert r["body"] == sent.by_uniq[r["msgId"]]["body"]
        assert r["bodySize"] == len(zlib.compress(r["body"], 5))


def test_default_batch_bytes_follow_the_body_column(pyrmq_store, walk) -> None:
    """Without batch_bytes a scan cuts batches by the columns: bodies in batches of at most
    BODY_BATCH_BYTES of commit log, header columns in larger ones; the rows are the reference's
    either way (here with the defaults scaled down to the test store's size)."""
    assert bulk.batch_bytes_for(HEADER) == bulk.HEADER_BATCH_BYTES
    assert bulk.batch_bytes_for([*HEADER, "body"]) == bulk.BODY_BATCH_BYTES <= bulk.HEADER_BATCH_BYTES
    root, _ = pyrmq_store
    for names in (HEADER, [*HEADER, "body"], ALL):
        want, _ = reference_rows(root, names)
        for body_bytes in (bulk.BODY_BATCH_BYTES, 900):
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(bulk, "BODY_BATCH_BYTES", body_bytes)
                scan_ = BulkScan(names, arrow_schema(names), RecordFilter())
                assert scan_.batch_bytes is None
                batches = [b for sp in scan.plan_splits(str(root)) for b in scan_.read(sp)]
            assert [r for b in batches for r in b.to_pylist()] == want
            # a batch holds records of at most batch_bytes_for(names) (one record at least)
            sizes = [sum(r["storeSize"] for r in b.to_pylist()) for b in batches] if "storeSize" in names else []
            limit = body_bytes if "body" in names else bulk.HEADER_BATCH_BYTES
            assert all(size <= limit + 65536 for size in sizes)
            if body_bytes == 900 and "storeSize" in names:
                assert len(batches) > len(scan.plan_splits(str(root))), "900-byte batches cut the scan"


def test_reader_batch_bytes_option(pyrmq_store) -> None:
    """The `batchBytes` option of the rocketmq source reaches the bulk decoder (no Spark: the
    reader's read() called directly); rows are the same whatever its value; a negative value
    is refused."""
    from pyspark.sql.types import BinaryType, IntegerType, LongType, StructField, StructType

    from pyrmq.spark.sources import CommitLogReader

    root, _ = pyrmq_store
    schema = StructType(
        [
            StructField("commitLogOffset", LongType()),
            StructField("storeSize", IntegerType()),
            StructField("body", BinaryType()),
        ]
    )
    names = schema.fieldNames()
    want, _ = reference_rows(root, names)
    splits = scan.plan_splits(str(root))
    counts = []
    for value in (None, "600", str(1 << 26)):
        options = {"path": str(root)} if value is None else {"path": str(root), "batchBytes": value}
        reader = CommitLogReader(options, schema)
        batches = [b for sp in splits for b in reader.read(type("P", (), {"value": sp})())]
        assert [r for b in batches for r in b.to_pylist()] == want, value
        counts.append(len(batches))
    assert counts[1] > counts[2]  # 600-byte batches: about one record each
    with pytest.raises(ValueError, match="batchBytes"):
        CommitLogReader({"path": str(root), "batchBytes": "-1"}, schema)


def test_arrow_schema_matches_spark_types() -> None:
    s = arrow_schema(ALL)
    assert s.field("storeTimestamp").type == pa.timestamp("us", tz="UTC")
    assert s.field("properties").type == pa.map_(pa.string(), pa.string())
    assert pa.types.is_list(s.field("keys").type)


def test_odd_properties_rows_equal_the_reference(tmp_path, walk) -> None:
    """A repeated key (the last value wins, as in a dict), pairs with an empty name or value,
    no properties at all: the same rows from both decoders."""
    from spark.store_builder import store_config

    from pyrmq.store.message_store import MessageStore

    root = tmp_path / "store"
    s = MessageStore(store_config(root))
    s.load()
    s.start()
    try:
        for props in ("TAGS\x01a\x02TAGS\x01b\x02", "\x01x\x02y\x01\x02KEYS\x01 k1  k2 \x02", "", "=\x01=\x02"):
            assert s.put_message(m.MessageExtBrokerInner(topic="T", body=b"x", properties_string=props)).is_ok()
    finally:
        s.shutdown()
    names = ["tags", "keys", "properties", "msgId"]
    want, _ = reference_rows(root, names)
    assert [r["tags"] for r in want] == ["b", None, None, None]
    got, _ = bulk_rows(root, names)
    assert got == want


def _both_walks(buf, pos: int, stop: int, limit: int, check_crc: bool, cap: int) -> tuple[int, int, list[int]]:
    """walk_records by the reference and by the compiled twin; they must agree exactly."""
    want_out = np.zeros(cap, dtype=np.int64)
    n, end = REFERENCE_WALK(buf, pos, stop, limit, check_crc, want_out)
    got_out = np.zeros(cap, dtype=np.int64)
    assert native().walk_records(buf, pos, stop, limit, check_crc, got_out) == (n, end)
    assert got_out[:n].tolist() == want_out[:n].tolist()
    return n, end, want_out[:n].tolist()


def test_walks_agree_on_damaged_logs(pyrmq_store) -> None:
    """Both walks stop at the same record, with the same starts, on every commit-log file of the
    test store and on copies with bytes changed at random (headers, lengths, bodies, topics)."""
    rng = random.Random(17)
    files = [f.path for f in scan.list_commit_log(str(pyrmq_store[0]))]
    starts_seen = 0
    for path in files:
        data = open(path, "rb").read()
        n, end, starts = _both_walks(data, 0, len(data), len(data), True, 100_000)
        starts_seen += n
        assert starts and m.peek_total_size_and_magic(data, end)[1] in (m.BLANK_MAGIC_CODE, 0)
        for _ in range(60):
            bad = bytearray(data)
            rec = rng.choice(starts)
            for _ in range(rng.choice((1, 1, 2, 4))):
                bad[min(len(bad) - 1, rec + rng.randrange(0, 300))] ^= 1 << rng.randrange(8)
            for check_crc in (True, False):
                _both_walks(bad, 0, len(bad), len(bad), check_crc, 100_000)
            mid = rng.randrange(len(bad))
            _both_walks(bad, rec, mid, min(len(bad), mid + rng.randrange(0, 2000)), True, rng.choice((1, 3, 1000)))
    assert starts_seen > 100


def _both_fields_and_ranges(buf, starts: list[int], ranges: bool = True) -> None:
    """record_fields (and, for real records, copy_ranges) by the reference and the compiled twin agree."""
    s = np.array(starts, dtype=np.int64)
    want = np.zeros((len(bulk.FIELD_ROWS), len(s)), dtype=np.int64)
    _speedups.REFERENCES["record_fields"](buf, s, len(buf), want)
    got = np.zeros_like(want)
    native().record_fields(buf, s, len(buf), got)
    assert got.tolist() == want.tolist()
    if not ranges:
        return
    rows = dict(zip(bulk.FIELD_ROWS, want, strict=True))
    for pos, length in (("body_pos", "body_len"), ("topic_pos", "topic_len"), ("props_pos", "props_len")):
        p, n = rows[pos], rows[length]
        want_data = np.zeros(int(n.sum()), dtype=np.uint8)
        _speedups.REFERENCES["copy_ranges"](buf, p, n, want_data)
        got_data = np.zeros_like(want_data)
        native().copy_ranges(buf, p, n, got_data)
        assert got_data.tobytes() == want_data.tobytes()


def test_field_gather_and_range_copy_agree(pyrmq_store) -> None:
    """On every record of the test store (IPv6 hosts, V2, compressed, batches) and on starts that
    are no record (the compiled gather hands those to the reference), and on ranges past the data."""
    for f in scan.list_commit_log(str(pyrmq_store[0])):
        data = open(f.path, "rb").read()
        _, _, starts = _both_walks(data, 0, len(data), len(data), True, 100_000)
        if not starts:
            continue
        _both_fields_and_ranges(data, starts)
        _both_fields_and_ranges(data, [*starts[:3], starts[1] + 1], ranges=False)  # a start that is no record
    data = bytes(range(256))
    with pytest.raises(IndexError):
        native().copy_ranges(data, np.array([250], np.int64), np.array([10], np.int64), np.zeros(10, np.uint8))


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=4, max_size=4), st.booleans())
def test_walks_agree_on_topic_bytes(topic: bytes, v2: bool) -> None:
    """A record whose 4 topic bytes are anything: accepted exactly when they are UTF-8 that
    bytes.decode accepts (overlong forms, surrogates, code points past U+10FFFF rejected)."""
    msg = m.MessageExtBrokerInner(topic="abcd", body=b"x" * 33, properties_string="TAGS\x01t\x02")
    if v2:
        msg.version = m.MessageVersion.MESSAGE_VERSION_V2
    rec = bytearray(m.encode_message(msg))
    body_at = m.body_position(0)
    rec[m.BODYCRC_OFFSET : m.BODYCRC_OFFSET + 4] = m.crc32(bytes(rec[body_at : body_at + 33])).to_bytes(4, "big")
    at = body_at + 33 + (2 if v2 else 1)
    assert rec[at : at + 4] == b"abcd"
    rec[at : at + 4] = topic
    data = bytes(rec) + bytes(8)
    try:
        topic.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    assert _both_walks(data, 0, len(data), len(data), True, 4) == ((1, len(rec), [0]) if valid else (0, 0, []))


_CRC_CHECK = """
import random, zlib
import pyrmq._speedups._native as native
rng = random.Random(3)
for n in [*range(0, 300), 1023, 1024, 1025, 4099, 65537]:
    data = rng.randbytes(n)
    assert native.crc32(data) == zlib.crc32(data), n
    assert native.crc32(memoryview(data)[1:]) == zlib.crc32(data[1:]), n
print(native.crc32_method())
"""


@pytest.mark.parametrize("table", ["0", "1"], ids=["clmul-if-the-cpu-has-it", "table"])
def test_compiled_crc32_is_zlibs(table) -> None:
    """The walk's CRC-32 (carry-less-multiply folding, or the table with PYRMQ_CRC_TABLE=1) is
    zlib.crc32 for every length around the folding steps."""
    native()  # built, or this fails here rather than in the child
    env = {**os.environ, "PYRMQ_CRC_TABLE": table}
    out = subprocess.run([sys.executable, "-c", _CRC_CHECK], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() in (("clmul", "table") if table == "0" else ("table",))
