"""Users and ACLs kept by the broker (Java Local{Authentication,Authorization}MetadataProvider).

Java keeps them in two RocksDB databases under `<authConfigPath>/users` and `/acls`; pyrmq keeps
the same records as JSON in `<authConfigPath>/auth_users.json` and `auth_acls.json` (atomic
writes). Neither broker reads the other's files: moving a cluster means re-creating users and
ACLs with mqadmin (or the plain_acl.yml migration), as docs/security.md says.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

from pyrmq.auth.model import (
    Acl,
    Action,
    Decision,
    Policy,
    PolicyEntry,
    PolicyType,
    Resource,
    User,
    UserStatus,
    UserType,
)
from pyrmq.common.files import write_file_atomically

log = logging.getLogger("pyrmq.auth")

USERS_FILE = "auth_users.json"
ACLS_FILE = "auth_acls.json"


def user_to_json(u: User) -> dict[str, Any]:
    return {
        "username": u.username,
        "password": u.password,
        "userType": u.user_type.java_name,
        "userStatus": u.user_status.java_name,
    }


def user_from_json(d: dict[str, Any]) -> User:
    return User(
        username=str(d["username"]),
        password=d.get("password"),
        user_type=UserType.by_name(d.get("userType")) or UserType.NORMAL,
        user_status=UserStatus.by_name(d.get("userStatus")) or UserStatus.ENABLE,
    )


def entry_to_json(e: PolicyEntry) -> dict[str, Any]:
    """PolicyEntryInfo: without source IPs the field is absent (Java's is null)."""
    out: dict[str, Any] = {"resource": e.resource.key, "actions": [a.java_name for a in e.actions]}
    if e.source_ips:
        out["sourceIps"] = list(e.source_ips)
    out["decision"] = e.decision.java_name
    return out


def acl_to_json(a: Acl) -> dict[str, Any]:
    return {
        "subject": a.subject,
        "policies": [
            {"policyType": p.policy_type.java_name, "entries": [entry_to_json(e) for e in p.entries]}
            for p in a.policies
        ],
    }


def acl_from_json(d: dict[str, Any]) -> Acl:
    policies = []
    for p in d.get("policies") or []:
        entries = []
        for e in p.get("entries") or []:
            res = Resource.parse(e.get("resource"))
            if res is None:
                continue
            actions = [a for a in (Action.by_name(x) for x in e.get("actions") or []) if a is not None]
            entries.append(
                PolicyEntry(
                    res, actions, list(e.get("sourceIps") or []), Decision.by_name(e.get("decision")) or Decision.ALLOW
                )
            )
        policies.append(Policy(PolicyType.by_name(p.get("policyType")) or PolicyType.CUSTOM, entries))
    return Acl(str(d["subject"]), policies)


class AuthMetadataStore:
    """Users by name and ACLs by subject key, persisted on every change; thread-safe."""

    def __init__(self, directory: str | None) -> None:
        self.directory = directory
        self.users: dict[str, User] = {}
        self.acls: dict[str, Acl] = {}
        self._lock = threading.Lock()
        if directory:
            self._load()

    def _path(self, name: str) -> Path | None:
        return Path(self.directory) / name if self.directory else None

    def _load(self) -> None:
        try:
            for row in self._read(USERS_FILE):
                user = user_from_json(row)
                self.users[user.username] = user
            for row in self._read(ACLS_FILE):
                acl = acl_from_json(row)
                self.acls[acl.subject] = acl
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"{self.directory}: unreadable auth metadata: {e}") from None

    def _read(self, name: str) -> list[dict[str, Any]]:
        path = self._path(name)
        if path is None or not path.exists():
            return []
        rows = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(rows, list):
            raise ValueError(f"{name} is not a JSON array")
        return rows

    def _save(self) -> None:
        if not self.directory:
            return
        os.makedirs(self.directory, exist_ok=True)
        users = [user_to_json(u) for u in self.users.values()]
        acls = [acl_to_json(a) for a in self.acls.values()]
        write_file_atomically(str(self._path(USERS_FILE)), json.dumps(users, indent=2))
        write_file_atomically(str(self._path(ACLS_FILE)), json.dumps(acls, indent=2))

    def get_user(self, username: str) -> User | None:
        return self.users.get(username)

    def put_user(self, user: User) -> None:
        with self._lock:
            self.users[user.username] = user
            self._save()

    def delete_user(self, username: str) -> None:
        with self._lock:
            self.users.pop(username, None)
            self.acls.pop(f"User:{username}", None)
            self._save()

    def get_acl(self, subject_key: str) -> Acl | None:
        return self.acls.get(subject_key)

    def put_acl(self, acl: Acl) -> None:
        with self._lock:
            self.acls[acl.subject] = acl
            self._save()

    def delete_acl(self, subject_key: str) -> None:
        with self._lock:
            self.acls.pop(subject_key, None)
            self._save()
