"""The start sequence both server commands share (pyrmq.startup): a config file that
cannot be read and a busy port end the process with one readable line and exit 1,
never a traceback; -p prints the file's values."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROG = {"namesrv": "pyrmq namesrv", "broker": "pyrmq broker"}


def _run(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pyrmq", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, HOME=str(tmp_path)),
    )


@pytest.mark.parametrize("command", ["namesrv", "broker"])
def test_malformed_escape_in_config_file(tmp_path: Path, command: str) -> None:
    conf = tmp_path / "x.properties"
    conf.write_text("listenPort=1\nbad=\\u12\n")
    out = _run(tmp_path, command, "-c", str(conf))
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1].startswith(f"{PROG[command]}: cannot read config file {conf}")
    assert "Malformed" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("command", ["namesrv", "broker"])
def test_missing_config_file(tmp_path: Path, command: str) -> None:
    out = _run(tmp_path, command, "-c", str(tmp_path / "absent.properties"))
    assert out.returncode == 1
    assert f"{PROG[command]}: cannot read config file" in out.stderr and "Traceback" not in out.stderr


def test_broker_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        conf = tmp_path / "broker.conf"
        conf.write_text(
            f"listenPort={port}\nbindAddress=127.0.0.1\nbrokerIP1=127.0.0.1\nnamesrvAddr=127.0.0.1:1\n"
            f"storePathRootDir={tmp_path / 'store'}\n"
        )
        out = _run(tmp_path, "broker", "-c", str(conf))
    assert out.returncode == 1
    assert "pyrmq broker: cannot start the broker: Address already in use" in out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "store" / "abort").exists()  # shut down cleanly after the failed start


def test_broker_print_config_items_from_file(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerRole=SLAVE\nflushDiskType=SYNC_FLUSH\nmaxMessageSize=4MB\ncustomKey=1\n")
    out = _run(tmp_path, "broker", "-c", str(conf), "-p")
    assert out.returncode == 0, out.stderr
    items = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    assert items["brokerRole"] == "SLAVE" and items["flushDiskType"] == "SYNC_FLUSH"
    assert items["maxMessageSize"] == str(4 * 1024 * 1024) and items["customKey"] == "1"
    assert "maxMessageSize='4MB'" in out.stderr


def test_second_broker_on_a_locked_store_leaves_it_intact(tmp_path: Path) -> None:
    """A store another broker holds: one line, exit 1, and the config files are not rewritten."""
    from pyrmq.store.checkpoint import StoreLock

    store = tmp_path / "store"
    (store / "config").mkdir(parents=True)
    topics = store / "config" / "topics.json"
    topics.write_text('{"topicConfigTable":{"Keep":{"topicName":"Keep","readQueueNums":4,"writeQueueNums":4}}}')
    lock = StoreLock(str(store / "lock"))
    lock.acquire()
    try:
        conf = tmp_path / "broker.conf"
        conf.write_text(f"listenPort=0\nbindAddress=127.0.0.1\nnamesrvAddr=127.0.0.1:1\nstorePathRootDir={store}\n")
        before = topics.read_text()
        out = _run(tmp_path, "broker", "-c", str(conf))
    finally:
        lock.release()
    assert out.returncode == 1
    assert "pyrmq broker: cannot start the broker:" in out.stderr and "Traceback" not in out.stderr
    assert topics.read_text() == before
