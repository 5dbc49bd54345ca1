"""Authenticate and authorize one request (Java broker.auth.pipeline Authentication- then
AuthorizationPipeline, with the default providers and the stateless strategies).

A failure is Java's AbortProcessException(NO_PERMISSION, message): the request is answered
NO_PERMISSION with the message as remark and never reaches its processor.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from pyrmq.auth.config import AuthConfig
from pyrmq.auth.contexts import AuthorizationContext, AuthorizationError, build_contexts
from pyrmq.auth.model import Decision, PolicyEntry, PolicyType, ResourcePattern, ResourceType, UserStatus, UserType
from pyrmq.auth.signature import ACCESS_KEY, signature_matches
from pyrmq.auth.store import AuthMetadataStore
from pyrmq.protocol.codes import ResponseCode
from pyrmq.protocol.command import RemotingCommand

audit = logging.getLogger("pyrmq.auth.audit")


class AuthenticationError(Exception):
    """Java AuthenticationException."""


class AuthEvaluator:
    def __init__(self, config: AuthConfig, store: AuthMetadataStore | None) -> None:
        self.config = config
        self.store = store
        self._authn_whitelist = _names(config.authentication_whitelist)
        self._authz_whitelist = _names(config.authorization_whitelist)

    def check(self, cmd: RemotingCommand, remote_addr: str) -> tuple[int, str] | None:
        """None when ``cmd`` may proceed, else (NO_PERMISSION, Java's message)."""
        try:
            if self.config.authentication_enabled:
                self.authenticate(cmd)
            if self.config.authorization_enabled:
                for ctx in build_contexts(cmd, remote_addr, self.config.cluster_name):
                    self.authorize(ctx)
        except (AuthenticationError, AuthorizationError) as e:
            return ResponseCode.NO_PERMISSION, str(e)
        return None

    # -- authentication ------------------------------------------------------

    def authenticate(self, cmd: RemotingCommand) -> None:
        username = (cmd.ext_fields or {}).get(ACCESS_KEY)
        self.authenticate_user(cmd.code, username, lambda password: signature_matches(cmd, password))

    def authenticate_user(self, rpc_code: int | str, username: str | None, verify: Callable[[str], bool]) -> None:
        """DefaultAuthenticationHandler for any transport: ``verify`` checks the request's
        signature against the user's password (remoting's ext fields, gRPC's date header)."""
        if str(rpc_code) in self._authn_whitelist:
            return
        if self.store is None or not self.config.authentication_metadata_provider:
            raise AuthenticationError("The authenticationMetadataProvider is not configured")
        if not username:
            raise AuthenticationError("username cannot be null.")
        user = self.store.get_user(username)
        if user is None:
            self._audit(username, False)
            raise AuthenticationError(f"User:{username} is not found.")
        if user.user_status is UserStatus.DISABLE:
            raise AuthenticationError(f"User:{username} is disabled.")
        if user.password is None or not verify(user.password):
            self._audit(username, False)
            raise AuthenticationError("check signature failed.")
        self._audit(username, True)

    @staticmethod
    def _audit(username: str, ok: bool) -> None:
        # Java logs the signature too; a signature is a credential-derived value, so pyrmq does not
        if ok:
            audit.debug("[AUTHENTICATION] User:%s is authenticated success.", username)
        else:
            audit.info("[AUTHENTICATION] User:%s is authenticated failed.", username)

    # -- authorization -------------------------------------------------------

    def authorize(self, ctx: AuthorizationContext) -> None:
        if str(ctx.rpc_code) in self._authz_whitelist:
            return
        if ctx.username is None:
            raise AuthorizationError("Authorization failed. Please verify your access rights and try again.")
        if self.store is None or not self.config.authentication_metadata_provider:
            raise AuthorizationError("The authenticationMetadataProvider is not configured")
        user = self.store.get_user(ctx.username)
        if user is None:
            raise AuthorizationError(f"User:{ctx.username} not found.")
        if user.user_type is UserType.SUPER:
            return
        if not self.config.authorization_metadata_provider:
            raise AuthorizationError("The authorizationMetadataProvider is not configured")
        subject = f"User:{ctx.username}"
        acl = self.store.get_acl(subject)
        entry = None if acl is None else _match(ctx, acl.policy(PolicyType.CUSTOM), acl.policy(PolicyType.DEFAULT))
        if entry is None:
            raise AuthorizationError(_denied(ctx, subject, "no matched policies."))
        if entry.decision is Decision.DENY:
            raise AuthorizationError(_denied(ctx, subject, "the decision is deny."))


def _names(whitelist: str) -> frozenset[str]:
    """Java's whitelist: StringUtils.split(text, ",") trimmed, matched against the context's rpc
    code as text (a remoting request code, or a gRPC request's message name)."""
    return frozenset(p.strip() for p in whitelist.split(",") if p.strip())


def _denied(ctx: AuthorizationContext, subject: str, detail: str) -> str:
    return f"{subject} has no permission to access {ctx.resource.key} from {ctx.source_ip}, {detail}"


def _match(ctx: AuthorizationContext, *policies: object) -> PolicyEntry | None:
    """AclAuthorizationHandler#matchPolicyEntries: the custom policy's matches, else the default
    policy's; the most specific resource first, DENY before ALLOW at equal specificity."""
    wanted = list(ctx.actions)
    for policy in policies:
        if policy is None:
            continue
        found = [
            e
            for e in policy.entries  # type: ignore[attr-defined]
            if e.resource.matches(ctx.resource) and e.matches_actions(wanted) and e.matches_ip(ctx.source_ip)
        ]
        if found:
            found.sort(key=_rank)
            return found[0]
    return None


def _rank(e: PolicyEntry) -> tuple[int, int, int]:
    """A total order that agrees with comparePolicyEntries: ANY resource type last; LITERAL,
    then PREFIXED (longer prefix first), then ANY pattern; then DENY first."""
    r = e.resource
    type_rank = 1 if r.type is ResourceType.ANY else 0
    pattern_rank = {ResourcePattern.LITERAL: 0, ResourcePattern.PREFIXED: 1, ResourcePattern.ANY: 2}[r.pattern]
    prefix_len = -len(r.name or "") if r.pattern is ResourcePattern.PREFIXED else 0
    return (type_rank, pattern_rank * 1_000_000 + prefix_len, 0 if e.decision is Decision.DENY else 1)
