"""confluent-kafka (librdkafka) against Samsa: admin, produce with every codec, consume by
assignment, watermarks.
Usage: confluent_kafka_basic.py BOOTSTRAP"""
import sys

from confluent_kafka import Consumer, Producer, TopicPartition, OFFSET_BEGINNING
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

bootstrap = sys.argv[1]


def check(cond, msg):
    if not cond:
        print("FAILED: " + msg, file=sys.stderr)
        sys.exit(1)


admin = AdminClient({"bootstrap.servers": bootstrap})
for t, f in admin.create_topics([NewTopic("ck-topic", 2, 1, config={"cleanup.policy": "delete"})]).items():
    f.result(30)
res = admin.describe_configs([ConfigResource("topic", "ck-topic")])
for r, f in res.items():
    cfg = f.result(30)
    check(cfg["cleanup.policy"].value == "delete", "cleanup.policy is delete")
    check(cfg["max.message.bytes"].value == "1048588", "max.message.bytes default")

total = 0
for codec in ["none", "gzip", "snappy", "lz4", "zstd"]:
    errors = []
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 5, "acks": "all"})
    for i in range(200):
        p.produce("ck-topic", key=b"k%d" % i, value=(codec + "-%d" % i).encode(), partition=i % 2,
                  on_delivery=lambda err, msg: errors.append(err) if err else None)
    check(p.flush(30) == 0, "all delivered for " + codec)
    check(not errors, "delivery errors for %s: %r" % (codec, errors))
    total += 200

c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
c.assign([TopicPartition("ck-topic", p, OFFSET_BEGINNING) for p in range(2)])
got = []
while len(got) < total:
    msgs = c.consume(500, timeout=10)
    check(msgs, "consumed %d of %d before timing out" % (len(got), total))
    for m in msgs:
        check(m.error() is None, "consume error %r" % (m.error(),))
        got.append(m.value())
check(len(set(got)) == total, "every record exactly once")
low, high = c.get_watermark_offsets(TopicPartition("ck-topic", 0), timeout=10)
check((low, high) == (0, total // 2), "watermarks %r" % ((low, high),))
c.close()

for t, f in admin.delete_topics(["ck-topic"]).items():
    f.result(30)
print("ok")
