"""The broker's request queues, as Java BrokerController builds its executors.

Each family of request codes has the capacity, thread count and queue-wait keys of its Java
executor (BrokerController#initializeResources / registerProcessor); every other code goes to the
admin executor (registerDefaultProcessor). BrokerFastFailure cleans the send, pull, lite-pull,
heartbeat, end-transaction, ack and admin queues; the others only overflow. The main and VIP
ports share the queues, as Java's two servers share the executors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyrmq.protocol.codes import RequestCode as R
from pyrmq.remoting.flow import Family, FlowControl, RequestQueue

__all__ = ["FAMILIES", "build_flow_control", "max_bytes_in_flight"]

FAMILIES: tuple[Family, ...] = (
    Family(
        "send",
        "sendThreadPoolQueueCapacity",
        "sendMessageThreadPoolNums",
        "waitTimeMillsInSendQueue",
        (R.SEND_MESSAGE, R.SEND_MESSAGE_V2, R.SEND_BATCH_MESSAGE, R.CONSUMER_SEND_MSG_BACK, R.RECALL_MESSAGE),
    ),
    Family(
        "pull",
        "pullThreadPoolQueueCapacity",
        "pullMessageThreadPoolNums",
        "waitTimeMillsInPullQueue",
        (R.PULL_MESSAGE, R.PEEK_MESSAGE, R.POP_MESSAGE, R.NOTIFICATION, R.POLLING_INFO),
    ),
    Family(
        "litePull",
        "litePullThreadPoolQueueCapacity",
        "litePullMessageThreadPoolNums",
        "waitTimeMillsInLitePullQueue",
        (R.LITE_PULL_MESSAGE,),
    ),
    Family(
        "ack",
        "ackThreadPoolQueueCapacity",
        "ackMessageThreadPoolNums",
        "waitTimeMillsInAckQueue",
        (R.ACK_MESSAGE, R.BATCH_ACK_MESSAGE, R.CHANGE_MESSAGE_INVISIBLETIME),
    ),
    Family(
        "reply",
        "replyThreadPoolQueueCapacity",
        "processReplyMessageThreadPoolNums",
        None,
        (R.SEND_REPLY_MESSAGE, R.SEND_REPLY_MESSAGE_V2),
    ),
    Family(
        "query",
        "queryThreadPoolQueueCapacity",
        "queryMessageThreadPoolNums",
        None,
        (R.QUERY_MESSAGE, R.VIEW_MESSAGE_BY_ID),
    ),
    Family(
        "heartbeat",
        "heartbeatThreadPoolQueueCapacity",
        "heartbeatThreadPoolNums",
        "waitTimeMillsInHeartbeatQueue",
        (R.HEART_BEAT,),
    ),
    Family(
        "clientManage",
        "clientManagerThreadPoolQueueCapacity",
        "clientManageThreadPoolNums",
        None,
        (R.UNREGISTER_CLIENT, R.CHECK_CLIENT_CONFIG),
    ),
    Family(
        "consumerManage",
        "consumerManagerThreadPoolQueueCapacity",
        "consumerManageThreadPoolNums",
        None,
        (R.GET_CONSUMER_LIST_BY_GROUP, R.UPDATE_CONSUMER_OFFSET, R.QUERY_CONSUMER_OFFSET),
    ),
    Family(
        "loadBalance",
        "loadBalanceThreadPoolQueueCapacity",
        "loadBalanceProcessorThreadPoolNums",
        None,
        (R.QUERY_ASSIGNMENT, R.SET_MESSAGE_REQUEST_MODE),
    ),
    Family(
        "endTransaction",
        "endTransactionPoolQueueCapacity",
        "endTransactionThreadPoolNums",
        "waitTimeMillsInTransactionQueue",
        (R.END_TRANSACTION,),
    ),
)

#: registerDefaultProcessor: every code no family names
ADMIN = Family(
    "adminBroker",
    "adminBrokerThreadPoolQueueCapacity",
    "adminBrokerThreadPoolNums",
    "waitTimeMillsInAdminBrokerQueue",
    (),
)

#: requests in flight may hold this many of the largest messages (maxMessageSize) at once
IN_FLIGHT_MESSAGES = 64


def _queue(config: Any, family: Family) -> RequestQueue:
    wait: Callable[[], int] | None = None
    if family.wait_key is not None:
        key = family.wait_key
        wait = lambda: int(config[key])  # noqa: E731 - read at each sweep, as Java does
    return RequestQueue(family.name, int(config[family.capacity_key]), int(config[family.workers_key]), wait)


def build_flow_control(config: Any, page_cache_busy: Callable[[], bool] = lambda: False) -> FlowControl:
    """The queues from a BrokerConfig (read once: Java sizes its executors at start)."""
    queues = [(_queue(config, f), f.codes) for f in FAMILIES]
    send = queues[0][0]
    return FlowControl(
        queues,
        _queue(config, ADMIN),
        page_cache_busy_queue=send,
        page_cache_busy=page_cache_busy,
        enabled=lambda: bool(config["brokerFastFailureEnable"]),
    )


def max_bytes_in_flight(config: Any) -> int:
    """The cap on bytes of requests in flight: IN_FLIGHT_MESSAGES x maxMessageSize (256 MiB at
    Java's default of 4 MiB); Java has no such key, its bound is the JVM heap."""
    return IN_FLIGHT_MESSAGES * int(config.store.max_message_size)
