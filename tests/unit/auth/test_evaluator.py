"""Authentication and authorization decisions with Java 5.5.0's semantics and messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyrmq.auth.config import LOCAL_AUTHENTICATION_METADATA_PROVIDER, LOCAL_AUTHORIZATION_METADATA_PROVIDER, AuthConfig
from pyrmq.auth.contexts import build_contexts
from pyrmq.auth.evaluator import AuthEvaluator
from pyrmq.auth.migrate import account_to_user_and_acl, init_users, migrate_v1
from pyrmq.auth.model import (
    Acl,
    Action,
    Decision,
    Policy,
    PolicyEntry,
    PolicyType,
    Resource,
    ResourceType,
    User,
    UserStatus,
    UserType,
    ip_in_range,
)
from pyrmq.auth.signature import sign_request
from pyrmq.auth.store import AuthMetadataStore
from pyrmq.protocol.bodies.broker import ConsumerData, HeartbeatData, SubscriptionData
from pyrmq.protocol.codes import RequestCode, ResponseCode
from pyrmq.protocol.command import RemotingCommand

ADDR = "10.0.0.7:53211"


def config(**kw: object) -> AuthConfig:
    props = {
        "authenticationEnabled": "true",
        "authorizationEnabled": "true",
        "authenticationMetadataProvider": LOCAL_AUTHENTICATION_METADATA_PROVIDER,
        "authorizationMetadataProvider": LOCAL_AUTHORIZATION_METADATA_PROVIDER,
    }
    props.update({k: str(v) for k, v in kw.items()})
    return AuthConfig.from_properties(props, cluster_name="DefaultCluster")


def entry(resource: str, actions: str, decision: str = "Allow", ips: tuple[str, ...] = ()) -> PolicyEntry:
    res = Resource.parse(resource)
    assert res is not None
    acts = [a for a in (Action.by_name(x) for x in actions.split(",")) if a is not None]
    return PolicyEntry(res, acts, list(ips), Decision.by_name(decision) or Decision.ALLOW)


@pytest.fixture
def store() -> AuthMetadataStore:
    s = AuthMetadataStore(None)
    s.put_user(User("admin", "adminsecret", UserType.SUPER))
    s.put_user(User("app", "appsecret"))
    s.put_user(User("off", "offsecret", user_status=UserStatus.DISABLE))
    s.put_acl(
        Acl(
            "User:app",
            [
                Policy(
                    PolicyType.CUSTOM,
                    [
                        entry("Topic:orders", "Pub,Sub"),
                        entry("Topic:audit", "Sub"),
                        entry("Topic:sec*", "All", "Deny"),
                        entry("Topic:secret-public", "Pub"),
                        entry("Group:app-group", "Sub"),
                        entry("Topic:lan", "Pub", ips=("192.168.0.0/16",)),
                    ],
                ),
                Policy(PolicyType.DEFAULT, [entry("Topic:*", "Sub")]),
            ],
        )
    )
    return s


def signed(code: int, fields: dict[str, str], user: str, secret: str, body: bytes | None = None) -> RemotingCommand:
    cmd = RemotingCommand.request(code, ext_fields=dict(fields), body=body)
    sign_request(cmd, user, secret)
    return cmd


def send(topic: str, user: str = "app", secret: str = "appsecret") -> RemotingCommand:
    return signed(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": topic, "c": "TBW102", "d": "4"}, user, secret, b"x")


def check(ev: AuthEvaluator, cmd: RemotingCommand, addr: str = ADDR) -> tuple[int, str] | None:
    return ev.check(cmd, addr)


def test_authentication_failures_carry_java_messages(store: AuthMetadataStore) -> None:
    ev = AuthEvaluator(config(), store)
    assert check(ev, send("orders")) is None
    unsigned = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext_fields={"b": "orders"})
    assert check(ev, unsigned) == (ResponseCode.NO_PERMISSION, "username cannot be null.")
    assert check(ev, RemotingCommand.request(RequestCode.HEART_BEAT)) == (
        ResponseCode.NO_PERMISSION,
        "username cannot be null.",
    )
    assert check(ev, send("orders", "nobody", "x")) == (ResponseCode.NO_PERMISSION, "User:nobody is not found.")
    assert check(ev, send("orders", "app", "wrong")) == (ResponseCode.NO_PERMISSION, "check signature failed.")
    assert check(ev, send("orders", "off", "offsecret")) == (ResponseCode.NO_PERMISSION, "User:off is disabled.")
    no_sig = send("orders")
    del no_sig.ext_fields["Signature"]  # type: ignore[union-attr]
    assert check(ev, no_sig) == (ResponseCode.NO_PERMISSION, "check signature failed.")


def test_secret_never_in_remark(store: AuthMetadataStore) -> None:
    ev = AuthEvaluator(config(), store)
    for cmd in (send("orders", "app", "wrong"), send("audit"), send("orders", "nobody", "appsecret")):
        refused = check(ev, cmd)
        assert refused is not None and "appsecret" not in refused[1]


def test_whitelist_and_missing_provider(store: AuthMetadataStore) -> None:
    ev = AuthEvaluator(config(authenticationWhitelist=" 310 ,11", authorizationWhitelist="310"), store)
    assert check(ev, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext_fields={"b": "x"})) is None
    bare = AuthEvaluator(config(authenticationMetadataProvider=""), store)
    assert check(bare, send("orders")) == (
        ResponseCode.NO_PERMISSION,
        "The authenticationMetadataProvider is not configured",
    )


def test_authorization_by_policy(store: AuthMetadataStore) -> None:
    ev = AuthEvaluator(config(), store)
    assert check(ev, send("orders")) is None
    assert check(ev, send("audit")) == (
        ResponseCode.NO_PERMISSION,
        "User:app has no permission to access Topic:audit from 10.0.0.7, no matched policies.",
    )
    assert check(ev, send("secrets")) == (
        ResponseCode.NO_PERMISSION,
        "User:app has no permission to access Topic:secrets from 10.0.0.7, the decision is deny.",
    )
    # a literal entry wins over a matching prefixed DENY
    assert check(ev, send("secret-public")) is None
    # source IP ranges
    assert check(ev, send("lan")) is not None
    assert check(ev, send("lan"), "192.168.3.4:1000") is None
    # the super user passes everything
    assert check(ev, send("audit", "admin", "adminsecret")) is None


def test_pull_needs_topic_and_group(store: AuthMetadataStore) -> None:
    ev = AuthEvaluator(config(), store)
    pull = {"consumerGroup": "app-group", "topic": "audit", "queueId": "0"}
    assert check(ev, signed(RequestCode.PULL_MESSAGE, pull, "app", "appsecret")) is None
    other_group = dict(pull, consumerGroup="other")
    refused = check(ev, signed(RequestCode.PULL_MESSAGE, other_group, "app", "appsecret"))
    assert refused is not None and "Group:other" in refused[1]
    # the retry topic of a group is checked as the group (default policy has no Group entry)
    retry = dict(pull, topic="%RETRY%app-group")
    assert check(ev, signed(RequestCode.PULL_MESSAGE, retry, "app", "appsecret")) is None


def test_heartbeat_checks_every_consumer_group_and_topic(store: AuthMetadataStore) -> None:
    ev = AuthEvaluator(config(), store)
    hb = HeartbeatData(
        client_id="c1",
        consumer_data_set=[
            ConsumerData(group_name="app-group", subscription_data_set=[SubscriptionData(topic="audit")])
        ],
    )
    assert check(ev, signed(RequestCode.HEART_BEAT, {}, "app", "appsecret", hb.encode())) is None
    hb.consumer_data_set.append(ConsumerData(group_name="stolen"))
    refused = check(ev, signed(RequestCode.HEART_BEAT, {}, "app", "appsecret", hb.encode()))
    assert refused is not None and "Group:stolen" in refused[1]
    garbage = check(ev, signed(RequestCode.HEART_BEAT, {}, "app", "appsecret", b"{not json"))
    assert garbage == (ResponseCode.NO_PERMISSION, "parse authorization context error.")


def test_admin_codes_need_the_cluster_resource(store: AuthMetadataStore) -> None:
    ev = AuthEvaluator(config(), store)
    create = {"topic": "newtopic", "readQueueNums": "8"}
    refused = check(ev, signed(RequestCode.UPDATE_AND_CREATE_TOPIC, create, "app", "appsecret"))
    assert refused is not None and "Topic:newtopic" in refused[1]
    refused = check(ev, signed(RequestCode.AUTH_CREATE_USER, {"username": "x"}, "app", "appsecret"))
    assert refused == (
        ResponseCode.NO_PERMISSION,
        "User:app has no permission to access Cluster:DefaultCluster from 10.0.0.7, no matched policies.",
    )
    assert check(ev, signed(RequestCode.AUTH_CREATE_USER, {"username": "x"}, "admin", "adminsecret")) is None


def test_contexts_of_sends_to_retry_topics() -> None:
    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext_fields={"AccessKey": "u", "a": "", "b": "%RETRY%g1"})
    (ctx,) = build_contexts(cmd, ADDR, "c")
    assert ctx.resource == Resource(ResourceType.GROUP, "g1", Resource.topic("x").pattern)
    assert ctx.actions == (Action.SUB,)


def test_ip_ranges() -> None:
    assert ip_in_range("10.1.2.3", "10.0.0.0/8")
    assert not ip_in_range("11.1.2.3", "10.0.0.0/8")
    assert ip_in_range("10.1.2.3", "10.1.2.3")
    assert not ip_in_range("10.1.2.3", "10.1.2.*")  # Java 2.0 has no ACL-1.0 wildcards
    assert ip_in_range("::1", "::1/128")
    assert not ip_in_range("bogus", "10.0.0.0/8")


PLAIN_ACL = """
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
  - accessKey: rocketmq2
    secretKey: 12345678
    admin: true
  - accessKey: RocketMQ
    secretKey: duplicate-ignored
