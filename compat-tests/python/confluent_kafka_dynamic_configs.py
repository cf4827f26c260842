"""confluent-kafka's admin client (librdkafka built with TLS, which SCRAM needs to salt passwords)
on what the rdkafka crate does not wrap: SCRAM credentials (KIP-554) and IncrementalAlterConfigs
(KIP-339) on BROKER and GROUP resources. Phase "alter" changes things; phase "restarted" runs
after a broker restart and checks they were kept, then deletes. Exits non-zero with a message
when a check fails.
Usage: confluent_kafka_dynamic_configs.py BOOTSTRAP alter|restarted"""
import sys

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   ConfigSource, ResourceType, ScramCredentialInfo,
                                   ScramMechanism, UserScramCredentialDeletion,
                                   UserScramCredentialUpsertion)

bootstrap, phase = sys.argv[1], sys.argv[2]
admin = AdminClient({"bootstrap.servers": bootstrap})
TIMEOUT = 30


def check(cond, msg):
    if not cond:
        print("FAILED: " + msg, file=sys.stderr)
        sys.exit(1)


def error_code(future):
    """The Kafka error a future failed with, or None when it succeeded."""
    try:
        future.result(timeout=TIMEOUT)
        return None
    except KafkaException as e:
        return e.args[0].code()


def credentials(user):
    """{mechanism: iterations} of a user, or the error code describing it failed with."""
    future = admin.describe_user_scram_credentials([user])[user]
    try:
        d = future.result(timeout=TIMEOUT)
    except KafkaException as e:
        return e.args[0].code()
    return {i.mechanism: i.iterations for i in d.scram_credential_infos}


def upsert(user, mechanism, iterations):
    return UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, iterations),
                                        b"pass-" + user.encode(), b"salt-" + user.encode())


def incremental(resource, entries):
    return error_code(admin.incremental_alter_configs([ConfigResource(
        resource[0], resource[1], incremental_configs=entries)])[ConfigResource(*resource)])


def source(entry):
    """An entry's ConfigSource (the client hands out the enum or its value)."""
    return entry.source if isinstance(entry.source, ConfigSource) else ConfigSource(entry.source)


def describe(resource):
    res = ConfigResource(*resource)
    return admin.describe_configs([res])[res].result(timeout=TIMEOUT)


BROKER = (ResourceType.BROKER, "1")
GROUP = (ResourceType.GROUP, "dynamic-configs-group")
SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512

