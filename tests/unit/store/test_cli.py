"""`pyrmq store inspect|verify` on stores written by pyrmq.store, intact and damaged."""

from __future__ import annotations

import io
import json
import os
import struct

import pytest

from pyrmq.store import cli
from pyrmq.store import config as cfg
from pyrmq.store.index import HASH_SLOT_SIZE, INDEX_HEADER_SIZE, INDEX_SIZE

N = 90


@pytest.fixture
def store_dir(tmp_path, open_store, msg_factory):
    """A shut-down store: N messages over T/0, T/1 and U/0, several commit log files, config files."""
    s = open_store()
    results = []
    for i in range(N):
        topic, qid = ("U", 0) if i % 3 == 2 else ("T", i % 2)
        r = s.put_message(msg_factory(i, topic=topic, queue_id=qid))
        assert r.is_ok()
        results.append(r)
    s.shutdown()
    root = tmp_path / "store"
    cfg.persist_config(root, cfg.ConsumerOffsetSerializeWrapper(offset_table={"T@g": {0: 3, 1: 2}}))
    cfg.persist_config(
        root,
        cfg.TopicConfigSerializeWrapper(
            topic_config_table={"T": cfg.TopicConfig(topic_name="T", read_queue_nums=2, write_queue_nums=2)}
        ),
    )
    return root


def run(*argv: str, capsys) -> tuple[int, str, str]:
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def verify_json(root, capsys, *extra: str) -> tuple[int, dict]:
    rc, out, _ = run("verify", str(root), "--json", *extra, capsys=capsys)
    return rc, json.loads(out)


def _files(d) -> list[str]:
    return sorted(os.listdir(d))


def test_inspect_reports_what_the_store_holds(store_dir, capsys) -> None:
    rc, out, _ = run("inspect", str(store_dir), "--json", capsys=capsys)
    assert rc == 0
    info = json.loads(out)
    cl = info["commitlog"]
    names = _files(store_dir / "commitlog")
    assert cl["files"] == len(names) >= 3 and cl["file_size"] == 4096
    assert cl["min_offset"] == 0 and cl["first_file"] == names[0]
    assert int(names[-1]) < cl["max_offset"] < int(names[-1]) + 4096
    assert cl["first_store_time"] and cl["last_store_time"]
    assert info["topics"]["T"]["0"]["max_offset"] == 30 and info["topics"]["T"]["1"]["max_offset"] == 30
    assert (info["topics"]["U"]["0"]["min_offset"], info["topics"]["U"]["0"]["max_offset"]) == (0, 30)
    assert info["index"]["files"] >= 1 and info["index"]["entries"] > 0
    assert info["abort"] is False and info["lock"] is True
    assert info["config"]["consumerOffset.json"]["offset_entries"] == 1
    assert info["config"]["topics.json"]["topics"] == 1
    assert set(info["checkpoint"]) >= {"physicMsgTimestamp", "logicsMsgTimestamp", "indexMsgTimestamp"}
    # text form names the same things
    rc, text, _ = run("inspect", str(store_dir), capsys=capsys)
    assert rc == 0 and "queue 1: offsets 0 .. 30 (30 message(s))" in text and "consumerOffset.json" in text


def test_verify_clean_store(store_dir, capsys) -> None:
    rc, rep = verify_json(store_dir, capsys)
    assert rc == 0, rep["problems"]
    assert rep["ok"] and rep["problems"] == [] and rep["warnings"] == []
    st = rep["stats"]
    assert st["records"] == N and st["consume_queue_entries"] == N and st["consume_queues"] == 3
    assert st["index_entries"] == N * 4  # UNIQ_KEY + two keys + topic#T#tags per message (5.5.0)
    rc, out, _ = run("verify", str(store_dir), capsys=capsys)
    assert rc == 0 and out.startswith("OK: 90 record(s)")


@pytest.mark.parametrize(
    "argv_dir, msg", [("missing", "no such directory"), ("empty", "does not look like a RocketMQ store")]
)
def test_not_a_store(tmp_path, capsys, argv_dir: str, msg: str) -> None:
    (tmp_path / "empty").mkdir()
    for cmd in ("inspect", "verify"):
        rc, out, err = run(cmd, str(tmp_path / argv_dir), capsys=capsys)
        assert rc == 2 and msg in err and out == ""


def _first_record_body_offset(store_dir) -> tuple[str, int]:
    """(name of the second commit log file, position of its first record's body)."""
    name = _files(store_dir / "commitlog")[1]
    data = (store_dir / "commitlog" / name).read_bytes()
    # IPv4 born and store hosts: the fixed part is 88 bytes, BODYLENGTH its last field (spec §2.1)
    (body_len,) = struct.unpack_from(">i", data, 84)
    assert body_len > 0
    return name, 88


