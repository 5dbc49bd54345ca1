"""The broker's auth wiring (Java BrokerController#initialRequestPipeline, BrokerOuterAPI's
AclClientRPCHook): AuthConfig from broker.conf, the user/ACL store under
``<storePathRootDir>/config`` with its initial users and the plain_acl.yml migration, the
request check both remoting servers run, and the signature of the broker's own requests
(pyrmq/auth/wiring.py)."""

from __future__ import annotations

import logging
import os

from pyrmq.auth.wiring import ServerAuth
from pyrmq.broker.config import BrokerConfig

log = logging.getLogger("pyrmq.broker.auth")


class BrokerAuth(ServerAuth):
    __slots__ = ()

    @classmethod
    def from_broker_config(cls, broker_config: BrokerConfig) -> BrokerAuth:
        auth = cls.build(
            broker_config.file_properties,
            cluster_name=str(broker_config["brokerClusterName"]),
            auth_config_path=os.path.join(broker_config.store.store_path_root_dir, "config"),
            rocketmq_home=str(broker_config.get("rocketmqHome") or os.environ.get("ROCKETMQ_HOME", "")),
        )
        if broker_config.get("aclEnable"):
            log.warning(
                "aclEnable=true has no effect since RocketMQ 5.3 (ACL 1.0 was removed): use authenticationEnabled"
                " and authorizationEnabled, with migrateAuthFromV1Enabled=true to import plain_acl.yml"
            )
        return auth
