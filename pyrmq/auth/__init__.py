"""Authentication and authorization (Java 5.5.0's auth module, "ACL 2.0"), sans-IO.

Java 5.5.0 removed ACL 1.0 (RIP-77): `aclEnable` and plain_acl.yml no longer act by themselves;
`authenticationEnabled` / `authorizationEnabled` turn on the auth pipelines, and
`migrateAuthFromV1Enabled` imports plain_acl.yml accounts as users and ACLs at start. The
client side is unchanged: AclClientRPCHook's HMAC-SHA1 signature (signature.py).
"""
