"""kafka-python against Samsa: admin create/describe/delete, produce with every codec it
supports without extra packages, consume by assignment, offsets by time.
Usage: kafka_python_basic.py BOOTSTRAP"""
import sys

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.errors import TopicAlreadyExistsError

bootstrap = sys.argv[1]


def check(cond, msg):
    if not cond:
        print("FAILED: " + msg, file=sys.stderr)
        sys.exit(1)


admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
admin.create_topics([NewTopic("kp-topic", num_partitions=3, replication_factor=1, topic_configs={"retention.ms": "86400000"})])
try:
    admin.create_topics([NewTopic("kp-topic", num_partitions=3, replication_factor=1)])
    check(False, "creating an existing topic must fail")
except TopicAlreadyExistsError:
    pass
check("kp-topic" in admin.list_topics(), "topic is listed")
configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-topic")])
text = repr(configs)
check("retention.ms" in text and "86400000" in text, "describe_configs shows the override: " + text[:500])

for codec in [None, "gzip"]:
    # kafka-python's default producer is idempotent (InitProducerId, then sequenced batches).
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type=codec, linger_ms=5)
    futures = [producer.send("kp-topic", key=b"key-%d" % (i % 5), value=b"value-%d" % i, partition=i % 3) for i in range(300)]
    producer.flush()
    metas = [f.get(timeout=30) for f in futures]
    check(all(m.offset >= 0 for m in metas), "every record acknowledged with an offset")
    producer.close()

consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=10000)
tps = [TopicPartition("kp-topic", p) for p in range(3)]
consumer.assign(tps)
consumer.seek_to_beginning()
seen = []
for msg in consumer:
    seen.append((msg.partition, msg.offset, msg.value))
    if len(seen) == 600:
        break
check(len(seen) == 600, "consumed %d of 600" % len(seen))
per_partition = {}
for p, o, _ in seen:
    per_partition.setdefault(p, []).append(o)
for p, offsets in per_partition.items():
    check(offsets == list(range(len(offsets))), "offsets of partition %d are dense and ordered" % p)
end = consumer.end_offsets(tps)
check(sum(end.values()) == 600, "end offsets add up to 600: %r" % end)
begin = consumer.beginning_offsets(tps)
check(all(v == 0 for v in begin.values()), "beginning offsets are 0")
consumer.close()

admin.delete_topics(["kp-topic"])
check("kp-topic" not in admin.list_topics(), "topic deleted")
admin.close()
print("ok")
