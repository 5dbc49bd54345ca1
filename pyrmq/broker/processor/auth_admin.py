"""The user and ACL admin codes (AUTH_CREATE_USER .. AUTH_LIST_ACL, 3001-3010) that mqadmin's
createUser/updateUser/deleteUser/getUser/listUser and createAcl/updateAcl/deleteAcl/getAcl/
listAcl send. Java: ``broker/processor/AdminBrokerProcessor`` (createUser .. listAcl,
isNotSuperUserLogin, handleAuthException). Who may send them at all is the request check's
business (Cluster resource, Update/Get actions); here the super-user rules and the metadata.
"""

from __future__ import annotations

import logging
from typing import Any

from pyrmq.auth.contexts import AuthorizationError
from pyrmq.auth.evaluator import AuthenticationError
from pyrmq.auth.manager import AuthManager, acl_from_info
from pyrmq.auth.model import PolicyType, Resource, User, UserStatus, UserType
from pyrmq.auth.signature import ACCESS_KEY
from pyrmq.auth.store import acl_to_json, user_to_json
from pyrmq.broker.auth import BrokerAuth
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.fastjson import BodyDecodeError, fastjson_dumps, lenient_loads
from pyrmq.protocol.headers.auth import (
    AclRequestHeader,
    DeleteAclRequestHeader,
    ListAclsRequestHeader,
    ListUsersRequestHeader,
    UserRequestHeader,
)
from pyrmq.remoting.server import RequestContext, handles

log = logging.getLogger("pyrmq.broker.auth")

#: Java handleAuthException's remark for anything but an auth exception
SYSTEM_ERROR_REMARK = "An system error occurred, please try again later."


def _ok(cmd: RemotingCommand, body: Any = None) -> RemotingCommand:
    return cmd.make_response(ResponseCode.SUCCESS, None, body=None if body is None else fastjson_dumps(body))


def _user_info(u: User) -> dict[str, Any]:
    """UserInfo as JSON.toJSONString writes it: fields in name order, nulls left out."""
    return {k: v for k, v in sorted(user_to_json(u).items()) if v is not None}


