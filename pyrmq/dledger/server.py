"""The asyncio driver of a DLedger member: its port, its calls to the peers, its timers, its disk.

Java: ``DLedgerServer`` with ``DLedgerRpcNettyService`` (a remoting server and client, the eight
codes), the elector's and pusher's threads (here one tick every ``TICK_MS``, as their loops sleep
about 10 ms), ``DLedgerMmapFileStore``'s FlushDataService (fsync every ``flushFileInterval``, the
checkpoint every ``checkPointInterval``) and ``DLedgerEntryPusher#waitAck`` (an append resolves
once the commit index reaches it).

Ordering: the state machine's outputs are applied in order, so a ``TermPersisted`` is on disk
(``currterm``, fsynced by the atomic writer) before any vote answer or request that follows it,
as MemberState#persistTerm runs before the elector answers or sends.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Callable, Coroutine
from typing import TypeVar

from pyrmq.protocol.codes import ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.remoting.client import RemotingClient, parse_addr
from pyrmq.remoting.loop import install_uvloop_if_available, setup_logging, stop_on_signals
from pyrmq.remoting.server import RemotingServer, RequestContext
from pyrmq.remoting.tls import TlsConfig

from .config import DLedgerConfig
from .entry import DLedgerEntry
from .protocol import (
    REQUEST_TYPES,
    AppendEntryRequest,
    AppendEntryResponse,
    DLedgerProtocolError,
    DLedgerResponseCode,
    GetEntriesRequest,
    GetEntriesResponse,
    MetadataRequest,
    MetadataResponse,
    PullEntriesRequest,
    RequestOrResponse,
    decode_request,
    decode_response,
    failure,
    request_command,
    response_command,
)
from .raft import (
    AppendError,
    Committed,
    DLedgerMember,
    NotLeaderError,
    Output,
    Reply,
    Role,
    RoleChanged,
    Send,
    TermPersisted,
    Timing,
)
from .raft import network_error as _network_error
from .store_files import (
    DEFAULT_DATA_FILE_SIZE,
    DEFAULT_INDEX_FILE_SIZE,
    DLedgerStoreWriter,
    StoreFormatError,
    fsync_paths,
)

log = logging.getLogger("pyrmq.dledger.server")

__all__ = ["AppendError", "DLedgerServer", "RoleListener"]

TICK_MS = 10

_R = TypeVar("_R", bound=RequestOrResponse)
#: the remark of the answer to a PULL (51003), which DLedger 0.3.2 declares but does not serve
PULL_NOT_SERVED = "PULL is not served: DLedger 0.3.2's handlePull returns null (Java answers SYSTEM_ERROR too)"

Code = DLedgerResponseCode

#: ``listener(term, role, leader_id)`` after every role change (DLedgerLeaderElector.RoleChangeHandler)
RoleListener = Callable[[int, Role, "str | None"], None]


def _now() -> int:
    return time.monotonic_ns() // 1_000_000


class DLedgerServer:
    """One member on ``host`` and the port of its own peer address. Not thread-safe: everything
    runs on the event loop it was started on."""

    def __init__(
        self, config: DLedgerConfig, *, host: str | None = None, remoting: RemotingServer | None = None
    ) -> None:
        """``remoting``: serve on this server instead of a new one (Java's DLedgerController
        registers the controller's processors on the DLedger server's port)."""
        self.config = config
        self.peers = config.peer_map()
        self.address = self.peers[config.self_id]
        addr_host, port = parse_addr(self.address)
        self.store = DLedgerStoreWriter(
            config.store_path,
            data_file_size=config.data_file_size,
            index_file_size=config.index_file_size,
            data_path=config.data_store_path,
        )
        self.member = DLedgerMember(
            config.group,
            config.self_id,
            self.peers,
            self.store,
            term_state=self.store.term,
            timing=config.timing,
            committed_index=self.store.committed_index,
            preferred_leader_ids=config.preferred_leader_ids,
        )
        self.remoting = remoting or RemotingServer(host or addr_host, port, name=f"dledger-{config.self_id}")
        for code in REQUEST_TYPES:
            self.remoting.register_handler(code, self._on_request)
        # the peers' port follows the process's tls.* settings as Java's DLedgerRpcNettyService does
        self.client = RemotingClient(
            connect_timeout_s=config.rpc_timeout_ms / 1000, tls=TlsConfig.system().outgoing_context()
        )
        self.role_listeners: list[RoleListener] = []
        #: ``listener(committed_index)`` each time the commit index moves, before the appends it
        #: acknowledges resolve (a DLedger commit log dispatches there)
        self.commit_listeners: list[Callable[[int], None]] = []
        self._waiting: dict[int, asyncio.Future[DLedgerEntry]] = {}
        self._held: dict[int, asyncio.Future[RequestOrResponse]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._loops: list[asyncio.Task[None]] = []
        self._closed = False

    # ------------------------------------------------------------------ state

    @property
    def role(self) -> Role:
        return self.member.role

    @property
    def term(self) -> int:
        return self.member.curr_term

    @property
    def leader_id(self) -> str | None:
        return self.member.leader_id

    @property
    def committed_index(self) -> int:
        return self.member.committed_index

    @property
    def is_leader(self) -> bool:
        return self.member.role is Role.LEADER

    def leadership_confirmed(self) -> bool:
        """A leader whose last heartbeat round a majority answered is at most `maxHeartBeatLeak`
        intervals old (DLedgerLeaderElector#maintainAsLeader steps down past that). False for a
        leader just back from a SIGSTOP or a partition: its term is likely over elsewhere."""
        m, t = self.member, self.member.timing
        return (
            m.role is Role.LEADER
            and _now() - m.last_succ_heartbeat <= t.max_heart_beat_leak * t.heart_beat_time_interval_ms
        )

    # ------------------------------------------------------------------ life cycle

    async def start(self) -> None:
        await self.remoting.start()
        loop = asyncio.get_running_loop()
        self._loops = [
            loop.create_task(self._tick_loop(), name=f"dledger-{self.config.self_id}-tick"),
            loop.create_task(self._flush_loop(), name=f"dledger-{self.config.self_id}-flush"),
        ]

    async def close(self) -> None:
        """Stop: the port, the calls, the timers; then a last fsync and checkpoint (Java's shutdown)."""
        if self._closed:
            return
        await self._stop()
        pos = self.store.write_pos
        await asyncio.to_thread(fsync_paths, self.store.take_dirty())
        self.store.flushed_pos = pos
        self.store.persist_checkpoint(self.member.committed_index)
        self.store.close()

    async def abort(self) -> None:
        """Stop without the last flush or checkpoint: what a killed process leaves behind
        (the page cache still holds what was written)."""
        if not self._closed:
            await self._stop()
            self.store.close()

    async def _stop(self) -> None:
        self._closed = True
        for t in [*self._loops, *self._tasks]:
            t.cancel()
        await asyncio.gather(*self._loops, *self._tasks, return_exceptions=True)
        await self.client.close()
        await self.remoting.close()
        self._fail_waiting(Code.TERM_CHANGED, "the member stopped")

    async def __aenter__(self) -> DLedgerServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ appends

    async def append(self, body: bytes, *, timeout_ms: int | None = None) -> DLedgerEntry:
        """Append ``body`` as the leader and wait until a majority has it (``waitAck``).
        Raises AppendError: NOT_LEADER at once, WAIT_QUORUM_ACK_TIMEOUT after
        ``maxWaitAckTimeMs``, TERM_CHANGED when leadership is lost first."""
        return (await self.append_batch([body], timeout_ms=timeout_ms))[0]

    async def append_batch(self, bodies: list[bytes], *, timeout_ms: int | None = None) -> list[DLedgerEntry]:
        """Append ``bodies`` as consecutive entries (a BatchAppendEntryRequest) and wait until a
        majority has the last one, so all of them. Raises AppendError as ``append``."""
        if self._closed:
            raise AppendError(Code.NOT_LEADER, "the member stopped")
        if not bodies:
            raise ValueError("no entries to append")
        entries: list[DLedgerEntry] = []
        outputs: list[Output] = []
        for body in bodies:  # no await in between: nothing else appends meanwhile
            try:
                entry, out = self.member.append(body, _now())
            except NotLeaderError as e:  # LEADER_TRANSFERRING too; only ever on the first
                self._apply(outputs)
                raise AppendError(e.code, str(e), e.leader_id) from None
            entries.append(entry)
            outputs.extend(out)
        last = entries[-1].index
        fut: asyncio.Future[DLedgerEntry] = asyncio.get_running_loop().create_future()
        self._waiting[last] = fut
        self._apply(outputs)
        wait_ms = self.config.max_wait_ack_time_ms if timeout_ms is None else timeout_ms
        try:
            await asyncio.wait_for(asyncio.shield(fut), wait_ms / 1000)
        except TimeoutError:
            raise AppendError(
                Code.WAIT_QUORUM_ACK_TIMEOUT, f"entry {last} not on a majority after {wait_ms} ms"
            ) from None
        finally:
            if self._waiting.get(last) is fut:
                del self._waiting[last]
        try:
            return [self.store.get(e.index) for e in entries]
        except KeyError as e:  # truncated away before it was read back: not acknowledged
            raise AppendError(Code.TERM_CHANGED, f"entry {e} is gone") from None

    def _fail_waiting(self, code: DLedgerResponseCode, why: str) -> None:
        waiting, self._waiting = self._waiting, {}
        for index, fut in waiting.items():
            if not fut.done():
                fut.set_exception(AppendError(code, f"entry {index}: {why}", self.member.leader_id))

    # ------------------------------------------------------------------ outputs

    def _apply(self, outputs: list[Output]) -> None:
        for out in outputs:
            if isinstance(out, TermPersisted):
                self.store.set_term(out.state)
            elif isinstance(out, Send):
                self._spawn(self._call(out.request))
            elif isinstance(out, Reply):
                held = self._held.pop(id(out.request), None)
                if held is not None and not held.done():
                    held.set_result(out.response)
            elif isinstance(out, Committed):
                self._committed(out.index)
            elif isinstance(out, RoleChanged):
                self._role_changed(out)

    def _committed(self, index: int) -> None:
        for listener in self.commit_listeners:
            try:
                listener(index)
            except Exception:
                log.exception("dledger commit listener failed")
        for i in sorted(i for i in self._waiting if i <= index):
            fut = self._waiting.pop(i)
            if not fut.done():
                try:
                    fut.set_result(self.store.get(i))
                except KeyError as e:  # truncated away before it was read back: not acknowledged
                    fut.set_exception(AppendError(Code.TERM_CHANGED, f"entry {e} is gone"))

    def _role_changed(self, change: RoleChanged) -> None:
        log.info(
            "dledger %s/%s: %s in term %d (leader %s)",
            self.config.group,
            self.config.self_id,
            change.role.name,
            change.term,
            change.leader_id,
        )
        if change.role is not Role.LEADER:
            self._fail_waiting(Code.TERM_CHANGED, f"leadership lost in term {change.term}")
        for listener in self.role_listeners:
            try:
                listener(change.term, change.role, change.leader_id)
            except Exception:
                log.exception("dledger role listener failed")

    def _spawn(self, coro: Coroutine[object, object, None]) -> None:
        if self._closed:
            coro.close()
            return
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _call(self, request: RequestOrResponse) -> None:
        """DLedgerRpcNettyService's invokeAsync: a failure is the response bean with NETWORK_ERROR."""
        addr = self.peers.get(request.remote_id or "")
        response: RequestOrResponse
        if addr is None:
            response = _network_error(request)
        else:
            try:
                cmd = await self.client.invoke(addr, request_command(request), self.config.rpc_timeout_ms / 1000)
                response = decode_response(request.CODE, cmd)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # any failed call is a NETWORK_ERROR answer, as in Java
                log.debug("dledger %s -> %s %s failed: %s", self.config.self_id, addr, request.CODE.name, e)
                response = _network_error(request)
        if not self._closed:
            self._apply(self.member.handle_response(request, response, _now()))

    # ------------------------------------------------------------------ requests from peers

    async def _on_request(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        del ctx
        try:
            request = decode_request(cmd)
        except DLedgerProtocolError as e:
            return cmd.make_response(Code.UNEXPECTED_ARGUMENT, str(e))
        if isinstance(request, AppendEntryRequest):
            return response_command(cmd, await self._client_append(request))
        if isinstance(request, MetadataRequest):
            return response_command(cmd, self._metadata(request))
        if isinstance(request, GetEntriesRequest):
            return response_command(cmd, self._get(request))
        if isinstance(request, PullEntriesRequest):
            # 0.3.2's DLedgerServer#handlePull returns null: the RPC service fails on it and the
            # remoting server answers SYSTEM_ERROR with the exception (NettyRemotingAbstract), not a
            # PullEntriesResponse. No 0.3.2 member sends PULL; a caller gets Java's answer.
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, PULL_NOT_SERVED)
        response, out = self.member.handle_request(request, _now())
        if response is None:
            held: asyncio.Future[RequestOrResponse] = asyncio.get_running_loop().create_future()
            self._held[id(request)] = held
            self._apply(out)
            try:
                # the state machine may drop a held request (a role change clears them); by then
                # the asker's own call has timed out, so answer TIMEOUT rather than wait forever
                response = await asyncio.wait_for(held, self.config.rpc_timeout_ms / 1000 + 1)
            except TimeoutError:
                response = failure(request, Code.TIMEOUT, self.member.leader_id)
            finally:
                self._held.pop(id(request), None)
        else:
            self._apply(out)
        return response_command(cmd, response)

    def _checked(self, request: RequestOrResponse) -> DLedgerResponseCode | None:
        if request.remote_id != self.config.self_id:
            return Code.UNKNOWN_MEMBER
        if request.group != self.config.group:
            return Code.UNKNOWN_GROUP
        return None

    def _failed(self, cls: type[_R], request: RequestOrResponse, code: DLedgerResponseCode) -> _R:
        resp = failure(request, code, self.member.leader_id)
        assert isinstance(resp, cls)
        return resp

    async def _client_append(self, request: AppendEntryRequest) -> AppendEntryResponse:
        """DLedgerServer#handleAppend for a DLedgerClient."""
        code = self._checked(request)
        if code is None:
            try:
                entry = await self.append(request.body or b"")
            except AppendError as e:
                code = e.code
            else:
                return AppendEntryResponse(
                    group=self.config.group,
                    term=entry.term,
                    leader_id=self.config.self_id,
                    index=entry.index,
                    pos=entry.pos,
                )
        return self._failed(AppendEntryResponse, request, code)

    def _get(self, request: GetEntriesRequest) -> GetEntriesResponse:
        """DLedgerServer#handleGet: the one entry at ``beginIndex``, from the leader only."""
        code = self._checked(request)
        if code is None and not self.is_leader:
            code = Code.NOT_LEADER
        if code is None:
            try:
                entry = self.store.get(request.begin_index if request.begin_index is not None else -1)
            except KeyError:
                code = Code.INDEX_OUT_OF_RANGE
            except StoreFormatError:
                code = Code.DISK_ERROR
            else:
                return GetEntriesResponse(group=self.config.group, entries=[entry])
        return self._failed(GetEntriesResponse, request, code)

    def _metadata(self, request: MetadataRequest) -> MetadataResponse:
        code = self._checked(request)
        if code is not None:
            return self._failed(MetadataResponse, request, code)
        return MetadataResponse(group=self.config.group, peers=dict(self.peers), leader_id=self.member.leader_id)

    # ------------------------------------------------------------------ timers

    async def _tick_loop(self) -> None:
        while True:
            try:
                self._apply(self.member.tick(_now()))
            except Exception:
                log.exception("dledger %s: tick failed", self.config.self_id)
            await asyncio.sleep(TICK_MS / 1000)

    async def _flush_loop(self) -> None:
        """FlushDataService: fsync what was written, and the checkpoint every checkPointInterval."""
        last_checkpoint = _now()
        while True:
            await asyncio.sleep(self.config.flush_interval_ms / 1000)
            try:
                pos = self.store.write_pos
                await asyncio.to_thread(fsync_paths, self.store.take_dirty())
                self.store.flushed_pos = pos
                if _now() - last_checkpoint >= self.config.checkpoint_interval_ms:
                    last_checkpoint = _now()
                    self.store.persist_checkpoint(self.member.committed_index)
            except OSError:
                log.exception("dledger %s: flush failed", self.config.self_id)


async def _serve(config: DLedgerConfig) -> None:
    stop = asyncio.Event()
    stop_on_signals(stop)
    server = DLedgerServer(config)
    server.role_listeners.append(lambda term, role, leader: print(f"ROLE {term} {role.name} {leader}", flush=True))
    await server.start()
    print("STARTED", flush=True)
    try:
        await stop.wait()
    finally:
        await server.close()


def main(argv: list[str] | None = None) -> None:
    """``python -m pyrmq.dledger.server``: one standalone member (DLedger's own StandaloneServer
    role), for benchmarks and tests; prints ``STARTED`` and one ``ROLE <term> <role> <leader>``
    line per role change; SIGTERM stops it."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m pyrmq.dledger.server")
    ap.add_argument("--group", required=True)
    ap.add_argument("--self-id", required=True)
    ap.add_argument("--peers", required=True, help="n0-host:port;n1-host:port;...")
    ap.add_argument("--store-base-dir", required=True)
    ap.add_argument("--data-file-size", type=int, default=DEFAULT_DATA_FILE_SIZE)
    ap.add_argument("--index-file-size", type=int, default=DEFAULT_INDEX_FILE_SIZE)
    ap.add_argument("--heartbeat-ms", type=int, default=Timing().heart_beat_time_interval_ms)
    ap.add_argument("--preferred-leader-ids", default=None, help="n0;n1: hand the leadership to them")
    args = ap.parse_args(argv)
    setup_logging("WARNING")
    install_uvloop_if_available()
    config = DLedgerConfig(
        group=args.group,
        self_id=args.self_id,
        peers=args.peers,
        store_base_dir=args.store_base_dir,
        data_file_size=args.data_file_size,
        index_file_size=args.index_file_size,
        timing=Timing(heart_beat_time_interval_ms=args.heartbeat_ms),
        preferred_leader_ids=args.preferred_leader_ids,
    )
    try:
        asyncio.run(_serve(config))
    except (ValueError, OSError) as e:  # bad peers, a store that does not read back, a busy port
        print(f"pyrmq dledger: {e}", file=sys.stderr)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
