"""plain_acl.yml (ACL 1.0) into users and ACLs, and the users the config names.

Java auth.migration.AuthMigrator (migrateAuthFromV1Enabled=true) and
AuthenticationMetadataManagerImpl#initUser. The files are `$ROCKETMQ_HOME/conf/plain_acl.yml`
and every .yml/.yaml under `$ROCKETMQ_HOME/conf/acl/` (PlainPermissionManager); an access key
seen twice keeps its first account; an existing user is left alone. As in Java,
whiteRemoteAddress and globalWhiteRemoteAddresses are not migrated.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import yaml

from pyrmq.auth.config import AuthConfig
from pyrmq.auth.model import (
    Acl,
    Action,
    Decision,
    Policy,
    PolicyEntry,
    PolicyType,
    Resource,
    ResourcePattern,
    ResourceType,
    User,
    UserType,
)
from pyrmq.auth.store import AuthMetadataStore

log = logging.getLogger("pyrmq.auth")


def acl_files(rocketmq_home: str) -> list[Path]:
    """PlainPermissionManager#load: conf/acl/**.yml|yaml, then conf/plain_acl.yml."""
    home = Path(rocketmq_home)
    found: list[Path] = []
    acl_dir = home / "conf" / "acl"
    if acl_dir.is_dir():
        for root, _dirs, files in os.walk(acl_dir):
            for name in sorted(files):
                if name.endswith((".yml", ".yaml")) and name != "tools.yml":
                    found.append(Path(root) / name)
    default = home / "conf" / "plain_acl.yml"
    if default.exists() and default not in found:
        found.append(default)
    return found


def read_accounts(paths: list[Path]) -> list[dict[str, Any]]:
    """The accounts of all files, first one per accessKey (getAllAclConfig)."""
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for path in paths:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as e:
            log.error("[ACL MIGRATE] cannot read %s: %s", path, e)
            continue
        if not isinstance(data, dict):
            continue
        for acc in data.get("accounts") or []:
            if not isinstance(acc, dict):
                continue
            ak = acc.get("accessKey")
            if ak is None or str(ak) in seen:
                continue
            seen.add(str(ak))
            out.append(acc)
    return out


def _decision(perm: str) -> Decision:
    return Decision.DENY if not perm.strip() or perm == "DENY" else Decision.ALLOW


def _actions(perm: str) -> list[Action]:
    p = perm.strip()
    if p == "PUB":
        return [Action.PUB]
    if p == "SUB":
        return [Action.SUB]
    if p in ("PUB|SUB", "SUB|PUB"):
        return [Action.PUB, Action.SUB]
    return [Action.ALL]


def _perm_entries(perms: Any, make: Any) -> list[PolicyEntry]:
    entries = []
    for item in perms or []:
        parts = [p for p in str(item).split("=") if p]
        if len(parts) != 2:
            continue
        name, perm = parts[0].strip(), parts[1].strip()
        entries.append(PolicyEntry(make(name), _actions(perm), [], _decision(perm)))
    return entries


def account_to_user_and_acl(acc: dict[str, Any]) -> tuple[User, Acl | None]:
    """AuthMigrator#createUser and #createAcl for one plain_acl.yml account."""
    ak = str(acc["accessKey"])
    sk = acc.get("secretKey")
    admin = acc.get("admin") is True or str(acc.get("admin")).lower() == "true"
    user = User(ak, None if sk is None else str(sk), UserType.SUPER if admin else UserType.NORMAL)
    policies = []
    custom = _perm_entries(acc.get("topicPerms"), Resource.topic) + _perm_entries(acc.get("groupPerms"), Resource.group)
    if custom:
        policies.append(Policy(PolicyType.CUSTOM, custom))
    defaults = []
    for key, rtype in (("defaultTopicPerm", ResourceType.TOPIC), ("defaultGroupPerm", ResourceType.GROUP)):
        perm = acc.get(key)
        if perm is not None and str(perm).strip():
            perm = str(perm).strip()
            defaults.append(
                PolicyEntry(Resource(rtype, None, ResourcePattern.ANY), _actions(perm), [], _decision(perm))
            )
    if defaults:
        policies.append(Policy(PolicyType.DEFAULT, defaults))
    return user, (Acl(user.subject_key, policies) if policies else None)


def migrate_v1(store: AuthMetadataStore, rocketmq_home: str) -> int:
    """Import the plain_acl.yml accounts whose user does not exist yet; the count imported."""
    n = 0
    for acc in read_accounts(acl_files(rocketmq_home)):
        user, acl = account_to_user_and_acl(acc)
        if store.get_user(user.username) is not None:
            continue
        store.put_user(user)
        if acl is not None:
            store.put_acl(acl)
        n += 1
    if n:
        log.info("[ACL MIGRATE] %d plain_acl.yml account(s) imported as users and ACLs", n)
    return n


def init_users(store: AuthMetadataStore, config: AuthConfig) -> None:
    """initAuthenticationUser ({"username","password"}) and innerClientAuthenticationCredentials
    become SUPER users when absent (AuthenticationMetadataManagerImpl#initUser)."""
    text = config.init_authentication_user.strip()
    if text:
        obj = json.loads(text)
        name = obj.get("username")
        if not isinstance(name, str) or not name:
            raise ValueError("initAuthenticationUser needs a username")
        if store.get_user(name) is None:
            store.put_user(User(name, obj.get("password"), UserType.SUPER))
    inner = config.inner_credentials()
    if inner is not None and store.get_user(inner[0]) is None:
        store.put_user(User(inner[0], inner[1], UserType.SUPER))
