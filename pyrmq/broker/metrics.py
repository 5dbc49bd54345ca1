"""The broker's metrics with Java 5.x's names, labels and types, served on a Prometheus endpoint.

Java: ``broker/metrics/BrokerMetricsManager`` (+ ``BrokerMetricsConstant``,
``ConsumerLagCalculator``), ``remoting/metrics/RemotingMetricsManager`` (rpc latency) and
``store/metrics/DefaultStoreMetricsManager`` (storage and timer gauges), all on one meter named
``broker-meter``. With ``metricsExporterType=PROM`` they are served on
``metricsPromExporterHost`` (brokerIP1 when empty) : ``metricsPromExporterPort``; the other
exporters (OTLP_GRPC, LOG) are not implemented and are logged as such. docs/operations.md lists
what is exported and what differs from Java.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pyrmq.common.constants import (
    CID_RMQ_SYS_PREFIX,
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    RMQ_SYS_SCHEDULE_TOPIC,
    SCHEDULE_CONSUMER_GROUP,
    TIMER_TOPIC,
    MessageConst,
    is_readable,
    is_system_topic,
    is_writeable,
)
from pyrmq.metrics import protobuf
from pyrmq.metrics.exposition import write_text
from pyrmq.metrics.http import MetricsHttpServer
from pyrmq.metrics.registry import Counter, InstrumentType, Labels, Meter, Observation, label_key
from pyrmq.protocol.codes import LanguageCode, RequestCode, ResponseCode
from pyrmq.protocol.headers.pop import build_pop_retry_topic
from pyrmq.protocol.version import version_desc

if TYPE_CHECKING:
    from pyrmq.broker.client_manager import ConsumerManager, ProducerManager
    from pyrmq.broker.config import BrokerConfig
    from pyrmq.broker.consumer_offset_manager import ConsumerOffsetManager
    from pyrmq.broker.pop.inflight import PopInflightMessageCounter
    from pyrmq.broker.pop.revive_log import ReviveLog
    from pyrmq.broker.pop.revive_service import PopReviveService
    from pyrmq.broker.subscription_group_manager import SubscriptionGroupManager
    from pyrmq.broker.timer_message_store import TimerMessageStore
    from pyrmq.broker.topic_config_manager import TopicConfigManager
    from pyrmq.protocol.command import RemotingCommand
    from pyrmq.remoting.channel import ProcessorTable
    from pyrmq.store.message_store import MessageStore
    from pyrmq.store.results import PutMessageResult

log = logging.getLogger("pyrmq.broker")

__all__ = ["BrokerMetricsManager", "message_type", "processor_of"]

METER_NAME = "broker-meter"
#: Java's default views replace the description of every counter and observable gauge
DEFAULT_VIEW_HELP = {
    InstrumentType.COUNTER: "default view for counter.",
    InstrumentType.GAUGE: "default view for gauge.",
}
MESSAGE_SIZE_BUCKETS = (1024, 4 * 1024, 512 * 1024, 1024 * 1024, 2 * 1024 * 1024, 4 * 1024 * 1024)
RPC_LATENCY_BUCKETS = (1, 3, 5, 7, 10, 100, 1000, 2000, 3000)  # ms, RemotingMetricsManager#getMetricsView
CREATE_TIME_BUCKETS = (10, 100, 1000, 3000, 5000)  # ms
#: rocketmq_finish_message_latency: Java records seconds in a histogram whose unit says "ms"
FINISH_LATENCY_BUCKETS = (5, 60, 10 * 60, 60 * 60, 12 * 60 * 60, 24 * 60 * 60)
#: TimerMetrics#timerDist default: the bounds (s) of rocketmq_timer_message_snapshot
DELAY_LATENCY_BUCKETS = (60, 600, 3600, 43200, 86400, 259200)  # s, DefaultStoreMetricsManager#getMetricsView
POP_SCAN_BUCKETS = (1, 10, 100, 1000, 2000, 3000)  # ms, PopMetricsManager#getMetricsView
TIMER_DIST_S = (5, 60, 300, 900, 3600, 14400, 28800, 86400)
#: the processor families of rocketmq_processor_watermark, in Java's order
PROCESSORS = (
    "send",
    "async_put",
    "pull",
    "ack",
    "query_message",
    "client_manager",
    "heartbeat",
    "lite_pull",
    "transaction",
    "consumer_manager",
    "admin",
    "reply",
)
_R = RequestCode
#: request code -> the executor Java's BrokerController#registerProcessor gives it (else admin)
_PROCESSOR_OF: dict[int, str] = {
    **dict.fromkeys((_R.SEND_MESSAGE, _R.SEND_MESSAGE_V2, _R.SEND_BATCH_MESSAGE, _R.CONSUMER_SEND_MSG_BACK), "send"),
    **dict.fromkeys((_R.PULL_MESSAGE, _R.POP_MESSAGE), "pull"),
    _R.LITE_PULL_MESSAGE: "lite_pull",
    **dict.fromkeys((_R.ACK_MESSAGE, _R.BATCH_ACK_MESSAGE, _R.CHANGE_MESSAGE_INVISIBLETIME), "ack"),
    **dict.fromkeys((_R.QUERY_MESSAGE, _R.VIEW_MESSAGE_BY_ID), "query_message"),
    **dict.fromkeys((_R.UNREGISTER_CLIENT, _R.CHECK_CLIENT_CONFIG), "client_manager"),
    _R.HEART_BEAT: "heartbeat",
    **dict.fromkeys(
        (_R.GET_CONSUMER_LIST_BY_GROUP, _R.UPDATE_CONSUMER_OFFSET, _R.QUERY_CONSUMER_OFFSET), "consumer_manager"
    ),
    _R.END_TRANSACTION: "transaction",
    **dict.fromkeys((_R.SEND_REPLY_MESSAGE, _R.SEND_REPLY_MESSAGE_V2), "reply"),
}
_MC = MessageConst
_DELAY_PROPERTIES = (
    _MC.START_DELIVER_TIME,
    _MC.DELAY_TIME_LEVEL,
    _MC.TIMER_DELIVER_MS,
    _MC.TIMER_DELAY_SEC,
    _MC.TIMER_DELAY_MS,
)
_NEVER = 2**63 - 1  # Java Long.MAX_VALUE: "no timestamp"
_LABEL_CACHE_MAX = 4096  # label sets kept per cache; cleared when full


def processor_of(code: int) -> str:
    return _PROCESSOR_OF.get(code, "admin")


def message_type(properties: Mapping[str, str]) -> str:
    """BrokerMetricsManager#getMessageType, as TopicMessageType#getMetricsValue names it."""
    if properties.get(_MC.TRANSACTION_PREPARED, "").lower() == "true":
        return "transaction"
    if _MC.SHARDING_KEY in properties:
        return "fifo"
    if any(properties.get(k) is not None for k in _DELAY_PROPERTIES):
        return "delay"
    return "normal"


