"""Heartbeat, Telemetry (client settings) and NotifyClientTermination.

Java: ``proxy/grpc/v2/client/ClientActivity`` and ``common/GrpcClientSettingsManager``: a client
first sends its Settings on the Telemetry stream; the proxy keeps them by client id and answers
them merged with its own producer retry policy and limits, or the consumer group's retry policy
and long-polling settings.
"""

from __future__ import annotations

from typing import Any

from pyrmq.broker.client_manager import ClientChannelInfo
from pyrmq.grpc.message import MAX_MESSAGE_SIZE, duration
from pyrmq.grpc.proto import pb, spb
from pyrmq.grpc.status import Code, GrpcProxyError, ok, status
from pyrmq.grpc.validate import validate_group, validate_topic
from pyrmq.protocol.bodies.broker import SubscriptionData
from pyrmq.protocol.codes import LanguageCode
from pyrmq.protocol.version import MQVersion
from pyrmq.store.config import CustomizedRetryPolicy, ExponentialRetryPolicy, SubscriptionGroupConfig

#: ProxyConfig defaults
PRODUCER_MAX_ATTEMPTS = 3
PRODUCER_BACKOFF_INITIAL_MS = 10
PRODUCER_BACKOFF_MAX_MS = 1000
PRODUCER_BACKOFF_MULTIPLIER = 2
CONSUMER_LONG_POLLING_BATCH_SIZE = 32
CONSUMER_MAX_LONG_POLLING_TIMEOUT_MS = 20_000
ENABLE_TOPIC_MESSAGE_TYPE_CHECK = True

_CONSUMERS = (pb.PUSH_CONSUMER, pb.SIMPLE_CONSUMER)


def producer_settings(settings: Any) -> Any:
    """GrpcClientSettingsManager#mergeProducerData."""
    out = pb.Settings()
    out.CopyFrom(settings)
    bp = out.backoff_policy
    bp.max_attempts = PRODUCER_MAX_ATTEMPTS
    bp.exponential_backoff.CopyFrom(
        pb.ExponentialBackoff(
            initial=duration(PRODUCER_BACKOFF_INITIAL_MS),
            max=duration(PRODUCER_BACKOFF_MAX_MS),
            multiplier=PRODUCER_BACKOFF_MULTIPLIER,
        )
    )
    out.publishing.validate_message_type = ENABLE_TOPIC_MESSAGE_TYPE_CHECK
    out.publishing.max_body_size = MAX_MESSAGE_SIZE
    return out


def subscription_settings(settings: Any, group: SubscriptionGroupConfig) -> Any:
    """GrpcClientSettingsManager#mergeSubscriptionData: the group's retry policy and orderliness."""
    out = pb.Settings()
    out.CopyFrom(settings)
    sub = out.subscription
    sub.receive_batch_size = CONSUMER_LONG_POLLING_BATCH_SIZE
    sub.long_polling_timeout.CopyFrom(duration(CONSUMER_MAX_LONG_POLLING_TIMEOUT_MS))
    sub.fifo = bool(group.consume_message_orderly)
    bp = out.backoff_policy
    bp.max_attempts = group.retry_max_times + 1
    policy = group.group_retry_policy
    if policy.type == "EXPONENTIAL":
        exp = policy.exponential_retry_policy or ExponentialRetryPolicy()
        bp.exponential_backoff.CopyFrom(
            pb.ExponentialBackoff(initial=duration(exp.initial), max=duration(exp.max), multiplier=exp.multiplier)
        )
    else:
        custom = policy.customized_retry_policy or CustomizedRetryPolicy()
        bp.customized_backoff.CopyFrom(pb.CustomizedBackoff(next=[duration(ms) for ms in custom.next]))
    return out


