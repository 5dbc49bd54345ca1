"""Flow control's sans-IO rules (pyrmq/remoting/flow.py) and the broker's queue table.

Java: BrokerFastFailure#cleanExpiredRequest(InQueue), NettyRemotingAbstract's OVERLOAD answer,
BrokerController's executors.
"""

from __future__ import annotations

from pyrmq.broker.config import BrokerConfig
from pyrmq.broker.flow_control import build_flow_control, max_bytes_in_flight
from pyrmq.protocol.codes import RequestCode
from pyrmq.remoting.flow import FlowControl, RequestQueue, pcbusy_clean_remark, timeout_clean_remark


def test_remarks_are_javas():
    assert timeout_clean_remark(250, 3) == (
        "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 250ms, size of queue: 3"
    )
    assert pcbusy_clean_remark(7, 0).startswith("[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while")


def test_full_queue_refuses_and_workers_bound_what_starts():
    q: RequestQueue[str] = RequestQueue("send", capacity=3, workers=2)
    assert [q.offer(x, 0) for x in "abcd"] == [True, True, True, False]
    assert q.take() == "a"
    assert q.take() == "b"
    assert q.take() is None  # both workers busy
    q.finished()
    assert q.take() == "c"
    assert q.offer("e", 0)
    assert len(q) == 1


def test_clean_expired_takes_only_the_old_head_with_the_size_after_removal():
    wait = [200]
    q: RequestQueue[str] = RequestQueue("send", capacity=10, workers=1, max_wait_ms=lambda: wait[0])
    for name, t in (("a", 0), ("b", 50), ("c", 300)):
        q.offer(name, t)
    out = q.clean_expired(260)
    assert [(r.item, r.remark) for r in out] == [
        ("a", timeout_clean_remark(260, 2)),
        ("b", timeout_clean_remark(210, 1)),
    ]
    assert q.take() == "c"
    wait[0] = 0  # read at each sweep: a config update applies at once
    q.offer("d", 400)
    assert [r.item for r in q.clean_expired(400)] == ["d"]


def test_queue_without_wait_is_never_cleaned():
    q: RequestQueue[str] = RequestQueue("query", capacity=10, workers=1)
    q.offer("a", 0)
    assert q.clean_expired(10**9) == []


def test_sweep_page_cache_busy_clears_the_send_queue_first_and_honours_the_switch():
    send: RequestQueue[str] = RequestQueue("send", 10, 1, lambda: 200)
    admin: RequestQueue[str] = RequestQueue("admin", 10, 1, lambda: 5000)
    busy, enabled = [True], [True]
    flow = FlowControl(
        [(send, [RequestCode.SEND_MESSAGE_V2])],
        admin,
        page_cache_busy_queue=send,
        page_cache_busy=lambda: busy[0],
        enabled=lambda: enabled[0],
    )
    assert flow.queue_for(RequestCode.SEND_MESSAGE_V2) is send
    assert flow.queue_for(RequestCode.GET_BROKER_RUNTIME_INFO) is admin
    send.offer("s1", 100)
    send.offer("s2", 100)
    admin.offer("a1", 0)
    enabled[0] = False
    assert flow.sweep(6000) == []
    enabled[0] = True
    out = flow.sweep(110)
    assert [(r.item, r.remark) for r in out] == [("s1", pcbusy_clean_remark(10, 1)), ("s2", pcbusy_clean_remark(10, 0))]
    busy[0] = False
    assert [r.item for r in flow.sweep(5000)] == ["a1"]
    assert flow.queued == 0


def test_broker_queues_follow_javas_keys():
    cfg = BrokerConfig.from_properties(
        {"sendThreadPoolQueueCapacity": "5", "sendMessageThreadPoolNums": "3", "waitTimeMillsInSendQueue": "77"}
    )
    flow = build_flow_control(cfg)
    send = flow.queue_for(RequestCode.SEND_MESSAGE_V2)
    assert send is not None and (send.name, send.capacity, send.workers) == ("send", 5, 3)
    assert send.max_wait_ms is not None and send.max_wait_ms() == 77
    assert flow.queue_for(RequestCode.CONSUMER_SEND_MSG_BACK) is send
    pull = flow.queue_for(RequestCode.PULL_MESSAGE)
    assert pull is not None and pull.capacity == 100000 and pull.max_wait_ms is not None and pull.max_wait_ms() == 5000
    query = flow.queue_for(RequestCode.QUERY_MESSAGE)
    assert query is not None and query.capacity == 20000 and query.max_wait_ms is None
    admin = flow.queue_for(RequestCode.UPDATE_AND_CREATE_TOPIC)
    assert admin is not None and admin.name == "adminBroker" and admin.capacity == 10000
    assert max_bytes_in_flight(cfg) == 64 * 4 * 1024 * 1024


def test_batch_per_turn_adapts_between_the_thread_count_and_the_capacity():
    q: RequestQueue[int] = RequestQueue("send", capacity=64, workers=4)
    for i in range(100):
        q.offer(i, 0)
    assert [q.take() for _ in range(5)] == [0, 1, 2, 3, None]  # one batch: the thread count
    q.adapt(0.001, target_s=0.1)  # cheap turn: double
    assert q.batch == 8
    for _ in range(10):
        q.adapt(0.0, target_s=0.1)
    assert q.batch == 64  # never above the capacity
    q.adapt(0.05, target_s=0.1)  # about right: kept
    assert q.batch == 64
    for _ in range(10):
        q.adapt(1.0, target_s=0.1)
    assert q.batch == 4  # never below the thread count