if phase == "alter":
    check(credentials("alice") == KafkaError.RESOURCE_NOT_FOUND, "alice has no credentials yet")

    # A user may be altered once per request: both of alice's alterations are refused.
    futures = admin.alter_user_scram_credentials([upsert("alice", SHA256, 8192),
                                                  upsert("alice", SHA512, 8192)])
    check(error_code(futures["alice"]) == KafkaError.DUPLICATE_RESOURCE,
          "altering alice twice in one request is DUPLICATE_RESOURCE")

    futures = admin.alter_user_scram_credentials([upsert("alice", SHA256, 8192),
                                                  upsert("bob", SHA512, 4096),
                                                  upsert("carol", SHA256, 100)])
    check(error_code(futures["alice"]) is None, "alice's credential is created")
    check(error_code(futures["bob"]) is None, "bob's credential is created")
    check(error_code(futures["carol"]) == KafkaError.UNACCEPTABLE_CREDENTIAL,
          "100 iterations is UNACCEPTABLE_CREDENTIAL")
    futures = admin.alter_user_scram_credentials([upsert("alice", SHA512, 16384)])
    check(error_code(futures["alice"]) is None, "alice gets a second mechanism")

    everyone = admin.describe_user_scram_credentials().result(timeout=TIMEOUT)
    described = {u: {i.mechanism: i.iterations for i in d.scram_credential_infos}
                 for u, d in everyone.items()}
    check(described == {"alice": {SHA256: 8192, SHA512: 16384}, "bob": {SHA512: 4096}},
          "every user is described: %r" % described)

    # Dynamic broker configs, incrementally (0081's operations).
    check(incremental(BROKER, [
        ConfigEntry("background.threads", "9", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("log.cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
    ]) is None, "SET background.threads and APPEND log.cleanup.policy")
    configs = describe(BROKER)
    check(configs["background.threads"].value == "9"
          and source(configs["background.threads"]) == ConfigSource.DYNAMIC_BROKER_CONFIG,
          "background.threads is a dynamic broker config: %r" % configs["background.threads"])
    check(configs["log.cleanup.policy"].value == "delete,compact",
          "APPEND starts from the default: %r" % configs["log.cleanup.policy"])
    check(incremental(BROKER, [
        ConfigEntry("background.threads", "", incremental_operation=AlterConfigOpType.DELETE),
        ConfigEntry("log.cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SUBTRACT),
    ]) is None, "DELETE background.threads and SUBTRACT log.cleanup.policy")
    configs = describe(BROKER)
    check(configs["background.threads"].value == "10"
          and source(configs["background.threads"]) == ConfigSource.DEFAULT_CONFIG,
          "background.threads is back to its default: %r" % configs["background.threads"])
    check(configs["log.cleanup.policy"].value == "delete", "compact was subtracted")
    check(incremental(BROKER, [
        ConfigEntry("background.threads", "1", incremental_operation=AlterConfigOpType.APPEND),
    ]) == KafkaError.INVALID_CONFIG, "APPEND to a number is INVALID_CONFIG")

    # Group configs (KIP-848), for a group that does not exist.
    check(incremental(GROUP, [ConfigEntry("consumer.session.timeout.ms", "50000",
                                          incremental_operation=AlterConfigOpType.SET)]) is None,
          "SET consumer.session.timeout.ms on a group")
    check(incremental(GROUP, [ConfigEntry("consumer.session.timeout.ms", "70000",
                                          incremental_operation=AlterConfigOpType.SET)])
          == KafkaError.INVALID_CONFIG, "70000 ms is above group.consumer.max.session.timeout.ms")
    check(incremental(GROUP, [ConfigEntry("session.timeout.ms", "50000",
                                          incremental_operation=AlterConfigOpType.SET)])
          == KafkaError.INVALID_CONFIG, "session.timeout.ms is no group config")
elif phase == "restarted":
    check(credentials("alice") == {SHA256: 8192, SHA512: 16384}, "alice's credentials were kept")
    futures = admin.alter_user_scram_credentials([UserScramCredentialDeletion("alice", SHA256),
                                                  UserScramCredentialDeletion("bob", SHA512)])
    check(error_code(futures["alice"]) is None and error_code(futures["bob"]) is None,
          "credentials are deleted")
    check(credentials("alice") == {SHA512: 16384}, "alice keeps her other mechanism")
    check(credentials("bob") == KafkaError.RESOURCE_NOT_FOUND, "bob has no credentials left")
    futures = admin.alter_user_scram_credentials([UserScramCredentialDeletion("bob", SHA512)])
    check(error_code(futures["bob"]) == KafkaError.RESOURCE_NOT_FOUND,
          "deleting a credential that does not exist is RESOURCE_NOT_FOUND")

    timeout = describe(GROUP)["consumer.session.timeout.ms"]
    check(timeout.value == "50000" and source(timeout) == ConfigSource.GROUP_CONFIG,
          "the group config was kept: %r" % timeout)
    check(incremental(GROUP, [ConfigEntry("consumer.session.timeout.ms", "",
                                          incremental_operation=AlterConfigOpType.DELETE)]) is None,
          "DELETE the group config")
    timeout = describe(GROUP)["consumer.session.timeout.ms"]
    check(timeout.value == "45000" and source(timeout) == ConfigSource.DEFAULT_CONFIG,
          "the group is back to the broker's default: %r" % timeout)
else:
    check(False, "unknown phase " + phase)
print("ok")
