"""kafka-python's admin client describes the metadata quorum of a Samsa cluster.

Usage: kafka_python_quorum.py BOOTSTRAP LEADER_ID VOTERS
Exits non-zero with a message when what the client sees differs.
"""
import sys
import time

from kafka.admin import KafkaAdminClient

bootstrap, leader, voters = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
q = admin.describe_metadata_quorum()


def get(obj, name):
    return obj[name]


topics = get(q, "topics")
assert len(topics) == 1, q
t = topics[0]
assert get(t, "topic_name") == "__cluster_metadata", q
p = get(t, "partitions")[0]
# kafka-python turns the partition's error code into an exception or None.
assert p.get("error") is None and p.get("error_code", 0) == 0, q
assert get(p, "leader_id") == leader, f"leader {get(p, 'leader_id')} != {leader}: {q}"
ids = sorted(get(v, "replica_id") for v in get(p, "current_voters"))
assert ids == list(range(1, voters + 1)), q
hw = get(p, "high_watermark")
assert hw > 0, q
for v in get(p, "current_voters"):
    assert v["log_end_offset"] >= 0 and v["last_caught_up_timestamp"] > 0, f"voter {v} unknown: {q}"
nodes = sorted(n["node_id"] for n in q["nodes"])
assert nodes == list(range(1, voters + 1)), q
admin.close()
print("quorum ok", leader, ids, hw)
