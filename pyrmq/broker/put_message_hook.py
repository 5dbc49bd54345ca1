"""What the broker does to every message before the store appends it.

Java: ``broker/util/HookUtils#handleScheduleMessage``, registered as a put hook of
``DefaultMessageStore`` by ``BrokerController#registerMessageStoreHook``: for
non-transactional and commit records, a timer message (5.x) is diverted to
``rmq_sys_wheel_timer`` and a message with ``DELAY > 0`` to
``SCHEDULE_TOPIC_XXXX``. The controller registers it into the store's
``put_message_hook_list``, so every put through the store runs it.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from pyrmq.broker.schedule_message_service import ScheduleMessageService, delay_time_level
from pyrmq.broker.timer_message_store import check_if_timer_message, transform_timer_message
from pyrmq.common.constants import TIMER_TOPIC
from pyrmq.store import message as m
from pyrmq.store.commitlog import MessageExtBatch
from pyrmq.store.results import PutMessageResult, PutMessageStatus

if TYPE_CHECKING:
    from pyrmq.broker.config import BrokerConfig
    from pyrmq.common.clock import Clock
    from pyrmq.store.message_store import MessageStore

_NOT_TYPE = m.MessageSysFlag.TRANSACTION_NOT_TYPE
_COMMIT_TYPE = m.MessageSysFlag.TRANSACTION_COMMIT_TYPE


def register_message_store_hook(
    message_store: MessageStore, config: BrokerConfig, schedule_message_service: ScheduleMessageService, now: Clock
) -> None:
    """Java BrokerController#registerMessageStoreHook (the handleScheduleMessage hook)."""
    hook = functools.partial(schedule_message_hook, config, schedule_message_service, now)
    message_store.put_message_hook_list.append(hook)


def schedule_message_hook(
    config: BrokerConfig,
    schedule_message_service: ScheduleMessageService,
    now: Clock,
    msg: m.MessageExtBrokerInner | MessageExtBatch,
) -> PutMessageResult | None:
    """The put hook: only single messages are diverted (Java checks MessageExtBrokerInner)."""
    if not isinstance(msg, m.MessageExtBrokerInner):
        return None
    refused = handle_schedule_message(config, schedule_message_service, now, msg)
    return None if refused is None else PutMessageResult(refused, error=refused.name)


def handle_schedule_message(
    config: BrokerConfig, schedule_message_service: ScheduleMessageService, now: Clock, msg: m.MessageExtBrokerInner
) -> PutMessageStatus | None:
    """Divert delay-level and timer messages; a status when the put must be refused."""
    tran = m.MessageSysFlag.get_transaction_value(msg.sys_flag)
    if tran not in (_NOT_TYPE, _COMMIT_TYPE):
        return None
    props = msg.properties
    level = delay_time_level(props)
    if msg.topic != TIMER_TOPIC and check_if_timer_message(msg, level):
        cfg = config
        if not cfg["timerWheelEnable"]:
            return PutMessageStatus.WHEEL_TIMER_NOT_ENABLE
        bad = transform_timer_message(msg, now(), max(int(cfg["timerPrecisionMs"]), 1), int(cfg["timerMaxDelaySec"]))
        if bad is not None:
            return bad
    if level > 0:
        schedule_message_service.transform_delay_level_message(msg)
    return None
