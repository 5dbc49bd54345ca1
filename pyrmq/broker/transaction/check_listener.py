"""What the check pass does with a half message: ask a producer, or discard it.

Java: ``AbstractTransactionalMessageCheckListener#sendCheckMessage`` with
``Broker2Client#checkProducerTransactionState`` (one-way
CHECK_TRANSACTION_STATE to any live channel of the PGROUP producer group; the
body is the half message encoded like ``MessageDecoder#encode``, with its real
topic and queue id) and ``DefaultTransactionalMessageCheckListener``
(``resolveDiscardMsg``: the message moves to ``TRANS_CHECK_MAX_TIME_TOPIC``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from pyrmq.broker.transaction.util import MC
from pyrmq.common.constants import PERM_READ, PERM_WRITE, RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC
from pyrmq.protocol.codes import RequestCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.headers.transaction import CheckTransactionStateRequestHeader
from pyrmq.store import message as m
from pyrmq.store.results import PutMessageStatus

if TYPE_CHECKING:
    from pyrmq.broker.client_manager import ProducerManager
    from pyrmq.broker.config import BrokerConfig
    from pyrmq.broker.topic_config_manager import TopicConfigManager
    from pyrmq.store.message_store import MessageStore

log = logging.getLogger("pyrmq.broker.transaction")

TCMT_QUEUE_NUMS = 1


def encode_check_body(msg: m.StoredMessage) -> bytes:
    """MessageDecoder#encode(msgExt, false) of the half message as the producer's listener sees it."""
    props = m.message_properties_to_string(msg.properties).encode("utf-8")
    return bytes(
        m.encode_record(
            topic=(msg.properties.get(MC.REAL_TOPIC) or msg.topic).encode("utf-8"),
            queue_id=int(msg.properties.get(MC.REAL_QUEUE_ID, msg.queue_id)),
            flag=msg.flag,
            queue_offset=msg.queue_offset,
            physical_offset=msg.commit_log_offset,
            sys_flag=msg.sys_flag,
            born_timestamp=msg.born_timestamp,
            born_host=m.host_to_bytes(msg.born_host),
            store_timestamp=msg.store_timestamp,
            store_host=msg.store_host_bytes or m.host_to_bytes(msg.store_host),
            reconsume_times=msg.reconsume_times,
            prepared_transaction_offset=msg.prepared_transaction_offset,
            body=msg.body or b"",
            properties=props,
            version=m.MESSAGE_MAGIC_CODE,
            body_crc=msg.body_crc,
        )
    )


class DefaultTransactionalMessageCheckListener:
    def __init__(
        self,
        *,
        config: BrokerConfig,
        topic_config_manager: TopicConfigManager,
        producer_manager: ProducerManager,
        message_store: MessageStore,
    ) -> None:
        self.config = config
        self.topic_config_manager = topic_config_manager
        self.producer_manager = producer_manager
        self.message_store = message_store

    def check_request(self, msg: m.StoredMessage) -> RemotingCommand:
        uniq = msg.properties.get(MC.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=msg.queue_offset,
            commit_log_offset=msg.commit_log_offset,
            topic=msg.topic,
            msg_id=uniq,
            transaction_id=uniq,
            offset_msg_id=msg.msg_id,
            bname=self.config["brokerName"],
        )
        return RemotingCommand.request(
            RequestCode.CHECK_TRANSACTION_STATE, header.to_ext_fields(), encode_check_body(msg), oneway=True
        )

    def resolve_half_msg(self, msg: m.StoredMessage) -> None:
        """Java sendCheckMessage: one-way to a live producer of the group, if any."""
        group = msg.properties.get(MC.PRODUCER_GROUP)
        ch = self.producer_manager.get_available_channel(group) if group else None
        if ch is None:
            log.warning("Check transaction failed, channel is null. groupId=%s", group)
            return
        try:
            ch.send_oneway(self.check_request(msg))
        except Exception as e:  # a broken channel must not stop the pass
            log.error(
                "Check transaction failed because invoke producer exception. group=%s, msgId=%s, error=%s",
                group,
                msg.msg_id,
                e,
            )

    async def resolve_discard_msg(self, msg: m.StoredMessage) -> None:
        log.error(
            "half message %s (real topic %s) has been checked too many times, so discard it by moving it to "
            "system topic TRANS_CHECK_MAX_TIME_TOPIC",
            msg.msg_id,
            msg.properties.get(MC.REAL_TOPIC),
        )
        tc = self.topic_config_manager.create_topic_in_send_message_back_method(
            RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, TCMT_QUEUE_NUMS, PERM_READ | PERM_WRITE, 0
        )
        topic = tc.topic_name if tc is not None else RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC
        inner = m.MessageExtBrokerInner.from_stored(msg, topic=topic, queue_id=0)
        fut = self.message_store.put_message_async(inner)
        result = fut.result() if fut.done() else await asyncio.wrap_future(fut)
        if result.put_message_status != PutMessageStatus.PUT_OK:
            log.error(
                "Put checked-too-many-time half message to TRANS_CHECK_MAX_TIME_TOPIC failed, msgId=%s", msg.msg_id
            )
