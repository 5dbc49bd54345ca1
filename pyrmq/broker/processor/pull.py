"""PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361), with long polling.

Java: ``broker/processor/PullMessageProcessor`` (checks, composeResponseHeader,
the commit-offset piggyback) and ``DefaultPullMessageResultHandler`` (body =
the stored records concatenated; PULL_NOT_FOUND with the suspend flag on a
first run is held in ``PullRequestHoldService`` and answered later). Spec §5.6.
"""

from __future__ import annotations

import logging

from pyrmq.broker.filter.consumer_filter_manager import is_tag_type
from pyrmq.broker.filter.expression_message_filter import ExpressionForRetryMessageFilter, ExpressionMessageFilter
from pyrmq.broker.processor import REJECT_REQUEST_REMARK
from pyrmq.broker.pull_request_hold_service import PullRequest, PullRequestHoldService
from pyrmq.common.constants import FAQ_SUGGEST, MASTER_ID, RETRY_GROUP_TOPIC_PREFIX, SYSTEM_TOPIC_PREFIX, is_readable
from pyrmq.protocol.bodies.broker import SubscriptionData
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import FLAG_RESPONSE, RemotingCommand
from pyrmq.protocol.errors import SystemBusy
from pyrmq.protocol.headers.broker import PullMessageRequestHeader
from pyrmq.remoting.channel import error_response
from pyrmq.remoting.server import RequestContext, handles
from pyrmq.store.config import SubscriptionGroupConfig
from pyrmq.store.results import GetMessageStatus

log = logging.getLogger("pyrmq.broker.pull")


# common/sysflag/PullSysFlag
FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4
#: RequestSource -> the consumer info a pull compensates (Java PullMessageProcessor#processRequest)
_COMPENSATION = {1: ("CONSUME_PASSIVELY", "BROADCASTING"), 2: ("CONSUME_ACTIVELY", "CLUSTERING")}
FLAG_CLASS_FILTER = 0x8
FLAG_LITE_PULL_MESSAGE = 0x10

#: GetMessageStatus -> response code (PullMessageProcessor#processRequest switch)
_FOUND = ResponseCode.SUCCESS
_STATUS_CODE = {
    GetMessageStatus.FOUND: ResponseCode.SUCCESS,
    GetMessageStatus.MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.OFFSET_FOUND_NULL: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.OFFSET_RESET: ResponseCode.PULL_OFFSET_MOVED,
}


