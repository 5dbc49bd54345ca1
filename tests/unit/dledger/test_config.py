"""pyrmq.dledger.config: DLedgerConfig's ``peers`` string, read as Java's DLedgerConfig does, and a
clear error for each way it can be wrong."""

from __future__ import annotations

import pytest

from pyrmq.dledger.config import DLedgerConfig, parse_peers


def test_peers_in_their_order() -> None:
    assert parse_peers("n0-127.0.0.1:40911;n1-localhost:40912; n2-10.0.0.3:1;") == {
        "n0": "127.0.0.1:40911",
        "n1": "localhost:40912",
        "n2": "10.0.0.3:1",
    }


@pytest.mark.parametrize(
    ("peers", "message"),
    [
        ("", "no DLedger peers"),
        ("n0:40911", "expected <id>-<host>:<port>"),
        ("n0-127.0.0.1", "expected <id>-<host>:<port>"),
        ("n0-127.0.0.1:port", "expected <id>-<host>:<port>"),
        ("-127.0.0.1:1", "expected <id>-<host>:<port>"),
        ("n0-a:1;n0-b:2", "listed twice"),
    ],
)
def test_bad_peers(peers: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_peers(peers)


def test_self_must_be_a_peer(tmp_path) -> None:
    config = DLedgerConfig(group="g", self_id="n3", peers="n0-127.0.0.1:1;n1-127.0.0.1:2", store_base_dir=str(tmp_path))
    with pytest.raises(ValueError, match="self id 'n3' is not one of the peers"):
        config.peer_map()
    assert config.store_path == str(tmp_path / "dledger-n3")


def test_cli_bad_peers_is_one_line_and_exit_1(tmp_path, capsys) -> None:
    from pyrmq.dledger.server import main

    with pytest.raises(SystemExit) as info:
        main(["--group", "g", "--self-id", "n0", "--peers", "n0-nowhere", "--store-base-dir", str(tmp_path)])
    assert info.value.code == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("pyrmq dledger: bad DLedger peer 'n0-nowhere'") and "\n" not in err
