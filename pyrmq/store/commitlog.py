"""The commit log: every message of every topic, appended in one byte stream of mapped files.

Java: store.CommitLog (asyncPutMessage(s), the append callback, checkMessageAndReturnSize,
recoverNormally/Abnormally). It owns the put path: append under `put_lock` on the caller's
thread, hand the record to the store for dispatch (`on_appended`, still under the lock), then the
flush wait of its FlushManager (flush.py: the flush threads).
"""

from __future__ import annotations

import logging
import os
import struct
import threading
import zlib
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from pyrmq.common.constants import RMQ_SYS_SCHEDULE_TOPIC, MessageConst
from pyrmq.common.java_lang import hashmap_order, java_string_hash
from pyrmq.store import message as m
from pyrmq.store.flush import FlushManager
from pyrmq.store.lmq import assign_lmq_offsets, lmq_queue_key, needs_lmq_offsets
from pyrmq.store.mapped_file import MappedFile, MappedFileQueue, SyncFn
from pyrmq.store.replica import ReplicaAcks, check_in_sync_replicas, combine_flush_and_ha, handle_ha, need_handle_ha
from pyrmq.store.results import (
    AppendMessageResult,
    AppendMessageStatus,
    DispatchRequest,
    PutMessageResult,
    PutMessageStatus,
    completed_put,
)
from pyrmq.store.space import COMMIT_LOG_RESERVE_AHEAD, DiskFullError, existing_ancestor, space_available
from pyrmq.store.store_config import BrokerRole, MessageStoreConfig

log = logging.getLogger(__name__)


_V6_FLAGS = m.MessageSysFlag.BORNHOST_V6_FLAG | m.MessageSysFlag.STOREHOSTADDRESS_V6_FLAG
_write_record = m.write_record
_crc32 = zlib.crc32


@dataclass(slots=True)
class MessageExtBatch:
    """A client batch to be expanded into one record per element. Java: MessageExtBatch.

    `body` is the SEND_BATCH_MESSAGE body (spec §2.7). `properties_string`, when not empty, is
    appended to every element's properties (5.3.x behaviour; develop stopped doing it)."""

    topic: str
    body: bytes
    queue_id: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: m.Host = ("127.0.0.1", 0)
    store_host: m.Host = ("127.0.0.1", 10911)
    reconsume_times: int = 0
    properties_string: str = ""
    wait_store_msg_ok: bool = True


def is_wait_store_msg_ok(props: dict[str, str]) -> bool:
    """Java Message#isWaitStoreMsgOK: WAIT absent means true."""
    v = props.get(MessageConst.WAIT_STORE_MSG_OK)
    return v is None or v.lower() == "true"


AppendListener = Callable[[DispatchRequest], None]
"""on_appended(request): a record was appended (called under the put lock, in offset order)."""


