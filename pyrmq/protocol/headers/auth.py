"""Custom headers of the user and ACL admin requests (codes 3001-3010). Java:
``remoting/protocol/header/{Create,Update,Delete,Get}UserRequestHeader``, ``ListUsersRequestHeader``,
``{Create,Update,Delete,Get}AclRequestHeader``, ``ListAclsRequestHeader``. No field is @CFNotNull."""

from __future__ import annotations

from dataclasses import dataclass

from pyrmq.protocol.headers.base import RemotingHeader


@dataclass(slots=True)
class UserRequestHeader(RemotingHeader):
    """Create-, Update-, Delete- and GetUserRequestHeader: the same one field."""

    username: str | None = None


@dataclass(slots=True)
class ListUsersRequestHeader(RemotingHeader):
    filter: str | None = None


@dataclass(slots=True)
class AclRequestHeader(RemotingHeader):
    """Create-, Update- and GetAclRequestHeader."""

    subject: str | None = None


@dataclass(slots=True)
class DeleteAclRequestHeader(RemotingHeader):
    subject: str | None = None
    policy_type: str | None = None
    resource: str | None = None


@dataclass(slots=True)
class ListAclsRequestHeader(RemotingHeader):
    subject_filter: str | None = None
    resource_filter: str | None = None
