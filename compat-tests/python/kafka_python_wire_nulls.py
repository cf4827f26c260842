"""kafka-python's admin client sees null where Kafka sends null, and DescribeConfigs synonyms as
Kafka lists them. Exits non-zero with a message when a check fails.
Usage: kafka_python_wire_nulls.py BOOTSTRAP"""
import sys

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

bootstrap = sys.argv[1]


def check(cond, msg):
    if not cond:
        print("FAILED: " + msg, file=sys.stderr)
        sys.exit(1)


admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)

# CreateTopics: success carries a null error message (Kafka's ApiError.NONE), not "".
r = admin.create_topics([NewTopic("nulls-a", num_partitions=1, replication_factor=1)])
t = r["topics"][0]
check(t["error_code"] == 0 and t["error_message"] is None, "create_topics: %r" % (t,))


def retention(topic):
    r = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic, {"retention.ms": None})],
                               include_synonyms=True, config_filter="all")
    return r["topic"][topic]["retention.ms"]


# retention.ms without an override: the broker started with log.retention.hours=24 only, so
# the value is a day, and Kafka lists no synonym (its list starts at log.retention.ms, unset)
# and calls the value a default. Documentation was not asked for: null.
c = retention("nulls-a")
check(c["value"] == "86400000", "retention.ms value: %r" % (c,))
check(c["synonyms"] == [], "retention.ms synonyms: %r" % (c,))
check(c["config_source"] == "DEFAULT_CONFIG", "retention.ms source: %r" % (c,))
check(c["documentation"] is None, "documentation not asked for: %r" % (c,))

# With an override: the override alone (log.retention.ms is still unset).
r = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "nulls-a", {"retention.ms": "5000"})])
check(r == {"topic": {"nulls-a": "OK"}}, "alter_configs: %r" % (r,))
c = retention("nulls-a")
check(c["value"] == "5000", "overridden value: %r" % (c,))
check([(s["name"], s["value"], s["source"]) for s in c["synonyms"]]
      == [("retention.ms", "5000", "DYNAMIC_TOPIC_CONFIG")], "overridden synonyms: %r" % (c,))
check(c["config_source"] == "DYNAMIC_TOPIC_CONFIG", "overridden source: %r" % (c,))

# segment.ms: log.roll.hours has a default, log.roll.ms none: no synonyms either.
r = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "nulls-a", {"segment.ms": None,
                                                                                 "cleanup.policy": None})],
                           include_synonyms=True, config_filter="all")["topic"]["nulls-a"]
check(r["segment.ms"]["synonyms"] == [], "segment.ms synonyms: %r" % (r,))
check([(s["name"], s["source"]) for s in r["cleanup.policy"]["synonyms"]]
      == [("log.cleanup.policy", "DEFAULT_CONFIG")], "cleanup.policy synonyms: %r" % (r,))

admin.close()
print("ok")