def dispatch_request_of(msg: m.StoredMessage, tags_code: int) -> DispatchRequest:
    """The DispatchRequest of a decoded record (Java CommitLog#checkMessageAndReturnSize's result)."""
    props = msg.properties
    return DispatchRequest(
        msg_size=msg.store_size,
        success=True,
        topic=msg.topic,
        queue_id=msg.queue_id,
        commit_log_offset=msg.commit_log_offset,
        tags_code=tags_code,
        store_timestamp=msg.store_timestamp,
        consume_queue_offset=msg.queue_offset,
        keys=props.get(MessageConst.KEYS) or "",
        uniq_key=props.get(MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
        sys_flag=msg.sys_flag,
        prepared_transaction_offset=msg.prepared_transaction_offset,
        properties=props,
    )


class CommitLog:
    def __init__(
        self,
        config: MessageStoreConfig,
        clock: Callable[[], int],
        sync: SyncFn | None = None,
        *,
        on_appended: AppendListener | None = None,
        on_flushed: Callable[[int], None] | None = None,
        on_flush_advanced: Callable[[], None] | None = None,
        on_disk_full: Callable[[DiskFullError], None] | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self.mapped_file_queue = MappedFileQueue(
            config.commit_log_dir, config.mapped_file_size_commit_log, sync, COMMIT_LOG_RESERVE_AHEAD
        )
        # a put found no disk space for its record (called under the put lock): the store
        # refuses puts until space is back
        self._on_disk_full = on_disk_full
        self.topic_queue_table: dict[str, int] = {}
        self.put_lock = threading.RLock()
        self.confirm_offset = -1
        self._delay_table = config.delay_level_table()
        self._max_delay_level = max(self._delay_table) if self._delay_table else 0
        # the store dispatches each appended record (Java: ReputMessageService reads it back)
        self._on_appended = on_appended
        # on_flushed: store timestamp of the flushed data -> checkpoint; on_flush_advanced (any
        # thread): the store dispatches what became readable under SYNC_FLUSH (Java:
        # ReputMessageService reads up to getConfirmOffset)
        self.flush_manager = FlushManager(
            config, self.mapped_file_queue, on_flushed=on_flushed, on_flush_advanced=on_flush_advanced
        )
        self._tags_code_cache: dict[str, int] = {}
        self._topic_cache: dict[str, tuple[bytes, m.MessageVersion, bytes | None, bytes | None]] = {}
        self._host_cache: dict[m.Host, bytes] = {}
        self._msg_id_prefix: dict[bytes, str] = {}
        # a SYNC_MASTER's puts wait for replicas through it (MessageStore.ha_service)
        self.ha_service: ReplicaAcks | None = None

    # --- lifecycle -----------------------------------------------------------------------------
    def load(self) -> bool:
        return self.mapped_file_queue.load()

    def start(self) -> None:
        self.flush_manager.start()

    def shutdown(self) -> None:
        """Final flush (then dispatch of what it made readable), files closed."""
        self.flush_manager.shutdown()
        self.mapped_file_queue.shutdown()

    # --- offsets -------------------------------------------------------------------------------
    def get_min_offset(self) -> int:
        mf = self.mapped_file_queue.get_first_mapped_file()
        if mf is None:
            return -1
        return mf.file_from_offset

    def get_max_offset(self) -> int:
        return self.mapped_file_queue.get_max_offset()

    def get_earliest_record_offset(self) -> int:
        """Where the first record starts: the min offset here; a DLedger entry's header lies before
        its record (Java DefaultMessageStore#getEarliestMessageTime adds BODY_OFFSET)."""
        return self.get_min_offset()

    def get_flushed_where(self) -> int:
        """The offset up to which the files are on disk (MappedFileQueue#getFlushedWhere)."""
        return self.mapped_file_queue.flushed_where

    def roll_next_file(self, offset: int) -> int:
        size = self.config.mapped_file_size_commit_log
        return offset + size - offset % size

    def get_confirm_offset(self) -> int:
        """End of the data that may be dispatched (made readable): the flushed offset under
        SYNC_FLUSH, the write position otherwise. Java CommitLog#getConfirmOffset (no controller
        mode, no duplication)."""
        if self.flush_manager.sync_flush:
            return self.mapped_file_queue.flushed_where
        return self.get_max_offset()

    # --- put -----------------------------------------------------------------------------------
    def _topic_info(self, topic: str) -> tuple[bytes, m.MessageVersion, bytes | None, bytes | None]:
        """(UTF-8 bytes, version chosen by length, V1 topic field, V2 topic field), cached per topic
        (None: does not fit that version)."""
        info = self._topic_cache.get(topic)
        if info is None:
            topic_b = topic.encode("utf-8")
            fields: list[bytes | None] = []
            for v in (m.MESSAGE_MAGIC_CODE, m.MESSAGE_MAGIC_CODE_V2):
                try:
                    fields.append(m.topic_field(topic_b, v))
                except m.MessageDecodeError:
                    fields.append(None)
            version = m.choose_version(topic, self.config.auto_message_version_on_topic_len)
            info = (topic_b, version, fields[0], fields[1])
            if len(self._topic_cache) >= 65536:
                self._topic_cache.clear()
            self._topic_cache[topic] = info
        return info

    def _message_id(self, store_host: bytes, offset: int) -> str:
        """m.create_message_id with the host's hex cached (offsets are never negative)."""
        prefix = self._msg_id_prefix.get(store_host)
        if prefix is None:
            if len(self._msg_id_prefix) >= 4096:
                self._msg_id_prefix.clear()
            prefix = self._msg_id_prefix[store_host] = store_host.hex().upper()
        return f"{prefix}{offset:016X}"

    def _host_bytes(self, host: m.Host) -> bytes:
        b = self._host_cache.get(host)
        if b is None:
            b = m.host_to_bytes(host)
            if len(self._host_cache) >= 4096:
                self._host_cache.clear()
            self._host_cache[host] = b
        return b

    def put_message_async(self, msg: m.MessageExtBrokerInner) -> Future[PutMessageResult]:
        """Append one message, then wait for the flush the flush type asks for: the Future yields
        the PutMessageResult at once (ASYNC_FLUSH, WAIT=false, a refusal) or once the record is
        durable or the wait failed (SYNC_FLUSH). The flush service is the one started; the wait
        follows the config, so updateBrokerConfig flushDiskType=ASYNC_FLUSH ends it at once, as
        Java's DefaultFlushManager#handleDiskFlush does. Java CommitLog#asyncPutMessage."""
        acks = self.ha_service
        if acks is not None and acks.controller_mode and self.config.broker_role == BrokerRole.SYNC_MASTER:
            # only a controller-mode SYNC_MASTER refuses before the write: read WAIT only then
            props = (
                msg.properties
                if msg.properties_string is None
                else m.string_to_message_properties(msg.properties_string)
            )
            refused = check_in_sync_replicas(self.config, acks, is_wait_store_msg_ok(props), self.get_max_offset())
            if refused is not None:
                return completed_put(refused)
        result, req = self._append_message(msg)
        if req is None:
            return completed_put(result)
        if not (self.flush_manager.sync_flush or self.config.broker_role == BrokerRole.SYNC_MASTER):
            return completed_put(result)
        props = msg.properties if msg.properties_string is None else req.properties or {}
        return self._handle_disk_flush_and_ha(result, is_wait_store_msg_ok(props))

    def put_messages_async(self, batch: MessageExtBatch) -> Future[PutMessageResult]:
        """One record per element of a client batch, contiguous in one file, then the flush wait.
        Java CommitLog#asyncPutMessages."""
        refused = check_in_sync_replicas(self.config, self.ha_service, batch.wait_store_msg_ok, self.get_max_offset())
        if refused is not None:
            return completed_put(refused)
        result, reqs = self._append_messages(batch)
        if not reqs:
            return completed_put(result)
        if not (self.flush_manager.sync_flush or self.config.broker_role == BrokerRole.SYNC_MASTER):
            return completed_put(result)
        return self._handle_disk_flush_and_ha(result, batch.wait_store_msg_ok)

    def _handle_disk_flush_and_ha(self, result: PutMessageResult, wait: bool) -> Future[PutMessageResult]:
        """The flush wait (SYNC_FLUSH) and, for a SYNC_MASTER put that waits, the replica wait,
        combined. Java CommitLog#handleDiskFlushAndHA."""
        flush = self.flush_manager
        if flush.sync_flush:
            flushed = flush.handle_disk_flush(result, wait and self.config.sync_flush)
        else:
            flushed = completed_put(result)
        replica = handle_ha(self.config, self.ha_service, result) if need_handle_ha(self.config, wait) else None
        if replica is None:
            return flushed
        return combine_flush_and_ha(flushed, replica)

    def message_properties(self, msg: m.MessageExtBrokerInner) -> tuple[str, dict[str, str]]:
        """(properties string as stored, the dict a decode of that string gives back).

        The message's own dict is reused when its string form round-trips (no separator inside a
        name or value, no empty name or value), so the put path parses nothing."""
        props_s = msg.properties_string
        if props_s is None:
            props = msg.properties
            props_s = m.message_properties_to_string(props)
            n = len(props)
            if (
                props_s.count("\x02") == n
                and props_s.count("\x01") == n
                and "\x01\x02" not in props_s
                and "\x02\x01" not in props_s
                and not props_s.startswith("\x01")
            ):
                return props_s, props
        return props_s, m.string_to_message_properties(props_s)

    def tags_code(self, topic: str, props: dict[str, str], store_timestamp: int) -> int:
        """Consume-queue tags code: hash of TAGS, or the deliver time for the schedule topic.
        Java CommitLog#checkMessageAndReturnSize (tagsCode part)."""
        tags_code = 0
        tags = props.get(MessageConst.TAGS)
        if tags:
            cache = self._tags_code_cache
            cached = cache.get(tags)
            if cached is None:
                cached = java_string_hash(tags)
                if len(cache) >= 4096:
                    cache.clear()
                cache[tags] = cached
            tags_code = cached
        if topic == RMQ_SYS_SCHEDULE_TOPIC:
            t = props.get(MessageConst.DELAY_TIME_LEVEL)
            if t is not None:
                try:
                    level = min(int(t), self._max_delay_level)
                except ValueError:
                    level = 0
                if level > 0:
                    tags_code = self.compute_deliver_timestamp(level, store_timestamp)
        return tags_code

    def _append_message(self, msg: m.MessageExtBrokerInner) -> tuple[PutMessageResult, DispatchRequest | None]:
        """Encode and append one record; under the put lock hand its DispatchRequest (built from
        what the append knows: what a decode of the record would give) to `on_appended`. The
        request is None when nothing was appended. Java CommitLog#asyncPutMessage (append part)
        + DefaultAppendMessageCallback#doAppend."""
        topic = msg.topic
        topic_b, auto_version, field_v1, field_v2 = self._topic_info(topic)
        version = msg.version
        if version is None:
            version = msg.version = auto_version
        topic_part = field_v2 if version == m.MESSAGE_MAGIC_CODE_V2 else field_v1
        if not topic_b or topic_part is None:
            return PutMessageResult(
                PutMessageStatus.MESSAGE_ILLEGAL, error=f"topic length {len(topic_b)} not allowed"
            ), None
        props_s, props = self.message_properties(msg)
        props_b = props_s.encode("utf-8")
        if len(props_b) > 32767:
            return PutMessageResult(
                PutMessageStatus.PROPERTIES_SIZE_EXCEEDED,
                AppendMessageResult(AppendMessageStatus.PROPERTIES_SIZE_EXCEEDED),
                error=f"properties length {len(props_b)} > 32767",
            ), None
        try:
            born_b = self._host_bytes(msg.born_host)
            store_b = self._host_bytes(msg.store_host)
        except (ValueError, OSError) as e:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, error=str(e)), None
        sys_flag = msg.sys_flag & ~_V6_FLAGS
        if len(born_b) == 20:
            sys_flag |= m.MessageSysFlag.BORNHOST_V6_FLAG
        if len(store_b) == 20:
            sys_flag |= m.MessageSysFlag.STOREHOSTADDRESS_V6_FLAG
        header = m.record_header_struct(len(born_b), len(store_b))
        body = msg.body
        total = header.size + len(body) + len(topic_part) + 2 + len(props_b)
        if total > self.config.max_message_size:
            return PutMessageResult(
                PutMessageStatus.MESSAGE_ILLEGAL,
                AppendMessageResult(AppendMessageStatus.MESSAGE_SIZE_EXCEEDED),
                error=f"message size {total} > maxMessageSize {self.config.max_message_size}",
            ), None
        body_crc = _crc32(body) & 0x7FFFFFFF
        queued = m.is_queued(sys_flag)
        queue_id = msg.queue_id
        lmq = needs_lmq_offsets(self.config, topic, props)
        lmq_names: list[str] = []
        with self.put_lock:
            store_ts = self.clock()
            msg.store_timestamp = store_ts
            key = f"{topic}-{queue_id}"
            queue_offset = self.topic_queue_table.get(key, 0) if queued else 0
            if lmq:  # the LMQ offsets are taken under the put lock, as Java's doAppend does
                props = dict(props)
                table = self.topic_queue_table
                lmq_names = assign_lmq_offsets(props, lambda name: table.get(lmq_queue_key(name), 0))
                props = hashmap_order(props)  # Java re-serialises the whole HashMap(128)
                props_b = m.message_properties_to_string(props).encode("utf-8")
                total = header.size + len(body) + len(topic_part) + 2 + len(props_b)
                refused = self._lmq_size_refusal(len(props_b), total)
                if refused is not None:
                    return refused, None
            try:
                mf = self._file_for(total, store_ts)
            except DiskFullError as e:
                return self._disk_full(e), None
            except OSError as e:
                log.exception("create mapped file failed")
                return PutMessageResult(PutMessageStatus.CREATE_MAPPED_FILE_FAILED, error=str(e)), None
            pos = mf.wrote_position
            wrote_offset = mf.file_from_offset + pos
            try:
                _write_record(
                    mf.mm,
                    pos,
                    header,
                    total,
                    version,
                    body_crc,
                    queue_id,
                    msg.flag,
                    queue_offset,
                    wrote_offset,
                    sys_flag,
                    msg.born_timestamp,
                    born_b,
                    store_ts,
                    store_b,
                    msg.reconsume_times,
                    msg.prepared_transaction_offset,
                    body,
                    topic_part,
                    props_b,
                )
            except (struct.error, TypeError, ValueError) as e:  # a field out of range: nothing committed
                return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, error=f"cannot encode: {e}"), None
            mf.wrote_position = mf.committed_position = pos + total
            mf.store_timestamp = store_ts
            if queued:
                self.topic_queue_table[key] = queue_offset + 1
            for name in lmq_names:  # Java LmqDispatch#updateLmqOffsets
                lmq_key = lmq_queue_key(name)
                self.topic_queue_table[lmq_key] = self.topic_queue_table.get(lmq_key, 0) + 1
            msg.queue_offset = queue_offset
            req = DispatchRequest(
                total,
                True,
                topic,
                queue_id,
                wrote_offset,
                self.tags_code(topic, props, store_ts),
                store_ts,
                queue_offset,
                props.get(MessageConst.KEYS) or "",
                props.get(MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or None,
                sys_flag,
                msg.prepared_transaction_offset,
                props,
            )
            if self._on_appended is not None:
                self._on_appended(req)
        amr = AppendMessageResult(
            AppendMessageStatus.PUT_OK,
            wrote_offset,
            total,
            self._message_id(store_b, wrote_offset),
            store_ts,
            queue_offset,
            1,
        )
        return PutMessageResult(PutMessageStatus.PUT_OK, amr), req

    def _lmq_size_refusal(self, props_len: int, total: int) -> PutMessageResult | None:
        """The size checks again once INNER_MULTI_QUEUE_OFFSET is added (Java
        handlePropertiesForLmqMsg)."""
        if props_len > 32767:
            return PutMessageResult(
                PutMessageStatus.PROPERTIES_SIZE_EXCEEDED,
                AppendMessageResult(AppendMessageStatus.PROPERTIES_SIZE_EXCEEDED),
                error=f"properties length {props_len} > 32767",
            )
        if total > self.config.max_message_size:
            return PutMessageResult(
                PutMessageStatus.MESSAGE_ILLEGAL,
                AppendMessageResult(AppendMessageStatus.MESSAGE_SIZE_EXCEEDED),
                error=f"message size {total} > maxMessageSize {self.config.max_message_size}",
            )
        return None

    def _file_for(self, length: int, store_ts: int) -> MappedFile:
        """Last file with room for `length` + 8, its space for the record reserved; writes the
        blank record and rolls otherwise. DiskFullError when the disk cannot hold the record."""
        q = self.mapped_file_queue
        mf = q.get_last_mapped_file(0, need_create=True)
        assert mf is not None
        if length + m.END_FILE_MIN_BLANK_LENGTH > self.config.mapped_file_size_commit_log:
            raise OSError(f"record of {length} bytes can never fit a commit log file")
        if length + m.END_FILE_MIN_BLANK_LENGTH > mf.remaining():
            max_blank = mf.remaining()
            mf.write_at(mf.wrote_position, m.encode_blank(max_blank))
            mf.wrote_position = mf.committed_position = mf.file_size
            mf = q.get_last_mapped_file(0, need_create=True)
            assert mf is not None
        end = mf.wrote_position + length
        if end > mf.reserved:
            mf.reserve(end)
        return mf

    def _disk_full(self, e: DiskFullError) -> PutMessageResult:
        """A record the disk cannot hold: Java's answer on a full disk (the disk-full flag,
        SERVICE_NOT_AVAILABLE), and the store stops taking puts until space is back."""
        if self._on_disk_full is not None:
            self._on_disk_full(e)
        return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, error=f"disk full: {e.strerror}")

    def space_reserved_ahead(self, path: str) -> int:
        """Bytes of disk the commit log holds reserved ahead of its writer on the partition of
        ``path`` (0 when the last file lies elsewhere). Space checks discount them, as Java's
        ratio never sees them."""
        mf = self.mapped_file_queue.get_last_mapped_file()
        where = existing_ancestor(path)
        if mf is None or where is None:
            return 0
        try:
            dev, ahead = mf.reserved_unwritten()
            return ahead if ahead and os.stat(where).st_dev == dev else 0
        except OSError:
            return 0

    def has_space_ahead(self) -> bool:
        """Whether the disk can back the next reservation of the current file (or a new file's
        first one); reserves it when it can. For resuming after a DiskFullError."""
        with self.put_lock:
            mf = self.mapped_file_queue.get_last_mapped_file()
            if mf is None or mf.is_full():
                return space_available(self.config.commit_log_dir) >= COMMIT_LOG_RESERVE_AHEAD
            try:
                mf.reserve(min(mf.file_size, mf.wrote_position + COMMIT_LOG_RESERVE_AHEAD))
            except DiskFullError:
                return False
            return mf.reserved >= min(mf.file_size, mf.wrote_position + COMMIT_LOG_RESERVE_AHEAD)

    def _append_messages(self, batch: MessageExtBatch) -> tuple[PutMessageResult, list[DispatchRequest]]:
        """One full record per element, contiguous in one file, each handed to `on_appended` under
        the put lock; the requests (empty when nothing was appended). Transactional batches are
        illegal. Java MessageExtEncoder#encode(batch) + DefaultAppendMessageCallback#doAppend(batch)."""
        if m.MessageSysFlag.get_transaction_value(batch.sys_flag) != m.MessageSysFlag.TRANSACTION_NOT_TYPE:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, error="transactional batch"), []
        try:
            elements = m.decode_batch_body(batch.body)
        except m.MessageDecodeError as e:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, error=str(e)), []
        if not elements:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, error="empty batch"), []
        if len(batch.body) > self.config.max_message_size:
            return PutMessageResult(
                PutMessageStatus.MESSAGE_ILLEGAL,
                AppendMessageResult(AppendMessageStatus.MESSAGE_SIZE_EXCEEDED),
                error="batch body exceeds maxMessageSize",
            ), []
        topic = batch.topic
        topic_b, version, field_v1, field_v2 = self._topic_info(topic)
        topic_part = field_v2 if version == m.MESSAGE_MAGIC_CODE_V2 else field_v1
        if not topic_b or topic_part is None:
            return PutMessageResult(
                PutMessageStatus.MESSAGE_ILLEGAL, error=f"topic length {len(topic_b)} not allowed"
            ), []
        try:
            born_b, store_b = self._host_bytes(batch.born_host), self._host_bytes(batch.store_host)
        except (ValueError, OSError) as e:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, error=str(e)), []
        sys_flag = batch.sys_flag & ~_V6_FLAGS
        if len(born_b) == 20:
            sys_flag |= m.MessageSysFlag.BORNHOST_V6_FLAG
        if len(store_b) == 20:
            sys_flag |= m.MessageSysFlag.STOREHOSTADDRESS_V6_FLAG
        header = m.record_header_struct(len(born_b), len(store_b))
        fixed = header.size + len(topic_part) + 2
        extra = batch.properties_string.encode("utf-8") if batch.properties_string else b""
        items: list[tuple[m.BatchElement, bytes, int, int]] = []  # element, properties, size, body crc
        total = 0
        for elem in elements:
            props = elem.properties.encode("utf-8")
            if extra:
                if props and not props.endswith(b"\x02"):
                    props += b"\x02"
                props += extra
            if len(props) > 32767:
                return PutMessageResult(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED, error="properties too long"), []
            size = fixed + len(elem.body) + len(props)
            items.append((elem, props, size, _crc32(elem.body) & 0x7FFFFFFF))
            total += size
        queue_id = batch.queue_id
        with self.put_lock:
            store_ts = self.clock()
            key = f"{topic}-{queue_id}"
            base = self.topic_queue_table.get(key, 0)
            try:
                mf = self._file_for(total, store_ts)
            except DiskFullError as err:
                return self._disk_full(err), []
            except OSError as err:
                return PutMessageResult(PutMessageStatus.CREATE_MAPPED_FILE_FAILED, error=str(err)), []
            start = mf.wrote_position
            wrote_offset = mf.file_from_offset + start
            mm = mf.mm
            pos = start
            try:
                for i, (elem, props, size, crc) in enumerate(items):
                    _write_record(
                        mm,
                        pos,
                        header,
                        size,
                        version,
                        crc,
                        queue_id,
                        elem.flag,
                        base + i,
                        wrote_offset + pos - start,
                        sys_flag,
                        batch.born_timestamp,
                        born_b,
                        store_ts,
                        store_b,
                        batch.reconsume_times,
                        0,
                        elem.body,
                        topic_part,
                        props,
                        i > 0,
                    )
                    pos += size
                m.write_record_head(mm, start, items[0][2], version)  # the whole batch becomes visible
            except (struct.error, TypeError, ValueError) as err:  # a field out of range: nothing committed
                return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, error=f"cannot encode: {err}"), []
            mf.wrote_position = mf.committed_position = pos
            mf.store_timestamp = store_ts
            self.topic_queue_table[key] = base + len(items)
            reqs = []
            phy = wrote_offset
            for i, (_e, props_b, size, _) in enumerate(items):
                elem_props = m.string_to_message_properties(props_b.decode("utf-8"))
                reqs.append(
                    DispatchRequest(
                        size,
                        True,
                        topic,
                        queue_id,
                        phy,
                        self.tags_code(topic, elem_props, store_ts),
                        store_ts,
                        base + i,
                        elem_props.get(MessageConst.KEYS) or "",
                        elem_props.get(MessageConst.UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or None,
                        sys_flag,
                        0,
                        elem_props,
                    )
                )
                phy += size
            if self._on_appended is not None:
                for req in reqs:
                    self._on_appended(req)
        ids = [self._message_id(store_b, r.commit_log_offset) for r in reqs]
        amr = AppendMessageResult(
            AppendMessageStatus.PUT_OK, wrote_offset, total, ",".join(ids), store_ts, base, len(items)
        )
        return PutMessageResult(PutMessageStatus.PUT_OK, amr), reqs

    def append_data(self, start_offset: int, data: bytes | bytearray | memoryview) -> bool:
        """Write replicated commit-log bytes at the end of the log, under the put lock. Refused
        (False, nothing written) unless ``start_offset`` is the max offset, or, for an empty log, a
        file start (the first file is created there); and when ``data`` does not fit the last file
        (the master never sends across a file end). A full last file rolls. Java CommitLog#appendData
        (which leaves the offset check to the HA client)."""
        if not data:
            return True
        size = self.config.mapped_file_size_commit_log
        with self.put_lock:
            q = self.mapped_file_queue
            if q.get_last_mapped_file() is None:
                if start_offset < 0 or start_offset % size:
                    log.error("replicated data at %d: an empty commit log starts at a file start", start_offset)
                    return False
            elif start_offset != self.get_max_offset():
                log.error("replicated data at %d: the commit log ends at %d", start_offset, self.get_max_offset())
                return False
            if len(data) > size - start_offset % size:
                log.error("replicated data at %d (%d bytes) crosses a file end", start_offset, len(data))
                return False
            try:
                mf = q.get_last_mapped_file(start_offset, need_create=True)
                assert mf is not None
                return mf.append_message(data)
            except DiskFullError as e:
                self._disk_full(e)
                log.error("replicated data at %d (%d bytes): %s", start_offset, len(data), e.strerror)
                return False
            except OSError:
                log.exception("create mapped file failed")
                return False

    def flush(self) -> int:
        """Flush everything written; the flushed offset. Raises OSError from msync. Java CommitLog#flush."""
        self.flush_manager.flush_until(self.get_max_offset())
        return self.mapped_file_queue.flushed_where

    # --- read ----------------------------------------------------------------------------------
    def get_message(self, offset: int, size: int) -> memoryview | None:
        """The record bytes at [offset, offset+size), or None. Java CommitLog#getMessage."""
        mf = self.mapped_file_queue.find_mapped_file_by_offset(offset, offset == 0)
        if mf is None:
            return None
        return mf.select_mapped_buffer(offset % self.config.mapped_file_size_commit_log, size)

    def get_replication_data(self, offset: int, max_size: int) -> memoryview | None:
        """View of the written bytes from ``offset`` on, at most ``max_size`` and never past the
        read position of the file holding ``offset`` (None when there is nothing there). The
        caller releases it. Java DefaultMessageStore#getCommitLogData as DefaultHAConnection
        uses it (capped at haTransferBatchSize)."""
        mf = self.mapped_file_queue.find_mapped_file_by_offset(offset)
        if mf is None:
            return None
        pos = offset - mf.file_from_offset
        n = min(mf.get_read_position() - pos, max_size)
        if n <= 0:
            return None
        return mf.select_mapped_buffer(pos, n)

    def get_data(self, offset: int, return_first_on_not_found: bool = False) -> tuple[int, memoryview] | None:
        """(start offset, view to the read position of the file containing `offset`)."""
        mf = self.mapped_file_queue.find_mapped_file_by_offset(offset, return_first_on_not_found)
        if mf is None:
            return None
        pos = offset % self.config.mapped_file_size_commit_log
        buf = mf.select_mapped_buffer(pos)
        if buf is None:
            return None
        return offset, buf

    def pickup_store_timestamp(self, offset: int, size: int) -> int:
        """STORETIMESTAMP of the record at `offset` (-1 if unreadable). Java CommitLog#pickupStoreTimestamp."""
        if offset < self.get_min_offset():
            return -1
        buf = self.get_message(offset, size)
        if buf is None or len(buf) < 60:
            return -1
        try:
            return m.peek_store_timestamp(buf)
        finally:
            buf.release()

    # --- record check (dispatch and recovery) ----------------------------------------------------
    def compute_deliver_timestamp(self, level: int, store_timestamp: int) -> int:
        delay = self._delay_table.get(level)
        return store_timestamp + delay if delay is not None else store_timestamp + 1000

    def check_message_and_return_size(
        self, buf: m.ReadableBuffer, pos: int, check_crc: bool, read_body: bool = True
    ) -> DispatchRequest:
        """Validate the record at `pos`; msg_size 0 + success = blank, success False = end of data
        (msg_size > 0 then means: a record whose lengths disagree, skip it). Java
        CommitLog#checkMessageAndReturnSize."""
        remaining = len(buf) - pos
        if remaining < 8:
            return DispatchRequest(-1, False)
        total, magic = m.peek_total_size_and_magic(buf, pos)
        if remaining < total:
            return DispatchRequest(-1, False)
        if magic == m.BLANK_MAGIC_CODE:
            return DispatchRequest(0, True)
        if magic != m.MESSAGE_MAGIC_CODE and magic != m.MESSAGE_MAGIC_CODE_V2:
            return DispatchRequest(-1, False)
        try:
            msg = m.decode_message(buf, pos, read_body=False, check_crc=check_crc and read_body)
        except m.MessageDecodeError as e:
            if "total size" in str(e) and "computed" in str(e):
                return DispatchRequest(total, False)
            return DispatchRequest(-1, False)
        return dispatch_request_of(msg, self.tags_code(msg.topic, msg.properties, msg.store_timestamp))

    # --- recovery --------------------------------------------------------------------------------
    def _scan(
        self,
        index: int,
        dispatch: Callable[[DispatchRequest], None],
        dispatch_from: int,
        start_pos: int = 0,
        last_valid: int = -1,
    ) -> int:
        """Scan from `start_pos` of file `index` (a record boundary) with CRC checks, dispatching
        records at offsets >= dispatch_from. `last_valid`: the start of the record before
        `start_pos`, if any. Returns the end of the last valid record (processOffset)."""
        files = self.mapped_file_queue.mapped_files
        check_crc = self.config.check_crc_on_recover
        mf = files[index]
        buf = memoryview(mf.mm)[: mf.reserved]  # past it: holes, never written (space.backed_prefix)
        process_offset = mf.file_from_offset
        pos = start_pos
        try:
            while True:
                req = self.check_message_and_return_size(buf, pos, check_crc)
                if req.success and req.msg_size > 0:
                    if req.commit_log_offset != mf.file_from_offset + pos:
                        log.warning(
                            "record at %d claims offset %d; end of data",
                            mf.file_from_offset + pos,
                            req.commit_log_offset,
                        )
                        break
                    last_valid = mf.file_from_offset + pos
                    if req.commit_log_offset >= dispatch_from:
                        dispatch(req)
                    pos += req.msg_size
                elif req.success and req.msg_size == 0:
                    index += 1
                    if index >= len(files):
                        pos = mf.file_size  # the last file is full: the next put rolls
                        break
                    buf.release()
                    mf = files[index]
                    buf = memoryview(mf.mm)[: mf.reserved]
                    process_offset = mf.file_from_offset
                    pos = 0
                else:
                    if req.msg_size > 0:
                        log.warning("found a half message at %d, it will be truncated", mf.file_from_offset + pos)
                    break
        finally:
            buf.release()
        self.confirm_offset = last_valid
        return process_offset + pos

    def recover_normally(
        self,
        max_phy_offset_of_cq: int,
        dispatch: Callable[[DispatchRequest], None],
        truncate_logic: Callable[[int], None],
        destroy_logic: Callable[[], None],
        last_queued: tuple[int, int] | None = None,
    ) -> int:
        """Clean shutdown: start at the last file whose start <= the consume queues' max physical
        offset (Java 5.3.2/5.3.3), dispatch what the queues miss. Returns the recovered max offset.

        `last_queued`: (offset, size) of the record ending at that max offset. When the record
        there matches it, the check starts at it instead of the file's start (Java's accelerated
        recovery): a clean shutdown dispatched and flushed everything before it, so the cost is
        the records after it, not the size of the file."""
        files = self.mapped_file_queue.mapped_files
        if not files:
            self._recovered(0)
            destroy_logic()
            return 0
        index = 0
        for i in range(len(files) - 1, -1, -1):
            if files[i].file_from_offset <= max(max_phy_offset_of_cq, 0):
                index = i
                break
        start_pos = 0
        if last_queued is not None and self._is_record_at(files[index], *last_queued):
            start_pos = last_queued[0] - files[index].file_from_offset
        end = self._scan(index, dispatch, max(max_phy_offset_of_cq, 0), start_pos)
        self._finish_recovery(end, max_phy_offset_of_cq, truncate_logic)
        return end

    def recover_abnormally(
        self,
        max_phy_offset_of_cq: int,
        min_timestamp: int,
        dispatch: Callable[[DispatchRequest], None],
        truncate_logic: Callable[[int], None],
        destroy_logic: Callable[[], None],
        indexed_until: int | None = None,
    ) -> int:
        """Crash: start at the newest file whose first record is valid and stored no later than the
        checkpoint's min timestamp, re-dispatch from there (CQ/index writes are idempotent).

        Within that file the records the checkpoint covers (stored no later than `min_timestamp`,
        and below `indexed_until`, where the kept index files end; None: no index to rebuild)
        are only walked by their headers: their queue entries and index entries were flushed
        before the checkpoint was. The CRC check and the dispatch start at the first record past
        them, so the cost follows what was written since the checkpoint."""
        files = self.mapped_file_queue.mapped_files
        if not files:
            self._recovered(0)
            destroy_logic()
            return 0
        index = 0
        for i in range(len(files) - 1, -1, -1):
            if self._is_mapped_file_matched_recover(files[i], min_timestamp):
                index = i
                break
        until = (1 << 63) - 1 if indexed_until is None else indexed_until
        index, pos, last_valid = self._walk_checkpointed(index, min_timestamp, until)
        end = self._scan(index, dispatch, files[index].file_from_offset + pos, pos, last_valid)
        self._finish_recovery(end, max_phy_offset_of_cq, truncate_logic)
        return end

    def _is_record_at(self, mf: MappedFile, offset: int, size: int) -> bool:
        """A record of `size` bytes that names itself `offset` starts there (header check only;
        the scan that starts at it checks its CRC)."""
        pos = offset - mf.file_from_offset
        if pos < 0 or size < m.MIN_RECORD_SIZE or pos + size > min(mf.reserved, mf.file_size):
            return False
        total, magic = m.peek_total_size_and_magic(mf.mm, pos)
        if magic != m.MESSAGE_MAGIC_CODE and magic != m.MESSAGE_MAGIC_CODE_V2:
            return False
        return total == size and m.peek_physical_offset(mf.mm, pos) == offset

    def _walk_checkpointed(self, index: int, min_timestamp: int, until: int) -> tuple[int, int, int]:
        """Follow record headers from the start of file `index` while the records are below
        `until` and stored no later than `min_timestamp`; (file index, position, start of the
        last record passed or -1) where the checked scan goes on. Anything unexpected (a bad
        magic, a record that does not name its own offset) stops the walk there: the scan
        then judges it."""
        files = self.mapped_file_queue.mapped_files
        last_valid = -1
        while True:
            mf = files[index]
            limit = min(mf.reserved, mf.file_size)
            mm = mf.mm
            base = mf.file_from_offset
            pos = 0
            while pos + m.MIN_RECORD_SIZE <= limit and base + pos < until:
                total, magic = m.peek_total_size_and_magic(mm, pos)
                if magic == m.BLANK_MAGIC_CODE and index + 1 < len(files):
                    break  # the end of this file: go on in the next
                if magic != m.MESSAGE_MAGIC_CODE and magic != m.MESSAGE_MAGIC_CODE_V2:
                    return index, pos, last_valid
                if total < m.MIN_RECORD_SIZE or pos + total > limit:
                    return index, pos, last_valid
                if m.peek_physical_offset(mm, pos) != base + pos or m.peek_store_timestamp(mm, pos) > min_timestamp:
                    return index, pos, last_valid
                last_valid = base + pos
                pos += total
            else:
                return index, pos, last_valid
            index += 1

    def _is_mapped_file_matched_recover(self, mf: MappedFile, min_timestamp: int) -> bool:
        if mf.reserved < m.MIN_RECORD_SIZE:
            return False  # nothing written (a hole: not read, see space.backed_prefix)
        _total, magic = m.peek_total_size_and_magic(mf.mm)
        if magic != m.MESSAGE_MAGIC_CODE and magic != m.MESSAGE_MAGIC_CODE_V2:
            return False
        store_ts = m.peek_store_timestamp(mf.mm)
        return store_ts != 0 and store_ts <= min_timestamp

    def _finish_recovery(self, end: int, max_phy_offset_of_cq: int, truncate_logic: Callable[[int], None]) -> None:
        # max_phy_offset_of_cq is where the last queued record ends: equal to `end` after a clean
        # stop (Java compares with >= and so warns on every restart)
        if max_phy_offset_of_cq > end:
            log.warning(
                "consume queues reach %d beyond the commit log end %d; truncating them", max_phy_offset_of_cq, end
            )
        truncate_logic(end)
        self._recovered(end)

    def _recovered(self, end: int) -> None:
        q = self.mapped_file_queue
        q.flushed_where = end
        q.committed_where = end
        q.truncate_dirty_files(end)
        last = q.get_last_mapped_file()
        if last is not None and end >= last.file_from_offset + last.file_size:
            last.set_positions(last.file_size)