"""


def test_migration_of_plain_acl_yml(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "plain_acl.yml").write_text(PLAIN_ACL)
    store = AuthMetadataStore(str(tmp_path / "store"))
    assert migrate_v1(store, str(tmp_path)) == 2
    assert store.get_user("RocketMQ") == User("RocketMQ", "12345678", UserType.NORMAL)
    assert store.get_user("rocketmq2") == User("rocketmq2", "12345678", UserType.SUPER)
    assert store.get_acl("User:rocketmq2") is None
    ev = AuthEvaluator(config(), store)
    assert check(ev, send("topicB", "RocketMQ", "12345678")) is None
    assert check(ev, send("topicC", "RocketMQ", "12345678")) is not None
    assert check(ev, send("topicA", "RocketMQ", "12345678")) is not None
    assert check(ev, send("anyOther", "RocketMQ", "12345678")) is not None  # defaultTopicPerm DENY
    # persisted and read back, and a second migration leaves existing users alone
    again = AuthMetadataStore(str(tmp_path / "store"))
    assert again.users == store.users and again.acls == store.acls
    assert migrate_v1(again, str(tmp_path)) == 0


def test_migrated_perms_match_authmigrator() -> None:
    _user, acl = account_to_user_and_acl(
        {"accessKey": "a", "secretKey": "s", "topicPerms": ["t1=PUB", "bad", "t2=SUB|PUB"], "defaultGroupPerm": "DENY"}
    )
    assert acl is not None
    custom, default = acl.policies
    assert [(e.resource.key, e.actions, e.decision) for e in custom.entries] == [
        ("Topic:t1", [Action.PUB], Decision.ALLOW),
        ("Topic:t2", [Action.PUB, Action.SUB], Decision.ALLOW),
    ]
    assert [(e.resource.key, e.actions, e.decision) for e in default.entries] == [
        ("Group:*", [Action.ALL], Decision.DENY)
    ]


def test_initial_users_are_super() -> None:
    store = AuthMetadataStore(None)
    cfg = config(
        initAuthenticationUser=json.dumps({"username": "root", "password": "pw"}),
        innerClientAuthenticationCredentials=json.dumps({"accessKey": "inner", "secretKey": "isk"}),
    )
    init_users(store, cfg)
    assert store.get_user("root") == User("root", "pw", UserType.SUPER)
    assert store.get_user("inner") == User("inner", "isk", UserType.SUPER)
    assert cfg.inner_credentials() == ("inner", "isk", None)


def test_codes_java_leaves_open_are_checked(store: AuthMetadataStore) -> None:
    """Stricter than Java 5.5.0: these codes have no annotated header, so Java lets any
    authenticated user send them; pyrmq checks them (docs/security.md)."""
    ev = AuthEvaluator(config(), store)
    for code in (RequestCode.UPDATE_BROKER_CONFIG, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP):
        refused = check(ev, signed(code, {}, "app", "appsecret", b"x=1"))
        assert refused is not None and "Cluster:DefaultCluster" in refused[1], code
        assert check(ev, signed(code, {}, "admin", "adminsecret", b"x=1")) is None
    lite = {"consumerGroup": "other", "topic": "orders", "queueId": "0"}
    refused = check(ev, signed(RequestCode.LITE_PULL_MESSAGE, lite, "app", "appsecret"))
    assert refused is not None and "Group:other" in refused[1]
    reply = {"a": "pg", "b": "audit", "c": "TBW102"}
    refused = check(ev, signed(RequestCode.SEND_REPLY_MESSAGE_V2, reply, "app", "appsecret"))
    assert refused is not None and "Topic:audit" in refused[1]


def test_broker_config_answer_hides_auth_keys(tmp_path: Path) -> None:
    from pyrmq.broker.config import BrokerConfig

    props = {
        "brokerName": "b",
        "storePathRootDir": str(tmp_path),
        "initAuthenticationUser": '{"username":"root","password":"pw"}',
        "authenticationEnabled": "true",
    }
    cfg = BrokerConfig.from_properties(props)
    assert "initAuthenticationUser" not in cfg.all_properties()
    assert "pw" not in cfg.properties_text()
    assert "initAuthenticationUser" not in cfg.unknown_keys()
    cfg.persist()
    assert "initAuthenticationUser" in Path(cfg.config_path).read_text()
    assert {"authenticationEnabled", "authorizationEnabled", "innerClientAuthenticationCredentials"} <= cfg.black_list()


def test_broker_auth_wiring(tmp_path: Path) -> None:
    """The broker's own requests are signed with innerClientAuthenticationCredentials (Java
    BrokerOuterAPI's AclClientRPCHook); without auth the servers get no request check at all."""
    from pyrmq.auth.signature import signature_matches
    from pyrmq.broker.auth import BrokerAuth
    from pyrmq.broker.config import BrokerConfig

    base = {"brokerName": "b", "storePathRootDir": str(tmp_path)}
    off = BrokerAuth.from_broker_config(BrokerConfig.from_properties(base))
    assert off.request_check() is None and off.client_hook() is None and off.store is None
    props = dict(base, innerClientAuthenticationCredentials='{"accessKey":"inner","secretKey":"isk"}')
    props.update(
        authenticationEnabled="true",
        authenticationMetadataProvider=LOCAL_AUTHENTICATION_METADATA_PROVIDER,
    )
    on = BrokerAuth.from_broker_config(BrokerConfig.from_properties(props))
    hook = on.client_hook()
    assert hook is not None and on.request_check() is not None
    cmd = RemotingCommand.request(RequestCode.REGISTER_BROKER, ext_fields={"brokerName": "b"}, body=b"{}")
    hook(cmd)
    assert cmd.ext_fields is not None and cmd.ext_fields["AccessKey"] == "inner"
    assert signature_matches(cmd, "isk")
    # and the broker itself accepts what it signs: the inner user is a super user
    assert on.evaluator.check(cmd, "127.0.0.1:1") is None


