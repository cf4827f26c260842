"""kafka-python's admin client on ACLs (KIP-140): create bindings of every resource type
(USER needs CreateAcls v3), describe them through filters, delete them, and see a refusal for
what the broker must refuse. The broker runs with an authorizer and User:ANONYMOUS as super
user. Exits non-zero with a message when a check fails.
Usage: kafka_python_acls.py BOOTSTRAP"""
import sys

import kafka.errors as Errors
from kafka import KafkaAdminClient
from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType,
                         ACLResourcePatternType, ResourcePattern, ResourcePatternFilter,
                         ResourceType)

bootstrap = sys.argv[1]


def check(cond, msg):
    if not cond:
        print("FAILED: " + msg, file=sys.stderr)
        sys.exit(1)


def acl(rtype, name, principal, op, perm=ACLPermissionType.ALLOW,
        pattern=ACLResourcePatternType.LITERAL):
    return ACL(principal=principal, host="*", operation=op, permission_type=perm,
               resource_pattern=ResourcePattern(rtype, name, pattern))


def acl_filter(rtype=ResourceType.ANY, name=None, pattern=ACLResourcePatternType.ANY,
               principal=None, op=ACLOperation.ANY, perm=ACLPermissionType.ANY):
    return ACLFilter(principal=principal, host=None, operation=op, permission_type=perm,
                     resource_pattern=ResourcePatternFilter(rtype, name, pattern))


def line(a):
    p = a.resource_pattern
    return "%s:%s:%s %s@%s %s %s" % (p.resource_type.name, p.pattern_type.name, p.resource_name,
                                     a.principal, a.host, a.operation.name, a.permission_type.name)


def described(f):
    acls, error = admin.describe_acls(f)
    check(error is Errors.NoError, "describe_acls: %r" % error)
    return sorted(line(a) for a in acls)


admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
wanted = [
    acl(ResourceType.TOPIC, "orders", "User:alice", ACLOperation.READ),
    acl(ResourceType.TOPIC, "logs-", "User:alice", ACLOperation.WRITE,
        pattern=ACLResourcePatternType.PREFIXED),
    acl(ResourceType.GROUP, "billing", "User:bob", ACLOperation.ALL, ACLPermissionType.DENY),
    acl(ResourceType.CLUSTER, "kafka-cluster", "User:ops", ACLOperation.ALTER_CONFIGS),
    acl(ResourceType.TRANSACTIONAL_ID, "app-", "User:bob", ACLOperation.WRITE,
        pattern=ACLResourcePatternType.PREFIXED),
    acl(ResourceType.DELEGATION_TOKEN, "token-1", "User:ops", ACLOperation.DESCRIBE),
    acl(ResourceType.USER, "User:carol", "User:ops", ACLOperation.CREATE_TOKENS),
]
result = admin.create_acls(wanted)
check(len(result["succeeded"]) == len(wanted) and not result["failed"],
      "create_acls: %r" % result)
everything = sorted(line(a) for a in wanted)
check(described(acl_filter()) == everything, "all ACLs: %r" % described(acl_filter()))

# MATCH finds the bindings that apply to a resource: the prefix of logs-app.
got = described(acl_filter(ResourceType.TOPIC, "logs-app", ACLResourcePatternType.MATCH))
check(got == ["TOPIC:PREFIXED:logs- User:alice@* WRITE ALLOW"], "MATCH logs-app: %r" % got)
got = described(acl_filter(principal="User:bob"))
check(got == ["GROUP:LITERAL:billing User:bob@* ALL DENY",
              "TRANSACTIONAL_ID:PREFIXED:app- User:bob@* WRITE ALLOW"], "bob's: %r" % got)
got = described(acl_filter(ResourceType.USER))
check(got == ["USER:LITERAL:User:carol User:ops@* CREATE_TOKENS ALLOW"], "USER ACLs: %r" % got)

# The CLUSTER resource has one name.
result = admin.create_acls([acl(ResourceType.CLUSTER, "other", "User:ops", ACLOperation.ALTER)])
check(not result["succeeded"] and result["failed"]
      and result["failed"][0] is Errors.InvalidRequestError, "cluster name: %r" % result)

deleted = admin.delete_acls([acl_filter(principal="User:ops"),
                             acl_filter(ResourceType.GROUP, "billing", ACLResourcePatternType.LITERAL)])
check(deleted[0][2] is Errors.NoError and sorted(line(a) for a in deleted[0][1]) == [
    "CLUSTER:LITERAL:kafka-cluster User:ops@* ALTER_CONFIGS ALLOW",
    "DELEGATION_TOKEN:LITERAL:token-1 User:ops@* DESCRIBE ALLOW",
    "USER:LITERAL:User:carol User:ops@* CREATE_TOKENS ALLOW",
], "deleted by principal: %r" % (deleted[0],))
check([line(a) for a in deleted[1][1]] == ["GROUP:LITERAL:billing User:bob@* ALL DENY"],
      "deleted by resource: %r" % (deleted[1],))
got = described(acl_filter())
check(got == sorted(["TOPIC:LITERAL:orders User:alice@* READ ALLOW",
                     "TOPIC:PREFIXED:logs- User:alice@* WRITE ALLOW",
                     "TRANSACTIONAL_ID:PREFIXED:app- User:bob@* WRITE ALLOW"]), "left: %r" % got)
admin.close()
print("ok")
