"""Every ``transactionCheckInterval`` ms, one check pass over the half queues.

Java: ``broker/transaction/TransactionalMessageCheckService`` (a ServiceThread
whose ``waitForRunning(checkInterval)`` ends in ``onWaitEnd`` -> ``check``
with ``transactionTimeOut`` and ``transactionCheckMax``). Only a master
checks, or a slave acting as master (it escapes the half messages instead). The values are read at each round, so a config update applies.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyrmq.broker.config import BrokerConfig
    from pyrmq.broker.transaction.check_listener import DefaultTransactionalMessageCheckListener
    from pyrmq.broker.transaction.transactional_message_service import TransactionalMessageService

log = logging.getLogger("pyrmq.broker.transaction")


class TransactionalMessageCheckService:
    def __init__(
        self,
        config: BrokerConfig,
        service: TransactionalMessageService,
        listener: DefaultTransactionalMessageCheckListener,
    ) -> None:
        self.config = config
        self.service = service
        self.listener = listener
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        if self._task is None and (self.config.is_master or self.config["enableSlaveActingMaster"]):
            self._task = asyncio.get_running_loop().create_task(self._run(), name="TransactionalMessageCheckService")

    async def _run(self) -> None:
        log.info("Start transaction check service")
        while True:
            await asyncio.sleep(max(int(self.config["transactionCheckInterval"]), 1) / 1000)
            await self.check_once()

    async def check_once(self) -> None:
        cfg = self.config
        begin = time.monotonic()
        await self.service.check(int(cfg["transactionTimeOut"]), int(cfg["transactionCheckMax"]), self.listener)
        log.debug("check of prepared messages took %.0f ms", (time.monotonic() - begin) * 1000)

    async def shutdown(self) -> None:
        t, self._task = self._task, None
        if t is not None:
            t.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
