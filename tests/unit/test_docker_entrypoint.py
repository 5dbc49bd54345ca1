"""docker/entrypoint.py without Docker: the argv it would exec and the merged config file it
writes, so a rename in pyrmq that breaks the image fails the fast path, not only the container
suite."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from pyrmq.common.properties import load_properties

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def entrypoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("PYRMQ_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("PYRMQ_CONF_DIR", str(tmp_path / "conf"))
    monkeypatch.setenv("PYRMQ_RUN_DIR", str(tmp_path / "run"))
    spec = importlib.util.spec_from_file_location("pyrmq_docker_entrypoint", ROOT / "docker" / "entrypoint.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_broker_file_then_environment(entrypoint: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "broker.conf").write_text("brokerName=fromFile\nlistenPort=10999\nflushDiskType=ASYNC_FLUSH\n")
    env = {"RMQ_BROKER_NAME": "fromEnv", "RMQ_FLUSH_DISK_TYPE": "SYNC_FLUSH", "RMQ_someCustomKey": "x"}
    argv, targets = entrypoint.command(["broker"], env)
    assert argv[:4] == [sys.executable, "-m", "pyrmq", "broker"] and argv[4] == "-c"
    props = load_properties(Path(argv[5]).read_text())
    assert props["brokerName"] == "fromEnv" and props["flushDiskType"] == "SYNC_FLUSH"  # store keys are known too
    assert props["storePathRootDir"] == str(tmp_path / "store") and props["someCustomKey"] == "x"
    assert targets == {"broker": "127.0.0.1:10999"}


def test_namesrv_and_dev(entrypoint: ModuleType, tmp_path: Path) -> None:
    argv, targets = entrypoint.command(["namesrv"], {"RMQ_LISTEN_PORT": "9988"})
    props = load_properties(Path(argv[5]).read_text())
    assert props["listenPort"] == "9988" and props["kvConfigPath"].startswith(str(tmp_path / "store"))
    assert targets == {"namesrv": "127.0.0.1:9988"}
    argv, targets = entrypoint.command([], {"PYRMQ_BROKER_PORT": "10123"})
    assert argv[3] == "dev" and "--broker-port" in argv
    assert targets == {"namesrv": "127.0.0.1:9876", "broker": "127.0.0.1:10123"}


def test_controller_environment_and_peer_port(entrypoint: ModuleType, tmp_path: Path) -> None:
    env = {
        "RMQ_CONTROLLER_DLEGER_PEERS": "n0-127.0.0.1:29878",
        "RMQ_controllerDLegerSelfId": "n0",
        "RMQ_ENABLE_ELECT_UNCLEAN_MASTER": "false",
    }
    argv, targets = entrypoint.command(["controller"], env)
    assert argv[3:5] == ["controller", "-c"]
    props = load_properties(Path(argv[5]).read_text())
    assert props["controllerDLegerPeers"] == "n0-127.0.0.1:29878" and props["controllerDLegerSelfId"] == "n0"
    assert props["enableElectUncleanMaster"] == "false"  # Java spelling restored from the variable
    assert props["controllerStorePath"] == str(tmp_path / "store" / "controller")
    assert targets == {"controller": "127.0.0.1:29878"}  # the peer port serves, not listenPort
