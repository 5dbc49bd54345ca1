"""pyrmq.ha.epoch and broker_metadata: the controller-mode files as Java 5.5.0 writes them (golden
bytes copied from a Java broker's store after a failover), and the truncation math."""

from __future__ import annotations

import pytest

from pyrmq.ha.autoswitch_client import truncate_offset
from pyrmq.ha.broker_metadata import BrokerMetadata, TempBrokerMetadata
from pyrmq.ha.epoch import OPEN_END, EpochEntry, EpochFileCache, EpochFileError, decode_checkpoint, encode_checkpoint

#: epochFileCheckpoint of a Java 5.5.0 broker: elected in epoch 1, then master again in epoch 2
JAVA_ONE = b"1\n1725254278\n1-0\n"
JAVA_TWO = b"2\n1982675170\n1-0\n2-124000\n"


def E(epoch: int, start: int) -> EpochEntry:
    return EpochEntry(epoch, start)


def test_checkpoint_golden_bytes():
    assert encode_checkpoint([E(1, 0)]).encode() == JAVA_ONE
    assert encode_checkpoint([E(1, 0), E(2, 124000)]).encode() == JAVA_TWO
    entries = decode_checkpoint(JAVA_TWO.decode())
    assert [(e.epoch, e.start_offset, e.end_offset) for e in entries] == [(1, 0, 124000), (2, 124000, OPEN_END)]


@pytest.mark.parametrize(
    "text",
    [
        "2\n1725254278\n1-0\n",  # count says 2
        "1\n1725254279\n1-0\n",  # crc off by one
        "1\n",  # no crc line
        "x\n0\n1-0\n",
    ],
)
def test_checkpoint_refuses_bad_files(text):
    with pytest.raises(EpochFileError):
        decode_checkpoint(text)


def test_crc_zero_is_not_checked():
    assert [(e.epoch, e.start_offset) for e in decode_checkpoint("1\n0\n3-77\n")] == [(3, 77)]


def test_file_round_trip_and_bak(tmp_path):
    path = tmp_path / "epochFileCheckpoint"
    cache = EpochFileCache(str(path))
    assert cache.load() and len(cache) == 0  # no file: empty
    assert cache.append_entry(1, 0)
    assert path.read_bytes() == JAVA_ONE
    assert cache.append_entry(2, 124000)
    assert path.read_bytes() == JAVA_TWO
    assert (tmp_path / "epochFileCheckpoint.bak").read_bytes() == JAVA_ONE  # MixAll.string2File keeps the old
    again = EpochFileCache(str(path))
    assert again.load() and [(e.epoch, e.start_offset) for e in again.entries()] == [(1, 0), (2, 124000)]
    path.write_text("garbage")
    fallback = EpochFileCache(str(path))
    assert fallback.load() and fallback.last_epoch() == 1  # the .bak


def test_append_refuses_smaller_entries():
    cache = EpochFileCache(entries=[E(2, 100)])
    assert not cache.append_entry(2, 200)
    assert not cache.append_entry(3, 100)
    assert cache.append_entry(3, 101)
    assert cache.get_entry(2).end_offset == 101


def test_lookups():
    cache = EpochFileCache(entries=[E(1, 0), E(2, 100), E(4, 300)])
    assert cache.find_epoch_entry_by_offset(0).epoch == 1
    assert cache.find_epoch_entry_by_offset(100).epoch == 2
    assert cache.find_epoch_entry_by_offset(10**12).epoch == 4
    assert cache.next_entry(2).epoch == 4
    assert cache.next_entry(4) is None
    assert cache.first_entry().epoch == 1 and cache.last_epoch() == 4
    assert EpochFileCache().last_epoch() == -1


def test_truncate_suffix_and_prefix():
    cache = EpochFileCache(entries=[E(1, 0), E(2, 100), E(3, 200)])
    cache.truncate_suffix_by_offset(150)
    assert [(e.epoch, e.end_offset) for e in cache.entries()] == [(1, 100), (2, OPEN_END)]
    cache.truncate_suffix_by_epoch(2)
    assert [(e.epoch, e.end_offset) for e in cache.entries()] == [(1, OPEN_END)]
    cache = EpochFileCache(entries=[E(1, 0), E(2, 100), E(3, 200)])
    cache.truncate_prefix_by_offset(100)
    assert [e.epoch for e in cache.entries()] == [2, 3]


@pytest.mark.parametrize(
    ("local", "local_max", "master", "master_max", "want"),
    [
        # same history, slave behind: keep everything it has
        ([E(1, 0)], 500, [E(1, 0)], 900, 500),
        # the slave wrote past the master's end of epoch 1 as master, then epoch 2 went elsewhere
        ([E(1, 0)], 900, [E(1, 0), E(2, 600)], 1000, 600),
        # the slave led epoch 2 (lost), the master's epoch 3 starts at 700: cut back to 700
        ([E(1, 0), E(2, 700)], 1200, [E(1, 0), E(3, 700)], 1500, 700),
        # the same epoch started elsewhere: fall back to the older common epoch
        ([E(1, 0), E(2, 300)], 400, [E(1, 0), E(2, 350)], 900, 300),
        # no common epoch
        ([E(5, 0)], 10, [E(6, 0)], 20, -1),
    ],
)
def test_truncate_offset(local, local_max, master, master_max, want):
    assert truncate_offset(local, local_max, master, master_max) == want


def test_broker_metadata_files_as_java(tmp_path):
    p = tmp_path / "brokerIdentity"
    md = BrokerMetadata(str(p))
    assert not md.read() and not md.is_loaded
    md.update_and_persist("DefaultCluster", "autoswitch-mixed-pyrmq", 2)
    assert p.read_bytes() == b"DefaultCluster#autoswitch-mixed-pyrmq#2"  # a Java 5.5.0 broker's file
    back = BrokerMetadata(str(p))
    assert back.read() and back.is_loaded and back.broker_id == 2
    temp = TempBrokerMetadata(str(p) + "-temp")
    temp.update_and_persist_temp("C", "b", 3, "127.0.0.1:10911;1795598638036")
    assert (tmp_path / "brokerIdentity-temp").read_bytes() == b"C#b#3#127.0.0.1:10911;1795598638036"
    t2 = TempBrokerMetadata(str(p) + "-temp")
    assert t2.read() and t2.is_loaded and t2.register_check_code == "127.0.0.1:10911;1795598638036"
    t2.clear()
    assert not (tmp_path / "brokerIdentity-temp").exists() and not t2.is_loaded
