"""The queue allocation strategies a client names in QUERY_ASSIGNMENT, run by the broker.

Java: ``client/consumer/rebalance/AllocateMessageQueueAveragely`` ("AVG") and
``AllocateMessageQueueAveragelyByCircle`` ("AVG_BY_CIRCLE"), and
``broker/processor/QueryAssignmentProcessor#allocate4Pop`` (POP consumers sharing queues).
Both lists come sorted: queues by (topic, brokerName, queueId), client ids as strings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyrmq.protocol.bodies.broker import MessageQueue

Strategy = Callable[[str, Sequence[MessageQueue], Sequence[str]], list[MessageQueue]]


def allocate_averagely(cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]) -> list[MessageQueue]:
    """Contiguous blocks; the first ``len(mq) % len(cid)`` clients get one queue more."""
    if cid not in cid_all or not mq_all:
        return []
    index = cid_all.index(cid)
    n_mq, n_cid = len(mq_all), len(cid_all)
    mod = n_mq % n_cid
    if n_mq <= n_cid:
        average = 1
    elif mod > 0 and index < mod:
        average = n_mq // n_cid + 1
    else:
        average = n_mq // n_cid
    start = index * average if mod > 0 and index < mod else index * average + mod
    return [mq_all[(start + i) % n_mq] for i in range(min(average, n_mq - start))]


def allocate_averagely_by_circle(
    cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
) -> list[MessageQueue]:
    """Queue i goes to client i mod len(cid)."""
    if cid not in cid_all:
        return []
    index = cid_all.index(cid)
    return [mq for i, mq in enumerate(mq_all) if i % len(cid_all) == index]


STRATEGIES: dict[str, Strategy] = {"AVG": allocate_averagely, "AVG_BY_CIRCLE": allocate_averagely_by_circle}


def allocate_for_pop(
    strategy: Strategy, cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str], share_queue_num: int
) -> list[MessageQueue]:
    """Java allocate4Pop: with no sharing limit (or enough of it) every client pops every queue, named
    with queueId -1 (the client then pops the whole topic); else the client's own queues plus those
    of the ``share_queue_num`` clients after it; with more clients than queues, one queue each."""
    if share_queue_num <= 0 or share_queue_num >= len(cid_all) - 1:
        return [MessageQueue(mq.topic, mq.broker_name, -1) for mq in mq_all]
    if len(cid_all) <= len(mq_all):
        result = strategy(cid, mq_all, cid_all)
        if cid in cid_all:
            index = cid_all.index(cid)
            for _ in range(share_queue_num):
                index = (index + 1) % len(cid_all)
                result.extend(strategy(cid_all[index], mq_all, cid_all))
        return result
    if cid not in cid_all:
        return []
    return [mq_all[cid_all.index(cid) % len(mq_all)]]
