"""Java auth.config.AuthConfig: the auth keys of broker.conf, read with properties2Object.

They are not BrokerConfig keys (getBrokerConfig does not report them); the broker reads them from
the same properties. `authConfigPath` is `<storePathRootDir>/config`, `clusterName` the
broker's, as BrokerStartup sets them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass

log = logging.getLogger("pyrmq.auth")

LOCAL_AUTHENTICATION_METADATA_PROVIDER = (
    "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider"
)
LOCAL_AUTHORIZATION_METADATA_PROVIDER = (
    "org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider"
)


def _bool(v: str | None, default: bool) -> bool:
    return default if v is None else v.strip().lower() == "true"


@dataclass(slots=True)
class AuthConfig:
    cluster_name: str = ""
    auth_config_path: str = ""
    authentication_enabled: bool = False
    authentication_provider: str = ""
    authentication_metadata_provider: str = ""
    authentication_whitelist: str = ""
    init_authentication_user: str = ""
    inner_client_authentication_credentials: str = ""
    authorization_enabled: bool = False
    authorization_provider: str = ""
    authorization_metadata_provider: str = ""
    authorization_whitelist: str = ""
    migrate_auth_from_v1_enabled: bool = False

    @classmethod
    def from_properties(
        cls, props: Mapping[str, str], *, cluster_name: str = "", auth_config_path: str = ""
    ) -> AuthConfig:
        g = props.get
        return cls(
            cluster_name=cluster_name,
            auth_config_path=auth_config_path,
            authentication_enabled=_bool(g("authenticationEnabled"), False),
            authentication_provider=(g("authenticationProvider") or "").strip(),
            authentication_metadata_provider=(g("authenticationMetadataProvider") or "").strip(),
            authentication_whitelist=g("authenticationWhitelist") or "",
            init_authentication_user=g("initAuthenticationUser") or "",
            inner_client_authentication_credentials=g("innerClientAuthenticationCredentials") or "",
            authorization_enabled=_bool(g("authorizationEnabled"), False),
            authorization_provider=(g("authorizationProvider") or "").strip(),
            authorization_metadata_provider=(g("authorizationMetadataProvider") or "").strip(),
            authorization_whitelist=g("authorizationWhitelist") or "",
            migrate_auth_from_v1_enabled=_bool(g("migrateAuthFromV1Enabled"), False),
        )

    @property
    def enabled(self) -> bool:
        return self.authentication_enabled or self.authorization_enabled

    @property
    def metadata_needed(self) -> bool:
        """Java builds the metadata managers (and so runs the migration and the initial users)
        when a metadata provider is configured."""
        return bool(self.authentication_metadata_provider or self.authorization_metadata_provider)

    def inner_credentials(self) -> tuple[str, str, str | None] | None:
        """innerClientAuthenticationCredentials: a SessionCredentials JSON
        ({"accessKey": ..., "secretKey": ...}) the broker signs its own requests with."""
        text = self.inner_client_authentication_credentials.strip()
        if not text:
            return None
        try:
            obj = json.loads(text)
        except ValueError:
            log.error("innerClientAuthenticationCredentials is not JSON; the broker's own requests go unsigned")
            return None
        ak, sk = obj.get("accessKey"), obj.get("secretKey")
        if not isinstance(ak, str) or not isinstance(sk, str):
            log.error("innerClientAuthenticationCredentials needs accessKey and secretKey")
            return None
        token = obj.get("securityToken")
        return ak, sk, token if isinstance(token, str) else None


#: the keys Java's properties2Object fills into AuthConfig from broker.conf (besides the three
#: BrokerStartup sets itself); a broker knows them, so they are not reported as unknown
AUTH_CONFIG_KEYS = frozenset(
    {
        "authenticationEnabled",
        "authenticationProvider",
        "authenticationMetadataProvider",
        "authenticationStrategy",
        "authenticationWhitelist",
        "initAuthenticationUser",
        "innerClientAuthenticationCredentials",
        "authorizationEnabled",
        "authorizationProvider",
        "authorizationMetadataProvider",
        "authorizationStrategy",
        "authorizationWhitelist",
        "migrateAuthFromV1Enabled",
        "userCacheMaxNum",
        "userCacheExpiredSecond",
        "userCacheRefreshSecond",
        "aclCacheMaxNum",
        "aclCacheExpiredSecond",
        "aclCacheRefreshSecond",
        "statefulAuthenticationCacheMaxNum",
        "statefulAuthenticationCacheExpiredSecond",
        "statefulAuthorizationCacheMaxNum",
        "statefulAuthorizationCacheExpiredSecond",
    }
)