def test_flipped_body_byte_is_reported_with_file_and_offset(store_dir, capsys) -> None:
    name, body_pos = _first_record_body_offset(store_dir)
    p = store_dir / "commitlog" / name
    data = bytearray(p.read_bytes())
    data[body_pos] ^= 0x40
    p.write_bytes(bytes(data))
    rc, rep = verify_json(store_dir, capsys)
    assert rc == 1 and not rep["ok"]
    crc = [x for x in rep["problems"] if "CRC" in x["message"]]
    assert crc == [{"path": f"commitlog/{name}", "offset": 0, "message": "bad record: body CRC mismatch at 0"}]
    assert rep["stats"]["records"] == N  # the scan went on past the damaged record
    rc, out, _ = run("verify", str(store_dir), capsys=capsys)
    assert f"PROBLEM commitlog/{name} @ 0: bad record: body CRC mismatch" in out and "CORRUPT" in out


def test_truncated_file_is_reported(store_dir, capsys) -> None:
    name = _files(store_dir / "commitlog")[1]
    p = store_dir / "commitlog" / name
    p.write_bytes(p.read_bytes()[:1000])
    rc, rep = verify_json(store_dir, capsys)
    assert rc == 1
    assert {
        "path": f"commitlog/{name}",
        "offset": None,
        "message": "length 1000 != 4096 (mapped file size); Java refuses to load it",
    } in rep["problems"]


def test_stray_file_in_commitlog_is_reported(store_dir, capsys) -> None:
    (store_dir / "commitlog" / "00000000000000004096.tmp").write_bytes(b"x")
    rc, rep = verify_json(store_dir, capsys)
    assert rc == 1
    assert [x["path"] for x in rep["problems"]] == ["commitlog/00000000000000004096.tmp"]
    assert "stray file" in rep["problems"][0]["message"]


def test_garbage_record_header_stops_the_file_and_later_data_is_flagged(store_dir, capsys) -> None:
    names = _files(store_dir / "commitlog")
    p = store_dir / "commitlog" / names[0]
    data = bytearray(p.read_bytes())
    second = struct.unpack_from(">i", data, 0)[0]
    data[second + 4 : second + 8] = b"\x01\x02\x03\x04"  # magic of the second record
    p.write_bytes(bytes(data))
    rc, rep = verify_json(store_dir, capsys)
    assert rc == 1
    first = rep["problems"][0]
    assert first["path"] == f"commitlog/{names[0]}" and first["offset"] == second
    assert "illegal magic code 0x01020304" in first["message"]
    assert any(
        x["path"] == f"commitlog/{names[1]}" and x["offset"] == 0 and "after the end" in x["message"]
        for x in rep["problems"]
    )


def test_bad_consume_queue_entry_is_reported(store_dir, capsys) -> None:
    cq = store_dir / "consumequeue" / "T" / "1"
    name = _files(cq)[0]
    data = bytearray((cq / name).read_bytes())
    phy, size, tags = struct.unpack_from(">qiq", data, 20 * 2)
    struct.pack_into(">qiq", data, 20 * 2, phy, size + 1, tags)  # entry 2: wrong size
    struct.pack_into(">qiq", data, 20 * 3, phy + 3, size, tags)  # entry 3: not a record start
    (cq / name).write_bytes(bytes(data))
    rc, rep = verify_json(store_dir, capsys)
    assert rc == 1
    got = {(x["path"], x["offset"]) for x in rep["problems"]}
    assert got == {(f"consumequeue/T/1/{name}", 40), (f"consumequeue/T/1/{name}", 60)}
    by_off = {x["offset"]: x["message"] for x in rep["problems"]}
    assert f"size {size + 1} != record size {size}" in by_off[40]
    assert f"points at commit log offset {phy + 3}" in by_off[60]


def test_consume_queue_pointing_at_another_queue(store_dir, capsys) -> None:
    t0 = store_dir / "consumequeue" / "T" / "0" / _files(store_dir / "consumequeue" / "T" / "0")[0]
    u0 = store_dir / "consumequeue" / "U" / "0" / _files(store_dir / "consumequeue" / "U" / "0")[0]
    data = bytearray(t0.read_bytes())
    data[0:20] = u0.read_bytes()[0:20]
    t0.write_bytes(bytes(data))
    rc, rep = verify_json(store_dir, capsys)
    assert rc == 1
    assert rep["problems"][0]["offset"] == 0 and "record is U/0" in rep["problems"][0]["message"]


