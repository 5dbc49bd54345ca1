"""The test doubles every suite shares: one fake channel, one manual clock, one golden-file loader.

Processors, managers and stores take their collaborators as arguments (a channel in the
RequestContext, a ``clock: Callable[[], int]`` in ms), so a test passes these instead of a
socket or the real time. Keep one of each here; a test that needs more behaviour extends them.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyrmq.protocol.command import FLAG_ONEWAY, FLAG_RESPONSE, RemotingCommand
from pyrmq.protocol.errors import RemotingTimeout
from pyrmq.remoting.channel import ProcessorTable

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden"


class FakeChannel:
    """A connection as processors see it (remoting.channel.Channel's surface), with no transport.

    Every command pyrmq sends on it lands in ``sent`` (send_oneway marks it one-way first, as
    Channel#send_oneway does); a closed channel drops what is sent and returns False, like the
    real one. ``invoke`` records the request in ``invoked`` and returns ``answer``: a command, a
    function of the request, or None for a client that never answers (RemotingTimeout).
    """

    def __init__(
        self,
        addr: str = "127.0.0.1:50000",
        answer: RemotingCommand | Callable[[RemotingCommand], RemotingCommand] | None = None,
    ) -> None:
        self.remote_addr = addr
        self.local_addr = "127.0.0.1:10911"
        self.closed = False
        self.attrs: dict[str, Any] = {}
        self.transport = None
        self.sent: list[RemotingCommand] = []
        self.invoked: list[RemotingCommand] = []
        self.answer = answer
        self.table = ProcessorTable()  # what a real channel dispatches with (rpc metrics hook)

    def __repr__(self) -> str:
        return f"<FakeChannel {self.remote_addr}{' closed' if self.closed else ''}>"

    def send(self, cmd: RemotingCommand) -> bool:
        if self.closed:
            return False
        self.sent.append(cmd)
        return True

    def send_oneway(self, cmd: RemotingCommand) -> bool:
        cmd.flag = (cmd.flag | FLAG_ONEWAY) & ~FLAG_RESPONSE
        return self.send(cmd)

    async def invoke(self, cmd: RemotingCommand, timeout_s: float) -> RemotingCommand:
        self.invoked.append(cmd)
        if self.answer is None:
            raise RemotingTimeout(f"wait response on {self.remote_addr} timeout {int(timeout_s * 1000)}(ms)")
        return self.answer(cmd) if callable(self.answer) else self.answer

    def close(self) -> None:
        self.closed = True


class ManualClock:
    """Epoch milliseconds that move only when a test says so: ``clock()`` or ``clock.now()``,
    and ``advance(ms)``. Pass it wherever pyrmq takes a clock (pyrmq.common.clock): controllers
    hand it on to their store, managers, transaction checks, timers and schedulers. The
    ``clock`` fixture (tests/conftest.py) is one.
    """

    START_MS = 1_700_000_000_000  # 2023-11-14T22:13:20Z, easy to spot in a dump

    def __init__(self, start_ms: int = START_MS) -> None:
        self._ms = start_ms

    def now(self) -> int:
        return self._ms

    __call__ = now

    def advance(self, ms: int) -> None:
        self._ms += ms

    def __repr__(self) -> str:
        return f"<ManualClock {self._ms}>"


@functools.cache
def _manifest(folder: Path) -> dict[str, Any]:
    path = folder / "MANIFEST.json"
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return data.get("files", data)


def golden_entry(name: str | Path) -> dict[str, Any] | None:
    """The MANIFEST.json entry of a golden file: from the closest manifest above it that lists it
    (tests/golden/MANIFEST.json keys paths from tests/golden/, a folder's own manifest from itself)."""
    path = GOLDEN_DIR / name
    if not path.is_relative_to(GOLDEN_DIR):
        raise ValueError(f"{path} is not under {GOLDEN_DIR}")
    for folder in path.parents:
        entry = _manifest(folder).get(path.relative_to(folder).as_posix())
        if entry is not None or folder == GOLDEN_DIR:
            return entry
    return None


def golden(name: str | Path) -> bytes:
    """The bytes of a golden file; ``name`` is relative to tests/golden/ (or an absolute path).

    A ``.hex`` file is annotated hex: ``#`` starts a comment and whitespace is ignored. Any other
    file is taken as it is. A file its MANIFEST.json lists must still have the sha256 and length
    recorded there, so a golden vector never changes unnoticed.
    """
    path = GOLDEN_DIR / name
    if path.suffix == ".hex":
        text = "".join(line.split("#", 1)[0] for line in path.read_text(encoding="utf-8").splitlines())
        data = bytes.fromhex("".join(text.split()))
    else:
        data = path.read_bytes()
    entry = golden_entry(path)
    if entry is not None:
        rel = path.relative_to(GOLDEN_DIR)
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], f"{rel} changed without its MANIFEST entry"
        assert entry.get("length", len(data)) == len(data), f"{rel}: {len(data)} bytes, MANIFEST says {entry['length']}"
    return data


def record_golden(name: str, data: bytes, source: str | None = None) -> None:
    """Write a golden file (``name`` relative to tests/golden/) and its entry in its own folder's
    MANIFEST.json: sha256 and length, and ``source`` (kept from the old entry when None)."""
    path = GOLDEN_DIR / name
    path.write_bytes(data)
    manifest = path.parent / "MANIFEST.json"
    entries = json.loads(manifest.read_text(encoding="utf-8"))
    entry = entries["files"].setdefault(path.name, {})
    if source is not None:
        entry["source"] = source
    entry.update(sha256=hashlib.sha256(data).hexdigest(), length=len(data))
    manifest.write_text(json.dumps(entries, indent=1) + "\n", encoding="utf-8")
    _manifest.cache_clear()
