"""The request signature of AclClientRPCHook (Java acl.common.AclUtils / AclSigner).

The signed content is the values of the request's ext fields (the custom header made into
strings, plus AccessKey and SecurityToken) in Java TreeMap order of their keys, Signature left
out, concatenated as UTF-8, followed by the raw body; the signature is
Base64(HMAC-SHA1(secretKey, content)).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping

from pyrmq.protocol.command import RemotingCommand
from pyrmq.protocol.version import MQVersion

ACCESS_KEY = "AccessKey"
SECRET_KEY = "SecretKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"
#: MixAll.UNIQUE_MSG_QUERY_FLAG: left out of the server's content for clients up to 4.9.3
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"


def _java_string_order(key: str) -> bytes:
    # String#compareTo compares UTF-16 code units; UTF-16-BE bytes sort the same way
    return key.encode("utf-16-be")


def signed_content(
    fields: Mapping[str, str | None], body: bytes | memoryview | None, *, skip: tuple[str, ...] = ()
) -> bytes:
    """AclUtils#combineRequestContent over ``fields`` sorted as a TreeMap (a null value counts
    as the text "null", as StringBuilder#append does)."""
    parts = []
    # ASCII keys (all of RocketMQ's) sort the same by code point; others need UTF-16 order
    keys = sorted(fields) if all(k.isascii() for k in fields) else sorted(fields, key=_java_string_order)
    for key in keys:
        if key == SIGNATURE or key in skip:
            continue
        value = fields[key]
        parts.append("null" if value is None else value)
    head = "".join(parts).encode("utf-8")
    return head + bytes(body) if body else head


def calc_signature(content: bytes, secret_key: str) -> str:
    """AclSigner#calSignature: Base64 of HMAC-SHA1 keyed with the UTF-8 secret."""
    return base64.b64encode(hmac.new(secret_key.encode("utf-8"), content, hashlib.sha1).digest()).decode("ascii")


def server_content(cmd: RemotingCommand) -> bytes:
    """What the broker verifies (DefaultAuthenticationContextBuilder#build for remoting)."""
    fields = cmd.ext_fields or {}
    skip = (UNIQUE_MSG_QUERY_FLAG,) if cmd.version <= MQVersion.V4_9_3 else ()
    return signed_content(fields, cmd.body, skip=skip)


def signature_matches(cmd: RemotingCommand, secret_key: str) -> bool:
    """True when the request's Signature is the one ``secret_key`` gives (constant-time compare)."""
    given = (cmd.ext_fields or {}).get(SIGNATURE)
    if given is None:
        return False
    expected = calc_signature(server_content(cmd), secret_key)
    return hmac.compare_digest(expected.encode("utf-8"), given.encode("utf-8", "surrogatepass"))


def sign_request(cmd: RemotingCommand, access_key: str, secret_key: str, security_token: str | None = None) -> None:
    """AclClientRPCHook#doBeforeRequest: add AccessKey (and SecurityToken), then Signature."""
    if cmd.ext_fields is None:
        cmd.ext_fields = {}
    cmd.ext_fields[ACCESS_KEY] = access_key
    if security_token is not None:
        cmd.ext_fields[SECURITY_TOKEN] = security_token
    cmd.ext_fields[SIGNATURE] = calc_signature(signed_content(cmd.ext_fields, cmd.body), secret_key)


def tools_credentials(rocketmq_home: str) -> tuple[str, str] | None:
    """mqadmin's `$ROCKETMQ_HOME/conf/tools.yml` (AclUtils#getAclRPCHook): accessKey and
    secretKey, or None when the file is missing, unreadable or either is blank."""
    import yaml  # only the tools need it

    if not rocketmq_home:
        return None
    try:
        with open(f"{rocketmq_home}/conf/tools.yml", encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(data, dict):
        return None
    ak, sk = data.get("accessKey"), data.get("secretKey")
    if ak is None or sk is None or not str(ak).strip() or not str(sk).strip():
        return None
    return str(ak), str(sk)
