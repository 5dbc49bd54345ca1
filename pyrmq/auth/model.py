"""Users and ACLs (Java auth.authentication.model.User, auth.authorization.model.*).

Names and JSON shapes follow Java's, so the answers of the user and ACL request codes read the
same to mqadmin. Matching follows Resource#isMatch, PolicyEntry#isMatchAction/Environment and
IPAddressUtils#isIPInRange.
"""

from __future__ import annotations

import enum
import ipaddress
from dataclasses import dataclass, field
from typing import Self

from pyrmq.common.constants import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX


class _JavaNamed(enum.Enum):
    """An enum of Java's (code, name) pairs, looked up by name ignoring case (getByName)."""

    @property
    def java_name(self) -> str:
        return str(self.value[1])

    @classmethod
    def by_name(cls, name: str | None) -> Self | None:
        if name is None:
            return None
        wanted = name.strip().lower()
        for member in cls:
            if member.java_name.lower() == wanted:
                return member
        return None


class UserType(_JavaNamed):
    SUPER = (1, "Super")
    NORMAL = (2, "Normal")


class UserStatus(_JavaNamed):
    ENABLE = (1, "enable")
    DISABLE = (2, "disable")


class Action(_JavaNamed):
    """Java common.action.Action (code, name)."""

    UNKNOWN = (0, "Unknown")
    ALL = (1, "All")
    ANY = (2, "Any")
    PUB = (3, "Pub")
    SUB = (4, "Sub")
    CREATE = (5, "Create")
    UPDATE = (6, "Update")
    DELETE = (7, "Delete")
    GET = (8, "Get")
    LIST = (9, "List")


class ResourceType(_JavaNamed):
    UNKNOWN = (0, "Unknown")
    ANY = (1, "Any")
    CLUSTER = (2, "Cluster")
    NAMESPACE = (3, "Namespace")
    TOPIC = (4, "Topic")
    GROUP = (5, "Group")


class ResourcePattern(enum.Enum):
    ANY = 1
    LITERAL = 2
    PREFIXED = 3


class Decision(_JavaNamed):
    ALLOW = (1, "Allow")
    DENY = (2, "Deny")


class PolicyType(_JavaNamed):
    CUSTOM = (1, "Custom")
    DEFAULT = (2, "Default")


RETRY_PREFIX = RETRY_GROUP_TOPIC_PREFIX
DLQ_PREFIX = DLQ_GROUP_TOPIC_PREFIX


def is_retry_topic(name: str | None) -> bool:
    """NamespaceUtil#isRetryTopic."""
    return bool(name and name.strip()) and name.startswith(RETRY_PREFIX)  # type: ignore[union-attr]


def without_retry_and_dlq(name: str) -> str:
    if name.startswith(RETRY_PREFIX):
        return name[len(RETRY_PREFIX) :]
    if name.startswith(DLQ_PREFIX):
        return name[len(DLQ_PREFIX) :]
    return name


@dataclass(frozen=True, slots=True)
class Resource:
    type: ResourceType
    name: str | None
    pattern: ResourcePattern

    @classmethod
    def topic(cls, name: str | None) -> Resource:
        return cls(ResourceType.TOPIC, name, ResourcePattern.LITERAL)

    @classmethod
    def group(cls, name: str | None) -> Resource:
        if is_retry_topic(name):
            name = without_retry_and_dlq(name or "")
        return cls(ResourceType.GROUP, name, ResourcePattern.LITERAL)

    @classmethod
    def cluster(cls, name: str | None) -> Resource:
        return cls(ResourceType.CLUSTER, name, ResourcePattern.LITERAL)

    @classmethod
    def parse(cls, key: str | None) -> Resource | None:
        """Resource#of(String): "*", "Topic:*", "Topic:abc*", "Group:g"; None when unreadable."""
        if key is None or not key.strip():
            return None
        if key == "*":
            return cls(ResourceType.ANY, None, ResourcePattern.ANY)
        type_name, _, name = key.partition(":")
        rtype = ResourceType.by_name(type_name)
        if rtype is None:
            return None
        if name == "*":
            return cls(rtype, None, ResourcePattern.ANY)
        if name.endswith("*"):
            return cls(rtype, name[: name.index("*")], ResourcePattern.PREFIXED)
        return cls(rtype, name, ResourcePattern.LITERAL)

    @property
    def key(self) -> str:
        """Resource#getResourceKey."""
        if self.type is ResourceType.ANY:
            return "*"
        if self.pattern is ResourcePattern.ANY:
            return f"{self.type.java_name}:*"
        name = "null" if self.name is None else self.name  # Java's string concatenation
        if self.pattern is ResourcePattern.PREFIXED:
            return f"{self.type.java_name}:{name}*"
        return f"{self.type.java_name}:{name}"

    def matches(self, other: Resource) -> bool:
        if self.type is ResourceType.ANY:
            return True
        if self.type is not other.type:
            return False
        if self.pattern is ResourcePattern.ANY:
            return True
        if self.pattern is ResourcePattern.LITERAL:
            return other.name == self.name
        return other.name is not None and self.name is not None and other.name.startswith(self.name)


def ip_in_range(ip: str, cidr: str) -> bool:
    """IPAddressUtils#isIPInRange: a bare address must be equal as text; "a/n" is a CIDR range.
    (Java throws on an unreadable address, which fails the request; here it does not match.)"""
    parts = cidr.split("/")
    if len(parts) == 1:
        return ip == cidr
    if len(parts) != 2:
        return False
    try:
        net = ipaddress.ip_network(cidr, strict=False)
        return ipaddress.ip_address(ip) in net
    except ValueError:
        return False


@dataclass(slots=True)
class PolicyEntry:
    resource: Resource
    actions: list[Action]
    source_ips: list[str] = field(default_factory=list)
    decision: Decision = Decision.ALLOW

    def matches_actions(self, wanted: list[Action]) -> bool:
        if not self.actions:
            return False
        if Action.ANY in wanted:
            return True
        return any(a in self.actions or Action.ALL in self.actions for a in wanted)

    def matches_ip(self, source_ip: str | None) -> bool:
        if not self.source_ips:
            return True
        if not source_ip:
            return False
        return any(ip_in_range(source_ip, r) for r in self.source_ips)


@dataclass(slots=True)
class Policy:
    policy_type: PolicyType
    entries: list[PolicyEntry] = field(default_factory=list)


@dataclass(slots=True)
class Acl:
    subject: str  # the subject key, "User:name"
    policies: list[Policy] = field(default_factory=list)

    def policy(self, policy_type: PolicyType) -> Policy | None:
        for p in self.policies:
            if p.policy_type is policy_type:
                return p
        return None


@dataclass(slots=True)
class User:
    username: str
    password: str | None = None
    user_type: UserType = UserType.NORMAL
    user_status: UserStatus = UserStatus.ENABLE

    @property
    def subject_key(self) -> str:
        return f"User:{self.username}"
