"""PEEK_MESSAGE (200052): the messages a pop would get, without a checkpoint and without moving
the group's offset. Java: ``broker/processor/PeekMessageProcessor`` (answers PULL_NOT_FOUND when
there is nothing; the retry topic is read first one time in five, else after the topic).
"""

from __future__ import annotations

import random

from pyrmq.common.constants import FAQ_SUGGEST, is_readable
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.pop import PeekMessageRequestHeader, PopMessageResponseHeader, build_pop_retry_topic
from pyrmq.remoting.server import RequestContext, handles
from pyrmq.store.results import GetMessageStatus


def check_pop_request(config, topic_config_manager, subscription_group_manager, topic, queue_id, group, remote, what):
    """The checks PEEK, NOTIFICATION and POLLING_INFO share (Java repeats them in each processor):
    an error response's (code, remark), or None."""
    if not is_readable(int(config["brokerPermission"])):
        return ResponseCode.NO_PERMISSION, f"the broker[{config.broker_ip}] {what} message is forbidden"
    tc = topic_config_manager.select_topic_config(topic)
    if tc is None:
        return ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please! {FAQ_SUGGEST}"
    if not is_readable(tc.perm):
        return ResponseCode.NO_PERMISSION, f"the topic[{topic}] peeking message is forbidden"
    if queue_id >= tc.read_queue_nums:
        return ResponseCode.INVALID_PARAMETER, (
            f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:"
            f"[{tc.read_queue_nums}] consumer:[{remote}]"
        )
    sg = subscription_group_manager.find_subscription_group_config(group)
    if sg is None:
        return ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group [{group}] does not exist, {FAQ_SUGGEST}"
    if not sg.consume_enable:
        return ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}"
    return None


def pop_offset(consumer_offset_manager, message_store, topic: str, group: str, queue_id: int) -> int:
    """Where the group's next pop starts (Java PeekMessageProcessor#getPopOffset)."""
    offset = consumer_offset_manager.query_offset(group, topic, queue_id)
    return offset if offset >= 0 else message_store.get_min_offset_in_queue(topic, queue_id)


class PeekMessageProcessor:
    def __init__(
        self, *, config, message_store, topic_config_manager, subscription_group_manager, consumer_offset_manager
    ) -> None:
        self.config = config
        self.message_store = message_store
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.random = random.Random()

    @handles(RequestCode.PEEK_MESSAGE)
    async def peek_message(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = PeekMessageRequestHeader.from_ext_fields(cmd.ext_fields)
        bad = check_pop_request(
            self.config,
            self.topic_config_manager,
            self.subscription_group_manager,
            h.topic,
            h.queue_id,
            h.consumer_group,
            ctx.channel.remote_addr,
            "peeking",
        )
        if bad is not None:
            return cmd.make_response(*bad)
        random_q = self.random.randrange(100)
        need_retry = random_q % 5 == 0
        retry = build_pop_retry_topic(h.topic, h.consumer_group, bool(self.config["enableRetryTopicV2"]))
        bufs: list[bytes] = []
        rest = 0
        tc = self.topic_config_manager.select_topic_config(h.topic)
        if need_retry:
            rest = self._peek_topic(retry, h, random_q, bufs, rest)
        if h.queue_id < 0:
            for i in range(tc.read_queue_nums):
                rest = self._peek_queue(h.topic, h, (random_q + i) % tc.read_queue_nums, bufs, rest)
        else:
            rest = self._peek_queue(h.topic, h, h.queue_id, bufs, rest)
        if not need_retry and len(bufs) < h.max_msg_nums:
            rest = self._peek_topic(retry, h, random_q, bufs, rest)
        rh = PopMessageResponseHeader(pop_time=0, invisible_time=0, revive_qid=0, rest_num=rest)
        if bufs:
            return cmd.make_response(
                ResponseCode.SUCCESS, GetMessageStatus.FOUND.name, rh.to_ext_fields(), b"".join(bufs)
            )
        return cmd.make_response(
            ResponseCode.PULL_NOT_FOUND, GetMessageStatus.NO_MESSAGE_IN_QUEUE.name, rh.to_ext_fields()
        )

    def _peek_topic(self, topic: str, h: PeekMessageRequestHeader, random_q: int, bufs: list[bytes], rest: int) -> int:
        tc = self.topic_config_manager.select_topic_config(topic)
        if tc is None:
            return rest
        for i in range(tc.read_queue_nums):
            rest = self._peek_queue(topic, h, (random_q + i) % tc.read_queue_nums, bufs, rest)
        return rest

    def _peek_queue(self, topic: str, h: PeekMessageRequestHeader, queue_id: int, bufs: list[bytes], rest: int) -> int:
        store = self.message_store
        offset = pop_offset(self.consumer_offset_manager, store, topic, h.consumer_group, queue_id)
        rest += store.get_max_offset_in_queue(topic, queue_id) - offset
        if len(bufs) >= h.max_msg_nums:
            return rest
        want = h.max_msg_nums - len(bufs)
        result = store.get_message(h.consumer_group, topic, queue_id, offset, want, None)
        if result.status in (GetMessageStatus.OFFSET_TOO_SMALL, GetMessageStatus.OFFSET_OVERFLOW_BADLY):
            offset = result.next_begin_offset
            result.release()
            result = store.get_message(h.consumer_group, topic, queue_id, offset, want, None)
        try:
            bufs.extend(bytes(b) for b in result.message_buffer_list)
        finally:
            result.release()
        return rest
