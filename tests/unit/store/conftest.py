"""Fixtures for store unit tests: golden store vectors, a pinned clock, small stores."""

from __future__ import annotations

import pytest
from support.fakes import GOLDEN_DIR
from support.fakes import golden as load_golden

from pyrmq.store.message import MessageExtBrokerInner
from pyrmq.store.message_store import MessageStore
from pyrmq.store.store_config import MessageStoreConfig


@pytest.fixture
def golden():
    """golden(name) -> the bytes of tests/golden/store/<name>."""
    return lambda name: load_golden(GOLDEN_DIR / "store" / name)


def tiny_config(root, **kw) -> MessageStoreConfig:
    """Small files so rolling happens after a few messages."""
    base = dict(
        store_path_root_dir=str(root),
        mapped_file_size_commit_log=4096,
        mapped_file_size_consume_queue=20 * 16,
        max_hash_slot_num=64,
        max_index_num=256,
    )
    base.update(kw)
    return MessageStoreConfig(**base)


def make_msg(i: int, topic: str = "T", queue_id: int = 0, **props) -> MessageExtBrokerInner:
    p = {"TAGS": f"tag{i % 3}", "KEYS": f"k{i} common", "UNIQ_KEY": f"UNIQ{i:08d}"}
    p.update(props)
    return MessageExtBrokerInner(
        topic=topic,
        body=f"body-{i}".encode() * (1 + i % 5),
        queue_id=queue_id,
        properties=p,
        born_timestamp=1_700_000_000_000 + i,
        born_host=("10.0.0.9", 5555),
        store_host=("10.0.0.2", 10911),
    )


@pytest.fixture
def open_store(tmp_path, clock):
    """open_store(**config) -> started MessageStore on tmp_path/store; all shut down at the end."""
    stores = []

    def _open(root=None, **kw):
        s = MessageStore(tiny_config(root or tmp_path / "store", **kw), clock=clock)
        s.load()
        s.start()
        stores.append(s)
        return s

    yield _open
    for s in stores:
        if s._loaded:
            s.shutdown()


@pytest.fixture
def msg_factory():
    return make_msg


@pytest.fixture
def config_factory():
    return tiny_config