def test_bad_index_entry_is_reported(store_dir, capsys) -> None:
    idx = store_dir / "index"
    name = _files(idx)[0]
    data = bytearray((idx / name).read_bytes())
    pos = INDEX_HEADER_SIZE + 64 * HASH_SLOT_SIZE + 1 * INDEX_SIZE  # tiny_config: 64 slots
    key_hash, phy, diff, prev = struct.unpack_from(">iqii", data, pos)
    struct.pack_into(">iqii", data, pos, key_hash ^ 1, phy, diff, prev)
    (idx / name).write_bytes(bytes(data))
    rc, rep = verify_json(store_dir, capsys)
    assert rc == 1
    assert rep["problems"] == [
        {
            "path": f"index/{name}",
            "offset": pos,
            "message": f"entry 1: key hash {key_hash ^ 1} matches no key of the record at {phy}",
        }
    ]
    # geometry given explicitly works too; a wrong one is a warning, not a false alarm
    assert verify_json(store_dir, capsys, "--max-hash-slot-num", "64")[0] == 1
    rc, rep = verify_json(store_dir, capsys, "--max-hash-slot-num", "63", "--max-index-num", "256")
    assert rc == 0 and "cannot tell the slot/entry counts" in rep["warnings"][0]["message"]
    assert verify_json(store_dir, capsys, "--no-index")[0] == 0


def test_undispatched_tail_is_a_warning(store_dir, capsys) -> None:
    """After a crash the queues may lag the commit log; recovery rebuilds them, so not corruption."""
    cq = store_dir / "consumequeue" / "U" / "0"
    name = _files(cq)[-1]
    data = bytearray((cq / name).read_bytes())
    last = max(i for i in range(0, len(data), 20) if data[i : i + 20] != bytes(20))
    data[last : last + 20] = bytes(20)
    (cq / name).write_bytes(bytes(data))
    rc, rep = verify_json(store_dir, capsys)
    assert rc == 0
    assert len(rep["warnings"]) == 1 and "not dispatched yet" in rep["warnings"][0]["message"]


def test_progress_bar_on_request(store_dir, capsys) -> None:
    rc, _out, err = run("verify", str(store_dir), "--progress", capsys=capsys)
    assert rc == 0 and "100%" in err and "[" in err
    rc, _out, err = run("verify", str(store_dir), capsys=capsys)  # stderr is not a terminal here
    assert err == ""


def test_verify_after_expired_files_were_deleted(store_dir, capsys, config_factory, clock) -> None:
    from pyrmq.store.cleanup import StoreCleaner
    from pyrmq.store.message_store import MessageStore

    s = MessageStore(
        config_factory(store_dir, delete_commit_log_files_interval=0, delete_consume_queue_files_interval=0),
        clock=clock,
    )
    s.load()
    s.start()
    try:
        StoreCleaner(s, disk_usage=lambda p: 0.87, clock=clock, local_hour=lambda ms: 12).run_once()
        assert s.get_min_phy_offset() > 0
    finally:
        s.shutdown()
    rc, rep = verify_json(store_dir, capsys)
    assert rc == 0, rep["problems"]
    assert rep["stats"]["records"] < N
    rc, out, _ = run("inspect", str(store_dir), "--json", capsys=capsys)
    info = json.loads(out)
    assert info["commitlog"]["min_offset"] > 0 and info["topics"]["T"]["0"]["min_offset"] > 0


def test_routed_through_the_pyrmq_command(store_dir, capsys) -> None:
    from pyrmq.cli import main

    assert main(["store", "verify", str(store_dir)]) == 0
    assert "OK:" in capsys.readouterr().out


def test_progress_writes_nothing_when_disabled() -> None:
    buf = io.StringIO()
    p = cli.Progress(100, False, buf)
    p.advance(100, "x")
    p.finish()
    assert buf.getvalue() == ""


def test_inspect_names_a_dledger_ledger_it_cannot_read(tmp_path, capsys) -> None:
    """Data files of different sizes (DLedger's recovery refuses them): inspect says why, with the
    member directory, and still lists the rest of the store."""
    data = tmp_path / "dledger-n0" / "data"
    data.mkdir(parents=True)
    (data / f"{0:020d}").write_bytes(bytes(4096))
    (data / f"{4096:020d}").write_bytes(bytes(100))
    (tmp_path / "consumequeue").mkdir()
    info = cli.inspect_store(str(tmp_path))
    assert info["dledger"]["member_dir"] == str(tmp_path / "dledger-n0")
    assert "different sizes" in info["dledger"]["error"]
    assert cli.main(["inspect", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "cannot read the ledger" in out and "topics: 0" in out, out
