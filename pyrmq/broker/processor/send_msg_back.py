"""CONSUMER_SEND_MSG_BACK (36): a failed message goes to %RETRY%<group> (later) or %DLQ%<group>.

Java: ``broker/processor/AbstractSendMessageProcessor#consumerSendMsgBack``. The
original record is looked up by its commit-log offset and re-put with
reconsumeTimes + 1, ``RETRY_TOPIC`` (first topic, kept across retries) and
``ORIGIN_MESSAGE_ID`` (the first record's offset msgId, kept across retries).
The retry ladder: header delayLevel 0 means level ``3 + reconsumeTimes``, so
the broker's put hook parks it in SCHEDULE_TOPIC_XXXX with REAL_TOPIC
``%RETRY%<group>``. A record that already has ``reconsumeTimes >=
maxReconsumeTimes`` (header, else the group's ``retryMaxTimes``, default 16),
or a negative delayLevel, goes to ``%DLQ%<group>`` (one queue, read+write) with
``DELAY=0``.
"""

from __future__ import annotations

import logging
import random

from pyrmq.broker.processor import REJECT_REQUEST_REMARK
from pyrmq.broker.put import await_put
from pyrmq.common.constants import (
    FAQ_SUGGEST,
    PERM_READ,
    PERM_WRITE,
    MessageConst,
    dlq_topic,
    is_writeable,
    retry_topic,
)
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.errors import NoPermission, SubscriptionGroupNotExist, SystemBusy, SystemError_
from pyrmq.protocol.headers.broker import ConsumerSendMsgBackRequestHeader
from pyrmq.protocol.version import MQVersion
from pyrmq.remoting.server import RequestContext, handles
from pyrmq.store import message as m
from pyrmq.store.results import PutMessageStatus

log = logging.getLogger("pyrmq.broker.sendback")

DLQ_NUMS_PER_GROUP = 1
_MC = MessageConst


class ConsumerSendMsgBackProcessor:
    def __init__(
        self,
        *,
        config,
        topic_config_manager,
        subscription_group_manager,
        message_store,
        broker_metrics,
    ) -> None:
        self.config = config
        self.broker_metrics = broker_metrics
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self.message_store = message_store
        self._store_host = (config.broker_ip, int(config["listenPort"]))

    @handles(RequestCode.CONSUMER_SEND_MSG_BACK)
    async def consumer_send_msg_back(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        if not self.config.is_master:  # Java: SendMessageProcessor#rejectRequest serves this code too
            if not self.config["enableSlaveActingMaster"]:
                raise SystemBusy(REJECT_REQUEST_REMARK)
            # Java AbstractSendMessageProcessor#consumerSendMsgBack: no master in this process
            # (peekMasterBroker); the client then sends the message to %RETRY% itself
            raise SystemError_(f"no master available along with {self.config.broker_ip}")
        h = ConsumerSendMsgBackRequestHeader.from_ext_fields(cmd.ext_fields)
        sg = self.subscription_group_manager.find_subscription_group_config(h.group)
        if sg is None:
            raise SubscriptionGroupNotExist(f"subscription group not exist, {h.group} {FAQ_SUGGEST}")
        if not is_writeable(int(self.config["brokerPermission"])):
            raise NoPermission(f"the broker[{self.config.broker_ip}] sending message is forbidden")
        if sg.retry_queue_nums <= 0:
            return cmd.make_response(ResponseCode.SUCCESS, None)
        new_topic = retry_topic(h.group)
        queue_id = random.randrange(sg.retry_queue_nums)
        topic_sys_flag = 0x2 if h.unit_mode else 0  # TopicSysFlag.buildSysFlag(false, true)
        tcm = self.topic_config_manager
        tc = tcm.create_topic_in_send_message_back_method(
            new_topic, sg.retry_queue_nums, PERM_WRITE | PERM_READ, topic_sys_flag
        )
        if tc is None:
            raise SystemError_(f"topic[{new_topic}] not exist")
        if not is_writeable(tc.perm):
            raise NoPermission(f"the topic[{new_topic}] sending message is forbidden")
        msg = self.message_store.look_message_by_offset(h.offset)
        if msg is None:
            raise SystemError_(f"look message by offset failed, {h.offset}")
        props = dict(msg.properties)
        if _MC.RETRY_TOPIC not in props:
            props[_MC.RETRY_TOPIC] = msg.topic
        props[_MC.WAIT_STORE_MSG_OK] = "false"
        delay_level = h.delay_level
        max_times = sg.retry_max_times
        if cmd.version >= MQVersion.V3_4_9 and h.max_reconsume_times is not None:
            max_times = h.max_reconsume_times
        is_dlq = msg.reconsume_times >= max_times or delay_level < 0
        if is_dlq:
            self.broker_metrics.on_send_to_dlq(h.group, h.origin_topic or "")
            new_topic = dlq_topic(h.group)
            queue_id = random.randrange(DLQ_NUMS_PER_GROUP)
            tc = tcm.create_topic_in_send_message_back_method(new_topic, DLQ_NUMS_PER_GROUP, PERM_WRITE | PERM_READ, 0)
            if tc is None:
                raise SystemError_(f"topic[{new_topic}] not exist")
            props[_MC.DELAY_TIME_LEVEL] = "0"
        else:
            if delay_level == 0:
                delay_level = 3 + msg.reconsume_times
            props[_MC.DELAY_TIME_LEVEL] = str(delay_level)
        origin = props.get(_MC.ORIGIN_MESSAGE_ID)
        props[_MC.ORIGIN_MESSAGE_ID] = origin if origin and origin.strip() else msg.msg_id
        inner = m.MessageExtBrokerInner(
            topic=new_topic,
            body=msg.body or b"",
            queue_id=queue_id,
            flag=msg.flag,
            properties=props,
            sys_flag=msg.sys_flag,
            born_timestamp=msg.born_timestamp,
            born_host=msg.born_host,
            store_host=self._store_host,
            reconsume_times=msg.reconsume_times + 1,
        )
        result = await await_put(self.message_store.put_message_async(inner))
        if result.put_message_status is PutMessageStatus.PUT_OK:
            if is_dlq:
                log.info(
                    "send msg to DLQ %s, originalTopic=%s, consumerId=%s, msgUniqKey=%s",
                    new_topic,
                    h.origin_topic,
                    h.group,
                    props.get(_MC.UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
                )
            return cmd.make_response(ResponseCode.SUCCESS, None)
        raise SystemError_(result.put_message_status.name)
