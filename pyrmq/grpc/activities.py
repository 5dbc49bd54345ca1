"""Every activity behind one object, as Java's ``DefaultGrpcMessingActivity`` holds them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyrmq.grpc.client import ClientActivity
from pyrmq.grpc.consume import ConsumeActivity
from pyrmq.grpc.local import LocalInvoker
from pyrmq.grpc.recall import RecallActivity
from pyrmq.grpc.route import RouteActivity
from pyrmq.grpc.send import SendActivity
from pyrmq.grpc.status import GrpcProxyError
from pyrmq.grpc.transaction import TelemetryChannel, TransactionActivity, TransactionData


class Activities:
    def __init__(self, controller: Any, address: Callable[[], str]) -> None:
        invoker = LocalInvoker(controller)
        self.transactions = TransactionData()
        self.route = RouteActivity(controller, address)
        self.clients = ClientActivity(controller)
        self.sender = SendActivity(controller, self.route, invoker, self.transactions)
        self.transaction = TransactionActivity(controller, invoker, self.transactions)
        self.end_transaction = self.transaction.end_transaction
        self.consumer = ConsumeActivity(controller, self.clients, invoker)
        self.query_route = self.route.query_route
        self.query_assignment = self.route.query_assignment
        self.send_message = self.sender.send_message
        self.heartbeat = self.clients.heartbeat
        self.telemetry = self.clients.telemetry
        self.notify_client_termination = self.clients.notify_client_termination
        self.receive_message = self.consumer.receive_message
        self.ack_message = self.consumer.ack_message
        self.change_invisible_duration = self.consumer.change_invisible_duration
        self.forward_to_dlq = self.consumer.forward_to_dlq
        self.recall_message = RecallActivity(controller, invoker).recall_message

    def open_stream(self, ctx: Any) -> TelemetryChannel:
        return TelemetryChannel(ctx.client_id, ctx.remote_addr, self.transactions)


__all__ = ["Activities", "GrpcProxyError"]
