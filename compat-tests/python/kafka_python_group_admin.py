"""kafka-python's admin client on consumer groups: list, describe, fetch/alter/delete
offsets and delete groups, around a KafkaConsumer that commits with metadata.
Exits non-zero with a message when a check fails.
Usage: kafka_python_group_admin.py BOOTSTRAP"""
import collections
import logging
import sys
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata

bootstrap = sys.argv[1]
topic, group = "kpa", "kpa-group"


# The client's own debug log, kept in memory and printed when a check fails.
client_log = collections.deque(maxlen=400)


class Keep(logging.Handler):
    last, repeats = None, 0

    def emit(self, record):
        # A client spinning logs one line thousands of times: keep it once, with a count.
        msg = record.getMessage()
        if msg == self.last:
            self.repeats += 1
            return
        if self.repeats:
            client_log.append("    (previous line %d more times)" % self.repeats)
        self.last, self.repeats = msg, 0
        client_log.append(self.format(record))


keep = Keep()
keep.setFormatter(logging.Formatter("%(asctime)s %(threadName)s %(name)s %(message)s"))
logging.getLogger("kafka").addHandler(keep)
logging.getLogger("kafka").setLevel(logging.DEBUG)


def check(cond, msg):
    if not cond:
        print("FAILED: " + msg, file=sys.stderr)
        print("client log (last %d lines):" % len(client_log), file=sys.stderr)
        print("\n".join(client_log), file=sys.stderr)
        sys.exit(1)


def wait_for(what, cond, timeout=30):
    deadline = time.time() + timeout
    while not cond():
        check(time.time() < deadline, "timed out waiting for " + what)
        time.sleep(0.1)


admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])
producer = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=False)
for i in range(30):
    producer.send(topic, value=b"v%d" % i, partition=i % 3)
producer.flush()
producer.close()

consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                         auto_offset_reset="earliest", enable_auto_commit=False,
                         session_timeout_ms=6000, heartbeat_interval_ms=500)
# The topic's metadata first, then the subscription: a consumer that joins before it knows the
# topic's partitions assigns nothing and rejoins at once, and in kafka-python 3.0.12 that
# quick rejoin can leave its poll loop spinning while its I/O thread waits to apply the new
# assignment (seen under load: the client log stops at "Received SyncGroup response").
check(consumer.partitions_for_topic(topic) == {0, 1, 2}, "the consumer sees 3 partitions")
consumer.subscribe([topic])
seen = 0
deadline = time.time() + 60
while seen < 30:
    check(time.time() < deadline, "consumed %d of 30" % seen)
    for records in consumer.poll(timeout_ms=200).values():
        seen += len(records)
tps = [TopicPartition(topic, p) for p in range(3)]
consumer.commit({tp: OffsetAndMetadata(10, "done-%d" % tp.partition, -1) for tp in tps})

listed = {g["group_id"]: g for g in admin.list_groups()}
check(group in listed, "list_groups shows the group: %r" % listed)
check(listed[group]["protocol_type"] == "consumer", repr(listed[group]))
desc = admin.describe_groups([group])[group]
check(desc["error"] is None, repr(desc))
check(desc["group_state"] == "Stable", "described state: %r" % desc)
check(len(desc["members"]) == 1, repr(desc))
check(desc["members"][0]["client_host"].startswith("/"), repr(desc))

deleted = dict(admin.delete_groups([group]))
check(deleted[group] == "NonEmptyGroupError", "delete of a live group: %r" % deleted)
try:
    errors = admin.delete_group_offsets(group, [tps[0]])
    check(errors[tps[0]].__name__ == "GroupSubscribedToTopicError", repr(errors))
except Exception as e:  # a top-level error is a failure too
    check(False, "delete_group_offsets on a subscribed topic: %r" % e)

consumer.close()
wait_for("the group to be empty",
         lambda: admin.describe_groups([group])[group]["group_state"] == "Empty")

offsets = admin.list_group_offsets(group)[group]
check({tp: (o.offset, o.metadata) for tp, o in offsets.items()}
      == {tp: (10, "done-%d" % tp.partition) for tp in tps}, "committed offsets: %r" % offsets)

altered = admin.alter_group_offsets(group, {tps[0]: OffsetAndMetadata(3, "rewound", -1)})
check(altered[tps[0]].__name__ == "NoError", "alter offsets of an empty group: %r" % altered)
offsets = admin.list_group_offsets(group)[group]
check((offsets[tps[0]].offset, offsets[tps[0]].metadata) == (3, "rewound"), repr(offsets))

errors = admin.delete_group_offsets(group, [tps[1]])
check(errors[tps[1]].__name__ == "NoError", repr(errors))
offsets = admin.list_group_offsets(group)[group]
check(tps[1] not in offsets or offsets[tps[1]].offset == -1, "offset deleted: %r" % offsets)

deleted = dict(admin.delete_groups([group]))
check(deleted[group] == "OK", "delete of an empty group: %r" % deleted)
check(group not in {g["group_id"] for g in admin.list_groups()}, "the group is gone")

# The empty group id: Kafka takes it for committed offsets (a "simple" group, the one a
# consumer without group.id but with commits used to get), lists it, describes it as Empty and
# deletes it; only membership (JoinGroup and the rest) refuses it.
altered = admin.alter_group_offsets("", {tps[2]: OffsetAndMetadata(7, "anonymous", -1)})
check(altered[tps[2]].__name__ == "NoError", "commit for the empty group id: %r" % altered)
offsets = admin.list_group_offsets("")[""]
check((offsets[tps[2]].offset, offsets[tps[2]].metadata) == (7, "anonymous"), repr(offsets))
check("" in {g["group_id"] for g in admin.list_groups()}, "the empty group id is listed")
desc = admin.describe_groups([""])[""]
check(desc["error"] is None and desc["group_state"] == "Empty", "described: %r" % desc)
deleted = dict(admin.delete_groups([""]))
check(deleted[""] == "OK", "delete of the empty group id: %r" % deleted)
check("" not in {g["group_id"] for g in admin.list_groups()}, "the empty group id is gone")
admin.close()
print("ok")
