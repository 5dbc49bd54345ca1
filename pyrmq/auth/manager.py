"""The user and ACL operations of the admin request codes, with Java's checks and messages
(Java AuthenticationMetadataManagerImpl, AuthorizationMetadataManagerImpl, Acl#updatePolicy,
Policy#updateEntry / #deleteEntry, the Local*MetadataProvider list filters)."""

from __future__ import annotations

import copy
import ipaddress

from pyrmq.auth.contexts import AuthorizationError
from pyrmq.auth.evaluator import AuthenticationError
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
from pyrmq.auth.store import AuthMetadataStore


def _blank(s: str | None) -> bool:
    return s is None or not s.strip()


def _valid_ip_or_cidr(text: str) -> bool:
    """IPAddressUtils#isValidIPOrCidr."""
    try:
        if "/" in text:
            ipaddress.ip_network(text, strict=False)
        else:
            ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


class AuthManager:
    def __init__(self, store: AuthMetadataStore) -> None:
        self.store = store

    # -- users ---------------------------------------------------------------

    def create_user(self, user: User, *, has_type: bool, has_status: bool) -> None:
        if _blank(user.username):
            raise AuthenticationError("username can not be blank")
        if _blank(user.password):
            raise AuthenticationError("password can not be blank")
        if self.store.get_user(user.username) is not None:
            raise AuthenticationError("The user is existed")
        if not has_type:
            user.user_type = UserType.NORMAL
        if not has_status:
            user.user_status = UserStatus.ENABLE
        self.store.put_user(user)

    def update_user(
        self, username: str, password: str | None, user_type: UserType | None, status: UserStatus | None
    ) -> None:
        if _blank(username):
            raise AuthenticationError("username can not be blank")
        old = self.store.get_user(username)
        if old is None:
            raise AuthenticationError("The user is not exist")
        new = copy.copy(old)
        if not _blank(password):
            new.password = password
        if user_type is not None:
            new.user_type = user_type
        if status is not None:
            new.user_status = status
        self.store.put_user(new)

    def delete_user(self, username: str) -> None:
        if _blank(username):
            raise AuthenticationError("username can not be blank")
        self.store.delete_user(username)

    def list_users(self, name_filter: str | None) -> list[User]:
        users = sorted(self.store.users.values(), key=lambda u: u.username.encode("utf-8"))
        return [u for u in users if _blank(name_filter) or (name_filter or "") in u.username]

    # -- ACLs ----------------------------------------------------------------

    def _subject_exists(self, subject: str) -> bool:
        kind, _, name = subject.partition(":")
        return kind.lower() != "user" or self.store.get_user(name) is not None

    def put_acl(self, acl: Acl) -> None:
        """createAcl and updateAcl alike: new policy types are added, entries of an existing
        type replaced by resource or appended."""
        _validate(acl)
        if not self._subject_exists(acl.subject):
            raise AuthorizationError(f"The subject of {acl.subject} is not exist.")
        old = self.store.get_acl(acl.subject)
        if old is None:
            self.store.put_acl(acl)
            return
        merged = copy.deepcopy(old)
        for policy in acl.policies:
            target = merged.policy(policy.policy_type)
            if target is None:
                merged.policies.append(policy)
                continue
            for entry in policy.entries:
                for i, existing in enumerate(target.entries):
                    if existing.resource == entry.resource:
                        target.entries[i] = entry
                        break
                else:
                    target.entries.append(entry)
        self.store.put_acl(merged)

    def delete_acl(self, subject: str, policy_type: PolicyType | None, resource: Resource | None) -> None:
        if not self._subject_exists(subject):
            raise AuthorizationError("The subject is not exist.")
        old = self.store.get_acl(subject)
        if old is None:
            raise AuthorizationError("The acl is not exist.")
        if resource is None:
            self.store.delete_acl(subject)
            return
        acl = copy.deepcopy(old)
        policy = acl.policy(policy_type or PolicyType.CUSTOM)
        if policy is not None:
            policy.entries = [e for e in policy.entries if e.resource != resource]
            if not policy.entries:
                acl.policies.remove(policy)
        if acl.policies:
            self.store.put_acl(acl)
        else:
            self.store.delete_acl(subject)

    def get_acl(self, subject: str) -> Acl | None:
        if not self._subject_exists(subject):
            raise AuthorizationError("The subject is not exist.")
        return self.store.get_acl(subject)

    def list_acls(self, subject_filter: str | None, resource_filter: str | None) -> list[Acl]:
        out = []
        for key in sorted(self.store.acls, key=lambda k: k.encode("utf-8")):
            if not _blank(subject_filter) and (subject_filter or "") not in key:
                continue
            acl = copy.deepcopy(self.store.acls[key])
            kept = []
            for policy in acl.policies:
                if not _blank(resource_filter) and (resource_filter or "") not in key:
                    policy.entries = [e for e in policy.entries if (resource_filter or "") in e.resource.key]
                if policy.entries:
                    kept.append(policy)
            if kept:
                out.append(Acl(key, kept))
        return out


def _validate(acl: Acl) -> None:
    kind = acl.subject.partition(":")[0]
    if kind.lower() != "user":
        raise AuthorizationError("The subject type is null.")
    if not acl.policies:
        raise AuthorizationError("The policies is empty.")
    for policy in acl.policies:
        _validate_policy(policy)


def _validate_policy(policy: Policy) -> None:
    if not policy.entries:
        raise AuthorizationError("The policy entries is empty.")
    for entry in policy.entries:
        if not entry.actions:
            raise AuthorizationError("The actions is empty.")
        if Action.ANY in entry.actions:
            raise AuthorizationError("The actions can not be Any.")
        for ip in entry.source_ips:
            if _blank(ip):
                raise AuthorizationError("The source ip is empty.")
            if not _valid_ip_or_cidr(ip):
                raise AuthorizationError("The source ip is invalid.")


def acl_from_info(info: object, subject: str) -> Acl:
    """An AclInfo body (AclConverter#convertAcl) with the checks of validate(PolicyEntry): an
    unreadable resource or decision is refused with Java's message, not dropped."""
    if not isinstance(info, dict) or not info.get("policies"):
        raise AuthorizationError("The body of acl is null")
    subject = str(info.get("subject") or subject)
    policies = []
    for p in info["policies"]:
        if not isinstance(p, dict):
            raise AuthorizationError("The body of acl is null")
        entries = []
        for e in p.get("entries") or []:
            if not isinstance(e, dict):
                raise AuthorizationError("The resource is null.")
            resource = Resource.parse(e.get("resource"))
            if resource is None:
                raise AuthorizationError("The resource is null.")
            actions = [a for a in (Action.by_name(str(x)) for x in e.get("actions") or []) if a is not None]
            decision = Decision.by_name(e.get("decision"))
            if decision is None:
                raise AuthorizationError("The decision is null or illegal.")
            ips = [str(x) for x in e.get("sourceIps") or []]
            entries.append(PolicyEntry(resource, actions, ips, decision))
        if not entries:
            continue  # AclConverter skips a policy without entries
        policies.append(Policy(PolicyType.by_name(p.get("policyType")) or PolicyType.CUSTOM, entries))
    return Acl(subject, policies)