class AuthAdminProcessor:
    def __init__(self, broker_auth: BrokerAuth | None) -> None:
        self.broker_auth = broker_auth

    def _manager(self) -> AuthManager | None:
        store = None if self.broker_auth is None else self.broker_auth.store
        return None if store is None else AuthManager(store)

    def _is_not_super(self, cmd: RemotingCommand) -> bool:
        """isNotSuperUserLogin: no AccessKey (auth off) counts as super; an unknown one fails."""
        ak = (cmd.ext_fields or {}).get(ACCESS_KEY)
        if not ak:
            return False
        manager = self._manager()
        user = None if manager is None else manager.store.get_user(ak)
        if user is None:
            raise AuthenticationError(f"User:{ak} is not found")
        return user.user_type is not UserType.SUPER

    async def _run(self, cmd: RemotingCommand, action: Any) -> RemotingCommand:
        manager = self._manager()
        try:
            if manager is None:
                raise RuntimeError("The authenticationMetadataProvider is not configured")
            return action(manager)
        except (AuthenticationError, AuthorizationError) as e:
            return cmd.make_response(ResponseCode.NO_PERMISSION, str(e))
        except (RuntimeError, BodyDecodeError, ValueError) as e:
            log.error("auth admin request %d failed: %s", cmd.code, e)
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, SYSTEM_ERROR_REMARK)

    @staticmethod
    def _user_body(cmd: RemotingCommand, username: str) -> tuple[User, bool, bool]:
        info = lenient_loads(cmd.body or b"{}")
        if not isinstance(info, dict):
            raise ValueError("UserInfo body is not an object")
        user_type = UserType.by_name(info.get("userType"))
        status = UserStatus.by_name(info.get("userStatus"))
        password = info.get("password")
        user = User(
            username,
            None if password is None else str(password),
            user_type or UserType.NORMAL,
            status or UserStatus.ENABLE,
        )
        return user, user_type is not None, status is not None

    @handles(RequestCode.AUTH_CREATE_USER, RequestCode.AUTH_UPDATE_USER)
    async def create_or_update_user(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = UserRequestHeader.from_command(cmd)
        if not h.username:
            return cmd.make_response(ResponseCode.INVALID_PARAMETER, "The username is blank")
        creating = cmd.code == RequestCode.AUTH_CREATE_USER
        verb = "create" if creating else "update"
        username = h.username

        def act(m: AuthManager) -> RemotingCommand:
            user, has_type, has_status = self._user_body(cmd, username)
            if has_type and user.user_type is UserType.SUPER and self._is_not_super(cmd):
                return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"The super user can only be {verb} by super user")
            if creating:
                m.create_user(user, has_type=has_type, has_status=has_status)
                return _ok(cmd)
            old = m.store.get_user(username)
            if old is None:
                raise AuthenticationError("The user is not exist")
            if old.user_type is UserType.SUPER and self._is_not_super(cmd):
                raise AuthenticationError("The super user can only be update by super user")
            m.update_user(
                username, user.password, user.user_type if has_type else None, user.user_status if has_status else None
            )
            return _ok(cmd)

        return await self._run(cmd, act)

    @handles(RequestCode.AUTH_DELETE_USER)
    async def delete_user(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        username = UserRequestHeader.from_command(cmd).username or ""

        def act(m: AuthManager) -> RemotingCommand:
            user = m.store.get_user(username) if username.strip() else None
            if username.strip() and user is None:
                return _ok(cmd)
            if user is not None and user.user_type is UserType.SUPER and self._is_not_super(cmd):
                raise AuthenticationError("The super user can only be update by super user")
            m.delete_user(username)
            return _ok(cmd)

        return await self._run(cmd, act)

    @handles(RequestCode.AUTH_GET_USER)
    async def get_user(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        username = UserRequestHeader.from_command(cmd).username
        if username is None or not username.strip():
            return cmd.make_response(ResponseCode.INVALID_PARAMETER, "The username is blank")

        def act(m: AuthManager) -> RemotingCommand:
            user = m.store.get_user(username)
            return _ok(cmd, None if user is None else _user_info(user))

        return await self._run(cmd, act)

    @handles(RequestCode.AUTH_LIST_USER)
    async def list_users(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        name_filter = ListUsersRequestHeader.from_command(cmd).filter

        def act(m: AuthManager) -> RemotingCommand:
            users = m.list_users(name_filter)
            return _ok(cmd, [_user_info(u) for u in users] if users else None)

        return await self._run(cmd, act)

    @handles(RequestCode.AUTH_CREATE_ACL, RequestCode.AUTH_UPDATE_ACL)
    async def create_or_update_acl(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        subject = AclRequestHeader.from_command(cmd).subject or ""

        def act(m: AuthManager) -> RemotingCommand:
            m.put_acl(acl_from_info(lenient_loads(cmd.body or b"null"), subject))
            return _ok(cmd)

        return await self._run(cmd, act)

    @handles(RequestCode.AUTH_DELETE_ACL)
    async def delete_acl(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = DeleteAclRequestHeader.from_command(cmd)

        def act(m: AuthManager) -> RemotingCommand:
            if not h.subject:
                raise AuthorizationError("The subject is null.")
            m.delete_acl(h.subject, PolicyType.by_name(h.policy_type), Resource.parse(h.resource))
            return _ok(cmd)

        return await self._run(cmd, act)

    @handles(RequestCode.AUTH_GET_ACL)
    async def get_acl(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        subject = AclRequestHeader.from_command(cmd).subject or ""

        def act(m: AuthManager) -> RemotingCommand:
            acl = m.get_acl(subject)
            return _ok(cmd, None if acl is None else acl_to_json(acl))

        return await self._run(cmd, act)

    @handles(RequestCode.AUTH_LIST_ACL)
    async def list_acls(self, ctx: RequestContext, cmd: RemotingCommand) -> RemotingCommand:
        h = ListAclsRequestHeader.from_command(cmd)

        def act(m: AuthManager) -> RemotingCommand:
            acls = m.list_acls(h.subject_filter, h.resource_filter)
            return _ok(cmd, [acl_to_json(a) for a in acls] if acls else None)

        return await self._run(cmd, act)
