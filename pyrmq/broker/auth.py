"""The broker's auth wiring (Java BrokerController#initialRequestPipeline, BrokerOuterAPI's
AclClientRPCHook): AuthConfig from broker.conf, the user/ACL store with its initial users and
the plain_acl.yml migration, the request check both remoting servers run, and the signature
of the broker's own requests."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass

from pyrmq.auth.config import AuthConfig
from pyrmq.auth.evaluator import AuthEvaluator
from pyrmq.auth.migrate import init_users, migrate_v1
from pyrmq.auth.signature import sign_request
from pyrmq.auth.store import AuthMetadataStore
from pyrmq.broker.config import BrokerConfig
from pyrmq.protocol.codes import ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.remoting.channel import Channel, RequestCheck

log = logging.getLogger("pyrmq.broker.auth")


@dataclass(slots=True)
class BrokerAuth:
    config: AuthConfig
    store: AuthMetadataStore | None
    evaluator: AuthEvaluator

    @classmethod
    def from_broker_config(cls, broker_config: BrokerConfig) -> BrokerAuth:
        config = AuthConfig.from_properties(
            broker_config.file_properties,
            cluster_name=str(broker_config["brokerClusterName"]),
            auth_config_path=os.path.join(broker_config.store.store_path_root_dir, "config"),
        )
        store = None
        if config.metadata_needed:
            store = AuthMetadataStore(config.auth_config_path)
            init_users(store, config)
            if config.migrate_auth_from_v1_enabled:
                migrate_v1(store, str(broker_config.get("rocketmqHome") or os.environ.get("ROCKETMQ_HOME", "")))
        if broker_config.get("aclEnable"):
            log.warning(
                "aclEnable=true has no effect since RocketMQ 5.3 (ACL 1.0 was removed): use authenticationEnabled"
                " and authorizationEnabled, with migrateAuthFromV1Enabled=true to import plain_acl.yml"
            )
        return cls(config, store, AuthEvaluator(config, store))

    def request_check(self) -> RequestCheck | None:
        """The check for RemotingServer.request_check; None when auth is off (no cost per request)."""
        if not self.config.enabled:
            return None
        evaluator = self.evaluator

        def check(channel: Channel, cmd: RemotingCommand) -> RemotingCommand | None:
            try:
                refused = evaluator.check(cmd, channel.remote_addr)
            except Exception as e:  # a bug, never a way in: Java answers SYSTEM_ERROR too
                log.error("auth check of request code %d failed", cmd.code, exc_info=e)
                return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"{type(e).__name__}: auth check failed")
            return None if refused is None else cmd.make_response(refused[0], refused[1])

        return check

    def client_hook(self) -> Callable[[RemotingCommand], None] | None:
        """Sign the broker's own requests with innerClientAuthenticationCredentials."""
        creds = self.config.inner_credentials()
        if creds is None:
            return None
        access_key, secret_key, token = creds

        def hook(cmd: RemotingCommand) -> None:
            sign_request(cmd, access_key, secret_key, token)

        return hook
