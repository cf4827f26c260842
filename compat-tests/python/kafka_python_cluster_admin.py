"""kafka-python's admin client on the cluster-level APIs of a single node: ElectLeaders,
AlterReplicaLogDirs, Alter/ListPartitionReassignments, DescribeTopicPartitions (paged) and
ListConfigResources (brokers, topics, groups with configs). Exits non-zero with a message when a
check fails.
Usage: kafka_python_cluster_admin.py BOOTSTRAP NODE_ID"""
import sys

from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.errors import (ElectionNotNeededError, InvalidReplicationAssignmentError,
                          LogDirNotFoundError, NoReassignmentInProgressError, NoError,
                          UnknownTopicOrPartitionError)
from kafka.structs import TopicPartitionReplica

bootstrap, node = sys.argv[1], int(sys.argv[2])


def check(cond, msg):
    if not cond:
        print("FAILED: " + msg, file=sys.stderr)
        sys.exit(1)


admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
admin.create_topics([NewTopic("cadm-a", num_partitions=4, replication_factor=1),
                     NewTopic("cadm-b", num_partitions=2, replication_factor=1)])

# ElectLeaders: every partition already has its preferred leader.
r = admin.elect_leaders(0, {"cadm-a": [0, 1], "nope": [0]}, raise_errors=False)
codes = {(t[0], p[0]): p[1] for t in r.replica_election_results for p in t[1]}
check(codes == {("cadm-a", 0): ElectionNotNeededError.errno, ("cadm-a", 1): ElectionNotNeededError.errno,
                ("nope", 0): UnknownTopicOrPartitionError.errno}, "elect_leaders codes: %r" % codes)
r = admin.elect_leaders(0, ["cadm-b"])  # every partition of the topic
codes = [p[1] for t in r.replica_election_results for p in t[1]]
check(codes == [ElectionNotNeededError.errno] * 2, "elect_leaders on a topic: %r" % (r,))

# AlterReplicaLogDirs: the one log dir is where every replica is.
log_dir = admin.describe_log_dirs()[0]["log_dirs"][0]["log_dir"]
here = TopicPartitionReplica("cadm-a", 0, node)
gone = TopicPartitionReplica("cadm-a", 9, node)
r = admin.alter_replica_log_dirs({here: log_dir, gone: log_dir})
# A partition the cluster lacks: UNKNOWN_TOPIC_OR_PARTITION, as Kafka 4.4 answers it.
check(r[here] is NoError and r[gone] is UnknownTopicOrPartitionError, "alter_replica_log_dirs: %r" % r)
r = admin.alter_replica_log_dirs({here: "/not/a/log/dir"})
check(r[here] is LogDirNotFoundError, "unknown log dir: %r" % r)

# Partition reassignments on one node: the only registered broker is this one, so moving to it
# changes nothing and any other target is refused; nothing is ever in flight.
tp = TopicPartition("cadm-a", 0)
r = admin.alter_partition_reassignments({tp: [node]})
check(r == {tp: None}, "reassign to the current replica: %r" % r)
r = admin.alter_partition_reassignments({tp: [node + 1]})
check(r == {tp: InvalidReplicationAssignmentError}, "reassign to an unknown broker: %r" % r)
r = admin.alter_partition_reassignments({tp: None})
check(r == {tp: NoReassignmentInProgressError}, "cancel: %r" % r)
check(admin.list_partition_reassignments() == {}, "no reassignment in progress")
check(admin.list_partition_reassignments([tp]) == {}, "no reassignment in progress for %s" % (tp,))

# DescribeTopicPartitions pages by partitions, topics sorted by name.
page = admin.describe_topic_partitions(["cadm-b", "cadm-a"], response_partition_limit=3)
check([t["name"] for t in page["topics"]] == ["cadm-a"], "first page topics: %r" % page)
check([p["partition_index"] for p in page["topics"][0]["partitions"]] == [0, 1, 2], "first page: %r" % page)
check(page["next_cursor"] == {"topic_name": "cadm-a", "partition_index": 3}, "cursor: %r" % page)
page = admin.describe_topic_partitions(["cadm-a", "cadm-b"], response_partition_limit=1, cursor=page["next_cursor"])
check([(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in page["topics"]] == [("cadm-a", [3])],
      "second page: %r" % page)
check(page["next_cursor"] == {"topic_name": "cadm-b", "partition_index": 0}, "a full page points at the next topic")
page = admin.describe_topic_partitions(["cadm-a", "cadm-b", "nope"])
check([(t["name"], t["error_code"], len(t["partitions"])) for t in page["topics"]] ==
      [("cadm-a", 0, 4), ("cadm-b", 0, 2), ("nope", UnknownTopicOrPartitionError.errno, 0)], "all: %r" % page)
check(page["next_cursor"] is None, "no cursor after the last page")
p = page["topics"][0]["partitions"][0]
check(p["leader_id"] == node and p["replica_nodes"] == [node] and p["isr_nodes"] == [node], "partition: %r" % p)

# ListConfigResources: the broker (and its loggers) and every topic.
r = admin.list_config_resources()
check(r.get("broker") == [str(node)] and r.get("broker_logger") == [str(node)], "brokers: %r" % r)
check({"cadm-a", "cadm-b"} <= set(r.get("topic", [])), "topics: %r" % r)
r = admin.list_config_resources(["TOPIC"])
check(set(r) == {"topic"}, "filtered by type: %r" % r)
# GROUP lists the groups that have configs, even one that has never had a member (KIP-1142).
check(admin.list_config_resources(["GROUP"]).get("group", []) == [], "no group configs yet")
group = ConfigResource(ConfigResourceType.GROUP, "cadm-g", {"consumer.session.timeout.ms": "50000"})
r = admin.alter_configs([group], raise_on_unknown=False)
check(r == {"group": {"cadm-g": "OK"}}, "set a group config: %r" % r)
r = admin.list_config_resources(["GROUP"])
check(r == {"group": ["cadm-g"]}, "groups with configs: %r" % r)
r = admin.reset_configs([ConfigResource(ConfigResourceType.GROUP, "cadm-g", ["consumer.session.timeout.ms"])],
                        raise_on_unknown=False)
check(r == {"group": {"cadm-g": "OK"}}, "delete the group config: %r" % r)
check(admin.list_config_resources(["GROUP"]).get("group", []) == [], "a group without configs is not listed")
admin.close()
print("ok")
