"""pyrmq.broker.dledger_role.dledger_config: the DLedger member a broker builds from its keys, as
DLedgerCommitLog's constructor does, and the refusals of a broker that could not build one."""

from __future__ import annotations

import pytest

from pyrmq.broker.config import BrokerConfig
from pyrmq.broker.dledger_role import dledger_config, slave_id
from pyrmq.store.store_config import MessageStoreConfig

PEERS = "n0-127.0.0.1:40911;n1-127.0.0.1:40912;n2-127.0.0.1:40913"


def props(**kv: str) -> dict[str, str]:
    return {"enableDLegerCommitLog": "true", "dLegerGroup": "g", "dLegerPeers": PEERS, "dLegerSelfId": "n1", **kv}


def test_member_from_the_broker_keys() -> None:
    store = MessageStoreConfig(store_path_root_dir="/data/rmq", mapped_file_size_commit_log=1 << 20)
    cfg = dledger_config(props(preferredLeaderId="n0", storePathDLedgerCommitLog="/fast/dl"), store)
    assert cfg is not None
    assert (cfg.group, cfg.self_id, cfg.peers) == ("g", "n1", PEERS)
    assert cfg.store_path == "/data/rmq/dledger-n1"  # storeBaseDir is storePathRootDir
    assert (cfg.data_file_size, cfg.data_store_path, cfg.preferred_leader_ids) == (1 << 20, "/fast/dl", "n0")
    assert dledger_config({"enableDLegerCommitLog": "false", "dLegerSelfId": "n1"}, store) is None
    assert dledger_config({}, store) is None


@pytest.mark.parametrize(
    ("kv", "why"),
    [
        ({"dLegerGroup": ""}, "needs dLegerGroup, dLegerPeers and dLegerSelfId"),
        ({"dLegerSelfId": "n7"}, "is not one of the peers"),
        ({"dLegerPeers": "n0-nohost;n1-127.0.0.1:1"}, "bad DLedger peer"),
        ({"dLegerSelfId": "self", "dLegerPeers": "self-127.0.0.1:1"}, "expected a letter then digits"),
    ],
)
def test_bad_keys_refused(kv: dict[str, str], why: str) -> None:
    with pytest.raises(ValueError, match=why):
        dledger_config(props(**kv), MessageStoreConfig())


def test_slave_ids_and_the_start_refusal(tmp_path) -> None:
    assert [slave_id(i) for i in ("n0", "n1", "n12")] == [1, 2, 13]
    broken = BrokerConfig.from_properties({"storePathRootDir": str(tmp_path), "enableDLegerCommitLog": "true"})
    assert broken.check_supported() == "enableDLegerCommitLog=true needs dLegerGroup, dLegerPeers and dLegerSelfId"
    good = BrokerConfig.from_properties({"storePathRootDir": str(tmp_path), **props(preferredLeaderId="n0")})
    assert good.check_supported() is None
    # MessageStoreConfig's keys, not "unknown to the broker"; listed by getBrokerConfig only when set
    assert good.unknown_keys() == []
    assert (good.store.d_leger_self_id, good.store.preferred_leader_id) == ("n1", "n0")
    assert "dLegerGroup" not in BrokerConfig.from_properties({"storePathRootDir": str(tmp_path)}).all_properties()
    # BrokerStartup refuses controller mode with a DLedger commit log, in these words
    both = BrokerConfig.from_properties({"storePathRootDir": str(tmp_path), "enableControllerMode": "true", **props()})
    assert both.check_supported() == "The config enableControllerMode and enableDLegerCommitLog cannot both be true."
    controller_only = {"storePathRootDir": str(tmp_path), "enableControllerMode": "true"}
    assert BrokerConfig.from_properties(controller_only).check_supported() is None


def test_role_changes_leave_the_topic_data_version_as_java_does(make_broker, tmp_path) -> None:
    """DLedgerRoleChangeHandler#changeToMaster/changeToSlave do not touch the data version (only the
    controller mode stamps its epoch). A term there made the name server refuse a Java successor:
    it keeps the registered master while that one's stateVersion is the higher."""
    import asyncio
    from types import SimpleNamespace

    from pyrmq.broker.dledger_role import DLedgerRoleChangeHandler
    from pyrmq.dledger.config import DLedgerConfig
    from pyrmq.dledger.raft import Role
    from pyrmq.dledger.server import DLedgerServer
    from pyrmq.store.store_config import BrokerRole

    b = make_broker()
    server = DLedgerServer(DLedgerConfig(group="g", self_id="n1", peers=PEERS, store_base_dir=str(tmp_path / "dl")))
    store = SimpleNamespace(dledger=SimpleNamespace(server=server, ready=True))
    handler = DLedgerRoleChangeHandler(b.c, store)  # type: ignore[arg-type]
    version = b.c.topic_config_manager.data_version
    before = (version.state_version, version.counter)

    async def registered(*_: object) -> None:  # no name server here
        return None

    b.c.register_broker_all = registered  # type: ignore[method-assign]
    asyncio.run(handler._change(7, Role.LEADER))
    assert (b.c.store_config.broker_role, b.c.config["brokerId"]) == (BrokerRole.SYNC_MASTER, 0)
    asyncio.run(handler._change(8, Role.FOLLOWER))
    assert (b.c.store_config.broker_role, b.c.config["brokerId"]) == (BrokerRole.SLAVE, 2)
    assert (version.state_version, version.counter) == before


def test_a_master_back_from_a_freeze_skips_its_periodic_registration(make_broker, tmp_path) -> None:
    """A DLedger master whose last majority-answered heartbeat round is older than 3 intervals (it
    was SIGSTOPped) registers nothing periodically: as brokerId 0 it would replace the new master."""
    import time
    from types import SimpleNamespace

    from pyrmq.broker.dledger_role import DLedgerRoleChangeHandler
    from pyrmq.dledger.config import DLedgerConfig
    from pyrmq.dledger.raft import Role
    from pyrmq.dledger.server import DLedgerServer

    b = make_broker()
    server = DLedgerServer(DLedgerConfig(group="g", self_id="n1", peers=PEERS, store_base_dir=str(tmp_path / "dl")))
    handler = DLedgerRoleChangeHandler(b.c, SimpleNamespace(dledger=SimpleNamespace(server=server)))  # type: ignore[arg-type]
    now = time.monotonic_ns() // 1_000_000
    b.c.config["brokerId"] = 0
    server.member.role = Role.LEADER
    server.member.last_succ_heartbeat = now - 1000
    assert handler.may_register_periodically()
    server.member.last_succ_heartbeat = now - 3 * 2000 - 500  # frozen past maxHeartBeatLeak x 2 s
    assert not handler.may_register_periodically()
    server.member.role = Role.CANDIDATE  # stepped down, not yet a slave
    assert not handler.may_register_periodically()
    b.c.config["brokerId"] = 2
    assert handler.may_register_periodically()