def test_a_failing_check_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unexpected error inside the check answers SYSTEM_ERROR: the request never gets through."""
    from support.fakes import FakeChannel

    from pyrmq.broker.auth import BrokerAuth
    from pyrmq.broker.config import BrokerConfig

    props = {"brokerName": "b", "storePathRootDir": str(tmp_path), "authenticationEnabled": "true"}
    auth = BrokerAuth.from_broker_config(BrokerConfig.from_properties(props))
    check = auth.request_check()
    assert check is not None

    def boom(*_a: object) -> None:
        raise RuntimeError("bug")

    monkeypatch.setattr(auth.evaluator, "check", boom)
    resp = check(FakeChannel(), RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext_fields={"b": "t"}))  # type: ignore[arg-type]
    assert resp is not None and resp.code == ResponseCode.SYSTEM_ERROR


def test_missing_names_and_acl_enable_warning(
    tmp_path: Path, store: AuthMetadataStore, caplog: pytest.LogCaptureFixture
) -> None:
    from pyrmq.broker.auth import BrokerAuth
    from pyrmq.broker.config import BrokerConfig

    ev = AuthEvaluator(config(), store)
    pull = signed(RequestCode.PULL_MESSAGE, {"topic": "orders", "queueId": "0"}, "app", "appsecret")
    refused = check(ev, pull)
    assert refused is not None and "Group:null" in refused[1]  # Java's text for a missing name
    with caplog.at_level("WARNING", logger="pyrmq.broker.auth"):
        auth = BrokerAuth.from_broker_config(
            BrokerConfig.from_properties({"brokerName": "b", "storePathRootDir": str(tmp_path), "aclEnable": "true"})
        )
    assert auth.request_check() is None  # as in Java 5.5.0: aclEnable alone enforces nothing
    assert "aclEnable=true has no effect" in caplog.text
