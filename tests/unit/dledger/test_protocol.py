"""pyrmq.dledger.protocol: every RPC body byte for byte against fastjson 1.2.83 over the 0.3.2 beans
(tests/golden/dledger/rpc/), read back, and wrapped in RemotingCommands."""

from __future__ import annotations

import pytest
from support.fakes import golden

from pyrmq.dledger import protocol as p
from pyrmq.dledger.entry import DLedgerEntry
from pyrmq.protocol.command import RemotingCommand, decode_frame, encode

TERM = 0x0102030405
BASE = {"group": "g1", "local_id": "n0", "remote_id": "n1", "leader_id": "n0", "term": TERM}


def entry(index: int, body: bytes) -> DLedgerEntry:
    return DLedgerEntry(
        index=index, term=3, pos=0x0A0B0C, channel=7, chain_crc=0x11223344, body_crc=0x55667788, body=body
    )


CASES: list[tuple[str, p.RequestOrResponse]] = [
    ("vote.request", p.VoteRequest(**BASE, ledger_end_index=0x0607080910, ledger_end_term=2)),
    ("vote.response", p.VoteResponse(**BASE, vote_result=p.VoteResult.REJECT_ALREADY_VOTED)),
    ("vote.response.default", p.VoteResponse()),
    ("heartbeat.request", p.HeartBeatRequest(**BASE)),
    ("heartbeat.response", p.HeartBeatResponse(**BASE, code=p.DLedgerResponseCode.EXPIRED_TERM)),
    ("heartbeat.request.default", p.HeartBeatRequest()),
    ("push.append.request", p.PushEntryRequest(**BASE, commit_index=41, entry=entry(42, b"hello"))),
    (
        "push.batch_append.request",
        p.PushEntryRequest(**BASE, commit_index=41, batch_entry=[entry(42, b"one"), entry(43, b"two")]),
    ),
    ("push.commit.request", p.PushEntryRequest(**BASE, commit_index=43, type=p.PushType.COMMIT)),
    ("push.compare.request", p.PushEntryRequest(**BASE, type=p.PushType.COMPARE, entry=entry(40, b""))),
    (
        "push.truncate.request",
        p.PushEntryRequest(**BASE, commit_index=39, type=p.PushType.TRUNCATE, entry=entry(40, b"x")),
    ),
    (
        "push.response",
        p.PushEntryResponse(
            **BASE, index=42, begin_index=5, end_index=44, count=2, code=p.DLedgerResponseCode.INCONSISTENT_STATE
        ),
    ),
    ("push.response.default", p.PushEntryResponse()),
    ("append.request", p.AppendEntryRequest(**BASE, body=b"payload")),
    ("append.response", p.AppendEntryResponse(**BASE, index=42, pos=0x0A0B0C)),
    ("pull.request", p.PullEntriesRequest(**BASE, node_id="n2", begin_index=17)),
    ("pull.response", p.PullEntriesResponse(**BASE, entries=[entry(17, b"p")])),
    ("get.request", p.GetEntriesRequest(**BASE, begin_index=17, max_size=3, index_list=[17, 18])),
    ("get.response", p.GetEntriesResponse(**BASE, entries=[entry(17, b"g")])),
    ("metadata.request", p.MetadataRequest(**BASE)),
    (
        "metadata.response",
        p.MetadataResponse(**BASE, peers={"n0": "127.0.0.1:40911", "n1": "127.0.0.1:40912"}),
    ),
    (
        "leadership_transfer.request",
        p.LeadershipTransferRequest(**BASE, transfer_id="n0", transferee_id="n2", take_leadership_ledger_index=99),
    ),
    (
        "leadership_transfer.response",
        p.LeadershipTransferResponse(**BASE, code=p.DLedgerResponseCode.TAKE_LEADERSHIP_FAILED),
    ),
]


@pytest.mark.parametrize(("name", "bean"), CASES, ids=[c[0] for c in CASES])
def test_body_golden(name: str, bean: p.RequestOrResponse) -> None:
    want = golden(f"dledger/rpc/{name}.json")
    got = bean.encode()
    assert got == want, f"{name}.json:\n got {got.decode()}\nwant {want.decode()}"
    assert type(bean).decode(want) == bean


def test_codes() -> None:
    assert p.DLedgerRequestCode.PUSH == 51004 and p.DLedgerRequestCode.LEADERSHIP_TRANSFER == 51005
    assert p.DLedgerResponseCode.INCONSISTENT_STATE == 406 and p.DLedgerResponseCode.LEADER_TRANSFERRING == 506
    assert set(p.REQUEST_TYPES) == set(p.RESPONSE_TYPES) == {c for c in p.DLedgerRequestCode if c > 0}


def test_remoting_command_round_trip() -> None:
    vote = p.VoteRequest(**BASE, ledger_end_index=9, ledger_end_term=3)
    cmd = decode_frame(encode(p.request_command(vote))[4:])
    assert cmd.code == 51001 and not cmd.is_response
    assert p.decode_request(cmd) == vote
    answer = p.VoteResponse(**BASE, vote_result=p.VoteResult.ACCEPT)
    resp = decode_frame(encode(p.response_command(cmd, answer))[4:])
    assert (resp.code, resp.opaque, resp.is_response) == (200, cmd.opaque, True)
    assert p.decode_response(cmd.code, resp) == answer


@pytest.mark.parametrize(
    "body",
    [b"", b"[1]", b"{not json", b'{"term":"x"}', b'{"voteResult":"MAYBE"}', b'{"term":true}'],
)
def test_bad_bodies_raise(body: bytes) -> None:
    with pytest.raises(p.DLedgerProtocolError):
        p.VoteResponse.decode(body)


def test_bad_entry_body_raises() -> None:
    with pytest.raises(p.DLedgerProtocolError, match="base64"):
        p.PushEntryRequest.decode(b'{"entry":{"body":"!!"}}')
    with pytest.raises(p.DLedgerProtocolError):
        p.decode_request(RemotingCommand.request(12345, body=b"{}"))


def test_unknown_properties_ignored_and_numbers_as_strings() -> None:
    got = p.VoteRequest.decode(b'{"term":"7","ledgerEndIndex":3,"extra":{"a":1}}')
    assert (got.term, got.ledger_end_index, got.ledger_end_term) == (7, 3, -1)
