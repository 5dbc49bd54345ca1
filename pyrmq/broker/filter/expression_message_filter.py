"""The store-side filter of a pull: tags on the consume queue, SQL92 on the record's properties.

Java: ``broker/filter/{ExpressionMessageFilter,ExpressionForRetryMessageFilter,
MessageEvaluationContext}``. For TAG subscriptions it matches the consume
queue's tags code and lets every record through; for SQL92 it lets every
consume-queue entry through (pyrmq builds no bit maps, as Java with
``enableCalcFilterBitMap=false``) and evaluates the compiled expression
against the record's properties: TRUE matches, NULL (unknown) or an
evaluation error does not. With ``filterSupportRetry`` the retry topic of a
group is filtered by the group's expression on the original topic
(``RETRY_TOPIC`` property).
"""

from __future__ import annotations

import logging

from pyrmq.broker.filter.consumer_filter_manager import ConsumerFilterData, ConsumerFilterManager, is_tag_type
from pyrmq.broker.filter.sql92 import evaluate_matches
from pyrmq.common.constants import RETRY_GROUP_TOPIC_PREFIX, MessageConst
from pyrmq.store import message as m

log = logging.getLogger("pyrmq.broker.filter")


def decode_properties(msg_buffer) -> dict[str, str]:
    """Java MessageDecoder#decodeProperties: the properties of one stored record."""
    try:
        return m.decode_message(msg_buffer, read_body=False).properties
    except m.MessageDecodeError:
        return {}


class ExpressionMessageFilter:
    def __init__(
        self,
        subscription_data,
        consumer_filter_data: ConsumerFilterData | None,
        consumer_filter_manager: ConsumerFilterManager | None,
    ) -> None:
        self.subscription_data = subscription_data
        self.consumer_filter_data = consumer_filter_data
        self.consumer_filter_manager = consumer_filter_manager
        sd = subscription_data
        self._tag = sd is None or sd.class_filter_mode or is_tag_type(sd.expression_type)
        self._codes = sd.tags_codes() if sd is not None and not sd.class_filter_mode else None

    def is_matched_by_consume_queue(self, tags_code: int, cq_ext_unit: object | None = None) -> bool:
        if self.subscription_data is None or self.subscription_data.class_filter_mode:
            return True
        if self._tag:
            return self._codes is None or tags_code in self._codes
        return True  # no bit map: decided on the commit log

    def _filter_data(self, properties: dict[str, str]) -> ConsumerFilterData | None:
        return self.consumer_filter_data

    def is_matched_by_commit_log(self, msg_buffer, properties: dict[str, str] | None = None) -> bool:
        if self._tag:
            return True
        if properties is None and msg_buffer is not None:
            properties = decode_properties(msg_buffer)
        data = self._filter_data(properties or {})
        if data is None or not data.expression or data.compiled_expression is None:
            return True
        return evaluate_matches(data.compiled_expression, properties)


class ExpressionForRetryMessageFilter(ExpressionMessageFilter):
    """``filterSupportRetry=true``: a group's retry topic is filtered with its original topic's expression."""

    def _filter_data(self, properties: dict[str, str]) -> ConsumerFilterData | None:
        topic = self.subscription_data.topic or ""
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) and self.consumer_filter_manager is not None:
            real_topic = properties.get(MessageConst.RETRY_TOPIC)
            group = topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
            return self.consumer_filter_manager.get(real_topic, group) if real_topic else None
        return self.consumer_filter_data
