"""A single node's data directory from before the metadata log held topics, configs, ACLs and
SCRAM credentials (each in its own JSON file), and what a newer Samsa must find in it.

Phase "populate" (run once against the old binary to make compat-tests/fixtures/): topics with
overrides and records, a consumer group's committed offsets, a committed transaction, ACLs, SCRAM
credentials, a dynamic broker config and a group config. Phase "check" (run by the upgrade test
against the new binary, started on a copy of that directory): everything is there, unchanged.
The broker runs with an authorizer and `super.users=User:ANONYMOUS`.
Usage: upgrade_fixture.py BOOTSTRAP populate|check
Exits non-zero with a message when a check fails."""
import sys

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation,
                                   AclPermissionType, AdminClient, AlterConfigOpType,
                                   ConfigEntry, ConfigResource, NewTopic, ResourcePatternType,
                                   ResourceType, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialUpsertion)

bootstrap, phase = sys.argv[1], sys.argv[2]
admin = AdminClient({"bootstrap.servers": bootstrap})
TIMEOUT = 30
ORDERS = [("k%d" % i, "order-%d" % i) for i in range(30)]
LEDGER = [("acct-%d" % (i % 3), "balance-%d" % i) for i in range(12)]
ACLS = [
    AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
               AclOperation.READ, AclPermissionType.ALLOW),
    AclBinding(ResourceType.GROUP, "billing-", ResourcePatternType.PREFIXED, "User:alice", "*",
               AclOperation.READ, AclPermissionType.ALLOW),
    AclBinding(ResourceType.TOPIC, "ledger", ResourcePatternType.LITERAL, "User:mallory",
               "10.0.0.9", AclOperation.WRITE, AclPermissionType.DENY),
]


def check(cond, msg):
    if not cond:
        print("FAILED: " + msg, file=sys.stderr)
        sys.exit(1)


def wait(futures):
    for f in futures.values():
        f.result(timeout=TIMEOUT)


def read_all(topic, partitions, expected):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "fixture-reader",
                  "enable.auto.commit": False, "isolation.level": "read_committed"})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = []
    for _ in range(200):
        for m in c.consume(100, timeout=0.2):
            check(m.error() is None, "consume %s: %s" % (topic, m.error()))
            got.append((m.key().decode(), m.value().decode()))
        if len(got) >= expected:
            break
    c.close()
    return got


if phase == "populate":
    wait(admin.create_topics([
        NewTopic("orders", num_partitions=3, replication_factor=1,
                 config={"retention.ms": "3600000", "max.message.bytes": "65536"}),
        NewTopic("ledger", num_partitions=1, replication_factor=1,
                 config={"cleanup.policy": "compact"}),
    ]))
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for k, v in ORDERS:
        p.produce("orders", key=k, value=v)
    p.flush(TIMEOUT)
    t = Producer({"bootstrap.servers": bootstrap, "transactional.id": "fixture-ledger"})
    t.init_transactions(TIMEOUT)
    t.begin_transaction()
    for k, v in LEDGER:
        t.produce("ledger", key=k, value=v)
    t.commit_transaction(TIMEOUT)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "billing-app",
                  "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition("orders", 0, 4), TopicPartition("orders", 2, 7)],
             asynchronous=False)
    c.close()
    wait(admin.create_acls(ACLS))
    wait(admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        "alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"alice-secret",
        b"alice-salt")]))
    wait(admin.incremental_alter_configs([ConfigResource(
        ResourceType.BROKER, "1", incremental_configs=[ConfigEntry(
            "log.retention.ms", "86400000", incremental_operation=AlterConfigOpType.SET)])]))
    wait(admin.incremental_alter_configs([ConfigResource(
        ResourceType.GROUP, "billing-app", incremental_configs=[ConfigEntry(
            "consumer.session.timeout.ms", "50000",
            incremental_operation=AlterConfigOpType.SET)])]))
    print("populated")
elif phase == "check":
    md = admin.list_topics(timeout=TIMEOUT)
    check({"orders", "ledger"} <= set(md.topics), "topics: %r" % sorted(md.topics))
    check(len(md.topics["orders"].partitions) == 3, "orders has 3 partitions")
    got = read_all("orders", 3, len(ORDERS))
    check(sorted(got) == sorted(ORDERS), "orders records: %r" % got)
    got = read_all("ledger", 1, len(LEDGER))
    check(got[:len(LEDGER)] == LEDGER, "the committed transaction's records: %r" % got)

    res = ConfigResource(ResourceType.TOPIC, "orders")
    configs = admin.describe_configs([res])[res].result(timeout=TIMEOUT)
    check(configs["retention.ms"].value == "3600000", "orders retention.ms: %r"
          % configs["retention.ms"])
    check(configs["max.message.bytes"].value == "65536", "orders max.message.bytes")
    res = ConfigResource(ResourceType.TOPIC, "ledger")
    configs = admin.describe_configs([res])[res].result(timeout=TIMEOUT)
    check(configs["cleanup.policy"].value == "compact", "ledger cleanup.policy")
    res = ConfigResource(ResourceType.BROKER, "1")
    configs = admin.describe_configs([res])[res].result(timeout=TIMEOUT)
    check(configs["log.retention.ms"].value == "86400000", "broker 1 log.retention.ms: %r"
          % configs["log.retention.ms"])
    res = ConfigResource(ResourceType.GROUP, "billing-app")
    configs = admin.describe_configs([res])[res].result(timeout=TIMEOUT)
    check(configs["consumer.session.timeout.ms"].value == "50000", "group config")

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "billing-app"})
    committed = c.committed([TopicPartition("orders", p) for p in range(3)], timeout=TIMEOUT)
    c.close()
    check([tp.offset for tp in committed][0] == 4 and committed[2].offset == 7,
          "billing-app's offsets: %r" % committed)

    acls = admin.describe_acls(AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
        AclPermissionType.ANY)).result(timeout=TIMEOUT)
    check(sorted(map(str, acls)) == sorted(map(str, ACLS)), "ACLs: %r" % acls)
    d = admin.describe_user_scram_credentials(["alice"])["alice"].result(timeout=TIMEOUT)
    check([(i.mechanism, i.iterations) for i in d.scram_credential_infos]
          == [(ScramMechanism.SCRAM_SHA_256, 8192)], "alice's credential: %r" % d)

    # The transactional id is still known: a new producer of it fences the old epoch.
    t = Producer({"bootstrap.servers": bootstrap, "transactional.id": "fixture-ledger"})
    t.init_transactions(TIMEOUT)
    t.begin_transaction()
    t.produce("ledger", key="acct-0", value="after-upgrade")
    t.commit_transaction(TIMEOUT)
    print("checked")
else:
    sys.exit("phase must be populate or check")
