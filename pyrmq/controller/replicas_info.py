"""The controller's state machine: broker ids, masters and SyncStateSets, per broker name.

Java: ``controller/impl/manager/ReplicasInfoManager``, ``BrokerReplicaInfo``
and ``SyncStateInfo``. Sans-IO: every request method only reads the state
and returns a ``ControllerResult`` (response header, code, remark, body and
the events that would make it true); ``apply_event`` is the only writer. The
caller persists the events first, then applies them, then answers.

Liveness is asked through a ``BrokerValidPredicate`` (cluster, broker name,
broker id) -> bool, the heartbeat manager's in production.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pyrmq.controller.elect_policy import ElectPolicy
from pyrmq.controller.events import (
    AlterSyncStateSetEvent,
    ApplyBrokerIdEvent,
    CleanBrokerDataEvent,
    ControllerResult,
    ElectMasterEvent,
    Event,
    UpdateBrokerAddressEvent,
)
from pyrmq.protocol.bodies.controller import (
    BrokerReplicasInfo,
    ElectMasterResponseBody,
    ReplicaIdentity,
    ReplicasInfo,
    SyncStateSet,
)
from pyrmq.protocol.bodies.namesrv import BrokerMemberGroup
from pyrmq.protocol.codes import ResponseCode
from pyrmq.protocol.headers.controller import (
    AlterSyncStateSetRequestHeader,
    AlterSyncStateSetResponseHeader,
    ApplyBrokerIdRequestHeader,
    ApplyBrokerIdResponseHeader,
    CleanControllerBrokerDataRequestHeader,
    ElectMasterRequestHeader,
    ElectMasterResponseHeader,
    GetNextBrokerIdRequestHeader,
    GetNextBrokerIdResponseHeader,
    GetReplicaInfoRequestHeader,
    GetReplicaInfoResponseHeader,
    RegisterBrokerToControllerRequestHeader,
    RegisterBrokerToControllerResponseHeader,
)

log = logging.getLogger("pyrmq.controller")

#: Java MixAll.FIRST_BROKER_CONTROLLER_ID: controller-assigned ids start at 1
FIRST_BROKER_CONTROLLER_ID = 1

BrokerValidPredicate = Callable[[str | None, str, int], bool]


class InvalidRequest(ValueError):
    """A request Java would fail on with an exception (a null field): answered SYSTEM_ERROR."""


@dataclass(slots=True)
class BrokerReplicaInfo:
    """Ids of one broker set with their address and register check code. Java: BrokerReplicaInfo."""

    cluster_name: str | None
    broker_name: str
    next_assign_broker_id: int = FIRST_BROKER_CONTROLLER_ID
    #: broker id -> (address, registerCheckCode)
    broker_id_info: dict[int, tuple[str, str]] = field(default_factory=dict)

    def add_broker(self, broker_id: int, address: str, register_check_code: str) -> None:
        self.broker_id_info[broker_id] = (address, register_check_code)
        self.next_assign_broker_id += 1

    def remove_broker_id(self, broker_id: int) -> None:
        self.broker_id_info.pop(broker_id, None)

    def is_broker_exist(self, broker_id: int | None) -> bool:
        return broker_id in self.broker_id_info

    def all_brokers(self) -> set[int]:
        return set(self.broker_id_info)

    def broker_id_table(self) -> dict[int, str]:
        """id -> address, ids ascending (Java's HashMap of small Longs iterates that way)."""
        return {i: self.broker_id_info[i][0] for i in sorted(self.broker_id_info)}

    def broker_address(self, broker_id: int | None) -> str | None:
        entry = self.broker_id_info.get(broker_id) if broker_id is not None else None
        return entry[0] if entry else None

    def register_check_code(self, broker_id: int | None) -> str | None:
        entry = self.broker_id_info.get(broker_id) if broker_id is not None else None
        return entry[1] if entry else None

    def update_broker_address(self, broker_id: int, address: str) -> None:
        old = self.broker_id_info.get(broker_id)
        if old is not None:
            self.broker_id_info[broker_id] = (address, old[1])


@dataclass(slots=True)
class SyncStateInfo:
    """Master id, master epoch and the SyncStateSet with its epoch. Java: SyncStateInfo."""

    cluster_name: str | None
    broker_name: str
    master_epoch: int = 0
    sync_state_set_epoch: int = 0
    sync_state_set: set[int] = field(default_factory=set)
    master_broker_id: int | None = None

    def update_master_info(self, master_broker_id: int | None) -> None:
        self.master_broker_id = master_broker_id
        self.master_epoch += 1

    def update_sync_state_set_info(self, new_set: Iterable[int]) -> None:
        self.sync_state_set = set(new_set)
        self.sync_state_set_epoch += 1

    def is_first_time_for_elect(self) -> bool:
        return self.master_epoch == 0


class ReplicasInfoManager:
    """The controller's memory state. Java: ReplicasInfoManager (the same checks, codes and remarks)."""

    def __init__(self, *, enable_elect_unclean_master: Callable[[], bool] = lambda: False) -> None:
        self.replica_info_table: dict[str, BrokerReplicaInfo] = {}
        self.sync_state_set_info_table: dict[str, SyncStateInfo] = {}
        self._enable_elect_unclean_master = enable_elect_unclean_master

    def _contains(self, broker_name: str | None) -> bool:
        return broker_name in self.replica_info_table and broker_name in self.sync_state_set_info_table

    # ------------------------------------------------------------------ writes

    def alter_sync_state_set(
        self, request: AlterSyncStateSetRequestHeader, sync_state_set: SyncStateSet, alive: BrokerValidPredicate
    ) -> ControllerResult:
        broker_name = request.broker_name
        result = ControllerResult(AlterSyncStateSetResponseHeader())
        if broker_name is None or not self._contains(broker_name):
            return result.fail(ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED, "Broker metadata is not existed")
        new_set = set(sync_state_set.sync_state_set or ())
        info = self.sync_state_set_info_table[broker_name]
        replicas = self.replica_info_table[broker_name]

        if info.sync_state_set == new_set:
            err = "The newSyncStateSet is equal with oldSyncStateSet, no needed to update syncStateSet"
            log.warning("%s", err)
            return result.fail(ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED, err)
        if info.master_broker_id is None or info.master_broker_id != request.master_broker_id:
            err = (
                "Rejecting alter syncStateSet request because the current leader is:"
                f"{{{_j(info.master_broker_id)}}}, not {{{_j(request.master_broker_id)}}}"
            )
            log.error("%s", err)
            return result.fail(ResponseCode.CONTROLLER_INVALID_MASTER, err)
        if request.master_epoch != info.master_epoch:
            err = (
                "Rejecting alter syncStateSet request because the current master epoch is:"
                f"{{{info.master_epoch}}}, not {{{_j(request.master_epoch)}}}"
            )
            log.error("%s", err)
            return result.fail(ResponseCode.CONTROLLER_FENCED_MASTER_EPOCH, err)
        if sync_state_set.sync_state_set_epoch != info.sync_state_set_epoch:
            err = (
                "Rejecting alter syncStateSet request because the current syncStateSet epoch is:"
                f"{{{info.sync_state_set_epoch}}}, not {{{sync_state_set.sync_state_set_epoch}}}"
            )
            log.error("%s", err)
            return result.fail(ResponseCode.CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH, err)
        for replica in sorted(new_set):
            if not replicas.is_broker_exist(replica):
                err = f"Rejecting alter syncStateSet request because the replicas {{{replica}}} don't exist"
                log.error("%s", err)
                return result.fail(ResponseCode.CONTROLLER_INVALID_REPLICAS, err)
            if not alive(replicas.cluster_name, replicas.broker_name, replica):
                err = f"Rejecting alter syncStateSet request because the replicas {{{replica}}} don't alive"
                log.error("%s", err)
                return result.fail(ResponseCode.CONTROLLER_BROKER_NOT_ALIVE, err)
        if info.master_broker_id not in new_set:
            err = (
                "Rejecting alter syncStateSet request because the newSyncStateSet don't contains origin leader "
                f"{{{info.master_broker_id}}}"
            )
            log.error("%s", err)
            return result.fail(ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED, err)

        epoch = info.sync_state_set_epoch + 1
        assert isinstance(result.response, AlterSyncStateSetResponseHeader)
        result.response.new_sync_state_set_epoch = epoch
        result.body = SyncStateSet(set(new_set), epoch).encode()
        result.events.append(AlterSyncStateSetEvent(broker_name, frozenset(new_set)))
        return result

    def elect_master(self, request: ElectMasterRequestHeader, policy: ElectPolicy) -> ControllerResult:
        broker_name = request.broker_name
        broker_id = request.broker_id
        response = ElectMasterResponseHeader()
        result = ControllerResult(response)
        if not self._contains(broker_name):
            return result.fail(ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED, "Broker hasn't been registered")
        info = self.sync_state_set_info_table[broker_name]
        replicas = self.replica_info_table[broker_name]
        sync_state_set = set(info.sync_state_set)
        old_master = info.master_broker_id
        all_replicas = replicas.all_brokers() if self._enable_elect_unclean_master() else None

        new_master: int | None = None
        if info.is_first_time_for_elect():
            # never had a master: the asking broker becomes the first one
            new_master = broker_id
        if new_master is None or new_master == -1:
            assigned = broker_id if request.designate_elect else None
            new_master = policy.elect(
                replicas.cluster_name, replicas.broker_name, sync_state_set, all_replicas, old_master, assigned
            )

        if new_master is not None and new_master == old_master:
            err = (
                f"The old master {old_master} is still alive, not need to elect new master for broker "
                f"{replicas.broker_name}"
            )
            log.warning("%s", err)
            response.master_epoch = info.master_epoch
            response.sync_state_set_epoch = info.sync_state_set_epoch
            response.master_broker_id = old_master
            response.master_address = replicas.broker_address(old_master)
            result.body = ElectMasterResponseBody(sync_state_set=sync_state_set).encode()
            return result.fail(ResponseCode.CONTROLLER_MASTER_STILL_EXIST, err)

        if new_master is not None:
            response.master_broker_id = new_master
            response.master_address = replicas.broker_address(new_master)
            response.master_epoch = info.master_epoch + 1
            response.sync_state_set_epoch = info.sync_state_set_epoch + 1
            group = BrokerMemberGroup(replicas.cluster_name, replicas.broker_name, replicas.broker_id_table())
            result.body = ElectMasterResponseBody(group, {new_master}).encode()
            result.events.append(ElectMasterEvent(broker_name, new_master))
            log.info("Elect new master %s for broker %s", new_master, broker_name)
            return result

        if broker_id is None or broker_id == -1:
            # triggered by the controller itself: record that the master is gone
            result.events.append(ElectMasterEvent(broker_name, None, new_master_elected=False))
            result.fail(
                ResponseCode.CONTROLLER_MASTER_NOT_AVAILABLE,
                "Old master has down and failed to elect a new broker master",
            )
        else:
            result.fail(ResponseCode.CONTROLLER_ELECT_MASTER_FAILED, "Failed to elect a new master")
        log.warning("Failed to elect a new master for broker %s", broker_name)
        return result

    def get_next_broker_id(self, request: GetNextBrokerIdRequestHeader) -> ControllerResult:
        replicas = self.replica_info_table.get(request.broker_name or "")
        response = GetNextBrokerIdResponseHeader(request.cluster_name, request.broker_name)
        response.next_broker_id = replicas.next_assign_broker_id if replicas else FIRST_BROKER_CONTROLLER_ID
        return ControllerResult(response)

    def apply_broker_id(self, request: ApplyBrokerIdRequestHeader) -> ControllerResult:
        cluster_name, broker_name, broker_id = request.cluster_name, request.broker_name, request.applied_broker_id
        code = request.register_check_code
        if broker_name is None or broker_id is None or code is None:
            raise InvalidRequest("brokerName, appliedBrokerId and registerCheckCode must all be given")
        broker_address = code.split(";")[0]
        replicas = self.replica_info_table.get(broker_name)
        result = ControllerResult(ApplyBrokerIdResponseHeader(cluster_name, broker_name))
        event = ApplyBrokerIdEvent(cluster_name, broker_name, broker_address, broker_id, code)
        if replicas is None:
            if broker_id == FIRST_BROKER_CONTROLLER_ID:
                result.events.append(event)
                return result
            return result.fail(
                ResponseCode.CONTROLLER_BROKER_ID_INVALID,
                f"Broker-set: {broker_name} hasn't been registered in controller, "
                f"but broker try to apply brokerId: {broker_id}",
            )
        if not replicas.is_broker_exist(broker_id) or code == replicas.register_check_code(broker_id):
            result.events.append(event)
            return result
        return result.fail(
            ResponseCode.CONTROLLER_BROKER_ID_INVALID,
            f"Fail to apply brokerId: {broker_id} in broker-set: {broker_name}",
        )

    def register_broker(
        self, request: RegisterBrokerToControllerRequestHeader, alive: BrokerValidPredicate
    ) -> ControllerResult:
        address, broker_name = request.broker_address, request.broker_name
        cluster_name, broker_id = request.cluster_name, request.broker_id
        response = RegisterBrokerToControllerResponseHeader(cluster_name, broker_name)
        result = ControllerResult(response)
        if not self._contains(broker_name):
            return result.fail(
                ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                f"Broker-set: {broker_name} hasn't been registered in controller",
            )
        assert broker_name is not None
        replicas = self.replica_info_table[broker_name]
        info = self.sync_state_set_info_table[broker_name]
        if broker_id is None:
            raise InvalidRequest("brokerId must be given")
        if not replicas.is_broker_exist(broker_id):
            return result.fail(
                ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                f"BrokerId: {broker_id} hasn't been registered in broker-set: {broker_name}",
            )
        if info.master_broker_id is not None and alive(cluster_name, broker_name, info.master_broker_id):
            response.master_broker_id = info.master_broker_id
            response.master_address = replicas.broker_address(info.master_broker_id)
            response.master_epoch = info.master_epoch
            response.sync_state_set_epoch = info.sync_state_set_epoch
        result.body = SyncStateSet(set(info.sync_state_set), info.sync_state_set_epoch).encode()
        if address is None:
            raise InvalidRequest("brokerAddress must be given")
        if address != replicas.broker_address(broker_id):
            result.events.append(UpdateBrokerAddressEvent(cluster_name, broker_name, address, broker_id))
        return result

    def clean_broker_data(
        self, request: CleanControllerBrokerDataRequestHeader, alive: BrokerValidPredicate
    ) -> ControllerResult:
        cluster_name, broker_name = request.cluster_name, request.broker_name
        ids_text = request.broker_controller_ids_to_clean
        result = ControllerResult(None)
        id_set: frozenset[int] | None = None
        if not request.is_clean_living_broker:
            info = self.sync_state_set_info_table.get(broker_name)
            if _blank(ids_text) and info is not None and info.master_broker_id is not None:
                return result.fail(
                    ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                    f"Broker {broker_name} is still alive, clean up failure",
                )
            if not _blank(ids_text):
                assert ids_text is not None
                try:
                    id_set = frozenset(_java_long(s) for s in ids_text.split(";"))
                except ValueError as e:
                    return result.fail(
                        ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                        "Please set the option <brokerControllerIdsToClean> according to the format, "
                        f"exception: java.lang.NumberFormatException: {e}",
                    )
                for broker_id in id_set:
                    if alive(cluster_name, broker_name, broker_id):
                        return result.fail(
                            ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                            f"Broker [{broker_name},  {broker_id}] is still alive, clean up failure",
                        )
        if self._contains(broker_name):
            result.events.append(CleanBrokerDataEvent(broker_name, id_set))
            return result
        return result.fail(
            ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
            f"Broker {broker_name} is not existed,clean broker data failure.",
        )

    # ------------------------------------------------------------------ reads

    def get_replica_info(self, request: GetReplicaInfoRequestHeader) -> ControllerResult:
        response = GetReplicaInfoResponseHeader()
        result = ControllerResult(response)
        broker_name = request.broker_name
        if broker_name is not None and self._contains(broker_name):
            info = self.sync_state_set_info_table[broker_name]
            replicas = self.replica_info_table[broker_name]
            response.master_broker_id = info.master_broker_id
            response.master_address = replicas.broker_address(info.master_broker_id)
            response.master_epoch = info.master_epoch
            result.body = SyncStateSet(set(info.sync_state_set), info.sync_state_set_epoch).encode()
            return result
        return result.fail(ResponseCode.CONTROLLER_BROKER_METADATA_NOT_EXIST, "Broker metadata is not existed")

    def get_sync_state_data(self, broker_names: list[str], alive: BrokerValidPredicate) -> ControllerResult:
        out = BrokerReplicasInfo()
        for broker_name in broker_names:
            if not self._contains(broker_name):
                continue
            info = self.sync_state_set_info_table[broker_name]
            replicas = self.replica_info_table[broker_name]
            in_sync: list[ReplicaIdentity] = []
            not_in_sync: list[ReplicaIdentity] = []
            for broker_id, address in replicas.broker_id_table().items():
                identity = ReplicaIdentity(
                    broker_name, broker_id, address, alive(replicas.cluster_name, broker_name, broker_id)
                )
                (in_sync if broker_id in info.sync_state_set else not_in_sync).append(identity)
            out.replicas_info_table[broker_name] = ReplicasInfo(
                info.master_broker_id,
                replicas.broker_address(info.master_broker_id),
                info.master_epoch,
                info.sync_state_set_epoch,
                in_sync,
                not_in_sync,
            )
        result = ControllerResult(None)
        result.body = out.encode()
        return result

    def scan_need_reelect_broker_sets(self, alive: BrokerValidPredicate) -> list[str]:
        """Broker sets whose master is not alive while another member is. Java: scanNeedReelectBrokerSets."""
        out = []
        for broker_name, info in self.sync_state_set_info_table.items():
            master = info.master_broker_id
            if master is None or alive(info.cluster_name, broker_name, master):
                continue
            replicas = self.replica_info_table.get(broker_name)
            if replicas and any(alive(info.cluster_name, broker_name, i) for i in replicas.broker_id_info):
                out.append(broker_name)
        return out

    # ------------------------------------------------------------------ the only writer

    def apply_event(self, event: Event) -> None:
        if isinstance(event, AlterSyncStateSetEvent):
            if self._contains(event.broker_name):
                self.sync_state_set_info_table[event.broker_name].update_sync_state_set_info(event.new_sync_state_set)
        elif isinstance(event, ApplyBrokerIdEvent):
            self._apply_broker_id(event)
        elif isinstance(event, ElectMasterEvent):
            self._elect_master(event)
        elif isinstance(event, CleanBrokerDataEvent):
            self._clean_broker_data(event)
        elif isinstance(event, UpdateBrokerAddressEvent):
            replicas = self.replica_info_table.get(event.broker_name)
            if replicas is not None:
                replicas.update_broker_address(event.broker_id, event.broker_address)

    def _apply_broker_id(self, event: ApplyBrokerIdEvent) -> None:
        name = event.broker_name
        if self._contains(name):
            replicas = self.replica_info_table[name]
            if not replicas.is_broker_exist(event.new_broker_id):
                replicas.add_broker(event.new_broker_id, event.broker_address, event.register_check_code)
            return
        replicas = BrokerReplicaInfo(event.cluster_name, name)
        replicas.add_broker(event.new_broker_id, event.broker_address, event.register_check_code)
        self.replica_info_table[name] = replicas
        self.sync_state_set_info_table[name] = SyncStateInfo(event.cluster_name, name)

    def _elect_master(self, event: ElectMasterEvent) -> None:
        info = self.sync_state_set_info_table.get(event.broker_name)
        if info is None or not self._contains(event.broker_name):
            log.error("Receive an ElectMasterEvent which contains the un-registered broker, event = %s", event)
            return
        if event.new_master_elected:
            info.update_master_info(event.new_master_broker_id)
            info.update_sync_state_set_info(
                {event.new_master_broker_id} if event.new_master_broker_id is not None else ()
            )
        else:
            # the old master is gone and nobody replaced it: keep the SyncStateSet
            info.update_master_info(None)

    def _clean_broker_data(self, event: CleanBrokerDataEvent) -> None:
        name = event.broker_name
        if not event.broker_id_set_to_clean:
            self.replica_info_table.pop(name, None)
            self.sync_state_set_info_table.pop(name, None)
            return
        if not self._contains(name):
            return
        replicas = self.replica_info_table[name]
        info = self.sync_state_set_info_table[name]
        for broker_id in event.broker_id_set_to_clean:
            replicas.remove_broker_id(broker_id)
            info.sync_state_set.discard(broker_id)
        if not replicas.broker_id_info:
            del self.replica_info_table[name]
        if not info.sync_state_set:
            del self.sync_state_set_info_table[name]


def _j(value: object) -> str:
    """Java's String.valueOf: null for None."""
    return "null" if value is None else str(value)


def _blank(text: str | None) -> bool:
    return text is None or not text.strip()


def _java_long(text: str) -> int:
    """Long.valueOf: an optional sign and decimal digits only (raises ValueError like Java's message)."""
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit():
        raise ValueError(f'For input string: "{text}"')
    return int(text)