class ClientActivity:
    def __init__(self, controller: Any) -> None:
        self.controller = controller
        self.settings: dict[str, Any] = {}  # client id -> the Settings the client sent (raw)
        self.channels: dict[str, Any] = {}  # client id -> its Telemetry stream (a TelemetryChannel)

    def _channel_info(self, ctx: Any, channel: Any) -> ClientChannelInfo:
        language = LanguageCode.__members__.get(ctx.language.upper(), LanguageCode.OTHER)
        return ClientChannelInfo(channel, channel.client_id, language, MQVersion.V5_0_0, self.controller.now())

    def _register_producer(self, ctx: Any, settings: Any, channel: Any) -> None:
        """ClientActivity#registerProducer: the stream joins each topic's producer group (the
        broker's transaction check finds it there)."""
        for topic in settings.publishing.topics:
            self.controller.producer_manager.register_producer(topic.name, self._channel_info(ctx, channel))

    def _register_consumer(self, ctx: Any, group: str, settings: Any, channel: Any) -> None:
        """ClientActivity#registerConsumer: a simple consumer consumes actively, a push consumer
        passively; clustering, from the last offset, the settings' subscriptions."""
        consume_type = "CONSUME_ACTIVELY" if settings.client_type == pb.SIMPLE_CONSUMER else "CONSUME_PASSIVELY"
        subs = [
            SubscriptionData.build(
                entry.topic.name, entry.expression.expression, "SQL92" if entry.expression.type == pb.SQL else "TAG"
            )
            for entry in settings.subscription.subscriptions
        ]
        self.controller.consumer_manager.register_consumer(
            group, self._channel_info(ctx, channel), consume_type, "CLUSTERING", "CONSUME_FROM_LAST_OFFSET", subs
        )

    def stream_closed(self, channel: Any) -> None:
        channel.close()
        self.controller.producer_manager.do_channel_close_event(channel)
        self.controller.consumer_manager.do_channel_close_event(channel)
        client_id = channel.client_id
        if self.channels.get(client_id) is channel:
            del self.channels[client_id]

    def group_config(self, name: str) -> SubscriptionGroupConfig:
        found = self.controller.subscription_group_manager.find_subscription_group_config(name)
        return found if found is not None else SubscriptionGroupConfig(group_name=name)

    def merged(self, settings: Any) -> Any:
        """GrpcClientSettingsManager#getClientSettings, with the metric collector off (ProxyConfig's default)."""
        if settings.HasField("publishing"):
            out = producer_settings(settings)
        elif settings.HasField("subscription"):
            out = subscription_settings(settings, self.group_config(settings.subscription.group.name))
        else:
            out = pb.Settings()
            out.CopyFrom(settings)
        out.metric.CopyFrom(pb.Metric(on=False))
        return out

    def client_settings(self, client_id: str) -> Any | None:
        raw = self.settings.get(client_id)
        return None if raw is None else self.merged(raw)

    async def heartbeat(self, ctx: Any, request: Any) -> Any:
        settings = self.settings.get(ctx.client_id)
        if settings is None:
            return spb.HeartbeatResponse(
                status=status(Code.UNRECOGNIZED_CLIENT_TYPE, "cannot find client settings for this client")
            )
        channel = self.channels.get(ctx.client_id)
        if settings.client_type in _CONSUMERS:
            validate_group(request.group)
            if channel is not None:
                self._register_consumer(ctx, request.group.name, settings, channel)
        elif settings.client_type != pb.PRODUCER:
            return spb.HeartbeatResponse(
                status=status(Code.UNRECOGNIZED_CLIENT_TYPE, pb.ClientType.Name(settings.client_type))
            )
        elif channel is not None:
            self._register_producer(ctx, settings, channel)  # refreshes its timestamp
        return spb.HeartbeatResponse(status=ok())

    async def notify_client_termination(self, ctx: Any, request: Any) -> Any:
        settings = self.settings.pop(ctx.client_id, None)
        if settings is None:
            return spb.NotifyClientTerminationResponse(
                status=status(Code.UNRECOGNIZED_CLIENT_TYPE, "cannot find client settings for this client")
            )
        channel = self.channels.get(ctx.client_id)
        if settings.client_type in _CONSUMERS:
            validate_group(request.group)
            if channel is not None:
                self.controller.consumer_manager.unregister_consumer(request.group.name, channel)
        elif channel is not None:
            for topic in settings.publishing.topics:
                self.controller.producer_manager.unregister_producer(topic.name, channel)
        return spb.NotifyClientTerminationResponse(status=ok())

    async def telemetry(self, ctx: Any, command: Any, channel: Any) -> Any | None:
        """One command of the stream; the answer to a Settings command is the merged Settings."""
        which_command = command.WhichOneof("command")
        if which_command == "thread_stack_trace":
            channel.report_thread_stack(command.status, command.thread_stack_trace)
            return None
        if which_command == "verify_message_result":
            channel.report_verify_result(command.status, command.verify_message_result)
            return None
        if which_command != "settings":
            return None
        settings = command.settings
        which = settings.WhichOneof("pub_sub")
        if which == "publishing":
            for topic in settings.publishing.topics:
                validate_topic(topic)
        elif which == "subscription":
            validate_group(settings.subscription.group)
        else:
            raise GrpcProxyError(Code.BAD_REQUEST, "there is no publishing or subscription data in settings")
        if which == "subscription":  # updateClientSettings: over the defaults of a consumer
            base = subscription_settings(pb.Settings(), SubscriptionGroupConfig())
            base.MergeFrom(settings)
            settings = base
        self.settings[ctx.client_id] = settings
        self.channels[ctx.client_id] = channel
        if which == "publishing":
            self._register_producer(ctx, settings, channel)
        else:
            self._register_consumer(ctx, settings.subscription.group.name, settings, channel)
        return spb.TelemetryCommand(status=ok(), settings=self.merged(settings))


__all__ = ["ClientActivity", "producer_settings", "subscription_settings"]
