"""The auth one server process runs (Java BrokerController#initialRequestPipeline with the
metadata managers' start, and BrokerOuterAPI's AclClientRPCHook): AuthConfig from the server's
properties, the user/ACL store with its initial users and the plain_acl.yml import, the request
check its remoting servers run, and the signature of its own requests. The broker
(pyrmq/broker/auth.py) and, opt-in, the name server (pyrmq/namesrv/auth.py) build on it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Self

from pyrmq.auth.config import AuthConfig
from pyrmq.auth.evaluator import AuthEvaluator
from pyrmq.auth.migrate import init_users, migrate_v1
from pyrmq.auth.signature import sign_request
from pyrmq.auth.store import AuthMetadataStore
from pyrmq.protocol.codes import ResponseCode
from pyrmq.protocol.command import RemotingCommand

log = logging.getLogger("pyrmq.auth")

#: RemotingServer.request_check's shape: None lets the request through, else its answer
Check = Callable[[Any, RemotingCommand], "RemotingCommand | None"]


@dataclass(slots=True)
class ServerAuth:
    config: AuthConfig
    store: AuthMetadataStore | None
    evaluator: AuthEvaluator

    @classmethod
    def build(cls, props: Mapping[str, str], *, cluster_name: str, auth_config_path: str, rocketmq_home: str) -> Self:
        config = AuthConfig.from_properties(props, cluster_name=cluster_name, auth_config_path=auth_config_path)
        store = None
        if config.metadata_needed:
            store = AuthMetadataStore(config.auth_config_path)
            init_users(store, config)
            if config.migrate_auth_from_v1_enabled:
                migrate_v1(store, rocketmq_home)
        return cls(config, store, AuthEvaluator(config, store))

    def request_check(self) -> Check | None:
        """The check for RemotingServer.request_check; None when auth is off (no cost per request)."""
        if not self.config.enabled:
            return None
        evaluator = self.evaluator

        def check(channel: Any, cmd: RemotingCommand) -> RemotingCommand | None:
            try:
                refused = evaluator.check(cmd, channel.remote_addr)
            except Exception as e:  # a bug, never a way in: Java answers SYSTEM_ERROR too
                log.error("auth check of request code %d failed", cmd.code, exc_info=e)
                return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"{type(e).__name__}: auth check failed")
            return None if refused is None else cmd.make_response(refused[0], refused[1])

        return check

    def client_hook(self) -> Callable[[RemotingCommand], None] | None:
        """Sign the server's own requests with innerClientAuthenticationCredentials."""
        creds = self.config.inner_credentials()
        if creds is None:
            return None
        access_key, secret_key, token = creds

        def hook(cmd: RemotingCommand) -> None:
            sign_request(cmd, access_key, secret_key, token)

        return hook


__all__ = ["Check", "ServerAuth"]