class PullMessageProcessor:
    def __init__(
        self,
        *,
        config,
        message_store,
        topic_config_manager,
        subscription_group_manager,
        consumer_offset_manager,
        consumer_manager,
        consumer_filter_manager,
        broker_stats,
        broker_metrics,
        now,
    ) -> None:
        self.config = config
        self.message_store = message_store
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.consumer_manager = consumer_manager
        self.consumer_filter_manager = consumer_filter_manager
        self.broker_stats = broker_stats
        self.broker_metrics = broker_metrics
        self.now = now
        #: Java BrokerController#minBrokerIdInGroup: the lowest live broker id of this group. It
        #: only moves with enableSlaveActingMaster; otherwise a slave always sees its master as 0.
        self.min_broker_id_in_group = MASTER_ID
        # Java: the hold service re-runs held pulls through this processor
        self.pull_request_hold_service = PullRequestHoldService(
            self.execute_request_when_wakeup, message_store.get_max_offset_in_queue
        )

    @handles(RequestCode.PULL_MESSAGE, RequestCode.LITE_PULL_MESSAGE)
    async def pull_message(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand | None:
        if not self.config.is_master and not self.config["slaveReadEnable"]:
            raise SystemBusy(REJECT_REQUEST_REMARK)  # Java PullMessageProcessor#rejectRequest
        return self.process_request(ctx, cmd, True)

    def _error(self, cmd: RemotingCommand, code: int, remark: str, forbidden: int | None = None) -> RemotingCommand:
        ext = None
        if forbidden is not None:
            ext = {"forbiddenType": str(forbidden)}
        return cmd.make_response(code, remark, ext)

    def process_request(
        self, ctx: RequestContext, cmd: RemotingCommand, broker_allow_suspend: bool
    ) -> RemotingCommand | None:
        """Java PullMessageProcessor#processRequest; None when the request was suspended."""
        cfg = self.config
        h = PullMessageRequestHeader.from_ext_fields(cmd.ext_fields)
        if not is_readable(int(cfg["brokerPermission"])):
            return self._error(
                cmd, ResponseCode.NO_PERMISSION, f"the broker[{cfg.broker_ip}] pulling message is forbidden", 1
            )
        if cmd.code == RequestCode.LITE_PULL_MESSAGE and not cfg["litePullMessageEnable"]:
            return self._error(
                cmd, ResponseCode.NO_PERMISSION, f"the broker[{cfg.broker_ip}] for lite pull consumer is forbidden", 1
            )
        sg = self.subscription_group_manager.find_subscription_group_config(h.consumer_group)
        if sg is None:
            return self._error(
                cmd,
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group [{h.consumer_group}] does not exist, {FAQ_SUGGEST}",
            )
        if not sg.consume_enable:
            return self._error(
                cmd, ResponseCode.NO_PERMISSION, f"subscription group no permission, {h.consumer_group}", 2
            )
        sys_flag = h.sys_flag
        has_suspend = bool(sys_flag & FLAG_SUSPEND)
        has_commit = bool(sys_flag & FLAG_COMMIT_OFFSET)
        has_sub = bool(sys_flag & FLAG_SUBSCRIPTION)
        suspend_ms = h.suspend_timeout_millis if has_suspend else 0
        tc = self.topic_config_manager.select_topic_config(h.topic)
        if tc is None:
            log.error("the topic %s not exist, consumer: %s", h.topic, ctx.channel.remote_addr)
            return self._error(
                cmd, ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist, apply first please! {FAQ_SUGGEST}"
            )
        if not is_readable(tc.perm):
            return self._error(cmd, ResponseCode.NO_PERMISSION, f"the topic[{h.topic}] pulling message is forbidden", 3)
        if h.queue_id < 0 or h.queue_id >= tc.read_queue_nums:
            return self._error(
                cmd,
                ResponseCode.INVALID_PARAMETER,
                f"queueId[{h.queue_id}] is illegal, topic:[{h.topic}] topicConfig.readQueueNums:"
                f"[{tc.read_queue_nums}] consumer:[{ctx.channel.remote_addr}]",
            )
        # Java: PROXY_FOR_BROADCAST (1) and PROXY_FOR_STREAM (2) request sources, else an SDK push consumer
        consume_type, model = _COMPENSATION.get(h.request_source or -1, ("CONSUME_PASSIVELY", "CLUSTERING"))
        self.consumer_manager.compensate_basic_consumer_info(h.consumer_group, consume_type, model)
        filter_data = None
        if has_sub:
            sub = SubscriptionData.build(h.topic, h.subscription, h.expression_type, h.sub_version)
            self.consumer_manager.compensate_subscribe_data(h.consumer_group, h.topic, sub)
            if not is_tag_type(sub.expression_type):
                # Java: a selector that does not compile leaves no filter data (its assert is off): all match
                filter_data = self.consumer_filter_manager.build(
                    h.topic, h.consumer_group, h.subscription or "", sub.expression_type, h.sub_version
                )
        else:
            info = self.consumer_manager.get_consumer_group_info(h.consumer_group)
            if info is None:
                return self._error(
                    cmd, ResponseCode.SUBSCRIPTION_NOT_EXIST, f"the consumer's group info not exist{FAQ_SUGGEST}"
                )
            if not sg.consume_broadcast_enable and info.message_model == "BROADCASTING":
                return self._error(
                    cmd,
                    ResponseCode.NO_PERMISSION,
                    f"the consumer group[{h.consumer_group}] can not consume by broadcast way",
                    4,
                )
            found = info.find_subscription_data(h.topic)
            if found is None:
                return self._error(
                    cmd, ResponseCode.SUBSCRIPTION_NOT_EXIST, f"the consumer's subscription not exist{FAQ_SUGGEST}"
                )
            sub = found
            if sub.sub_version < h.sub_version:
                return self._error(cmd, ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest")
            if not is_tag_type(sub.expression_type):
                filter_data = self.consumer_filter_manager.get(h.topic, h.consumer_group)
                if filter_data is None:
                    return self._error(
                        cmd,
                        ResponseCode.FILTER_DATA_NOT_EXIST,
                        "The broker's consumer filter data is not exist!Your expression may be wrong!",
                    )
                if filter_data.client_version < h.sub_version:
                    return self._error(
                        cmd, ResponseCode.FILTER_DATA_NOT_LATEST, "the consumer's consumer filter data not latest"
                    )
        if (sub.expression_type or "TAG").upper() != "TAG" and not cfg["enablePropertyFilter"]:
            return self._error(
                cmd,
                ResponseCode.SYSTEM_ERROR,
                f"The broker does not support consumer to filter message by {sub.expression_type}",
            )
        tags_codes = None if sub.class_filter_mode else sub.tags_codes()
        reset_to = self.consumer_offset_manager.query_then_erase_reset_offset(h.topic, h.consumer_group, h.queue_id)
        if reset_to is not None and cfg["useServerSideResetOffset"]:
            store = self.message_store
            ext = {
                "suggestWhichBrokerId": "0",
                "nextBeginOffset": str(reset_to),
                "minOffset": str(store.get_min_offset_in_queue(h.topic, h.queue_id)),
                "maxOffset": str(store.get_max_offset_in_queue(h.topic, h.queue_id)),
                "topicSysFlag": str(tc.topic_sys_flag),
                "groupSysFlag": str(sg.group_sys_flag),
            }
            return cmd.make_response(ResponseCode.PULL_OFFSET_MOVED, "OFFSET_RESET", ext)
        store = self.message_store
        max_nums = h.max_msg_nums
        filter_cls = ExpressionForRetryMessageFilter if cfg["filterSupportRetry"] else ExpressionMessageFilter
        result = store.get_message(
            h.consumer_group,
            h.topic,
            h.queue_id,
            h.queue_offset,
            max_nums,
            filter_cls(sub, filter_data, self.consumer_filter_manager),
        )
        status = result.status
        next_begin = result.next_begin_offset
        code = _STATUS_CODE.get(status)
        if code is None:  # NO_MATCHED_LOGIC_QUEUE / NO_MESSAGE_IN_QUEUE
            code = ResponseCode.PULL_OFFSET_MOVED if h.queue_offset != 0 else ResponseCode.PULL_NOT_FOUND
        if status in (GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, GetMessageStatus.NO_MESSAGE_IN_QUEUE):
            min_off, max_off = 0, 0
        else:
            min_off, max_off = result.min_offset, result.max_offset
        suggest, code = self._suggest_which_broker_id(result.suggest_pulling_from_slave, sg, status, code)
        ext = {
            "suggestWhichBrokerId": str(suggest),
            "nextBeginOffset": str(next_begin),
            "minOffset": str(min_off),
            "maxOffset": str(max_off),
            "topicSysFlag": str(tc.topic_sys_flag),
            "groupSysFlag": str(sg.group_sys_flag),
        }
        answer = cmd.make_response(code, status.name, ext)
        response: RemotingCommand | None = answer
        body = None
        try:
            if code == ResponseCode.SUCCESS:
                bufs = result.message_buffer_list
                body = bufs[0].tobytes() if len(bufs) == 1 and isinstance(bufs[0], memoryview) else b"".join(bufs)
        finally:
            result.release()
        if code == ResponseCode.SUCCESS:
            self.broker_stats.on_get(
                h.topic,
                h.consumer_group,
                len(result.message_queue_offset) or 1,
                len(body or b""),
                system=h.topic.startswith((RETRY_GROUP_TOPIC_PREFIX, SYSTEM_TOPIC_PREFIX)),
            )
            self.broker_metrics.on_get(
                h.topic, h.consumer_group, len(result.message_queue_offset) or 1, len(body or b"")
            )
        else:
            self.broker_stats.on_get_miss()
        if code == ResponseCode.SUCCESS:
            answer.body = body
        elif code == ResponseCode.PULL_NOT_FOUND and broker_allow_suspend and has_suspend:
            polling_ms = suspend_ms if cfg["longPollingEnable"] else int(cfg["shortPollingTimeMills"])
            self.pull_request_hold_service.suspend_pull_request(
                PullRequest(ctx, cmd, h.topic, h.queue_id, h.queue_offset, self.now(), polling_ms, tags_codes)
            )
            response = None
        # Java tryCommitOffset: the next offset to pull is noted on every pull that got this far
        # (pullOffsetTable, persisted with the consumer offsets; consumer progress shows it)
        self.consumer_offset_manager.commit_pull_offset(
            ctx.channel.remote_addr, h.consumer_group, h.topic, h.queue_id, next_begin
        )
        # commit offset piggyback (first processing only; masters, and slaves that may act as
        # master: Java 5.x commits on any role since RIP-32)
        if broker_allow_suspend and has_commit and (self.config.is_master or self.config["enableSlaveActingMaster"]):
            self.consumer_offset_manager.commit_offset(
                ctx.channel.remote_addr, h.consumer_group, h.topic, h.queue_id, h.commit_offset
            )
        return response

    def _suggest_which_broker_id(
        self, pull_from_slave: bool, sg: SubscriptionGroupConfig, status: GetMessageStatus, code: ResponseCode
    ) -> tuple[int, ResponseCode]:
        """Which broker the client should pull from next, and the response code (Java
        PullMessageProcessor#composeResponseHeader).

        With slaveReadEnable a consumer far behind (the store's accessMessageInMemoryMaxRatio test)
        is sent to the group's whichBrokerWhenConsumeSlowly, otherwise to the group's brokerId. A
        slave sends a consumer that is not behind back to a live master, and answers anything but
        FOUND with PULL_RETRY_IMMEDIATELY so the client asks the master at once.
        """
        cfg = self.config
        if cfg["slaveReadEnable"]:
            suggest = sg.which_broker_when_consume_slowly if pull_from_slave else sg.broker_id
        else:
            suggest = MASTER_ID
        if int(cfg["brokerId"]) != MASTER_ID and not pull_from_slave and self.min_broker_id_in_group == MASTER_ID:
            suggest = MASTER_ID
            if status is not GetMessageStatus.FOUND:
                code = ResponseCode.PULL_RETRY_IMMEDIATELY
        return suggest, code

    def execute_request_when_wakeup(self, request: PullRequest) -> None:
        """Re-run a held pull (never suspending again) and send its answer (Java, same name)."""
        ch = request.ctx.channel
        if ch.closed:
            return
        cmd = request.cmd
        try:
            response = self.process_request(request.ctx, cmd, False)
        except Exception as e:  # a re-run is answered here, the way the channel answers
            response = error_response(cmd, e)
        if response is None:
            return
        response.opaque = cmd.opaque
        response.flag |= FLAG_RESPONSE
        response.serialize_type = cmd.serialize_type
        ch.table.observe_rpc(request.ctx, cmd, response, ch.send(response), True)
