"""pyrmq.store.reader: the one read-only reader `pyrmq store inspect|verify` and the Spark sources
share. The index geometry test is the one that would have caught the two readers disagreeing."""

from __future__ import annotations

import json
import os

import pytest

from pyrmq.spark import other_scans
from pyrmq.store import cli, reader
from pyrmq.store import config as cfg
from pyrmq.store.index import build_key, index_file_size, index_key_hash
from pyrmq.store.message_store import MessageStore

JAVA_DEFAULT_SIZE = 40 + 5_000_000 * 4 + 20_000_000 * 20


@pytest.mark.parametrize(
    "size, slots, entries, want",
    [
        (JAVA_DEFAULT_SIZE, None, None, (5_000_000, 20_000_000)),  # Java's defaults
        (index_file_size(64, 256), None, None, (64, 256)),  # Java's default ratio, 4 entries per slot
        (index_file_size(500_000, 2_000_000), None, None, (500_000, 2_000_000)),
        (index_file_size(1000, 4000), 1000, None, (1000, 4000)),  # one value given: the other follows
        (index_file_size(1000, 4000), None, 4000, (1000, 4000)),
        (index_file_size(100, 7), 100, 7, (100, 7)),  # both given: checked against the size
        (index_file_size(100, 7), None, None, None),  # neither Java's defaults nor their ratio
        (index_file_size(100, 7), 99, 7, None),
        (index_file_size(5_000_000, 21), None, None, None),  # a default slot count alone says nothing
        (index_file_size(5_000_000, 21), 5_000_000, None, (5_000_000, 21)),
    ],
)
def test_index_geometry(size, slots, entries, want) -> None:
    g = reader.index_geometry(size, slots, entries)
    assert (None if g is None else (g.hash_slot_num, g.index_num)) == want
    assert g is None or g.file_size == size


@pytest.mark.parametrize("slots, entries", [(64, 256), (500_000, 2_000_000)])
def test_verify_and_spark_read_the_same_index_entries(tmp_path, clock, config_factory, msg_factory, slots, entries):
    """Index files whose geometry is not Java's default but has its 1:4 ratio, read without being
    told the geometry: `pyrmq store verify` and the `rocketmq_index` rows must see the same entries,
    each the hash of a key of the record it points at. (The Spark reader used to assume 5,000,000
    slots: it refused the 64-slot file and read the 500,000-slot one at the wrong positions.)"""
    root = tmp_path / "store"
    s = MessageStore(config_factory(root, max_hash_slot_num=slots, max_index_num=entries), clock=clock)
    s.load()
    s.start()
    results = [s.put_message(msg_factory(i, topic="T", queue_id=0)) for i in range(20)]
    s.shutdown()
    report, stats = cli.verify_store(str(root))
    assert report.problem_count == 0 and not report.warnings, report.problems + report.warnings
    rows = [row for p in other_scans.list_index_files(str(root)) for row in other_scans.iter_index_file(p)]
    assert len(rows) == stats.index_entries == 20 * 4  # UNIQ_KEY, two KEYS, topic#T#tags
    offsets = [r.append_message_result.wrote_offset for r in results]
    for i, off in enumerate(offsets):
        want = {index_key_hash(build_key("T", k)) for k in (f"UNIQ{i:08d}", f"k{i}", "common")}
        got = {key_hash for key_hash, phy, *_ in rows if phy == off}
        assert want <= got, (i, off)
    assert {key_hash % slots for key_hash, *_ in rows} == {slot for _, _, _, _, _, slot, *_ in rows}


def test_unreadable_config_is_read_from_the_backup_and_left_in_place(tmp_path, capsys) -> None:
    """inspect and the Spark offsets source read like the broker (main file, else .bak) but never
    rename a corrupt main file the way the broker's load does."""
    root = tmp_path / "store"
    wrapper = cfg.ConsumerOffsetSerializeWrapper(offset_table={"T@g": {0: 7}})
    path = cfg.persist_config(root, wrapper)
    cfg.persist_config(root, wrapper)  # now there is a .bak
    with open(path, "w") as f:
        f.write("{not json")
    assert cli.main(["inspect", str(root), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)["config"]["consumerOffset.json"]
    assert info["read_from"] == "consumerOffset.json.bak" and info["offset_entries"] == 1
    rows, used = other_scans.read_consumer_offsets(str(root))
    assert rows == [("g", "T", 0, 7)] and used == path + ".bak"
    assert open(path).read() == "{not json" and not os.path.exists(path + ".corrupt")


def test_log_files_and_findings(tmp_path) -> None:
    d = tmp_path / "commitlog"
    d.mkdir()
    for start, size in ((0, 100), (100, 100), (300, 100), (400, 0)):
        (d / f"{start:020d}").write_bytes(bytes(size))
    (d / "junk").write_bytes(b"x")
    (d / "sub").mkdir()
    files, found = reader.list_log_files(str(d))
    assert [f.start for f in files] == [0, 100, 300]
    assert {(os.path.basename(x.path), x.problem) for x in found} == {
        ("junk", True),
        ("sub", False),
        (f"{300:020d}", True),  # gap
        (f"{400:020d}", False),  # empty last file
    }


def test_queue_entries_stop_at_the_first_empty_one(open_store, msg_factory) -> None:
    s = open_store()
    offsets = [s.put_message(msg_factory(i, queue_id=1)).append_message_result.wrote_offset for i in range(5)]
    s.shutdown()
    (q,) = [q for q in reader.list_queue_dirs(s.config.consume_queue_dir)[0] if q.queue_id == 1]
    log, found = reader.open_log(q.path)
    with log:
        entries = list(reader.iter_queue_entries(log))
    assert not found
    assert [(qo, phy) for _f, _pos, qo, phy, _size, _tags in entries] == list(enumerate(offsets))


def test_checkpoint_fields_by_java_name(open_store, msg_factory, clock) -> None:
    s = open_store()
    s.put_message(msg_factory(0))
    s.shutdown()
    cp = reader.read_checkpoint(s.config.checkpoint_path)
    assert list(cp) == [
        "physicMsgTimestamp",
        "logicsMsgTimestamp",
        "indexMsgTimestamp",
        "masterFlushedOffset",
        "confirmPhyOffset",
    ]
    assert cp["logicsMsgTimestamp"] == clock()  # the dispatched record's store time
    assert reader.read_checkpoint(str(s.config.checkpoint_path) + ".missing") is None


def test_log_file_being_created_has_no_length_yet(tmp_path) -> None:
    """A live writer creates a mapped file before giving it its length: a scan at that instant
    sees a 0-byte first file. Nothing is listed yet, and nothing fails (it divided by zero)."""
    d = tmp_path / "commitlog"
    d.mkdir()
    (d / f"{0:020d}").write_bytes(b"")
    files, found = reader.list_log_files(str(d))
    assert files == [] and not any(f.problem for f in found)
    (d / f"{0:020d}").write_bytes(b"\0" * 4096)
    (d / f"{4096:020d}").write_bytes(b"")
    files, found = reader.list_log_files(str(d))
    assert [f.start for f in files] == [0] and [f.message for f in found] == [
        "empty last file (5.x deletes it at start)"
    ]
