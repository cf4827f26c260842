"""kafka-python on a cluster of real Samsa nodes: it sees every broker, creates a topic whose
partitions are led by different brokers, and produces and consumes through them.
Usage: kafka_python_cluster.py BOOTSTRAP BROKERS
Exits non-zero with a message when what the client sees differs."""
import sys

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic

bootstrap, brokers = sys.argv[1], int(sys.argv[2])


def check(cond, msg):
    if not cond:
        print("FAILED: " + msg, file=sys.stderr)
        sys.exit(1)


admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
cluster = admin.describe_cluster()
ids = sorted(b["broker_id"] for b in cluster["brokers"])
check(ids == list(range(1, brokers + 1)), "describe_cluster brokers: %r" % cluster)
check(cluster["controller_id"] in ids, "controller: %r" % cluster)

admin.create_topics([NewTopic("kp-spread", num_partitions=2 * brokers, replication_factor=1)])
described = admin.describe_topics(["kp-spread"])[0]
leaders = sorted({p["leader_id"] for p in described["partitions"]})
check(leaders == ids, "leaders of kp-spread: %r" % described)
for p in described["partitions"]:
    check(p["replica_nodes"] == [p["leader_id"]] and p["isr_nodes"] == [p["leader_id"]],
          "partition: %r" % p)

producer = KafkaProducer(bootstrap_servers=bootstrap)
for i in range(60):
    producer.send("kp-spread", key=b"k%d" % i, value=b"v%d" % i)
producer.flush()
producer.close()

consumer = KafkaConsumer("kp-spread", bootstrap_servers=bootstrap, group_id="kp-group",
                         auto_offset_reset="earliest", consumer_timeout_ms=15000)
seen = set()
for m in consumer:
    seen.add(m.value)
    if len(seen) == 60:
        break
consumer.commit()
consumer.close()
check(seen == {b"v%d" % i for i in range(60)}, "consumed %d of 60" % len(seen))
admin.close()
print("cluster ok", ids, leaders)