def is_retry_or_dlq_topic(topic: str) -> bool:
    return topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX))


def is_system_group(group: str) -> bool:
    return bool(group) and group.lower().startswith(CID_RMQ_SYS_PREFIX.lower())


def _code_desc(enum: type[RequestCode] | type[ResponseCode], code: int) -> str:
    """RemotingHelper#getRequestCodeDesc/getResponseCodeDesc: the field name in lower case."""
    try:
        return enum(code).name.lower()
    except ValueError:
        return str(code)


class BrokerMetricsManager:
    """Owns the meter, records what the processors report and serves the scrape endpoint."""

    def __init__(
        self,
        *,
        config: BrokerConfig,
        topic_config_manager: TopicConfigManager,
        subscription_group_manager: SubscriptionGroupManager,
        consumer_manager: ConsumerManager,
        producer_manager: ProducerManager,
        consumer_offset_manager: ConsumerOffsetManager,
        message_store: MessageStore,
        timer_message_store: TimerMessageStore,
        now: Callable[[], int],
    ) -> None:
        self.config = config
        self.topics = topic_config_manager
        self.groups = subscription_group_manager
        self.consumers = consumer_manager
        self.producers = producer_manager
        self.offsets = consumer_offset_manager
        self.store = message_store
        self.timer = timer_message_store
        self.now = now
        self.tables: list[ProcessorTable] = []
        self.pop_inflight: PopInflightMessageCounter | None = None
        self.http: MetricsHttpServer | None = None
        exporter = str(config["metricsExporterType"]).upper()
        self.enabled = exporter == "PROM"
        if exporter not in ("PROM", "DISABLE"):
            log.warning("metricsExporterType=%s is not implemented by pyrmq (PROM is); metrics are off", exporter)
        self.labels = self._base_labels()
        #: label keys of the per-message series, made once per label set (send and rpc hot path)
        self._put_labels: dict[tuple[str, str], Labels] = {}
        self._rpc_labels: dict[tuple[int, int, bool, str], Labels] = {}
        self.meter = Meter(METER_NAME)
        m = self.meter
        on = self.enabled
        # request metrics (initRequestMetrics)
        req = on and bool(config["enableRequestMetrics"])
        self.messages_in = m.counter("rocketmq_messages_in_total", "Total number of incoming messages") if req else None
        self.messages_out = (
            m.counter("rocketmq_messages_out_total", "Total number of outgoing messages") if req else None
        )
        self.throughput_in = (
            m.counter("rocketmq_throughput_in_total", "Total traffic of incoming messages") if req else None
        )
        self.throughput_out = (
            m.counter("rocketmq_throughput_out_total", "Total traffic of outgoing messages") if req else None
        )
        self.message_size = (
            m.histogram("rocketmq_message_size", "Incoming messages size", MESSAGE_SIZE_BUCKETS) if req else None
        )
        self.topic_create_time = (
            m.histogram(
                "rocketmq_topic_create_execution_time",
                "The distribution of create topic time",
                CREATE_TIME_BUCKETS,
                "milliseconds",
            )
            if req
            else None
        )
        self.group_create_time = (
            m.histogram(
                "rocketmq_consumer_group_create_execution_time",
                "The distribution of create subscription time",
                CREATE_TIME_BUCKETS,
                "milliseconds",
            )
            if req
            else None
        )
        lag = on and bool(config["enableLagAndDlqMetrics"])
        self.send_to_dlq = (
            m.counter("rocketmq_send_to_dlq_messages_total", "Consumer send to DLQ messages") if lag else None
        )
        tx = on and bool(config["enableTransactionMetrics"])
        self.commit_messages = (
            m.counter("rocketmq_commit_messages_total", "Total number of commit messages") if tx else None
        )
        self.rollback_messages = (
            m.counter("rocketmq_rollback_messages_total", "Total number of rollback messages") if tx else None
        )
        self.finish_latency = (
            m.histogram("rocketmq_finish_message_latency", "Transaction finish latency", FINISH_LATENCY_BUCKETS, "ms")
            if tx
            else None
        )
        #: half messages by real topic since start (Java TransactionMetrics, which Java also persists)
        self.half_messages: dict[str, int] = {}
        if tx:
            m.gauge(
                "rocketmq_half_messages",
                "Half messages of all topics",
                lambda: [(n, self._with(topic=t)) for t, n in list(self.half_messages.items())],
            )
        rpc = on and bool(config["enableRemotingMetrics"])
        self.rpc_latency = (
            m.histogram("rocketmq_rpc_latency", "Rpc latency", RPC_LATENCY_BUCKETS, "milliseconds") if rpc else None
        )
        if on and config["enableStatsMetrics"]:
            m.gauge("rocketmq_processor_watermark", "Request processor watermark", self._watermarks)
            m.gauge(
                "rocketmq_broker_permission",
                "Broker permission",
                lambda: [(int(config["brokerPermission"]), self.labels)],
            )
            m.gauge(
                "rocketmq_topic_number",
                "Active topic number",
                lambda: [(len(self.topics.topic_config_table), self.labels)],
            )
            m.gauge(
                "rocketmq_consumer_group_number",
                "Active subscription group number",
                lambda: [(len(self.groups.table), self.labels)],
            )
        if on and config["enableConnectionMetrics"]:
            m.gauge("rocketmq_producer_connections", "Producer connections", self._producer_connections)
            m.gauge("rocketmq_consumer_connections", "Consumer connections", self._consumer_connections)
        if lag:
            m.gauge("rocketmq_consumer_lag_messages", "Consumer lag messages", lambda: self._lag(latency=False))
            m.gauge(
                "rocketmq_consumer_lag_latency", "Consumer lag time", lambda: self._lag(latency=True), "milliseconds"
            )
            m.gauge(
                "rocketmq_consumer_inflight_messages",
                "Consumer inflight messages",
                lambda: self._inflight(latency=False),
            )
            m.gauge(
                "rocketmq_consumer_queueing_latency",
                "Consumer queueing time",
                lambda: self._inflight(latency=True),
                "milliseconds",
            )
            m.gauge("rocketmq_consumer_ready_messages", "Consumer ready messages", self._ready)
        if on and config["enableMessageStoreMetrics"]:
            self._init_store_metrics()

    # ------------------------------------------------------------------ labels

    def _base_labels(self) -> dict[str, str]:
        """metricsLabel ("k:v,k:v"), aggregation when metricsInDelta, then node_type/cluster/node_id."""
        labels: dict[str, str] = {}
        for item in str(self.config["metricsLabel"] or "").split(","):
            if not item:
                continue
            kv = item.split(":")
            if len(kv) != 2:
                log.warning("metricsLabel is not valid: %s", self.config["metricsLabel"])
                continue
            labels[kv[0]] = kv[1]
        if self.config["metricsInDelta"]:
            labels["aggregation"] = "delta"
        labels["node_type"] = "broker"
        labels["cluster"] = str(self.config["brokerClusterName"])
        labels["node_id"] = str(self.config["brokerName"])
        return labels

    def _with(self, **extra: object) -> dict[str, object]:
        return {**self.labels, **extra}

    def _store_labels(self, **extra: object) -> dict[str, object]:
        return self._with(storage_type="local", storage_medium="disk", **extra)

    # ------------------------------------------------------------------ what processors report

    def on_put(self, topic: str, properties: Mapping[str, str], msg_num: int, wrote_bytes: int) -> None:
        """A successful send (SendMessageProcessor#handlePutMessageResult); retry/DLQ topics not counted."""
        if self.messages_in is None or is_retry_or_dlq_topic(topic) or msg_num <= 0:
            return
        mtype = message_type(properties)
        labels = self._put_labels.get((topic, mtype))
        if labels is None:
            if len(self._put_labels) >= _LABEL_CACHE_MAX:
                self._put_labels.clear()
            labels = self._put_labels[topic, mtype] = label_key(
                self._with(topic=topic, message_type=mtype, is_system=is_system_topic(topic))
            )
        self.messages_in.add(msg_num, labels)
        assert self.throughput_in is not None and self.message_size is not None
        self.throughput_in.add(wrote_bytes, labels)
        self.message_size.record(wrote_bytes // msg_num, labels)

    def on_schedule_delivered(self, topic: str, result: PutMessageResult) -> None:
        """A delayed message back in its topic (ScheduleMessageService.PutResultProcess#onSuccess):
        out of SCHEDULE_TOPIC_XXXX for SCHEDULE_CONSUMER, in to the real topic as a delay message."""
        amr = result.append_message_result
        if (
            self.messages_in is None
            or amr is None
            or result.remote_put
            or not self.config["enableScheduleMessageStats"]
        ):
            return
        num, size = max(int(amr.msg_num), 1), int(amr.wrote_bytes)
        out = self._with(topic=RMQ_SYS_SCHEDULE_TOPIC, consumer_group=SCHEDULE_CONSUMER_GROUP, is_system=True)
        assert self.messages_out is not None and self.throughput_out is not None
        self.messages_out.add(num, out)
        self.throughput_out.add(size, out)
        labels = self._with(topic=topic, message_type="delay", is_system=is_system_topic(topic))
        assert self.throughput_in is not None and self.message_size is not None
        self.messages_in.add(num, labels)
        self.throughput_in.add(size, labels)
        self.message_size.record(size // num, labels)

    def on_half_put(self, topic: str) -> None:
        """A prepared (half) message stored (SendMessageProcessor: TransactionMetrics +1)."""
        if self.commit_messages is not None:
            self.half_messages[topic] = self.half_messages.get(topic, 0) + 1

    def on_commit(self, topic: str, born_timestamp: int) -> None:
        """EndTransactionProcessor: the committed message stored, its half deleted."""
        if self.commit_messages is None:
            return
        self.half_messages[topic] = self.half_messages.get(topic, 0) - 1
        self.commit_messages.add(1, self._with(topic=topic))
        assert self.finish_latency is not None
        self.finish_latency.record((self.now() - born_timestamp) // 1000, self._with(topic=topic))

    def on_rollback(self, topic: str) -> None:
        if self.rollback_messages is None:
            return
        self.half_messages[topic] = self.half_messages.get(topic, 0) - 1
        self.rollback_messages.add(1, self._with(topic=topic))

    def on_get(self, topic: str, group: str, msg_count: int, size: int) -> None:
        """A FOUND pull (DefaultPullMessageResultHandler); retry/DLQ topics not counted."""
        if self.messages_out is None or is_retry_or_dlq_topic(topic):
            return
        system = is_system_topic(topic) or group.startswith(CID_RMQ_SYS_PREFIX)
        labels = self._with(topic=topic, consumer_group=group, is_system=system)
        self.messages_out.add(msg_count, labels)
        assert self.throughput_out is not None
        self.throughput_out.add(size, labels)

    def on_pop(self, topic: str, group: str, msg_count: int, size: int, is_retry: bool) -> None:
        """Messages a POP took from one queue (PopMessageProcessor#popMsgFromQueue): labelled with
        the requested topic and is_retry, retry queues included."""
        if self.messages_out is None:
            return
        system = is_system_topic(topic) or group.startswith(CID_RMQ_SYS_PREFIX)
        labels = self._with(topic=topic, consumer_group=group, is_system=system, is_retry=is_retry)
        self.messages_out.add(msg_count, labels)
        assert self.throughput_out is not None
        self.throughput_out.add(size, labels)

    def on_send_to_dlq(self, group: str, topic: str) -> None:
        if self.send_to_dlq is None:
            return
        system = is_system_topic(topic) or is_system_group(group)
        self.send_to_dlq.add(1, self._with(consumer_group=group, topic=topic, is_system=system))

    async def time_topic_create(self, is_system: bool, call: Awaitable[RemotingCommand]) -> RemotingCommand:
        """AdminBrokerProcessor#updateAndCreateTopic(List): every outcome timed, a refusal as failure."""
        start, ok = time.monotonic(), False
        try:
            response = await call
            ok = response.code == ResponseCode.SUCCESS
            return response
        finally:
            if self.topic_create_time is not None:
                status = "success" if ok else "failure"
                labels = self._with(invocation_status=status, is_system=is_system)
                self.topic_create_time.record(int((time.monotonic() - start) * 1000), labels)

    async def time_group_create(self, call: Awaitable[RemotingCommand]) -> RemotingCommand:
        """AdminBrokerProcessor#updateAndCreateSubscriptionGroup(List): Java times only the requests
        that passed validation (a refused one returns before), so a raised error is not timed."""
        start = time.monotonic()
        response = await call
        if self.group_create_time is not None:
            status = "success" if response.code == ResponseCode.SUCCESS else "failure"
            self.group_create_time.record(int((time.monotonic() - start) * 1000), self._with(invocation_status=status))
        return response

    def on_rpc(self, request_code: int, response_code: int, long_polling: bool, result: str, elapsed_ms: int) -> None:
        """The remoting layer's hook (NettyRemotingAbstract#writeResponse)."""
        if self.rpc_latency is None:
            return
        labels = self._rpc_labels.get((request_code, response_code, long_polling, result))
        if labels is None:
            if len(self._rpc_labels) >= _LABEL_CACHE_MAX:
                self._rpc_labels.clear()
            labels = self._rpc_labels[request_code, response_code, long_polling, result] = label_key(
                self._with(
                    protocol_type="remoting",
                    is_long_polling=long_polling,
                    request_code=_code_desc(RequestCode, request_code),
                    response_code=_code_desc(ResponseCode, response_code),
                    result=result,
                )
            )
        self.rpc_latency.record(elapsed_ms, labels)

    def watch(self, table: ProcessorTable) -> None:
        """Observe a server's requests: rpc latency and processor watermarks."""
        self.tables.append(table)
        if self.rpc_latency is not None:
            table.rpc_observer = self.on_rpc

    def watch_pop(
        self, revive_log: ReviveLog, revive_service: PopReviveService, inflight: PopInflightMessageCounter
    ) -> None:
        """PopMetricsManager#initMetrics (enablePopMetrics): revive records written and read,
        messages put back for retry, and each revive queue's lag. pyrmq has no pop buffer (Java's
        enablePopBufferMerge, off by default), so its two buffer gauges read 0 as Java's do with the
        buffer off; Java still times its empty scan every 5 ms, pyrmq has none to time and exports
        the buffer-scan histogram with no observation (count 0), so the series exist alike.
        ``inflight`` is what POP groups' lag series count as popped and not acked."""
        self.pop_inflight = inflight
        if not (self.enabled and self.config["enablePopMetrics"]):
            return
        m = self.meter
        put_total = m.counter("rocketmq_pop_revive_in_message_total", "Total number of put message to revive topic")
        get_total = m.counter("rocketmq_pop_revive_out_message_total", "Total number of get message from revive topic")
        retry_total = m.counter(
            "rocketmq_pop_revive_retry_messages_total", "Total number of put message to pop retry topic"
        )
        revive_log.on_put = lambda group, topic, kind, status: put_total.add(
            1, self._with(consumer_group=group, topic=topic, revive_message_type=kind, put_status=status)
        )
        revive_service.on_get = lambda group, topic, qid, kind: get_total.add(
            1, self._with(consumer_group=group, topic=topic, queue_id=qid, revive_message_type=kind)
        )
        revive_service.on_retry = lambda group, topic, status: retry_total.add(
            1, self._with(consumer_group=group, topic=topic, put_status=status)
        )
        scan = m.histogram(
            "rocketmq_pop_buffer_scan_time_consume",
            "Time consuming of pop buffer scan",
            POP_SCAN_BUCKETS,
            "milliseconds",
        )
        scan.declare(self.labels)
        m.gauge("rocketmq_pop_offset_buffer_size", "Time number of buffered offset", lambda: [(0, self.labels)])
        m.gauge("rocketmq_pop_checkpoint_buffer_size", "The number of buffered checkpoint", lambda: [(0, self.labels)])

        def revive(which: int) -> Iterator[Observation]:
            for qid in range(int(self.config["reviveQueueNum"])):
                yield revive_service.revive_behind(qid)[which], self._with(queue_id=qid)

        m.gauge("rocketmq_pop_revive_lag", "The processing lag of revive topic", lambda: revive(0), "milliseconds")
        m.gauge(
            "rocketmq_pop_revive_latency", "The processing latency of revive topic", lambda: revive(1), "milliseconds"
        )

    # ------------------------------------------------------------------ gauges

    def _watermarks(self) -> Iterator[Observation]:
        """Requests received and not answered, by Java's executor name (pyrmq has no queues)."""
        counts = dict.fromkeys(PROCESSORS, 0)
        for table in self.tables:
            for code, n in table.in_flight.items():
                if n:
                    counts[processor_of(code)] += n
        for name, n in counts.items():
            yield n, self._with(processor=name)

    def _producer_connections(self) -> Iterator[Observation]:
        counts: dict[tuple[int, int], int] = {}
        for channels in self.producers.group_channel_table.values():
            for info in channels.values():
                key = (info.language, info.version)
                counts[key] = counts.get(key, 0) + 1
        for (language, version), n in counts.items():
            yield (
                n,
                self._with(
                    language=_language(language), version=version_desc(version).lower(), protocol_type="remoting"
                ),
            )

    def _consumer_connections(self) -> Iterator[Observation]:
        counts: dict[tuple[str, int, int, str], int] = {}
        for group, info in self.consumers.consumer_table.items():
            mode = _consume_mode(info.consume_type)
            for ch in info.channel_info_table.values():
                key = (group, ch.language, ch.version, mode)
                counts[key] = counts.get(key, 0) + 1
        for (group, language, version, mode), n in counts.items():
            yield (
                n,
                self._with(
                    consumer_group=group,
                    language=_language(language),
                    version=version_desc(version).lower(),
                    consume_mode=mode,
                    protocol_type="remoting",
                    is_system=is_system_group(group),
                ),
            )

    def _groups(self) -> Iterator[tuple[str, str, bool, str | None]]:
        """ConsumerLagCalculator#processAllGroup: (group, topic, is POP, the POP retry topic or None)."""
        permission = int(self.config["brokerPermission"])
        for group in list(self.groups.table):
            info = self.consumers.get_consumer_group_info(group, True)
            if info is None:
                continue
            is_pop = info.consume_type == "CONSUME_POP"
            for topic in list(info.subscription_table):
                if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                    continue
                tc = self.topics.select_topic_config(topic)
                if tc is None:
                    continue
                perm = tc.perm & permission
                if not is_readable(perm) and not is_writeable(perm):
                    continue
                yield group, topic, is_pop, self._pop_retry_topic(topic, group) if is_pop else None

    def _pop_retry_topic(self, topic: str, group: str) -> str | None:
        """The POP retry topic the group's retried messages are in, when it exists and is usable."""
        names = [build_pop_retry_topic(topic, group, bool(self.config["enableRetryTopicV2"]))]
        if self.config["enableRetryTopicV2"] and self.config["retrieveMessageFromPopRetryTopicV1"]:
            names.append(build_pop_retry_topic(topic, group))
        permission = int(self.config["brokerPermission"])
        for name in names:
            tc = self.topics.select_topic_config(name)
            if tc is not None and (is_readable(tc.perm & permission) or is_writeable(tc.perm & permission)):
                return name
        return None

    def _series(self) -> Iterator[tuple[str, str, bool, str | None, bool]]:
        """(group, topic, is_retry, the topic measured, is POP) per lag series: a POP group also
        has one for its retry topic (Java calculateLag/Inflight/Available)."""
        for group, topic, is_pop, retry in self._groups():
            yield group, topic, False, topic, is_pop
            if is_pop:
                yield group, topic, True, retry, True

    def _queues(self, topic: str | None) -> range:
        tc = self.topics.select_topic_config(topic) if topic else None
        return range(tc.write_queue_nums if tc is not None else 0)

    def _in_flight_popped(self, topic: str, group: str, queue_id: int) -> int:
        return self.pop_inflight.get(topic, group, queue_id) if self.pop_inflight is not None else 0

    def _lag_labels(self, group: str, topic: str, is_retry: bool) -> dict[str, object]:
        system = is_system_topic(topic) or is_system_group(group)
        return self._with(consumer_group=group, topic=topic, is_retry=is_retry, is_system=system)

    def _store_time(self, topic: str, queue_id: int, offset: int) -> int:
        if offset < 0:
            return _NEVER
        ts = self.store.get_message_store_timestamp(topic, queue_id, offset)
        return ts if ts > 0 else _NEVER

    def _since(self, earliest: int) -> int:
        return 0 if earliest in (0, _NEVER) or earliest < 0 else max(self.now() - earliest, 0)

    def _lag(self, *, latency: bool) -> Iterator[Observation]:
        """A POP group has no pull offsets: its consumer offset moves at pop time, and what it
        popped and has not acked counts as lag (Java getConsumerLagStats with isPop)."""
        for group, topic, is_retry, measured, is_pop in self._series():
            total, earliest = 0, _NEVER
            for q in self._queues(measured):
                assert measured is not None
                broker = max(self.store.get_max_offset_in_queue(measured, q), 0)
                consumer = self.offsets.query_offset(group, measured, q)
                if consumer < 0:
                    consumer = broker
                total += max(broker - consumer, 0)
                if is_pop:
                    popped = self._in_flight_popped(measured, group, q)
                    total += popped
                    consumer -= popped
                earliest = min(earliest, self._store_time(measured, q, consumer))
            yield (self._since(earliest) if latency else total), self._lag_labels(group, topic, is_retry)

    def _inflight(self, *, latency: bool) -> Iterator[Observation]:
        for group, topic, is_retry, measured, is_pop in self._series():
            total, earliest = 0, _NEVER
            for q in self._queues(measured):
                assert measured is not None
                if is_pop:
                    total += self._in_flight_popped(measured, group, q)
                    pulled = self.offsets.query_offset(group, measured, q)
                    if pulled < 0:
                        pulled = self.store.get_max_offset_in_queue(measured, q)
                else:
                    pulled = max(self.offsets.query_pull_offset(group, measured, q), 0)
                    committed = self.offsets.query_offset(group, measured, q)
                    if committed < 0:
                        committed = pulled
                    total += max(pulled - committed, 0)
                earliest = min(earliest, self._store_time(measured, q, pulled))
            yield (self._since(earliest) if latency else total), self._lag_labels(group, topic, is_retry)

    def _ready(self) -> Iterator[Observation]:
        for group, topic, is_retry, measured, is_pop in self._series():
            total = 0
            for q in self._queues(measured):
                assert measured is not None
                broker = max(self.store.get_max_offset_in_queue(measured, q), 0)
                if is_pop:
                    pulled = self.offsets.query_offset(group, measured, q)
                else:
                    pulled = self.offsets.query_pull_offset(group, measured, q)
                if pulled < 0:
                    pulled = broker
                total += max(broker - pulled, 0)
            yield total, self._lag_labels(group, topic, is_retry)

    def _init_store_metrics(self) -> None:
        """DefaultStoreMetricsManager#init: storage gauges, and the timer's when timerWheelEnable."""
        m, store = self.meter, self.store
        root = self.config.store.store_path_root_dir

        def storage_size() -> Iterator[Observation]:
            try:
                usage = shutil.disk_usage(root)
            except OSError:
                return
            if usage.total > 0:
                yield usage.total - usage.free, self._store_labels()

        def reserve_time() -> Iterator[Observation]:
            earliest = store.get_earliest_message_time_all()
            if earliest > 0:
                yield max(self.now() - earliest, 0), self._store_labels()

        m.gauge("rocketmq_storage_size", "Broker storage size", storage_size, "bytes")
        m.gauge(
            "rocketmq_storage_flush_behind_bytes",
            "Broker flush behind bytes",
            lambda: [(max(store.get_max_phy_offset() - store.get_flushed_where(), 0), self._store_labels())],
            "bytes",
        )
        m.gauge(
            "rocketmq_storage_dispatch_behind_bytes",
            "Broker dispatch behind bytes",
            lambda: [(max(store.dispatch_behind_bytes(), 0), self._store_labels())],
            "bytes",
        )
        m.gauge("rocketmq_storage_message_reserve_time", "Broker message reserve time", reserve_time, "milliseconds")
        if not self.config["timerWheelEnable"]:
            return
        m.gauge(
            "rocketmq_timer_enqueue_lag",
            "Timer enqueue messages lag",
            lambda: [(self._timer_enqueue()[0], self._store_labels())],
        )
        m.gauge(
            "rocketmq_timer_enqueue_latency",
            "Timer enqueue latency",
            lambda: [(self._timer_enqueue()[1], self._store_labels())],
            "milliseconds",
        )
        m.gauge(
            "rocketmq_timer_dequeue_lag",
            "Timer dequeue messages lag",
            lambda: [(self._timer_dequeue()[0], self._store_labels())],
        )
        m.gauge(
            "rocketmq_timer_dequeue_latency",
            "Timer dequeue latency",
            lambda: [(self._timer_dequeue()[1], self._store_labels())],
            "milliseconds",
        )
        enq = m.counter("rocketmq_timer_enqueue_total", "Total number of timer enqueue")
        deq = m.counter("rocketmq_timer_dequeue_total", "Total number of timer dequeue")

        def count(counter: Counter) -> Callable[[str | None], None]:
            return lambda topic: counter.add(1, self._store_labels(**({} if topic is None else {"topic": topic})))

        self.timer.on_enqueued, self.timer.on_dequeued = count(enq), count(deq)
        m.gauge(
            "rocketmq_timer_message_snapshot",
            "Timer message distribution snapshot, only count timing messages in 24h.",
            self._timer_snapshot,
        )
        m.gauge(
            "rocketmq_timing_messages",
            "Current message number in timing",
            lambda: [(n, self._store_labels(topic=t)) for t, n in list(self.timer.timing.items())],
        )
        set_latency = m.histogram(
            "rocketmq_delay_message_latency", "Timer message set latency distribution", DELAY_LATENCY_BUCKETS, "seconds"
        )
        self.timer.on_set_latency = lambda topic, seconds: set_latency.record(
            seconds, self._store_labels(**({} if topic is None else {"topic": topic}))
        )

    def _timer_enqueue(self) -> tuple[int, int]:
        """(entries of the timer topic not read yet, ms since the oldest of them was stored)."""
        cq = self.store.get_consume_queue(TIMER_TOPIC, 0)
        if cq is None:
            return 0, 0
        behind = max(cq.get_max_offset_in_queue() - self.timer.read_offset, 0)
        if behind == 0:
            return 0, 0
        return behind, self._since(self._store_time(TIMER_TOPIC, 0, self.timer.read_offset))

    def _timer_dequeue(self) -> tuple[int, int]:
        """(due timers not delivered yet, ms since the oldest of them was due)."""
        now = self.now()
        due = [out for out in self.timer.pending_due_times() if out <= now]
        return len(due), (now - min(due)) if due else 0

    def _timer_snapshot(self) -> Iterator[Observation]:
        now = self.now()
        outs = [out - now for out in self.timer.pending_due_times()]
        lower = 0
        for bound in TIMER_DIST_S:
            upper = bound * 1000
            n = sum(1 for d in outs if lower <= d < upper)
            yield n, self._store_labels(timer_bound_s=str(bound))
            lower = upper

    # ------------------------------------------------------------------ endpoint

    def render(self, *, openmetrics: bool = False) -> str:
        return write_text(self.meter, DEFAULT_VIEW_HELP, openmetrics=openmetrics)

    def render_openmetrics(self) -> str:
        return self.render(openmetrics=True)

    def render_protobuf(self) -> bytes:
        return protobuf.write_protobuf(self.meter, DEFAULT_VIEW_HELP)

    async def start(self) -> None:
        if not self.enabled:
            return
        host = str(self.config["metricsPromExporterHost"] or "") or self.config.broker_ip
        port = int(self.config["metricsPromExporterPort"])
        # protobuf only with the library (the grpc extra); a scraper asking for it then gets text
        pb = self.render_protobuf if protobuf.available() else None
        self.http = MetricsHttpServer(host, port, self.render, self.render_openmetrics, pb)
        await self.http.start()

    async def shutdown(self) -> None:
        if self.http is not None:
            await self.http.close()
            self.http = None

    @property
    def url(self) -> str | None:
        return self.http.url if self.http is not None else None


def _language(code: int) -> str:
    try:
        return LanguageCode(code).name.lower()
    except ValueError:
        return str(code)


def _consume_mode(consume_type: Any) -> str:
    """ConsumeType#getTypeCN in lower case: "pull" for CONSUME_ACTIVELY, "push" for CONSUME_PASSIVELY."""
    name = str(getattr(consume_type, "name", consume_type) or "")
    return {"CONSUME_ACTIVELY": "pull", "CONSUME_PASSIVELY": "push", "CONSUME_POP": "pop"}.get(name, name.lower())
